// drive: what `marathon run`, `resume` and `replay` share once the run's log is open: the run's
// tools, the policy, SIGINT handling, live progress, the loop, and the summary at the end.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "core/event_store.h"
#include "loop/runner.h"
#include "policy/policy.h"

namespace marathon {

struct DriveOptions {
  bool quiet = false;                   // no live progress (the summary is still printed)
  LoggedResultFn logged_result;         // replay
  eval::Executor* executor = nullptr;   // where evaluations run (null: in-process, one at a time)
  std::function<void()> between_steps;  // replay: RunnerHooks::between_steps
};

// Runs the loop on an open run until it stops. Returns the report and leaves the final state in
// *final_state (when given).
RunReport drive(EventStore& store, const std::filesystem::path& run_dir, Policy& policy,
                const DriveOptions& options, State* final_state = nullptr);

// The process exit code for a report: finished or paused 0, failed 1.
int exit_code_for(const RunReport& report);

}  // namespace marathon
