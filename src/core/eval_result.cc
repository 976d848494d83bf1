// EvalResult: the evaluator contract's field names live here and nowhere else in the runtime.
#include "core/eval_result.h"

#include <fmt/format.h>

#include "core/payload_reader.h"

namespace marathon {

namespace {

constexpr const char* kSchemaVersion = "schema_version";
constexpr const char* kCorrect = "correct";
constexpr const char* kScore = "score";
constexpr const char* kMetrics = "metrics";
constexpr const char* kBaselineScore = "baseline_score";
constexpr const char* kDetails = "details";
constexpr const char* kViolations = "violations";
constexpr const char* kLog = "log";
constexpr const char* kErrorKind = "error_kind";
constexpr const char* kFailure = "failure";
constexpr const char* kError = "error";
constexpr const char* kFigures = "figures";
constexpr const char* kProfile = "profile";
constexpr const char* kScoreCi = "score_ci";

bool nonempty(const json& v) {
  if (v.is_null()) return false;
  if (v.is_array() || v.is_object()) return !v.empty();
  return true;
}

}  // namespace

bool EvalResult::has_violations() const { return nonempty(violations); }

const std::vector<EvalResultField>& eval_result_fields() {
  static const std::vector<EvalResultField> kFields = {
      {kSchemaVersion, {"integer"}, true},
      {kCorrect, {"boolean"}, true},
      {kScore, {"number", "null"}, true},
      {kMetrics, {"object"}, false},
      {kBaselineScore, {"number", "null"}, false},
      {kDetails, {"array", "object"}, false},
      {kViolations, {"array"}, false},
      {kLog, {"string"}, false},
      {kErrorKind, {"string"}, false},
      {kFailure, {"string"}, false},
      {kError, {"string"}, false},
      {kFigures, {"object"}, false},
      {kProfile, {"array"}, false},
      {kScoreCi, {"object", "null"}, false},
  };
  return kFields;
}

EvalResult read_eval_result(const json& j) {
  PayloadReader r(j, "eval result");
  EvalResult e;
  e.schema_version = r.integer(kSchemaVersion, kEvalResultSchemaVersion);
  e.correct = r.opt_bool(kCorrect, false);
  e.score = r.opt_num(kScore);
  if (const json* m = r.opt_obj(kMetrics)) e.metrics = *m;
  e.baseline_score = r.opt_num(kBaselineScore);
  if (!e.baseline_score) {
    if (const json* m = r.find(kMetrics)) {
      auto it = m->find(kBaselineScore);
      if (it != m->end() && it->is_number()) e.baseline_score = it->get<double>();
    }
  }
  if (const json* d = r.find(kDetails)) e.details = *d;
  if (const json* v = r.find(kViolations)) e.violations = *v;
  // log, failure and error are free text: a value of another type is shown as nothing.
  auto text = [&](const char* k) {
    const json* v = r.find(k);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  e.log = text(kLog);
  e.error_kind = text(kErrorKind);
  e.failure = text(kFailure);
  e.error = text(kError);
  if (const json* f = r.opt_obj(kFigures)) e.figures = *f;
  if (const json* p = r.find(kProfile)) e.profile = *p;
  if (const json* ci = r.opt_obj(kScoreCi)) {
    PayloadReader c = r.sub(*ci, kScoreCi);
    e.score_ci_low = c.opt_num("low");
    e.score_ci_high = c.opt_num("high");
  }
  return e;
}

std::string validate_eval_output(json& r) {
  if (!r.is_object()) return "the result is not a JSON object";
  if (!r.contains(kSchemaVersion)) return fmt::format("missing field \"{}\"", kSchemaVersion);
  const json& v = r[kSchemaVersion];
  if (!v.is_number_integer()) {
    return fmt::format("field \"{}\" must be an integer, got {}", kSchemaVersion, v.dump());
  }
  if (v.get<int64_t>() != kEvalResultSchemaVersion) {
    return fmt::format("schema_version {} is not supported (this marathon reads {})", v.dump(),
                       kEvalResultSchemaVersion);
  }
  if (!r.contains(kCorrect)) return fmt::format("missing field \"{}\"", kCorrect);
  if (!r[kCorrect].is_boolean()) {
    return fmt::format("field \"{}\" must be true or false, got {}", kCorrect, r[kCorrect].dump());
  }
  if (!r.contains(kScore)) {
    return fmt::format("missing field \"{}\" (use null when not measured)", kScore);
  }
  const json& score = r[kScore];
  if (!score.is_null() && !score.is_number()) {
    return fmt::format("field \"{}\" must be a number or null, got {}", kScore, score.dump());
  }
  // correct with a null score is a correctness-only result (e.g. a GPU task on a CPU machine):
  // valid, but never an improvement (fold only ranks numeric scores).
  if (r.contains(kBaselineScore) && !r[kBaselineScore].is_null() &&
      !r[kBaselineScore].is_number()) {
    return fmt::format("field \"{}\" must be a number or null, got {}", kBaselineScore,
                       r[kBaselineScore].dump());
  }
  auto typed = [&](const char* k, auto pred, const char* what, json dflt) -> std::string {
    if (!r.contains(k)) {
      r[k] = std::move(dflt);
      return "";
    }
    if (!pred(r[k])) return fmt::format("field \"{}\" must be {}, got {}", k, what, r[k].dump());
    return "";
  };
  std::string e = typed(
      kMetrics, [](const json& x) { return x.is_object(); }, "an object", json::object());
  if (e.empty()) {
    e = typed(
        kDetails, [](const json& x) { return x.is_array() || x.is_object(); }, "an array or object",
        json::array());
  }
  if (e.empty()) {
    e = typed(
        kViolations,
        [](const json& x) {
          if (!x.is_array()) return false;
          for (const auto& s : x) {
            if (!s.is_string()) return false;
          }
          return true;
        },
        "an array of strings", json::array());
  }
  if (e.empty())
    e = typed(
        kLog, [](const json& x) { return x.is_string(); }, "a string", "");
  // Optional fields the runtime reads: absent stays absent, a wrong type is refused here rather
  // than breaking every later read of the log.
  for (const char* k : {kFigures}) {
    if (e.empty() && r.contains(k) && !r[k].is_object()) {
      e = fmt::format("field \"{}\" must be an object, got {}", k, r[k].dump());
    }
  }
  if (e.empty() && r.contains(kScoreCi) && !r[kScoreCi].is_null()) {
    const json& ci = r[kScoreCi];
    bool ok = ci.is_object();
    for (const char* b : {"low", "high"}) {
      ok = ok && ci.contains(b) && ci[b].is_number();
    }
    if (!ok) {
      e = fmt::format("field \"{}\" must be an object with numbers \"low\" and \"high\", got {}",
                      kScoreCi, ci.dump());
    }
  }
  return e;
}

json to_json(const EvalResult& r) {
  json j = {{kSchemaVersion, r.schema_version},
            {kCorrect, r.correct},
            {kScore, r.score ? json(*r.score) : json(nullptr)},
            {kMetrics, r.metrics},
            {kDetails, r.details},
            {kViolations, r.violations},
            {kLog, r.log}};
  if (r.baseline_score) j[kBaselineScore] = *r.baseline_score;
  if (!r.error_kind.empty()) j[kErrorKind] = r.error_kind;
  if (!r.failure.empty()) j[kFailure] = r.failure;
  if (!r.error.empty()) j[kError] = r.error;
  if (!r.figures.empty()) j[kFigures] = r.figures;
  return j;
}

}  // namespace marathon
