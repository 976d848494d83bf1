// The Ray executor: each evaluation is one Ray job, submitted through the Jobs REST API of the
// head's dashboard (RayJobsApi). The job's working_dir is a package of ours (a stored zip, uploaded
// to the head's GCS once per content): the task folder as task/ and the candidate's files as
// candidate/. Its entrypoint is `marathon eval task --candidate candidate --json` on the worker:
// the same evaluator in the same sandbox launcher as a local evaluation. It asks for one GPU when
// the task needs one (entrypoint_num_gpus) and one CPU.
//
// Crash safety: the submission id is ours, "marathon-<request id>-<attempt>", a function of the
// run, the tool call and the attempt, and eval.submitted is logged (durably) before the submit
// request. A resumed runner re-running the same `evaluate` asks the head for that id first and
// follows the job it finds instead of submitting it again.
//
// A job that ends without a result (its worker or node died, it was stopped) is lost: reported
// (executor.job_lost) and retried once under the next attempt's id; lost again, the evaluation's
// outcome is a crash saying so.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "eval/executor.h"
#include "eval/ray_jobs.h"

namespace marathon::eval {

inline constexpr int kRayAttempts = 2;

// Pure: the submission id of an attempt ([A-Za-z0-9_-] only).
std::string ray_submission_id(const std::string& request_id, int attempt);

// Pure: the POST /api/jobs/ body for a request (package_uri: "gcs://_ray_pkg_<hex>.zip").
json ray_submit_body(const EvalRequest& request, const std::string& submission_id,
                     const std::string& package_uri, const std::string& worker_binary);

// The working_dir package of a request: task/ (every regular file under the task folder, no link
// followed, no .git) and candidate/ (the request's files). Returns the zip's bytes; throws
// std::runtime_error naming what cannot be read, or a package over max_bytes.
std::string ray_package(const EvalRequest& request, size_t max_bytes = 256u << 20);

// The preflight of a run with a Ray executor, before anything is written: one tiny job (the
// worker binary's `--version`) on the cluster. "" when it succeeded within `timeout_s`; else what
// failed (the head unreachable, the job failing: the binary missing on the workers) and how to fix
// it.
std::string ray_preflight_problem(const ExecutorSpec& spec, double timeout_s = 120,
                                  double poll_s = 0.25);

class RayExecutor : public Executor {
 public:
  explicit RayExecutor(ExecutorSpec spec, double poll_s = 0.25);

  ExecutorSpec spec() const override { return spec_; }
  ExecutedEval evaluate(const EvalRequest& request, const EventSink& log) override;
  std::vector<SlotUsage> usage() const override;

 private:
  struct Followed {
    bool head_lost = false;  // the head stopped answering
    bool timed_out = false;  // ran past the evaluation's deadline (stopped)
    JobState state = JobState::kUnknown;
    std::string message;  // Ray's message for the job
    std::optional<json> result;
    std::string logs_tail;
    std::string node_id;  // the node the job's entrypoint ran on (Ray's driver_node_id)
  };
  Followed follow(const std::string& submission_id, const EvalRequest& request) const;
  // The cluster's nodes as the head lists them now (empty when it cannot say).
  std::vector<RayNode> nodes() const;
  // A node's IP for the usage tally and the log (its id when the head does not list it). A node
  // keeps its IP for its life, so the head is asked only for an id not seen before.
  std::string node_name(const std::string& node_id);

  ExecutorSpec spec_;
  RayJobsApi api_;
  double poll_s_;
  mutable std::mutex mu_;
  std::map<std::string, SlotUsage> usage_;       // per node (eval/executor_usage.h ray_slot)
  std::map<std::string, std::string> node_ips_;  // node id -> IP, as the head listed them (mu_)
};

}  // namespace marathon::eval
