// ReplayPolicy: answers each request with the next model.response of a logged run, in order, and
// never calls a model. With the loop's logged tool results (loop/replay.h) a replay re-drives a run
// to the same final state; running out of responses is an error reply ("replay_exhausted").
#pragma once

#include <vector>

#include "core/event.h"
#include "policy/policy.h"

namespace marathon {

// The reply a model.response payload records (message, usage, cost, provider, model, error).
PolicyReply reply_from_response(const events::ModelResponse& payload);

class ReplayPolicy : public Policy {
 public:
  // `events`: the logged run; its model.response events are served in seq order.
  explicit ReplayPolicy(const std::vector<Event>& events);
  std::string name() const override { return "replay"; }
  PolicyReply next(const PolicyRequest& request) override;

  size_t served() const { return next_; }
  size_t available() const { return replies_.size(); }

 private:
  std::vector<PolicyReply> replies_;
  size_t next_ = 0;
};

}  // namespace marathon
