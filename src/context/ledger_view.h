// LedgerView: the strategy ledger rendered for the prompt. The ledger itself (State.ledger) is
// written by the runtime: one `attempt` per evaluation and the model's `note`s (strategy, finding,
// dead_end). The view shows every dead end, the best N attempts, the last M attempts and the most
// recent notes, deduplicated, under a hard size cap; what does not fit is counted, never silently
// dropped. Pure and deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/state.h"

namespace marathon::context {

inline constexpr const char* kLedgerHeading =
    "## Ledger (written by the runtime from evaluations and notes)";

struct LedgerViewOptions {
  int best_n = 5;
  int recent_m = 8;
  int64_t max_tokens = 4000;    // hard cap on the whole view (estimated tokens)
  size_t max_line_chars = 240;  // each entry is cut to this many characters
  std::string direction = "max";
};

std::string render_ledger_view(const std::vector<LedgerEntry>& ledger, const LedgerViewOptions& o);

// One entry on one line, as the view shows it.
std::string render_ledger_line(const LedgerEntry& e, size_t max_chars);

}  // namespace marathon::context
