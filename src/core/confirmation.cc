#include "core/confirmation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/eval_result.h"
#include "core/state.h"

namespace marathon {

namespace {

using events::EvalRemeasured;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ci_half_of(const EvalResult& r) {
  if (!r.score_ci_low || !r.score_ci_high) return 0;
  double h = (*r.score_ci_high - *r.score_ci_low) / 2;
  return std::isfinite(h) && h > 0 ? h : 0;
}

bool finite(const std::optional<double>& v) { return v && std::isfinite(*v); }

void remove_pending(Confirmations& c, const std::string& candidate) {
  c.pending.erase(std::remove(c.pending.begin(), c.pending.end(), candidate), c.pending.end());
}

void set_best(State& s, const std::string& candidate, double value) {
  s.best_score = value;
  s.best_candidate = candidate;
  s.evals_since_improvement = 0;
  s.goal.turns_without_progress = 0;
}

// Pending candidates whose first draw no longer improves on the best are not owed anything more.
void prune_pending(State& s) {
  Confirmations& c = s.confirm;
  std::vector<std::string> keep;
  for (const std::string& cand : c.pending) {
    auto it = c.candidates.find(cand);
    if (it != c.candidates.end() && improves(s.goal.direction, it->second.first, s.best_score)) {
      keep.push_back(cand);
    }
  }
  c.pending = std::move(keep);
}

// A candidate's measurements are final: it becomes the best when it is better than the best by
// more than the noise of either (a tie leaves the best where it is). `candidate` is a copy: the
// caller's may be an element of `pending`, which this erases.
void close(State& s, const std::string candidate) {
  Confirmations& c = s.confirm;
  Measured& m = c.candidates.at(candidate);
  m.closed = true;
  remove_pending(c, candidate);
  if (!m.failed) {
    std::optional<Figure> f = figure_of(s, candidate);
    std::optional<Figure> b = best_figure(s);
    if (!s.best_score || s.best_candidate.empty()) {
      set_best(s, candidate, f->value);
    } else if (candidate != s.best_candidate &&
               improves(s.goal.direction, f->value, s.best_score) && (!b || beyond_noise(*f, *b))) {
      set_best(s, candidate, f->value);
    }
  }
  prune_pending(s);
}

// The confirmation budget is spent: what is pending is announced as it stands (cut short).
void close_if_no_room(State& s) {
  while (!s.confirm.pending.empty() && !confirmation_room(s)) close(s, s.confirm.pending.front());
}

}  // namespace

json confirm_config(const ConfirmSettings& s) {
  return {{"n", s.n}, {"share", s.share}, {"top", s.top}};
}

ConfirmSettings confirm_settings(const json& config) {
  ConfirmSettings s;
  if (!config.is_object()) return s;
  auto it = config.find("confirm");
  if (it == config.end() || !it->is_object()) return s;
  const json& c = *it;
  auto n = c.find("n");
  if (n == c.end() || !n->is_number_integer() || n->get<int64_t>() < 0) return s;
  s.n = n->get<int64_t>();
  auto share = c.find("share");
  if (share != c.end() && share->is_number() && std::isfinite(share->get<double>()) &&
      share->get<double>() > 0) {
    s.share = share->get<double>();
  }
  auto top = c.find("top");
  if (top != c.end() && top->is_number_integer() && top->get<int64_t>() >= 0) {
    s.top = top->get<int64_t>();
  }
  return s;
}

json to_json(const Confirmations& c) {
  json cands = json::object();
  for (const auto& [k, m] : c.candidates) {
    cands[k] = {m.first,      m.first_seq, m.cache_key, m.samples, m.ci_half,
                m.remeasured, m.lost,      m.failed,    m.closed};
  }
  return {{"settings", confirm_config(c.settings)},
          {"candidates", std::move(cands)},
          {"pending", c.pending},
          {"remeasured", c.remeasured},
          {"remeasure_s", c.remeasure_s},
          {"remeasure_gpu_s", c.remeasure_gpu_s},
          {"baseline_samples", c.baseline_samples}};
}

Confirmations confirmations_from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("confirm: not an object");
  Confirmations c;
  c.settings = confirm_settings(json{{"confirm", j.at("settings")}});
  for (const auto& [k, v] : j.at("candidates").items()) {
    if (!v.is_array() || v.size() != 9) throw std::invalid_argument("confirm: bad candidate " + k);
    Measured m;
    m.first = v[0].get<double>();
    m.first_seq = v[1].get<int64_t>();
    m.cache_key = v[2].get<std::string>();
    m.samples = v[3].get<std::vector<double>>();
    m.ci_half = v[4].get<double>();
    m.remeasured = v[5].get<int64_t>();
    m.lost = v[6].get<int64_t>();
    m.failed = v[7].get<bool>();
    m.closed = v[8].get<bool>();
    c.candidates.emplace_hint(c.candidates.end(), k, std::move(m));
  }
  c.pending = j.at("pending").get<std::vector<std::string>>();
  c.remeasured = j.at("remeasured").get<int64_t>();
  c.remeasure_s = j.at("remeasure_s").get<double>();
  c.remeasure_gpu_s = j.at("remeasure_gpu_s").get<double>();
  c.baseline_samples = j.at("baseline_samples").get<std::vector<double>>();
  return c;
}

bool confirm_on_evaluation(State& s, const events::EvalFinished& p, int64_t seq,
                           const EvalResult& r) {
  Confirmations& c = s.confirm;
  if (!p.cached && p.status == EvalStatus::kOk && finite(r.baseline_score)) {
    c.baseline_samples.push_back(*r.baseline_score);
  }
  if (c.settings.n <= 0) return true;
  const bool counts =
      p.status == EvalStatus::kOk && r.correct && !r.has_violations() && finite(r.score);
  if (!counts) return false;
  auto [it, fresh] = c.candidates.try_emplace(p.candidate);
  if (!fresh) return false;  // measured before (a cached repeat): its record stands
  Measured& m = it->second;
  m.first = *r.score;
  m.first_seq = seq;
  m.cache_key = p.cache_key;
  m.ci_half = ci_half_of(r);
  if (improves(s.goal.direction, m.first, s.best_score)) {
    c.pending.push_back(p.candidate);
    close_if_no_room(s);
  }
  return false;
}

void confirm_on_remeasured(State& s, const EvalRemeasured& p, const EvalResult& r) {
  Confirmations& c = s.confirm;
  c.remeasured += 1;
  if (std::isfinite(p.elapsed_s) && p.elapsed_s > 0) c.remeasure_s += p.elapsed_s;
  if (std::isfinite(p.gpu_s) && p.gpu_s > 0) {
    c.remeasure_gpu_s += p.gpu_s;
    s.used.gpu_s += p.gpu_s;
  }
  if (p.status == EvalStatus::kOk && finite(r.baseline_score)) {
    c.baseline_samples.push_back(*r.baseline_score);
  }
  auto it = c.candidates.find(p.candidate);
  if (it == c.candidates.end() || it->second.closed) {
    close_if_no_room(s);
    return;  // nothing owed to it (a log from elsewhere): counted, not used
  }
  Measured& m = it->second;
  m.remeasured += 1;
  if (p.status != EvalStatus::kOk) {
    m.lost += 1;  // the evaluator failed (a timeout, a crash): no verdict on the candidate
  } else if (!r.correct || r.has_violations()) {
    m.failed = true;
  } else if (finite(r.score)) {
    m.samples.push_back(*r.score);
    m.ci_half = std::max(m.ci_half, ci_half_of(r));
  } else {
    m.lost += 1;
  }
  if (m.failed || m.remeasured >= std::max<int64_t>(c.settings.n, 1)) {
    close(s, p.candidate);
  }
  close_if_no_room(s);
}

bool confirmation_room(const State& s) {
  const Confirmations& c = s.confirm;
  if (c.settings.n <= 0) return false;
  if (s.limits.max_tool_calls > 0 &&
      static_cast<double>(c.remeasured) >=
          std::floor(c.settings.share * static_cast<double>(s.limits.max_tool_calls))) {
    return false;
  }
  if (s.limits.max_gpu_s > 0 && c.remeasure_gpu_s >= c.settings.share * s.limits.max_gpu_s) {
    return false;
  }
  return true;
}

std::optional<RemeasureDue> confirmation_due(const State& s) {
  const Confirmations& c = s.confirm;
  if (c.pending.empty() || !confirmation_room(s)) return std::nullopt;
  const std::string& cand = c.pending.front();
  const Measured& m = c.candidates.at(cand);
  return RemeasureDue{cand, m.cache_key, m.remeasured, EvalRemeasured::kBest};
}

std::optional<RemeasureDue> final_confirmation_due(const State& s) {
  if (std::optional<RemeasureDue> d = confirmation_due(s)) return d;
  const Confirmations& c = s.confirm;
  if (!confirmation_room(s) || c.settings.top <= 0) return std::nullopt;
  // A candidate whose final re-measurements have begun gets all of them (a crash or a stop in
  // between resumes it here), whatever its first samples say.
  const Measured* begun = nullptr;
  std::string begun_cand;
  for (const auto& [cand, m] : c.candidates) {
    if (m.closed || m.failed || m.remeasured == 0) continue;
    if (!begun || m.first_seq < begun->first_seq) begun = &m, begun_cand = cand;
  }
  if (begun) {
    return RemeasureDue{begun_cand, begun->cache_key, begun->remeasured, EvalRemeasured::kFinal};
  }
  std::vector<Figure> ranked;
  for (const auto& [cand, m] : c.candidates) {
    if (!m.failed) ranked.push_back(*figure_of(s, cand));
  }
  // Better first; equal figures in the order they were first measured.
  std::stable_sort(ranked.begin(), ranked.end(), [&](const Figure& a, const Figure& b) {
    double ka = better_first_key(s.goal.direction, a.value);
    double kb = better_first_key(s.goal.direction, b.value);
    if (ka != kb) return ka < kb;
    return c.candidates.at(a.candidate).first_seq < c.candidates.at(b.candidate).first_seq;
  });
  std::optional<Figure> best = best_figure(s);
  const size_t top = static_cast<size_t>(c.settings.top);
  for (size_t i = 0; i < ranked.size() && i < top; ++i) {
    const Figure& f = ranked[i];
    const Measured& m = c.candidates.at(f.candidate);
    if (m.closed) continue;
    bool in_reach =
        !best || improves(s.goal.direction, f.value, best->value) || !beyond_noise(f, *best);
    if (in_reach) {
      return RemeasureDue{f.candidate, m.cache_key, m.remeasured, EvalRemeasured::kFinal};
    }
  }
  return std::nullopt;
}

std::optional<Figure> figure_of(const State& s, const std::string& candidate) {
  const Confirmations& c = s.confirm;
  auto it = c.candidates.find(candidate);
  if (it == c.candidates.end()) return std::nullopt;
  const Measured& m = it->second;
  Figure f;
  f.candidate = candidate;
  f.first = m.first;
  f.samples = static_cast<int64_t>(m.samples.size());
  if (m.samples.empty()) {
    f.value = f.lo = f.hi = m.first;
  } else {
    f.value = median(m.samples);
    auto [lo, hi] = std::minmax_element(m.samples.begin(), m.samples.end());
    f.lo = *lo;
    f.hi = *hi;
  }
  f.noise = std::max((f.hi - f.lo) / 2, m.ci_half);
  f.confirmed = m.closed && !m.samples.empty() && !m.failed;
  f.cut_short = m.closed && !m.failed && m.remeasured < c.settings.n;
  f.pending = std::find(c.pending.begin(), c.pending.end(), candidate) != c.pending.end();
  f.failed = m.failed;
  f.lost = m.lost;
  return f;
}

std::optional<Figure> best_figure(const State& s) {
  if (s.best_candidate.empty() || !s.best_score) return std::nullopt;
  return figure_of(s, s.best_candidate);
}

bool beyond_noise(const Figure& a, const Figure& b) {
  return std::fabs(a.value - b.value) > std::max(a.noise, b.noise);
}

std::vector<Figure> ties_with_best(const State& s) {
  std::vector<Figure> out;
  std::optional<Figure> best = best_figure(s);
  if (!best) return out;
  for (const auto& [cand, m] : s.confirm.candidates) {
    if (cand == s.best_candidate) continue;
    std::optional<Figure> f = figure_of(s, cand);
    if (f->confirmed && !beyond_noise(*f, *best)) out.push_back(*f);
  }
  std::stable_sort(out.begin(), out.end(), [&](const Figure& a, const Figure& b) {
    return better_first_key(s.goal.direction, a.value) <
           better_first_key(s.goal.direction, b.value);
  });
  return out;
}

BaselineComparison compare_with_baseline(const State& s) {
  BaselineComparison out;
  if (!finite(s.baseline_score) || !finite(s.best_score)) return out;
  out.baseline = *s.baseline_score;
  out.baseline_lo = out.baseline_hi = out.baseline;
  const std::vector<double>& b = s.confirm.baseline_samples;
  if (!b.empty()) {
    auto [lo, hi] = std::minmax_element(b.begin(), b.end());
    out.baseline_lo = std::min(out.baseline, *lo);
    out.baseline_hi = std::max(out.baseline, *hi);
  }
  double best_noise = 0;
  if (std::optional<Figure> f = best_figure(s)) best_noise = f->noise;
  out.noise = std::max(best_noise, (out.baseline_hi - out.baseline_lo) / 2);
  if (!improves(s.goal.direction, *s.best_score, out.baseline)) {
    out.verdict = BaselineVerdict::kNotBetter;
  } else if (std::fabs(*s.best_score - out.baseline) > out.noise) {
    out.verdict = BaselineVerdict::kBeats;
  } else {
    out.verdict = BaselineVerdict::kWithinNoise;
  }
  return out;
}

std::string best_figure_text(const State& s, std::string (*num)(double)) {
  if (!s.best_score) return "";
  std::optional<Figure> f = best_figure(s);
  return fmt::format("best {} {} (candidate {})", s.goal.metric,
                     f ? figure_text(*f, num) : num(*s.best_score), s.best_candidate.substr(0, 12));
}

std::string figure_text(const Figure& f, std::string (*num)(double)) {
  std::string out = num(f.value);
  std::string why;
  if (f.failed) {
    why = "incorrect when re-measured; never the best";
  } else if (f.samples == 0) {
    why = f.pending     ? "first draw; being re-measured"
          : f.cut_short ? "one draw, not re-measured: the confirmation budget is spent"
                        : "one draw, not re-measured";
  } else {
    why = f.samples == 1 ? "one re-measurement"
                         : fmt::format("median of {} re-measurements, {} to {}", f.samples,
                                       num(f.lo), num(f.hi));
    why += "; first draw " + num(f.first);
    if (f.cut_short) why += "; cut short: the confirmation budget is spent";
    if (f.pending) why += "; more re-measurements owed";
  }
  if (f.lost > 0) why += fmt::format("; {} re-measurement(s) failed to run", f.lost);
  return out + " (" + why + ")";
}

std::string baseline_text(const State& s, std::string (*num)(double)) {
  BaselineComparison c = compare_with_baseline(s);
  const std::string better =
      s.goal.direction == Direction::kMin ? "lower is better" : "higher is better";
  switch (c.verdict) {
    case BaselineVerdict::kUnknown:
      return "";
    case BaselineVerdict::kBeats:
      return fmt::format("better than the baseline {} beyond noise", num(c.baseline));
    case BaselineVerdict::kWithinNoise:
      return fmt::format(
          "no candidate beat the baseline beyond noise: the best, {}, is within {} of the "
          "baseline {}",
          num(*s.best_score), num(c.noise), num(c.baseline));
    case BaselineVerdict::kNotBetter:
      return fmt::format(
          "no candidate beat the baseline: the best, {}, is not better than the baseline {} ({})",
          num(*s.best_score), num(c.baseline), better);
  }
  return "";
}

std::string ties_text(const State& s, std::string (*num)(double)) {
  std::vector<Figure> ties = ties_with_best(s);
  if (ties.empty()) return "";
  std::string out = "tied within noise with ";
  for (size_t i = 0; i < ties.size(); ++i) {
    if (i > 0) out += ", ";
    out += fmt::format("candidate {} ({})", ties[i].candidate.substr(0, 12),
                       figure_text(ties[i], num));
  }
  return out;
}

json to_json(const Figure& f) {
  return {{"candidate", f.candidate},
          {"value", f.value},
          {"first_draw", f.first},
          {"samples", f.samples},
          {"min", f.lo},
          {"max", f.hi},
          {"noise", f.noise},
          {"confirmed", f.confirmed},
          {"cut_short", f.cut_short},
          {"pending", f.pending},
          {"failed", f.failed},
          {"lost", f.lost}};
}

json confirmation_json(const State& s) {
  const Confirmations& c = s.confirm;
  std::optional<Figure> best = best_figure(s);
  json ties = json::array();
  for (const Figure& f : ties_with_best(s)) ties.push_back(to_json(f));
  BaselineComparison b = compare_with_baseline(s);
  const char* verdict = b.verdict == BaselineVerdict::kBeats         ? "beats"
                        : b.verdict == BaselineVerdict::kWithinNoise ? "within_noise"
                        : b.verdict == BaselineVerdict::kNotBetter   ? "not_better"
                                                                     : "unknown";
  json baseline = {{"verdict", verdict}};
  if (b.verdict != BaselineVerdict::kUnknown) {
    baseline["score"] = b.baseline;
    baseline["min"] = b.baseline_lo;
    baseline["max"] = b.baseline_hi;
    baseline["noise"] = b.noise;
  }
  return {{"n", c.settings.n},
          {"share", c.settings.share},
          {"top", c.settings.top},
          {"remeasured", c.remeasured},
          {"remeasure_gpu_s", c.remeasure_gpu_s},
          {"room", confirmation_room(s)},
          {"best", best ? to_json(*best) : json(nullptr)},
          {"ties", std::move(ties)},
          {"pending", c.pending},
          {"baseline", std::move(baseline)}};
}

}  // namespace marathon
