// ContextConfig: how big the model's window is and when and how far compaction goes.
// Read from the run's config (run.created config), so a resumed run uses the same numbers.
#pragma once

#include <cstdint>

#include "core/event.h"

namespace marathon::context {

struct ContextConfig {
  int64_t context_window = 128000;    // tokens; config.context_window / `--context-window N`
  double soft_threshold = 0.70;       // compaction starts above soft * window
  double hard_threshold = 0.90;       // a prompt is never sent above hard * window
  double keep_recent_outputs = 0.25;  // stage 1 keeps this fraction of the window of newest outputs
  double keep_recent_turns = 0.30;    // stage 2 keeps this fraction of the window of newest turns
  double max_summary = 0.12;          // an installed summary is at most this fraction of the window
  double max_ledger = 0.12;           // the ledger view is at most this fraction of the window
  int ledger_best = 5;                // best N attempts shown
  int ledger_recent = 8;              // last M attempts shown
  int64_t elide_min_bytes =
      240;                    // shorter tool outputs are kept verbatim (a pointer saves nothing)
  double noop_regrow = 0.05;  // after a no-op, wait until the prompt grew by this fraction

  int64_t soft_tokens() const { return static_cast<int64_t>(soft_threshold * context_window); }
  int64_t hard_tokens() const { return static_cast<int64_t>(hard_threshold * context_window); }
  int64_t frac(double f) const { return static_cast<int64_t>(f * context_window); }

  // Reads `context_window` and the optional object `context{soft_threshold, hard_threshold,
  // keep_recent_outputs, keep_recent_turns, max_summary, max_ledger, ledger_best, ledger_recent,
  // elide_min_bytes, noop_regrow}` of a run config. Missing keys keep their defaults; a key of the
  // wrong type or out of range throws std::invalid_argument naming the key.
  static ContextConfig from_run_config(const json& config);
};

}  // namespace marathon::context
