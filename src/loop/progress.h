// Live progress on the terminal while a run goes (one line per tool call, evaluation, budget note,
// goal change, pause or finish) and the summary printed when it stops.
#pragma once

#include <cstdio>
#include <string>

#include "core/state.h"
#include "loop/runner.h"

namespace marathon {

class TerminalProgress : public ProgressSink {
 public:
  explicit TerminalProgress(std::FILE* out = stdout) : out_(out) {}
  void on_event(const Event& e, const State& s) override;

 private:
  std::FILE* out_;
};

// The end-of-run summary: outcome, best score and candidate, evaluations, tool and model calls,
// tokens and cost, wall time, where the run lives and how to carry on.
std::string run_summary(const State& s, const RunReport& report, const std::string& run_dir);

}  // namespace marathon
