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
#include "goal/task_spec.h"
#include "sandbox/launcher.h"

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
  std::string python;               // empty: default_python()
  std::optional<uint64_t> seed;     // sets MARATHON_EVAL_SEED (tests)
  std::optional<double> timeout_s;  // overrides the task's timeout_s
  size_t stdout_cap = 1 << 20;
  size_t stderr_cap = 64 << 10;
  std::map<std::string, std::string>
      env;  // extra variables for the evaluator (e.g. MARATHON_PROFILE)
  // kSandbox unless the runner was started with --unsafe-no-sandbox (sandbox/launcher.h).
  std::optional<sandbox::Isolation> isolation;
  std::string bwrap = "bwrap";
};

// The interpreter evaluators get: env MARATHON_PYTHON; else the project's environment that `make`
// installs ($MARATHON_VENV, else ${XDG_CACHE_HOME:-$HOME/.cache}/marathon/venv) when it exists;
// else "python3" from PATH.
std::string default_python();

// Runs the task's evaluator on `candidate_dir` in the sandbox's evaluate profile: the task folder,
// the folders of files its command names (the harness) and the candidate read-only, a fresh scratch
// folder as HOME, the Python environment of `python` read-only, no network, no variable of the
// runner's but the allow-list. Never throws for anything the evaluator does; the outcome says what
// happened.
EvalOutcome run_evaluator(const TaskSpec& task, const std::filesystem::path& candidate_dir,
                          const EvalOptions& options = {});

// Pure: what run_evaluator makes of a finished process.
EvalOutcome classify(const sandbox::LaunchResult& p, double timeout_s);

// Pure: the folders an evaluator command reads besides the task folder: for each argument that
// names an existing file or folder outside `task_dir` (after substitution; relative ones are
// taken from the task folder), the folder holding it (a file) or itself (a folder).
std::vector<std::filesystem::path> evaluator_reads(const std::vector<std::string>& argv,
                                                   const std::filesystem::path& task_dir);

// Pure: the result object from an evaluator's stdout (the whole text, or else its last non-empty
// line), validated and normalised. The bytes are decoded leniently (ill-formed UTF-8 becomes
// U+FFFD), so the result and *error are always valid UTF-8. On failure returns nullopt and sets
// *error to what is wrong.
std::optional<json> parse_result(const std::string& stdout_text, std::string* error);

// A result for an outcome that produced none (correct=false, score=null, error_kind, log).
json failed_result(EvalStatus status, const std::string& log);

}  // namespace marathon::eval
