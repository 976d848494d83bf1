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
  // replay: RunnerHooks::logged_remeasure
  std::function<std::optional<events::EvalRemeasured>(const RemeasureDue&)> logged_remeasure;
  // The summary as one JSON object on stdout (run_summary_json) instead of text; no live progress.
  bool json_summary = false;
};

// Runs the loop on an open run until it stops. Returns the report and leaves the final state in
// *final_state (when given).
RunReport drive(EventStore& store, const std::filesystem::path& run_dir, Policy& policy,
                const DriveOptions& options, State* final_state = nullptr);

// The summary object of `run --json`: the run folder, outcome and reason, the exit code, and the
// state as `status --json` gives it (best_score, confirmation, budget, ...).
json run_summary_json(const State& s, const RunReport& report, const std::string& run_dir);

// The process exit code for a report: finished or paused on request 0, failed 1, paused by
// SIGINT/SIGTERM 130.
int exit_code_for(const RunReport& report);

}  // namespace marathon
