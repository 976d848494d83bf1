// Token estimates without a tokenizer, calibrated against the usage the provider reported.
//
// The raw estimate counts character classes the way BPE vocabularies split text: a word costs about
// one token per 4 letters, a run of digits one per 3, punctuation about one per character, a run of
// spaces one, a non-ASCII code point one. It is deliberately a little pessimistic for code and
// JSON. The calibration ratio is fitted from the log: each model.request records the raw estimate
// of the prompt it sent (`tokens_estimate`), the model.response that follows records the provider's
// `usage.prompt_tokens`; the ratio is sum(reported) / sum(estimated) over the most recent pairs.
#pragma once

#include <cstdint>
#include <deque>
#include <string_view>
#include <vector>

#include "core/event.h"

namespace marathon::context {

// Raw estimate of the tokens in a piece of text.
int64_t estimate_text_tokens(std::string_view text);

// Raw estimate for one canonical chat message (content, tool calls, tool_call_id, role overhead).
int64_t estimate_message_tokens(const json& message);

// Raw estimate for a whole request: every message plus the tools array (schemas count too).
int64_t estimate_request_tokens(const json& messages, const json& tools);

// The calibration ratio fitted from the log (pure). 1.0 when the log has no usable pair; clamped to
// [0.5, 4.0] so one odd provider report cannot make the estimate absurd.
double fit_token_ratio(const std::vector<Event>& events, int max_pairs = 32);

// The same fit kept up to date event by event (events in seq order): ratio() after adding every
// event of a log equals fit_token_ratio(log, max_pairs), bit for bit.
class TokenRatioFit {
 public:
  explicit TokenRatioFit(int max_pairs = 32) : max_pairs_(max_pairs) {}
  void add(const Event& e);
  double ratio() const;

 private:
  struct Pair {
    int64_t estimated;
    int64_t reported;
  };
  int max_pairs_;
  std::deque<Pair> pairs_;  // oldest first, at most max_pairs_
  int64_t pending_estimate_ = 0;
  bool awaiting_response_ = false;  // a model.request not yet followed by a model.response
};

inline int64_t calibrated(int64_t raw, double ratio) {
  return static_cast<int64_t>(static_cast<double>(raw) * ratio + 0.999);
}

}  // namespace marathon::context
