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
  std::unique_ptr<LogAboveStatusLine> log_above;  // dies before the status line
  if (!options.quiet && !options.json_summary) {
    if (tty) {
      auto line = std::make_unique<StatusLineProgress>(stdout);
      log_above = std::make_unique<LogAboveStatusLine>(*line);
      progress = std::move(line);
    } else {
      progress = std::make_unique<TerminalProgress>(stdout);
    }
  }
  RunnerHooks hooks;
  install_interrupt_handler();
  hooks.interrupted = interrupt_requested;
  hooks.logged_result = options.logged_result;
  hooks.between_steps = options.between_steps;
  hooks.logged_remeasure = options.logged_remeasure;
  hooks.progress = progress.get();
  hooks.executor = options.executor;
  Runner runner(store, policy, tools, run_dir, hooks);
  RunReport report = runner.run();
  log_above.reset();
  progress.reset();  // the status line is erased before the summary
  if (options.json_summary) {
    std::puts(run_summary_json(runner.state(), report, run_dir.string()).dump().c_str());
  } else {
    std::fputs(run_summary(runner.state(), report, run_dir.string()).c_str(), stdout);
  }
  std::fflush(stdout);
  if (final_state) *final_state = runner.state();
  return report;
}

json run_summary_json(const State& s, const RunReport& report, const std::string& run_dir) {
  json j = to_json(s);
  j["run_dir"] = run_dir;
  j["outcome"] = report.outcome == RunOutcome::kFinished ? "finished"
                 : report.outcome == RunOutcome::kPaused ? "paused"
                                                         : "failed";
  j["reason"] = report.reason;
  j["exit_code"] = exit_code_for(report);
  return j;
}

int exit_code_for(const RunReport& report) {
  if (report.outcome == RunOutcome::kFailed) return 1;
  // Paused by SIGINT or SIGTERM: the shell's convention for a command a signal stopped.
  if (report.outcome == RunOutcome::kPaused && report.reason == "interrupted") return 130;
  return 0;
}

}  // namespace marathon
