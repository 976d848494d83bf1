#include "policy/replay_policy.h"

#include <fmt/format.h>

namespace marathon {

PolicyReply reply_from_response(const json& p) {
  PolicyReply r;
  r.message = p.value("message", json::object());
  if (p.contains("usage") && p["usage"].is_object()) {
    r.prompt_tokens = p["usage"].value("prompt_tokens", int64_t{0});
    r.completion_tokens = p["usage"].value("completion_tokens", int64_t{0});
    r.cache_read_tokens = p["usage"].value("cache_read_tokens", int64_t{0});
    r.cache_write_tokens = p["usage"].value("cache_write_tokens", int64_t{0});
  }
  r.cost_usd = p.value("cost_usd", 0.0);
  r.provider = p.value("provider", "");
  r.model = p.value("model", "");
  r.finish_reason = p.value("finish_reason", "");
  if (p.contains("error") && p["error"].is_object()) r.error = p["error"];
  if (p.contains("problems") && p["problems"].is_array()) r.problems = p["problems"];
  return r;
}

ReplayPolicy::ReplayPolicy(const std::vector<Event>& events) {
  for (const Event& e : events) {
    if (e.type != ev::kModelResponse) continue;
    std::string purpose = e.payload.value("purpose", "");
    queues_[purpose].replies.push_back(reply_from_response(e.payload));
    order_.push_back(std::move(purpose));
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
  r.error = json{{"kind", "replay_exhausted"},
                 {"message", fmt::format("the logged run has no {} response left (all {} served)",
                                         request.purpose.empty() ? "model" : request.purpose,
                                         q.replies.size())}};
  return r;
}

}  // namespace marathon
