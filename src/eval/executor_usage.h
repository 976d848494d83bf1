// Executor utilisation read back from a run's log (what `status` and the dashboard show): each
// executed evaluation's eval.finished names where it ran (executor{name, where}) and how long it
// took (elapsed_s). A local slot is tallied by its name (gpu0, cpu1); a Ray job by its node
// ("ray node <ip>").
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/events.h"
#include "eval/executor.h"

namespace marathon::eval {

// The usage slot of a Ray evaluation: "ray node <ip>", or the cluster (`executor`) when the node
// is unknown. The one name the executor's own tally and the log's share.
std::string ray_slot(const std::string& executor, const std::string& node);

class UsageTally {
 public:
  // Counts an eval.finished that ran (not cached) and names its executor; ignores anything else.
  void add(const Event& e);
  std::vector<SlotUsage> slots() const;  // in name order
  bool empty() const { return slots_.empty(); }

 private:
  std::map<std::string, SlotUsage> slots_;
};

// [{name, evaluations, busy_s, busy_fraction}] with busy_fraction = busy_s / wall_s (null when the
// wall time is 0).
json usage_json(const std::vector<SlotUsage>& slots, double wall_s);

// "cpu0 82% (5 evals, 10.2 s), cpu1 ..." for one line of `status`.
std::string usage_text(const std::vector<SlotUsage>& slots, double wall_s);

}  // namespace marathon::eval
