// Provider: one chat call to an LLM over HTTP. Messages and tools use marathon's canonical form
// (the OpenAI chat format, see policy/policy.h); each provider translates to and from its wire
// format. A call never throws for anything the network or the model does: failures come back as a
// typed LlmError, and a reply whose tool calls cannot be acted on comes back with `problems`
// flagged.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon::llm {

// Why a call failed: the kinds (and their names in the log) are core's (core/events.h), so the
// loop and every reader of model.response agree on them.
using ErrorKind = LlmErrorKind;
using marathon::to_string;

struct LlmError {
  ErrorKind kind = ErrorKind::kTransport;
  std::string message;  // what happened and where (provider, URL, status); never the key
  int http_status = 0;  // 0 when no HTTP response arrived
};

// A part of a reply the loop must not act on as-is: it logs it and answers the model with
// `message`.
struct ReplyProblem {
  std::string tool_call_id;
  std::string kind;  // "bad_arguments" | "unknown_tool" | "missing_name"
  std::string message;
};

// Tokens of one call. prompt_tokens is everything the window held, cache reads and writes
// included; the two cache counts are the parts of it billed at their own rates (Anthropic's
// cache_read_input_tokens / cache_creation_input_tokens, OpenAI's
// prompt_tokens_details.cached_tokens as reads).
struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
};

struct ChatRequest {
  std::string model;
  json messages = json::array();  // canonical form
  json tools = json::array();     // OpenAI tools array
  int max_tokens = 4096;
  // Sent only when set, and only to a model that takes sampling parameters (model_table.h): no
  // default goes anywhere.
  std::optional<double> temperature;
  // Server-sent events: the reply arrives as a stream and is assembled before it is returned.
  bool stream = false;
  // OpenAI reasoning models: "none" | "minimal" | "low" | "medium" | "high" | "xhigh" (empty: not
  // sent; a value the model table says the model does not take is not sent either).
  std::string reasoning_effort;
  // Anthropic extended thinking: the budget in tokens (0: off). Thinking blocks of the reply are
  // kept in the canonical message (`thinking_blocks`) and sent back as the API requires.
  int64_t thinking_budget = 0;
  // Indices of `messages` after which a prompt-cache breakpoint goes (Anthropic's cache_control on
  // the message's last block; a system message's marks the system prompt). OpenAI-format servers
  // cache prefixes by themselves and ignore it.
  std::vector<int64_t> cache_breakpoints;
  // Polled while the call runs (during the transfer and between retries): true ends the call at
  // once with ErrorKind::kInterrupted. Empty: never.
  std::function<bool()> cancel;
  // The seconds the caller's time budget leaves (unset: none): no attempt or retry wait runs past
  // them, as none runs past the provider's total_timeout_s.
  std::optional<double> time_left_s;
};

struct ChatResult {
  json message = json::object();  // assistant message, canonical form
  Usage usage;
  double cost_usd = 0;
  std::string finish_reason;  // "stop" | "tool_calls" | "length" | provider's own word
  std::vector<ReplyProblem> problems;
  std::optional<LlmError> error;  // set: message/usage are empty
  int attempts = 0;               // HTTP attempts made (1 + retries)
  // The reply's usage was missing or not believable (usage_check.h): `usage` and `cost_usd` are
  // then the runtime's own estimate, `usage_problems` says what was wrong and `usage_reported`
  // holds the usage object as the provider sent it (null when it sent none).
  bool usage_estimated = false;
  std::vector<std::string> usage_problems;
  json usage_reported;
  bool ok() const { return !error.has_value(); }
};

// Dollars per million tokens. A negative cache rate means "not set": those tokens are billed at
// the input rate.
struct Price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
  double cache_read_per_mtok = -1;
  double cache_write_per_mtok = -1;
};

// What the runtime thinks a call used when the provider's usage cannot be believed: the prompt as
// sent and the reply as received. Only prompt_tokens and completion_tokens are filled in.
using UsageEstimator = std::function<Usage(const ChatRequest& request, const json& reply_message)>;

struct ProviderConfig {
  std::string provider;  // registry name: "openai", "anthropic", "vllm", ...
  std::string model;
  std::string base_url;  // empty: the provider's default
  std::string
      api_key_env;         // empty: the provider's default (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...)
  double timeout_s = 120;  // one HTTP attempt, start to end (`--model-timeout`)
  double connect_timeout_s = 20;
  // One chat() call, every attempt and every wait between them: no retry starts after it, and
  // attempts and waits are cut short to end by it.
  double total_timeout_s = 600;
  int max_retries = 6;  // on 429, 5xx and transport errors
  double backoff_base_s = 1.0;
  double backoff_max_s = 60.0;
  double retry_after_max_s = 300;       // a longer Retry-After is clamped to this
  std::optional<Price> price;           // this model's price, over any table
  std::map<std::string, Price> prices;  // by model-name prefix, over the model table's prices
  std::map<std::string, std::string> extra_headers;
  // How to wait between retries; tests inject a recorder. Default: sleep in short slices, ending
  // early when the request's `cancel` says so.
  std::function<void(std::chrono::milliseconds)> sleep;
  // Replaces usage the provider did not report or that fails usage_check.h. Default: a crude
  // 4-bytes-per-token count of the JSON sent and received (the runtime installs its own estimator
  // from src/context).
  UsageEstimator estimate_usage;
};

class Provider {
 public:
  virtual ~Provider() = default;
  virtual std::string name() const = 0;  // registry name
  virtual const ProviderConfig& config() const = 0;
  virtual ChatResult chat(const ChatRequest& request) = 0;
};

}  // namespace marathon::llm
