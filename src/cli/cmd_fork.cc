// marathon fork RUN_DIR --at SEQ --run-dir NEW [--max-tool-calls N ...]: a new run from a prefix of
// an old one's log, optionally with other limits (a run that spent its budget carries on in a fork
// with more).
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/usage.h"
#include "core/event_store.h"
#include "core/fork.h"
#include "core/run_lock.h"
#include "goal/limits.h"

namespace marathon::cli {
namespace {

struct ForkOptions {
  std::string run_dir;
  int64_t at = 0;
  std::string new_dir;
  events::BudgetSpec budget;
  std::optional<double> max_hours;
};

// The first budget flag out of range, as "--flag: problem"; "" when all are usable (the same
// ranges as `marathon run`'s, goal/limits.h).
std::string budget_problem(const ForkOptions& o) {
  const events::BudgetSpec& b = o.budget;
  std::vector<std::pair<const char*, std::optional<std::string>>> checks;
  if (b.max_tool_calls) {
    checks.emplace_back("--max-tool-calls",
                        limit_problem("max_tool_calls", double(*b.max_tool_calls), true));
  }
  if (o.max_hours) {
    checks.emplace_back("--max-hours", range_problem(*o.max_hours, 0, true, kMaxWallS / 3600));
  }
  if (b.max_cost_usd) {
    checks.emplace_back("--max-cost", limit_problem("max_cost_usd", *b.max_cost_usd, false));
  }
  if (b.max_tokens) {
    checks.emplace_back("--max-tokens", limit_problem("max_tokens", double(*b.max_tokens), true));
  }
  if (b.max_gpu_s) {
    checks.emplace_back("--max-gpu-seconds", limit_problem("max_gpu_s", *b.max_gpu_s, false));
  }
  for (const auto& [flag, problem] : checks) {
    if (problem) return std::string(flag) + ": " + *problem;
  }
  return "";
}

int run_fork(ForkOptions o) {
  if (std::string problem = budget_problem(o); !problem.empty()) {
    spdlog::error("fork: {}", problem);
    return 2;
  }
  if (o.max_hours) o.budget.max_wall_s = *o.max_hours * 3600.0;
  std::optional<events::BudgetSpec> budget;
  if (o.budget != events::BudgetSpec{}) budget = o.budget;
  // The new run is locked while it is built, so that no `resume` of it starts half-way.
  std::optional<RunLock> lock;
  try {
    lock.emplace(RunLock::acquire_new(o.new_dir));
    ForkResult r;
    try {
      r = fork_run(o.run_dir, o.at, o.new_dir, budget);
    } catch (...) {
      lock->abandon_new();
      throw;
    }
    std::cout << "forked " << (r.from_run_id.empty() ? o.run_dir : r.from_run_id) << " at seq "
              << r.at_seq << " into " << o.new_dir << " as " << r.run_id << " (" << r.blobs
              << " blobs, " << r.files << " workspace files)\n";
    if (budget) std::cout << "limits replaced: " << json(*budget).dump() << "\n";
    return 0;
  } catch (const StoreError& e) {
    spdlog::error("fork: {}", e.what());
    return 1;
  }
}

}  // namespace

void register_fork(CLI::App& app) {
  auto o = std::make_shared<ForkOptions>();
  auto* cmd = app.add_subcommand("fork", "Start a new run from the log of another, up to a seq");
  cmd->add_option("RUN_DIR", o->run_dir, "The run to fork from")
      ->required()
      ->check(existing_run_dir_check());
  cmd->add_option("--at", o->at, "Last seq of the old log to keep")->required();
  cmd->add_option("--run-dir", o->new_dir, "Directory of the new run (must not exist or be empty)")
      ->required();
  cmd->add_option("--max-tool-calls", o->budget.max_tool_calls,
                  "Tool-call budget of the fork (default: the original's)");
  cmd->add_option("--max-hours", o->max_hours,
                  "Wall-time budget in hours (default: the original's)");
  cmd->add_option("--max-cost", o->budget.max_cost_usd,
                  "Cost budget in USD (default: the original's)");
  cmd->add_option("--max-tokens", o->budget.max_tokens, "Token budget (default: the original's)");
  cmd->add_option("--max-gpu-seconds", o->budget.max_gpu_s,
                  "GPU-time budget (default: the original's)");
  cmd->callback([o] { exit_code = run_fork(*o); });
}

}  // namespace marathon::cli
