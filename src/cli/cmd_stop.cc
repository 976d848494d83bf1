// marathon stop RUN_DIR [REASON]: asks the runner of a running run to stop at its next step
// (control/stop_verb.h). The way to stop a run from another terminal or a script, where Ctrl-C
// cannot reach.
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.h"
#include "cli/usage.h"
#include "control/stop_verb.h"

namespace marathon::cli {
namespace {

int do_stop(const std::string& run_dir, const std::string& reason) {
  control::VerbResult r = control::stop_run(run_dir, reason.empty() ? "marathon stop" : reason);
  if (r.status != control::VerbStatus::kDone) {
    spdlog::error("{}", r.message);
    return control::exit_code_of(r.status);
  }
  std::string others;
  for (int b : r.branches_asked) others += (others.empty() ? "" : ", ") + std::to_string(b);
  if (!others.empty()) others = "; asked of branch(es) " + others + " too";
  if (r.seq == 0 && others.empty()) {
    std::printf("the run is already stopped (paused): nothing to do\n");
    return 0;
  }
  if (r.seq == 0) {
    std::printf("stop requested%s: their runners stop at their next step\n", others.c_str());
  } else {
    std::printf("stop requested (seq %lld)%s: the runner stops at its next step\n",
                static_cast<long long>(r.seq), others.c_str());
  }
  return 0;
}

}  // namespace

void register_stop(CLI::App& app) {
  auto run_dir = std::make_shared<std::string>();
  auto reason = std::make_shared<std::string>();
  CLI::App* sub =
      app.add_subcommand("stop", "Ask a running run to stop at its next step (resume carries on)");
  sub->add_option("RUN_DIR", *run_dir, "Run directory")
      ->required()
      ->check(existing_run_dir_check());
  sub->add_option("REASON", *reason, "Why (recorded in the log)");
  sub->callback([run_dir, reason] { exit_code = do_stop(*run_dir, *reason); });
}

}  // namespace marathon::cli
