// Live progress while a run goes, and the summary printed when it stops. Not on a terminal (a
// pipe, a file): one plain line per tool call, evaluation, budget note, goal change, pause or
// finish. On a terminal: one status line redrawn in place (tool calls against the budget, best
// score, elapsed, spend, what the runner is doing), with the lines other than tool calls printed
// above it.
#pragma once

#include <spdlog/common.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/state.h"
#include "loop/runner.h"

namespace marathon {

// The plain line for an event ("" for events that get none). `with_tool_calls` false leaves out
// the line of each finished tool call (the status line shows those).
std::string progress_line(const Event& e, const State& s, bool with_tool_calls = true);

class TerminalProgress : public ProgressSink {
 public:
  explicit TerminalProgress(std::FILE* out = stdout) : out_(out) {}
  void on_event(const Event& e, const State& s) override;

 private:
  std::FILE* out_;
};

// What the runner does after `e` ("waiting for the model", "running evaluate", ...); "" when `e`
// does not change it. A run of the search policy "chooses the next candidate" where a model run
// waits for the model.
std::string action_after(const Event& e, const State& s);

// What the status line shows of the state (copied at each event: the State itself is large).
struct StatusFigures {
  int64_t tool_calls = 0;
  int64_t max_tool_calls = 0;
  std::optional<double> best;
  std::string metric;
  double cost_usd = 0;
  double wall_s = 0;  // the run's active wall time at the event
  bool stopped = false;
};
StatusFigures status_figures(const State& s);

// The status line's text: "[tool calls 12/1000] best speedup 1.84 | 3m12s | $0.42 | running
// evaluate". `elapsed_s` is the run's active wall time now.
std::string status_text(const StatusFigures& f, double elapsed_s, const std::string& action);

// The terminal form: a ticker thread redraws the line every second (the elapsed time moves while
// the model thinks); the line is erased before any other line is printed and when the sink dies.
class StatusLineProgress : public ProgressSink {
 public:
  explicit StatusLineProgress(std::FILE* out = stdout);
  ~StatusLineProgress() override;
  void on_event(const Event& e, const State& s) override;
  // Prints through `write` (e.g. a log message on stderr) above the status line: the line is
  // erased first and drawn again after, so that nothing is written through it.
  void print_above(const std::function<void()>& write);

 private:
  void draw_locked();
  std::FILE* out_;
  std::recursive_mutex mu_;  // print_above may be reached from a log call inside on_event
  std::condition_variable_any cv_;
  bool stop_ = false;
  bool have_state_ = false;
  StatusFigures figures_;  // at the last event
  std::string action_ = "starting";
  std::chrono::steady_clock::time_point at_last_event_;
  std::thread ticker_;
};

// The end-of-run summary: outcome, best score and candidate, evaluations, tool and model calls,
// tokens and cost, wall time, where the run lives and how to carry on.
std::string run_summary(const State& s, const RunReport& report, const std::string& run_dir);

// While it lives, every message of spdlog's default logger is printed through
// `line.print_above` (its sinks and their format unchanged); the logger's sinks are restored
// when it dies.
class LogAboveStatusLine {
 public:
  explicit LogAboveStatusLine(StatusLineProgress& line);
  ~LogAboveStatusLine();
  LogAboveStatusLine(const LogAboveStatusLine&) = delete;
  LogAboveStatusLine& operator=(const LogAboveStatusLine&) = delete;

 private:
  std::vector<spdlog::sink_ptr> saved_;  // the logger's sinks before
};

}  // namespace marathon
