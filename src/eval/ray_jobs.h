// The Ray Jobs REST API of a Ray head's dashboard (http://HOST:PORT), through libcurl: packages
// (a job's working_dir, uploaded to the head's GCS), job submission with a submission id of ours,
// job status and logs, stopping, listing. Transport failures are values, never exceptions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/event.h"

namespace marathon::eval {

struct HttpReply {
  int status = 0;  // 0: no response (error says why)
  std::string body;
  std::string error;  // curl's description when status == 0
};

// One request; `body` is sent for POST and PUT. Thread-safe.
HttpReply http_call(const std::string& method, const std::string& url, const std::string& body,
                    const std::string& content_type, double timeout_s);

enum class JobState { kPending, kRunning, kSucceeded, kFailed, kStopped, kUnknown };
JobState job_state(const std::string& status);  // Ray's PENDING, RUNNING, ... (pure)
bool terminal(JobState s);

class RayJobsApi {
 public:
  explicit RayJobsApi(std::string base_url, double timeout_s = 30)
      : base_(std::move(base_url)), timeout_s_(timeout_s) {}
  const std::string& base_url() const { return base_; }

  // The job's details, nullopt when the head does not know it (404). *error: a transport failure
  // or an unexpected answer (then nullopt too).
  std::optional<json> job(const std::string& submission_id, std::string* error) const;
  // True when the package (e.g. "_ray_pkg_<hex>.zip") is in the head's GCS.
  bool package_exists(const std::string& name, std::string* error) const;
  bool put_package(const std::string& name, const std::string& zip, std::string* error) const;
  // POST /api/jobs/. True when the head accepted it or already holds a job with this submission
  // id (*already set then).
  bool submit(const json& request, bool* already, std::string* error) const;
  std::optional<std::string> logs(const std::string& submission_id, std::string* error) const;
  bool stop(const std::string& submission_id, std::string* error) const;
  std::optional<std::vector<json>> list(std::string* error) const;
  // The cluster's nodes (the state API's GET /api/v0/nodes), nullopt on a failure (*error).
  std::optional<json> nodes(std::string* error) const;

 private:
  std::string base_;
  double timeout_s_;
};

// Pure: the result `marathon eval --json` printed in a job's logs for `candidate`: the last line
// that is a JSON object holding `eval_status` and this candidate hash. nullopt when there is none
// (the job died before printing it, or it evaluated other files).
std::optional<json> eval_result_from_logs(const std::string& logs, const std::string& candidate);

struct RayNode {
  std::string id;
  std::string ip;
  bool alive = false;
};

// Pure: the nodes of a GET /api/v0/nodes answer ({data: {result: {result: [{node_id, node_ip,
// state}]}}}); empty when it has another shape.
std::vector<RayNode> ray_nodes(const json& answer);

// Pure: an alive node to retry a lost job on, other than the one it was lost on (told apart by
// IP, since a job is pinned through the node's `node:<ip>` resource); nullopt when there is none.
std::optional<RayNode> other_node(const std::vector<RayNode>& nodes, const std::string& lost_id);

// Pure: the job request pinned to a node (entrypoint_resources {"node:<ip>": 0.001}).
void pin_to_node(json& request, const std::string& ip);

// Pure: the text quoted for a POSIX shell (single quotes).
std::string shell_quote(const std::string& s);

}  // namespace marathon::eval
