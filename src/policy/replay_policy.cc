#include "policy/replay_policy.h"

#include <fmt/format.h>

namespace marathon {

PolicyReply reply_from_response(const events::ModelResponse& p) {
  PolicyReply r;
  r.message = p.message.is_null() ? json::object() : p.message;
  r.prompt_tokens = p.usage.prompt_tokens;
  r.completion_tokens = p.usage.completion_tokens;
  r.cache_read_tokens = p.usage.cache_read_tokens;
  r.cache_write_tokens = p.usage.cache_write_tokens;
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
    if (!is<events::ModelResponse>(e)) continue;
    events::ModelResponse p = payload_of<events::ModelResponse>(e);
    queues_[p.purpose].replies.push_back(reply_from_response(p));
    order_.push_back(p.purpose);
  }
}

size_t ReplayPolicy::served() const {
  size_t n = 0;
  for (const auto& [purpose, q] : queues_) n += q.next;
  return n;
}

size_t ReplayPolicy::available() const { return order_.size(); }

void ReplayPolicy::skip(int64_t n) {
  for (int64_t i = 0; i < n && static_cast<size_t>(i) < order_.size(); ++i) {
    Queue& q = queues_[order_[static_cast<size_t>(i)]];
    if (q.next < q.replies.size()) ++q.next;
  }
}

PolicyReply ReplayPolicy::next(const PolicyRequest& request) {
  if (on_ask_) on_ask_();
  Queue& q = queues_[request.purpose];
  if (q.next < q.replies.size()) return q.replies[q.next++];
  PolicyReply r;
  r.provider = "replay";
  r.error = events::ModelError::make(
      LlmErrorKind::kReplayExhausted,
      fmt::format("the logged run has no {} response left (all {} served)",
                  request.purpose.empty() ? "model" : request.purpose, q.replies.size()));
  return r;
}

}  // namespace marathon
