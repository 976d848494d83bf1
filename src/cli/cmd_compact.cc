// marathon compact RUN_DIR [--now]: asks for a compaction by hand (control/compact_verb.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "control/compact_verb.h"

namespace marathon::cli {
namespace {

int do_compact(const std::string& run_dir, bool now) {
  control::CompactResult r = control::compact_run(run_dir, now);
  if (r.status != control::VerbStatus::kDone) {
    spdlog::error("{}", r.message);
    return control::exit_code_of(r.status);
  }
  if (!now) {
    std::printf(
        "compaction requested (seq %lld): the runner serves it at its next step%s\n",
        static_cast<long long>(r.seq),
        r.state.paused || r.state.done ? " (the run is stopped: `marathon resume` it)" : "");
    return 0;
  }
  std::printf("compaction (manual, now): %s, source %s, %lld -> %lld tokens (estimate)\n",
              r.outcome.c_str(), r.source.c_str(), static_cast<long long>(r.tokens_before),
              static_cast<long long>(r.tokens_after));
  return 0;
}

}  // namespace

void register_compact(CLI::App& app) {
  auto run_dir = std::make_shared<std::string>();
  auto now = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand(
      "compact", "Ask for a context compaction (served by the runner at its next step)");
  sub->add_option("RUN_DIR", *run_dir, "Run directory")
      ->required()
      ->check(existing_run_dir_check());
  sub->add_flag("--now", *now,
                "Compact a stopped run at once with a structural summary (no model call)");
  sub->callback([run_dir, now] { exit_code = do_compact(*run_dir, *now); });
}

}  // namespace marathon::cli
