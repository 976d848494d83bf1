#include "core/token_fit.h"

#include <algorithm>
#include <stdexcept>

#include "core/events.h"

namespace marathon {

namespace {

// The prompt tokens a provider reported for a conversation turn; 0 for a summariser call (not a
// prompt we estimated) and for usage that is our own estimate (it says nothing of the ratio).
int64_t reported_prompt_tokens(const events::ModelResponse& p) {
  return p.purpose.empty() && !p.usage_estimated ? p.usage.prompt_tokens : 0;
}

int64_t reported_prompt_tokens(const Event& e) {
  return reported_prompt_tokens(payload_of<events::ModelResponse>(e));
}

}  // namespace

double fit_token_ratio(const std::vector<Event>& events, int max_pairs) {
  double sum_estimated = 0;
  double sum_reported = 0;
  int pairs = 0;
  int64_t pending_estimate = 0;  // raw estimate of the last model.request not yet answered
  // Walk backwards: a response is paired with the nearest request before it.
  int64_t reported = 0;
  for (auto it = events.rbegin(); it != events.rend() && pairs < max_pairs; ++it) {
    const Event& e = *it;
    if (is<events::ModelResponse>(e)) {
      reported = reported_prompt_tokens(e);
    } else if (is<events::ModelRequest>(e)) {
      pending_estimate = payload_of<events::ModelRequest>(e).tokens_estimate;
      if (reported > 0 && pending_estimate > 0) {
        sum_estimated += static_cast<double>(pending_estimate);
        sum_reported += static_cast<double>(reported);
        ++pairs;
      }
      reported = 0;
    }
  }
  if (pairs == 0 || sum_estimated <= 0) return 1.0;
  return std::clamp(sum_reported / sum_estimated, 0.5, 4.0);
}

void TokenRatioFit::add(const Event& e) {
  // fit_token_ratio walks backwards and pairs each request with the first response after it.
  if (is<events::ModelRequest>(e)) {
    pending_estimate_ = payload_of<events::ModelRequest>(e).tokens_estimate;
    awaiting_response_ = true;
  } else if (is<events::ModelResponse>(e)) {
    add_response(payload_of<events::ModelResponse>(e));
  }
}

void TokenRatioFit::add_response(const events::ModelResponse& p) {
  if (!awaiting_response_) return;
  awaiting_response_ = false;
  int64_t reported = reported_prompt_tokens(p);
  if (reported > 0 && pending_estimate_ > 0) {
    pairs_.push_back({pending_estimate_, reported});
    if (static_cast<int>(pairs_.size()) > max_pairs_) pairs_.pop_front();
  }
}

double TokenRatioFit::ratio() const {
  double sum_estimated = 0;
  double sum_reported = 0;
  for (auto it = pairs_.rbegin(); it != pairs_.rend(); ++it) {  // newest first, as the walk adds
    sum_estimated += static_cast<double>(it->estimated);
    sum_reported += static_cast<double>(it->reported);
  }
  if (pairs_.empty() || sum_estimated <= 0) return 1.0;
  return std::clamp(sum_reported / sum_estimated, 0.5, 4.0);
}

json TokenRatioFit::to_json() const {
  json pairs = json::array();
  for (const Pair& p : pairs_) pairs.push_back({p.estimated, p.reported});
  return json{max_pairs_, std::move(pairs), pending_estimate_, awaiting_response_};
}

TokenRatioFit TokenRatioFit::from_json(const json& j) {
  if (!j.is_array() || j.size() != 4 || !j[1].is_array()) {
    throw std::invalid_argument("token_fit: not [max_pairs, pairs, pending, awaiting]");
  }
  TokenRatioFit f(j[0].get<int>());
  for (const json& p : j[1]) f.pairs_.push_back({p.at(0).get<int64_t>(), p.at(1).get<int64_t>()});
  if (static_cast<int>(f.pairs_.size()) > f.max_pairs_) {
    throw std::invalid_argument("token_fit: more pairs than max_pairs");
  }
  f.pending_estimate_ = j[2].get<int64_t>();
  f.awaiting_response_ = j[3].get<bool>();
  return f;
}

}  // namespace marathon
