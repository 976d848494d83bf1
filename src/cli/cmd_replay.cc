// marathon replay RUN_DIR --run-dir NEW: re-drives a logged run with zero model calls and checks
// that the new run ends in the same state (loop/replay.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>

#include "cli/commands.h"
#include "cli/usage.h"
#include "core/fold.h"
#include "core/run_lock.h"
#include "loop/drive.h"
#include "loop/replay.h"
#include "policy/replay_policy.h"

namespace marathon::cli {

namespace {

// The first key (dotted path) where two JSON values differ, for the mismatch message.
std::string first_difference(const json& a, const json& b, const std::string& where) {
  if (a.type() != b.type() || !a.is_object()) return a == b ? "" : where;
  for (const auto& [k, v] : a.items()) {
    if (!b.contains(k)) return where + "." + k;
    std::string d = first_difference(v, b[k], where + "." + k);
    if (!d.empty()) return d;
  }
  for (const auto& [k, v] : b.items()) {
    if (!a.contains(k)) return where + "." + k;
  }
  return "";
}

int do_replay(const std::string& from, const std::string& to, bool quiet) {
  std::optional<RunLock> lock;
  try {
    lock.emplace(RunLock::acquire_new(to));
  } catch (const StoreError& e) {
    spdlog::error("replay: {}", e.what());
    return 1;
  }
  std::vector<Event> original;
  std::unique_ptr<EventStore> from_store;
  std::unique_ptr<EventStore> store;
  try {
    store = create_replay_run(from, to, &original, &from_store);
  } catch (...) {
    lock->abandon_new();
    throw;
  }
  store->set_write_guard([&lock] { lock->verify(); });
  ReplayPolicy policy(original);
  std::printf("marathon: replaying %s into %s (%zu logged model responses, no model calls)\n",
              from.c_str(), to.c_str(), policy.available());
  std::fflush(stdout);
  State replayed;
  RunReport report = drive_replay(*store, to, original, *from_store, policy, quiet, &replayed);
  json want = comparable_state(fold(original));
  json got = comparable_state(replayed);
  if (want == got) {
    std::printf("replay: final state matches the original (%zu of %zu responses served)\n",
                policy.served(), policy.available());
    return exit_code_for(report);
  }
  std::string d = first_difference(want, got, "state");
  std::printf("replay: final state DIFFERS from the original at %s\n", d.c_str());
  return 1;
}

}  // namespace

void register_replay(CLI::App& app) {
  auto from = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Re-drive a logged run into a new run with zero model calls; check the final state");
  cmd->add_option("RUN_DIR", *from, "The logged run")->required()->check(existing_run_dir_check());
  cmd->add_option("--run-dir", *to, "The new run's directory")->required();
  cmd->add_flag("--quiet", *quiet, "No live progress, only the summary");
  cmd->callback([from, to, quiet] { exit_code = do_replay(*from, *to, *quiet); });
}

}  // namespace marathon::cli
