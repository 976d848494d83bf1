// Confirmed best (docs/evaluation.md, "Confirmed best"): a candidate whose first draw would become
// the run's best is evaluated again on fresh inputs (eval.remeasured) before it is announced, and
// the figure announced is the median of those re-measurements with their spread. The first draw is
// left out of the median: it was picked because it was high, so it is biased the way the choice
// was. Two candidates whose figures differ by no more than their noise are a tie, not a win.
//
// This is the fold's part (pure, like the rest of State) and the queries the runner, the policies
// and every view ask of it. The settings come from run.created's config.confirm ({n, share, top},
// written from the task's [goal] confirm, confirm_share, confirm_top); a run without them (a log
// written before confirmation existed) folds as it always did: the best is the best first draw.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon {

struct State;
struct EvalResult;

struct ConfirmSettings {
  int64_t n = 0;       // re-measurements per confirmed candidate; 0: confirmation is off
  double share = 0.5;  // re-measurements at most share x max_tool_calls, GPU s share x max_gpu_s
  int64_t top = 3;     // the final confirmation: the top candidates within noise of the best
  bool operator==(const ConfirmSettings&) const = default;
};

inline constexpr int64_t kDefaultConfirmations = 3;
inline constexpr double kDefaultConfirmShare = 0.5;
inline constexpr int64_t kDefaultConfirmTop = 3;

// config.confirm as run setup records it, and read back (absent or malformed: off).
json confirm_config(const ConfirmSettings& s);
ConfirmSettings confirm_settings(const json& config);

// What the log says of one candidate with a correct, scored, rule-abiding result.
struct Measured {
  double first = 0;       // the first draw: the score of its first counting eval.finished
  int64_t first_seq = 0;  // that eval.finished
  std::string cache_key;
  std::vector<double> samples;  // the scores of its counting re-measurements, in order
  double ci_half = 0;           // the widest half-width of a score_ci its results reported
  int64_t remeasured = 0;       // re-measurements logged
  int64_t lost = 0;             // of those, outcomes other than ok (no sample, no verdict)
  // A re-measurement was incorrect or broke a rule: the candidate is not reliably correct and
  // never becomes the best.
  bool failed = false;
  // Re-measured as often as asked, or cut short by the confirmation budget: its figure is final.
  bool closed = false;
  bool operator==(const Measured&) const = default;
};

struct Confirmations {
  ConfirmSettings settings;
  std::map<std::string, Measured> candidates;  // candidate hash -> its measurements
  // Candidates whose first draw would become the best, in the order they came; the runner
  // re-measures the first before anything else happens.
  std::vector<std::string> pending;
  int64_t remeasured = 0;  // eval.remeasured events
  double remeasure_s = 0;
  double remeasure_gpu_s = 0;
  // baseline_score of every executed evaluation and re-measurement that reported one: the
  // baseline's own spread.
  std::vector<double> baseline_samples;
  bool operator==(const Confirmations&) const = default;
};

json to_json(const Confirmations& c);                  // checkpoint form
Confirmations confirmations_from_json(const json& j);  // throws std::invalid_argument

// ---- fold rules (core/fold.cc)
// -------------------------------------------------------------------

// An eval.finished (its result read as `r`). A counting result (ok, correct, no violations, a
// score) is the candidate's first draw the first time; when it would improve on the best, the
// candidate is pending. Returns true when confirmation is off: fold then moves the best itself.
bool confirm_on_evaluation(State& s, const events::EvalFinished& p, int64_t seq,
                           const EvalResult& r);
// An eval.remeasured: its sample (or its failure) for the candidate; after the last one asked (or
// when the confirmation budget runs out) the candidate's figure is final and it becomes the best
// when it beats the best by more than the noise.
void confirm_on_remeasured(State& s, const events::EvalRemeasured& p, const EvalResult& r);

// ---- queries
// ---------------------------------------------------------------------------------------

// The re-measurement the runner owes next.
struct RemeasureDue {
  std::string candidate;
  std::string cache_key;
  int64_t index = 0;
  std::string phase;  // events::EvalRemeasured::kBest | kFinal
  bool operator==(const RemeasureDue&) const = default;
};

// During the run: the first pending candidate's next re-measurement, while the confirmation budget
// has room. nullopt when none is owed.
std::optional<RemeasureDue> confirmation_due(const State& s);
// At the run's end (finish, a budget, the target, a stop request): a pending one first, then each
// of the top `settings.top` candidates (by figure) that is better than the best or within its
// noise and not yet re-measured as often as asked.
std::optional<RemeasureDue> final_confirmation_due(const State& s);
// Whether the confirmation budget has room for one more re-measurement.
bool confirmation_room(const State& s);

// A candidate's figure as every view shows it.
struct Figure {
  std::string candidate;
  double value = 0;        // the median of the samples, else the first draw
  double first = 0;        // the first draw
  int64_t samples = 0;     // re-measurements that gave a score
  double lo = 0, hi = 0;   // the samples' range (value, value without samples)
  double noise = 0;        // half the range, or the widest score_ci half-width if larger
  bool confirmed = false;  // closed with at least one sample
  bool cut_short = false;  // closed before `n` re-measurements: the budget ran out
  bool pending = false;    // its re-measurement is owed
  bool failed = false;     // a re-measurement was incorrect
  int64_t lost = 0;
};
std::optional<Figure> figure_of(const State& s, const std::string& candidate);
// The best's figure (nullopt without a best).
std::optional<Figure> best_figure(const State& s);
// Confirmed candidates other than the best whose figure is within noise of the best's: a tie.
std::vector<Figure> ties_with_best(const State& s);

// Whether a and b differ by more than the larger of their noises.
bool beyond_noise(const Figure& a, const Figure& b);

// The best against the baseline (State::baseline_score, with the spread of every baseline_score
// the run's evaluations reported).
enum class BaselineVerdict {
  kUnknown,      // no baseline or no best
  kBeats,        // better than the baseline by more than the noise
  kWithinNoise,  // better, but by no more than the noise
  kNotBetter,    // equal to it or worse
};
struct BaselineComparison {
  BaselineVerdict verdict = BaselineVerdict::kUnknown;
  double baseline = 0;
  double baseline_lo = 0, baseline_hi = 0;  // the spread of the baseline_scores reported
  double noise = 0;                         // the larger of the best's and the baseline's
};
BaselineComparison compare_with_baseline(const State& s);

// Texts, numbers through `num`:
//   "4.9 (median of 3 re-measurements, 4.69 to 5.41; first draw 5.569)"
//   "5.2 (one draw; re-measurement owed)"
std::string figure_text(const Figure& f, std::string (*num)(double));
// The best with its figure: "best speedup 4.9 (median of 3 ...) (candidate 0123456789ab)"; ""
// when no evaluation was correct yet.
std::string best_figure_text(const State& s, std::string (*num)(double));
// One sentence about the best against the baseline ("" when there is nothing to say), e.g.
// "no candidate beat the baseline beyond noise: best 1.02 against baseline 1 (noise 0.05)".
std::string baseline_text(const State& s, std::string (*num)(double));
// "" when there is no tie; else "tied within noise with candidate abc (4.85 ...), ...".
std::string ties_text(const State& s, std::string (*num)(double));

// The JSON view (`status --json` confirmation, the dashboard): settings, counts, the best's
// figure, ties, pending candidates and the baseline verdict.
json confirmation_json(const State& s);
json to_json(const Figure& f);

}  // namespace marathon
