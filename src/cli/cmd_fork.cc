// marathon fork RUN_DIR --at SEQ --run-dir NEW [--max-tool-calls N ...]: a new run from a prefix of
// an old one's log, optionally with other limits (a run that spent its budget carries on in a fork
// with more).
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <optional>

#include "cli/budget_flags.h"
#include "cli/commands.h"
#include "cli/usage.h"
#include "core/event_store.h"
#include "core/fork.h"
#include "core/run_lock.h"

namespace marathon::cli {
namespace {

struct ForkOptions {
  std::string run_dir;
  int64_t at = 0;
  std::string new_dir;
  BudgetFlags budget;
};

int run_fork(const ForkOptions& o) {
  std::vector<std::pair<const char*, std::optional<std::string>>> checks;
  check_budget_flags(o.budget, checks);
  for (const auto& [flag, problem] : checks) {
    if (problem) {
      spdlog::error("fork: {}: {}", flag, *problem);
      return 2;
    }
  }
  const std::optional<events::BudgetSpec> budget = budget_spec(o.budget);
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
  add_budget_flags(cmd, o->budget, BudgetDefaults::kOriginal);
  cmd->callback([o] { exit_code = run_fork(*o); });
}

}  // namespace marathon::cli
