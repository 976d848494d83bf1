// Parallel branches: `marathon run --branches K` runs K agent branches on one goal in one process
// (docs/scale-out.md). Each branch is a run of its own: its own conversation, log and workspace,
// in its own run directory (branch 0 is the run directory itself, branch i > 0 is
// <run dir>/branches/<i>), so that `status`, `log`, the dashboard and resume read every branch as
// they read any run. What the branches share, in this process:
//   - the executor (its slots serve every branch's evaluations),
//   - the result cache (eval/shared_results.h: a candidate any branch evaluated, or is evaluating,
//     is not evaluated again),
//   - findings and dead ends: a `note` of kind finding or dead_end logged by one branch is copied
//     into every other branch's log (ledger.noted with from_branch), so it reaches their prompts,
//   - the budgets: each branch's limits are checked against the run's use, its own plus the
//   others'.
// The run's best is the best over the branches. Resume restores every branch that has not finished.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/event_store.h"
#include "core/state.h"
#include "eval/executor.h"
#include "loop/runner.h"
#include "policy/policy.h"

namespace marathon {

inline constexpr int kMaxBranches = 64;

// Branch i's run directory.
std::filesystem::path branch_dir(const std::filesystem::path& run_dir, int branch);

// How many branches a run has (its run.created config.branches; 1 for a run without branches).
int branch_count(const State& state);

// Pure: `own` with the other branches' use added (tool calls, model calls, tokens, cost, GPU
// time); wall time is the longest of them (the branches run at the same time).
BudgetUsed run_budget_used(const BudgetUsed& own, const std::vector<BudgetUsed>& others);

// Pure: the index of the branch holding the run's best correct score (-1: none yet).
int best_branch(const std::vector<State>& states);

struct Branch {
  std::filesystem::path dir;
  EventStore* store = nullptr;  // the branch's log, held (locked) by the caller
  Policy* policy = nullptr;
};

struct BranchesOptions {
  bool quiet = false;
  eval::Executor* executor = nullptr;  // shared; required
};

struct BranchesReport {
  std::vector<RunReport> reports;
  std::vector<State> states;
  int best = -1;
  std::vector<eval::SlotUsage> usage;  // the executor's, at the end
  double wall_s = 0;                   // from the first branch's start to the last one's stop
  int64_t served_shared = 0;           // evaluations one branch got from another's result
};

// Runs every branch's loop, each in its own thread, until each stops (finished, paused, failed).
BranchesReport drive_branches(const std::vector<Branch>& branches, const BranchesOptions& o);

// The lines `marathon run`/`resume` print at the end of a run with branches.
std::string branches_summary(const BranchesReport& r, const std::filesystem::path& run_dir);

}  // namespace marathon
