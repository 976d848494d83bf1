// ReplayPolicy: answers each request with the next model.response of a logged run, in order, and
// never calls a model. With the loop's logged tool results (loop/replay.h) a replay re-drives a run
// to the same final state; running out of responses is an error reply ("replay_exhausted").
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/event.h"
#include "policy/policy.h"

namespace marathon {

// The reply a model.response payload records (message, usage, cost, provider, model, error).
PolicyReply reply_from_response(const events::ModelResponse& payload);

class ReplayPolicy : public Policy {
 public:
  // `events`: the logged run; its model.response events are served in seq order, each purpose
  // (conversation turns, compaction summaries) from its own queue: a request of one purpose is
  // answered with the next response logged with that purpose.
  explicit ReplayPolicy(const std::vector<Event>& events);
  std::string name() const override { return "replay"; }
  PolicyReply next(const PolicyRequest& request) override;

  size_t served() const;
  size_t available() const;
  // Skips the first `n` responses of the log, whatever their purpose (a resumed replay).
  void skip(int64_t n);
  // Called at each request before it is answered: a replay appends there what others appended to
  // the original while its model call was in flight (loop/replay.h).
  void set_on_ask(std::function<void()> f) { on_ask_ = std::move(f); }

 private:
  struct Queue {
    std::vector<PolicyReply> replies;
    size_t next = 0;
  };
  std::map<std::string, Queue> queues_;  // by purpose ("" : conversation)
  std::vector<std::string> order_;       // the purpose of each response, in log order
  std::function<void()> on_ask_;
};

}  // namespace marathon
