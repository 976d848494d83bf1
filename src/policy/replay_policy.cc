#include "policy/replay_policy.h"

#include <fmt/format.h>

namespace marathon {

PolicyReply reply_from_response(const events::ModelResponse& p) {
  PolicyReply r;
  r.message = p.message.is_null() ? json::object() : p.message;
  r.prompt_tokens = p.usage.prompt_tokens;
  r.completion_tokens = p.usage.completion_tokens;
  r.cost_usd = p.cost_usd;
  r.provider = p.provider;
  r.model = p.model;
  r.finish_reason = p.finish_reason;
  r.error = p.error;
  if (p.problems.is_array()) r.problems = p.problems;
  return r;
}

ReplayPolicy::ReplayPolicy(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (is<events::ModelResponse>(e)) {
      replies_.push_back(reply_from_response(payload_of<events::ModelResponse>(e)));
    }
  }
}

PolicyReply ReplayPolicy::next(const PolicyRequest&) {
  if (next_ < replies_.size()) return replies_[next_++];
  PolicyReply r;
  r.provider = "replay";
  r.error = events::ModelError::make(
      LlmErrorKind::kReplayExhausted,
      fmt::format("the logged run has no model response left (all {} served)", replies_.size()));
  return r;
}

}  // namespace marathon
