// The evaluator runner: a task's evaluator command on a candidate folder, and its one JSON result
// turned into exactly one outcome (the contract: docs/evaluation.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/eval_result.h"
#include "core/events.h"
#include "eval/subprocess.h"
#include "goal/task_spec.h"

namespace marathon::eval {

inline constexpr int kResultSchemaVersion = kEvalResultSchemaVersion;

// The outcome names live with the event types (core/events.h: eval.finished `status`).
using marathon::EvalStatus;
using marathon::to_string;

struct EvalOutcome {
  EvalStatus status = EvalStatus::kOk;
  // Always a full result object: schema_version, correct, score, metrics, details, violations,
  // log (and whatever else the evaluator printed). Failed outcomes have correct=false, score=null,
  // and `error_kind` = the status.
  json result = json::object();
  double elapsed_s = 0;
  int exit_code = -1;
  int signal = 0;
  std::string stderr_tail;  // the last few KiB of stderr, for logs
};

struct EvalOptions {
  std::string python;               // empty: env MARATHON_PYTHON, else "python3"
  std::optional<uint64_t> seed;     // sets MARATHON_EVAL_SEED (tests)
  std::optional<double> timeout_s;  // overrides the task's timeout_s
  size_t stdout_cap = 1 << 20;
  size_t stderr_cap = 64 << 10;
  std::map<std::string, std::string>
      env;  // extra variables for the evaluator (e.g. MARATHON_PROFILE)
};

// The interpreter evaluators get: env MARATHON_PYTHON, else "python3".
std::string default_python();

// Runs the task's evaluator on `candidate_dir`. Never throws for anything the evaluator does; the
// outcome says what happened.
EvalOutcome run_evaluator(const TaskSpec& task, const std::filesystem::path& candidate_dir,
                          const EvalOptions& options = {});

// Pure: what run_evaluator makes of a finished process.
EvalOutcome classify(const ProcessResult& p, double timeout_s);

// Pure: the result object from an evaluator's stdout (the whole text, or else its last non-empty
// line), validated and normalised. On failure returns nullopt and sets *error to what is wrong.
std::optional<json> parse_result(const std::string& stdout_text, std::string* error);

// A result for an outcome that produced none (correct=false, score=null, error_kind, log).
json failed_result(EvalStatus status, const std::string& log);

}  // namespace marathon::eval
