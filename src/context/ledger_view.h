// LedgerView: the strategy ledger rendered for the prompt. The ledger itself (State.ledger) is
// written by the runtime: one `attempt` per evaluation and the model's `note`s (strategy, finding,
// dead_end). The view shows every dead end, the best N attempts, the last M attempts and the most
// recent notes, deduplicated, under a hard size cap; what does not fit is counted, never silently
// dropped. Pure and deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
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
  Direction direction = Direction::kMax;
};

std::string render_ledger_view(const std::vector<LedgerEntry>& ledger, const LedgerViewOptions& o);

// The same view kept up to date as the ledger grows (State.ledger only ever grows): render() reads
// only the entries added since its previous call (each deduplicated, ranked and rendered once) and
// returns the previous text when there are none; its cost otherwise is that of the lines shown.
// A ledger that does not extend the one it saw starts it over.
class LedgerView {
 public:
  explicit LedgerView(LedgerViewOptions o = {});
  const std::string& render(const std::vector<LedgerEntry>& ledger);
  int64_t tokens() const { return tokens_; }  // estimate_text_tokens of the last render
  const LedgerViewOptions& options() const { return o_; }

 private:
  void add(const std::vector<LedgerEntry>& ledger, size_t i);
  const std::string& line(const std::vector<LedgerEntry>& ledger, size_t i);
  void reset();

  LedgerViewOptions o_;
  size_t fed_ = 0;
  int64_t last_seq_ = 0;
  std::vector<std::string> lines_;            // "- " + the entry's line, rendered when first shown
  std::vector<int64_t> costs_;                // its tokens in the view (estimate + 1 for the \n)
  std::set<std::string> seen_notes_;          // kind + normalised text
  std::vector<size_t> dead_ends_, notes_;     // ledger indices, oldest first
  std::map<std::string, size_t> candidates_;  // candidate -> index of its latest attempt
  std::set<size_t> attempts_;                 // the latest attempt per candidate (and unnamed ones)
  std::map<std::pair<double, int64_t>, size_t> best_;  // good attempts of attempts_, best first
  int64_t duplicates_ = 0;
  std::string text_;
  int64_t tokens_ = 0;
};

// One entry on one line, as the view shows it.
std::string render_ledger_line(const LedgerEntry& e, size_t max_chars);

}  // namespace marathon::context
