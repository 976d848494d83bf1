#include "loop/drive.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

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
  // A terminal gets the status line; a pipe or a file, plain lines.
  const char* term = std::getenv("TERM");
  bool tty = ::isatty(fileno(stdout)) == 1 && !(term && std::strcmp(term, "dumb") == 0);
  std::unique_ptr<ProgressSink> progress;
  if (!options.quiet) {
    if (tty) {
      progress = std::make_unique<StatusLineProgress>(stdout);
    } else {
      progress = std::make_unique<TerminalProgress>(stdout);
    }
  }
  RunnerHooks hooks;
  install_interrupt_handler();
  hooks.interrupted = interrupt_requested;
  hooks.logged_result = options.logged_result;
  hooks.between_steps = options.between_steps;
  hooks.progress = progress.get();
  hooks.executor = options.executor;
  Runner runner(store, policy, tools, run_dir, hooks);
  RunReport report = runner.run();
  progress.reset();  // the status line is erased before the summary
  std::fputs(run_summary(runner.state(), report, run_dir.string()).c_str(), stdout);
  std::fflush(stdout);
  if (final_state) *final_state = runner.state();
  return report;
}

int exit_code_for(const RunReport& report) { return report.outcome == RunOutcome::kFailed ? 1 : 0; }

}  // namespace marathon
