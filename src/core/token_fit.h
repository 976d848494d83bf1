// The token-estimate calibration fitted from the log: each model.request records the raw estimate
// of the prompt it sent (`tokens_estimate`), the model.response that follows records the
// provider's `usage.prompt_tokens`; the ratio is sum(reported) / sum(estimated) over the most
// recent pairs. Part of the run's fold (State::token_fit), so a runner resumed from a checkpoint
// calibrates exactly as the one that wrote it.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/event.h"
#include "core/events.h"

namespace marathon {

// The calibration ratio fitted from the log (pure). 1.0 when the log has no usable pair; clamped to
// [0.5, 4.0] so one odd provider report cannot make the estimate absurd.
double fit_token_ratio(const std::vector<Event>& events, int max_pairs = 32);

// The same fit kept up to date event by event (events in seq order): ratio() after adding every
// event of a log equals fit_token_ratio(log, max_pairs), bit for bit.
class TokenRatioFit {
 public:
  TokenRatioFit() = default;
  explicit TokenRatioFit(int max_pairs) : max_pairs_(max_pairs) {}
  void add(const Event& e);
  // add() of a model.response, its payload already read.
  void add_response(const events::ModelResponse& p);
  double ratio() const;

  bool operator==(const TokenRatioFit&) const = default;
  // Checkpoint form: [max_pairs, [[estimated, reported], ...], pending_estimate, awaiting].
  json to_json() const;
  // Throws std::invalid_argument (or nlohmann's type_error) for JSON not of that form.
  static TokenRatioFit from_json(const json& j);

 private:
  struct Pair {
    int64_t estimated;
    int64_t reported;

    bool operator==(const Pair&) const = default;
  };
  int max_pairs_ = 32;
  std::deque<Pair> pairs_;  // oldest first, at most max_pairs_
  int64_t pending_estimate_ = 0;
  bool awaiting_response_ = false;  // a model.request not yet followed by a model.response
};

}  // namespace marathon
