#include "loop/drive.h"

#include <cstdio>

#include "core/fold.h"
#include "loop/interrupt.h"
#include "loop/progress.h"
#include "loop/run_tools.h"

namespace marathon {

RunReport drive(EventStore& store, const std::filesystem::path& run_dir, Policy& policy,
                const DriveOptions& options, State* final_state) {
  State head;  // run.created alone says what the tools need (a GPU task or not)
  for (const Event& e : store.read(1, 1)) apply(head, e);
  ToolRegistry tools = make_run_tools(&head);
  TerminalProgress progress(stdout);
  RunnerHooks hooks;
  install_interrupt_handler();
  hooks.interrupted = interrupt_requested;
  hooks.logged_result = options.logged_result;
  if (!options.quiet) hooks.progress = &progress;
  Runner runner(store, policy, tools, run_dir, hooks);
  RunReport report = runner.run();
  std::fputs(run_summary(runner.state(), report, run_dir.string()).c_str(), stdout);
  std::fflush(stdout);
  if (final_state) *final_state = runner.state();
  return report;
}

int exit_code_for(const RunReport& report) { return report.outcome == RunOutcome::kFailed ? 1 : 0; }

}  // namespace marathon
