#include "policy/policy.h"

#include <algorithm>
#include <cctype>

namespace marathon {

events::ModelResponse response_payload(const PolicyReply& reply) {
  events::ModelResponse p;
  p.usage = {reply.prompt_tokens, reply.completion_tokens, reply.cache_read_tokens,
             reply.cache_write_tokens};
  p.cost_usd = reply.cost_usd;
  p.provider = reply.provider;
  p.model = reply.model;
  p.finish_reason = reply.finish_reason;
  p.error = reply.error;
  if (reply.problems.is_array()) p.problems = reply.problems;
  p.usage_estimated = reply.usage_rejected.has_value();
  return p;
}

context::Summariser summariser_of(Policy& policy, const State* state) {
  return [&policy, state](const context::SummaryRequest& request) {
    PolicyRequest r;
    r.messages = request.messages;
    r.tools = json::array();
    r.state = state;
    r.interrupted = request.interrupted;
    r.purpose = events::ModelResponse::kPurposeCompaction;
    PolicyReply reply = policy.next(r);
    context::SummaryReply out;
    out.response = response_payload(reply);
    out.response.message = reply.message.is_object() ? reply.message : json::object();
    out.usage_rejected = std::move(reply.usage_rejected);
    return out;
  };
}

bool is_context_length_error(const PolicyReply& reply) {
  if (!reply.error) return false;
  if (reply.error->kind == LlmErrorKind::kContextLength) return true;
  std::string m = reply.error->message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* needle : {"context length", "context_length", "maximum context",
                             "prompt is too long", "too many tokens", "context window"}) {
    if (m.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace marathon
