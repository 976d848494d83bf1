#include "policy/replay_policy.h"

#include <fmt/format.h>

namespace marathon {

PolicyReply reply_from_response(const json& p) {
  PolicyReply r;
  r.message = p.value("message", json::object());
  if (p.contains("usage") && p["usage"].is_object()) {
    r.prompt_tokens = p["usage"].value("prompt_tokens", int64_t{0});
    r.completion_tokens = p["usage"].value("completion_tokens", int64_t{0});
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
    if (e.type == ev::kModelResponse) replies_.push_back(reply_from_response(e.payload));
  }
}

PolicyReply ReplayPolicy::next(const PolicyRequest&) {
  if (next_ < replies_.size()) return replies_[next_++];
  PolicyReply r;
  r.provider = "replay";
  r.error = json{
      {"kind", "replay_exhausted"},
      {"message",
       fmt::format("the logged run has no model response left (all {} served)", replies_.size())}};
  return r;
}

}  // namespace marathon
