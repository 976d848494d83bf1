// Policy: decides the next actions. An LLM, a built-in search, or a replay of a logged run.
// Messages use the OpenAI chat format as marathon's canonical form (providers translate):
//   {"role": "system"|"user"|"assistant"|"tool", "content": "...",
//    "tool_calls": [{"id": "...", "type": "function",
//                    "function": {"name": "...", "arguments": "<JSON text>"}}],   // assistant
//    "tool_call_id": "..."}                                                         // tool
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "context/summariser.h"
#include "core/event.h"
#include "core/events.h"
#include "core/state.h"

namespace marathon {

struct PolicyRequest {
  json messages = json::array();  // the assembled prompt
  json tools = json::array();     // OpenAI "tools" array:
                                  // [{"type":"function","function":{name,description,parameters}}]
  const State* state = nullptr;   // the folded state the prompt was built from
  // Polled while the policy waits (a model call): true means stop now. The policy then returns an
  // error of kind "interrupted" and the loop logs no response (the request stays pending).
  std::function<bool()> interrupted;
  // Indices of the messages after which a provider cache breakpoint goes (context::Prompt's
  // cache_breakpoints); providers without explicit breakpoints ignore them.
  std::vector<int64_t> cache_breakpoints;
  // The prompt's calibrated token estimate (context::Prompt::tokens_estimate; 0: unknown): what
  // the reply's token limit is sized against.
  int64_t tokens_estimate = 0;
  // Seconds the run's wall-time budget leaves (unset: the run has none): the call and its retries
  // end by then, so that waiting on a failing server never runs past the budget.
  std::optional<double> time_left_s;
  // "" for a conversation turn; "compaction" for a summariser call (the purpose its
  // model.response is logged with), so a replay serves each kind from its own queue.
  std::string purpose;
};

struct PolicyReply {
  json message = json::object();  // assistant message, canonical form above
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  // Parts of prompt_tokens the provider served from or wrote to its prompt cache (billed at their
  // own rates, included in cost_usd).
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
  double cost_usd = 0;
  std::string provider;  // "openai", "anthropic", "search", "replay"
  std::string model;
  std::string finish_reason;  // "stop", "tool_calls", "length", ...
  // Set when the call failed in a way the loop must handle (LlmErrorKind: context length, auth,
  // not found, malformed, transport, rate limits exhausted, bad request, interrupted); message
  // says what and where.
  std::optional<events::ModelError> error;
  // Parts of a successful reply the loop must not act on as-is (tool call with unparsable
  // arguments, unknown tool name): [{tool_call_id, kind, message}]. The loop logs them and answers
  // each call with its message as a tool error.
  json problems = json::array();
  // Set when the provider's usage was missing or not believable and the token counts and cost
  // above are the runtime's estimate. The loop logs it as llm.usage_rejected (it fills in the
  // provider and model).
  std::optional<events::LlmUsageRejected> usage_rejected;
};

// What the log records of a reply (model.response), less the message, which the caller sets: the
// conversation's turn normalised (loop), or a summary (context).
events::ModelResponse response_payload(const PolicyReply& reply);

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  virtual PolicyReply next(const PolicyRequest& request) = 0;
};

// `policy` as compaction's summariser: the summary request sent with no tools and the run's
// state (`state`, which must outlive the function), the reply as its model.response.
context::Summariser summariser_of(Policy& policy, const State* state);

// True when a reply failed because the prompt was over the model's context length: the kind
// says so, or the message does in one of the wordings providers use.
bool is_context_length_error(const PolicyReply& reply);

}  // namespace marathon
