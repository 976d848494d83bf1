// EvalResult: the evaluator's one JSON object (docs/evaluation.md; the schema is
// harness/result.schema.json, and tests check this struct against it). Two ways in:
//   - validate_eval_output: the contract, strictly, for what an evaluator printed (eval/);
//   - read_eval_result: a recorded result (eval.finished `result`), leniently, as fold always read
//     it: missing fields take their defaults, a known field of the wrong type is an error.
// The recorded JSON stays the evaluator's own object (extra fields kept verbatim); this struct is
// the typed view of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/events.h"

namespace marathon {

inline constexpr int kEvalResultSchemaVersion = 1;

struct EvalResult {
  int64_t schema_version = kEvalResultSchemaVersion;
  bool correct = false;
  std::optional<double> score;  // null: not measured (never an improvement)
  json metrics = json::object();
  // The task baseline's score on this machine. Recorded results from before the schema fixed its
  // place (the GPU harness wrote it as metrics.baseline_score) are read from there.
  std::optional<double> baseline_score;
  json details = json::array();     // array or object
  json violations = json::array();  // array of strings (any non-empty value counts as violations)
  std::string log;
  std::string error_kind;  // written by marathon for an outcome other than ok
  std::string failure;     // why the candidate failed, in the evaluator's words
  std::string error;       // an evaluator error message
  json figures = json::object();
  json profile;  // the profiler's lines, in the answer to a profile request (null otherwise)
  // The score's confidence interval from the evaluator's own repetitions (`score_ci` {low, high,
  // level?, method?}); absent when it reported none. It states the noise within one evaluation;
  // re-measurements (core/confirmation.h) state the noise between evaluations.
  std::optional<double> score_ci_low, score_ci_high;

  bool has_violations() const;
};

// One field of the contract as the C++ side reads or writes it: its name and its JSON types
// (JSON Schema type names: "integer", "number", "boolean", "string", "object", "array", "null").
struct EvalResultField {
  const char* name;
  std::vector<std::string> types;
  bool required;
};
const std::vector<EvalResultField>& eval_result_fields();

// The typed view of a recorded result. Throws PayloadError (type "eval result") for a known field
// of the wrong type.
EvalResult read_eval_result(const json& result);

// Validates an evaluator's object against the contract and fills in the defaults of the optional
// fields (in place, extra fields kept). Returns "" or what is wrong (e.g. `missing field
// "correct"`).
std::string validate_eval_output(json& result);

// The full result object of an outcome that produced none.
json to_json(const EvalResult& r);

}  // namespace marathon
