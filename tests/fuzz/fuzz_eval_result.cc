// Fuzz target: an evaluator's stdout, as run_evaluator reads it (eval/evaluator.cc parse_result and
// classify). The evaluator runs the candidate's code, so its output is hostile. The seeds are real
// evaluator outputs and near misses.
// Contracts held (eval/evaluator.h, docs/evaluation.md): neither throws for any bytes; a refusal
// says why; an accepted result is normalised (schema_version 1, correct a boolean, score a number
// or null, metrics an object, details an array or object, violations an array of strings, log a
// string); classify always yields a full result object of that shape.
#include "eval/evaluator.h"
#include "fuzz_check.h"

namespace {

using marathon::json;
using marathon::fuzz::expect;

void check_result(const json& r) {
  expect(r.is_object(), "the result is not an object");
  (void)r.dump();  // every string in it is UTF-8: the result is logged, printed, hashed
  expect(r.value("schema_version", json()) == 1, "schema_version is not 1");
  expect(r.contains("correct") && r["correct"].is_boolean(), "correct is not a boolean");
  expect(r.contains("score") && (r["score"].is_null() || r["score"].is_number()),
         "score is neither a number nor null");
  expect(r.contains("metrics") && r["metrics"].is_object(), "metrics is not an object");
  expect(r.contains("details") && (r["details"].is_array() || r["details"].is_object()),
         "details is neither an array nor an object");
  expect(r.contains("violations") && r["violations"].is_array(), "violations is not an array");
  for (const json& v : r["violations"]) expect(v.is_string(), "a violation is not a string");
  expect(r.contains("log") && r["log"].is_string(), "log is not a string");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string out(marathon::fuzz::bytes(data, size));
  std::string error;
  std::optional<json> r = marathon::eval::parse_result(out, &error);
  if (r) {
    check_result(*r);
  } else {
    expect(!error.empty(), "parse_result refused without a reason");
  }
  marathon::sandbox::LaunchResult p;
  p.started = true;
  p.exit_code = 0;
  p.out = out;
  p.err = out.substr(0, out.size() / 2);
  marathon::eval::EvalOutcome o = marathon::eval::classify(p, 10);
  check_result(o.result);
  expect((o.status == marathon::eval::EvalStatus::kOk) == r.has_value(),
         "classify and parse_result disagree on the same stdout");
  return 0;
}
