// Executors: where an evaluation runs (docs/scale-out.md). The `evaluate` tool decides whether an
// evaluation is needed (the result cache); an executor runs it and returns its outcome:
//   local          a pool of slots on this host, one per GPU (CUDA_VISIBLE_DEVICES set per child),
//                  or CPU slots when there is no GPU; each evaluation through the sandbox launcher
//   ray://H:P      one Ray job per evaluation through the Ray Jobs REST API of the head's
//   dashboard;
//                  the job runs `marathon eval` on the worker (the same evaluator, the same
//                  sandbox)
// Executors are thread-safe: parallel branches share one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/events.h"
#include "eval/evaluator.h"
#include "eval/result_cache.h"
#include "goal/task_spec.h"

namespace marathon::eval {

enum class ExecutorKind { kLocal, kRay };

// What `--executor` names, parsed: "local" or "ray://HOST:PORT".
struct ExecutorSpec {
  ExecutorKind kind = ExecutorKind::kLocal;
  std::string host;  // ray
  int port = 0;      // ray: the dashboard's port (the Jobs API)
  // local: how many slots (0: one per GPU found, else one CPU slot); `gpus` says they are GPUs.
  int slots = 0;
  bool gpus = false;
  // ray: the marathon binary on the workers (a name on their PATH or an absolute path).
  std::string worker_binary = "marathon";

  std::string to_string() const;  // "local" | "ray://HOST:PORT"
  json to_json() const;           // what the run's config records
};

// Parses "local" / "ray://HOST:PORT"; nullopt with *error saying what is wrong.
std::optional<ExecutorSpec> parse_executor(const std::string& text, std::string* error);
// The spec a run's config recorded (config.executor), or local with defaults when it has none.
ExecutorSpec executor_from_config(const json& config);

// One evaluation to run.
struct EvalRequest {
  const TaskSpec* task = nullptr;
  std::filesystem::path task_dir;       // the task folder (travels to a Ray worker)
  std::filesystem::path candidate_dir;  // holds the candidate's files (read-only to the evaluator)
  std::vector<CandidateFile> files;     // the candidate's editable files, as read for its hash
  std::string candidate;                // the candidate hash
  std::string cache_key;
  // Stable across a crash and a resume of the same tool call: "<run id>-<tool.started seq>".
  // Executors derive the ids they hand out (Ray submission ids) from it.
  std::string id;
  EvalOptions options;
};

// Appends an event to the run's log durably before returning (eval.submitted must be durable
// before its job is submitted). May be empty (no log: `marathon eval`, tests of the pool alone).
using EventSink = std::function<void(const NewEvent&)>;

// One slot (local) or the Ray executor as a whole: what `status` and the dashboard show.
struct SlotUsage {
  std::string name;  // "gpu0", "cpu1", "ray://..."
  bool quarantined = false;
  int64_t evaluations = 0;
  double busy_s = 0;
};

struct ExecutedEval {
  EvalOutcome outcome;
  std::string where;  // the slot or the Ray submission id that produced the outcome
  std::string node;   // Ray: the node (its IP, else its id) the job ran on; "" when unknown
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual ExecutorSpec spec() const = 0;
  // Runs one evaluation and blocks until it has an outcome; never throws for anything the
  // evaluator or the cluster does (a failure is an outcome, e.g. crash with the reason in its log).
  virtual ExecutedEval evaluate(const EvalRequest& request, const EventSink& log) = 0;
  virtual std::vector<SlotUsage> usage() const = 0;
};

// Makes the executor a spec names. Throws std::runtime_error when it cannot (no slot at all).
std::unique_ptr<Executor> make_executor(const ExecutorSpec& spec);

}  // namespace marathon::eval
