#include "eval/ray_executor.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "core/confined_dir.h"
#include "core/event_store.h"
#include "eval/executor_usage.h"
#include "eval/zip_writer.h"

namespace marathon::eval {

namespace fs = std::filesystem;

namespace {

// How long the head may stay silent (connection refused, errors) before the evaluation fails.
constexpr double kHeadSilenceS = 60;
// How long a job may wait for a node (PENDING) before it counts as lost.
constexpr double kPendingLimitS = 3600;

std::optional<EvalStatus> status_from_string(const std::string& s) {
  for (EvalStatus st : {EvalStatus::kOk, EvalStatus::kInvalidOutput, EvalStatus::kNonzeroExit,
                        EvalStatus::kTimeout, EvalStatus::kCrash}) {
    if (to_string(st) == s) return st;
  }
  return std::nullopt;
}

EvalOutcome failed(EvalStatus status, const std::string& why) {
  EvalOutcome o;
  o.status = status;
  o.result = failed_result(status, why);
  return o;
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string ray_submission_id(const std::string& request_id, int attempt) {
  std::string id = "marathon-";
  for (char c : request_id) {
    bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    id += keep ? c : '_';
  }
  return id + "-" + std::to_string(attempt);
}

json ray_submit_body(const EvalRequest& r, const std::string& submission_id,
                     const std::string& package_uri, const std::string& worker_binary) {
  std::string cmd = shell_quote(worker_binary) + " eval task --candidate candidate --json";
  const EvalOptions& o = r.options;
  if (o.isolation.value_or(sandbox::default_isolation()) == sandbox::Isolation::kNone) {
    cmd += " --unsafe-no-sandbox";  // as unsandboxed on the worker as the runner was told to be
  }
  if (o.timeout_s) cmd += fmt::format(" --timeout {}", *o.timeout_s);
  if (o.seed) cmd += fmt::format(" --seed {}", *o.seed);
  bool gpu = r.task && r.task->needs_gpu;
  return {{"entrypoint", cmd},
          {"submission_id", submission_id},
          {"runtime_env", {{"working_dir", package_uri}}},
          {"entrypoint_num_cpus", 1},
          {"entrypoint_num_gpus", gpu ? 1 : 0},
          {"metadata",
           {{"marathon_submission_id", submission_id},
            {"marathon_request", r.id},
            {"cache_key", r.cache_key},
            {"candidate", r.candidate}}}};
}

std::string ray_package(const EvalRequest& r, size_t max_bytes) {
  std::vector<ZipEntry> entries;
  size_t total = 0;
  auto add = [&](ZipEntry e) {
    total += e.bytes.size();
    if (total > max_bytes) {
      throw std::runtime_error(fmt::format(
          "the task folder {} and the candidate come to more than {} MiB, too large to send to "
          "a Ray worker",
          r.task_dir.string(), max_bytes >> 20));
    }
    entries.push_back(std::move(e));
  };
  FsResult<ConfinedDir> task = ConfinedDir::open(r.task_dir);
  if (!task.ok()) {
    throw std::runtime_error("task folder " + r.task_dir.string() + ": " + task.error().reason);
  }
  std::vector<std::string> paths;
  FsResult<size_t> walked = task->walk(
      ".",
      [&](const FileInfo& e) {
        if (e.kind == EntryKind::kDir)
          return e.path != ".git" && e.path.find("/.git") == std::string::npos;
        if (e.kind == EntryKind::kFile) paths.push_back(e.path);
        return false;  // links and special files stay behind
      },
      Links::kNone);
  if (!walked.ok()) {
    throw std::runtime_error("cannot list task folder " + r.task_dir.string() + ": " +
                             walked.error().message());
  }
  for (const std::string& p : paths) {
    FsResult<std::string> bytes = task->read(p, max_bytes, Links::kNone);
    if (!bytes.ok()) throw std::runtime_error("task file " + bytes.error().message());
    struct stat st {};
    uint32_t mode = 0644;
    if (::lstat((r.task_dir / p).c_str(), &st) == 0 && (st.st_mode & 0111)) mode = 0755;
    add({"task/" + p, std::move(*bytes), mode});
  }
  for (const CandidateFile& f : r.files) {
    if (f.kind != EntryKind::kFile) continue;  // refused before an evaluation is asked for
    add({"candidate/" + f.path, f.bytes, 0644});
  }
  return zip_stored(entries);
}

std::string ray_preflight_problem(const ExecutorSpec& spec, double timeout_s, double poll_s) {
  const RayJobsApi api(fmt::format("http://{}:{}", spec.host, spec.port));
  const std::string id = fmt::format("marathon-preflight-{}-{}",
                                     std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count(),
                                     static_cast<long>(getpid()));
  const json body = {{"entrypoint", shell_quote(spec.worker_binary) + " --version"},
                     {"submission_id", id},
                     {"entrypoint_num_cpus", 1},
                     {"metadata", {{"marathon_preflight", "1"}}}};
  const std::string where = fmt::format("the Ray cluster at {}:{}", spec.host, spec.port);
  std::string error;
  bool already = false;
  if (!api.submit(body, &already, &error)) {
    return fmt::format("{} takes no job ({}): check --executor and that its dashboard runs", where,
                       error);
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < end) {
    std::optional<json> job = api.job(id, &error);
    const JobState st = job ? job_state(job->value("status", "")) : JobState::kUnknown;
    if (st == JobState::kSucceeded) return "";
    if (job && terminal(st)) {
      std::string logs = api.logs(id, &error).value_or("");
      while (!logs.empty() && (logs.back() == '\n' || logs.back() == ' ')) logs.pop_back();
      if (logs.size() > 400) logs = "..." + logs.substr(logs.size() - 400);
      return fmt::format(
          "{} cannot run marathon on its workers: `{} --version` failed there ({}{}); install "
          "marathon on every worker or give its path with --ray-worker-binary",
          where, spec.worker_binary, job->value("message", std::string("no message")),
          logs.empty() ? "" : ": " + logs);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
  std::string stop_error;
  api.stop(id, &stop_error);
  return fmt::format(
      "{} did not run a one-second job within {:.0f} s (no free worker, or none able to start "
      "it): check the cluster (`ray status`)",
      where, timeout_s);
}

RayExecutor::RayExecutor(ExecutorSpec spec, double poll_s)
    : spec_(std::move(spec)),
      api_(fmt::format("http://{}:{}", spec_.host, spec_.port)),
      poll_s_(poll_s) {}

RayExecutor::Followed RayExecutor::follow(const std::string& id, const EvalRequest& r) const {
  Followed f;
  double timeout = r.options.timeout_s.value_or(r.task ? r.task->evaluator.timeout_s : 600);
  double started = now_s(), running_since = 0, silent_since = 0;
  while (true) {
    std::string error;
    std::optional<json> job = api_.job(id, &error);
    if (!error.empty() || !job) {
      // Silence (no answer) fails the evaluation after kHeadSilenceS; a head that answers but no
      // longer knows the job (restarted) has lost it.
      if (silent_since == 0) silent_since = now_s();
      double limit = error.empty() ? 10 : kHeadSilenceS;
      if (now_s() - silent_since > limit) {
        f.head_lost = !error.empty();
        f.message = error.empty() ? "the head no longer knows the job" : error;
        return f;
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_s_ * 4));
      continue;
    }
    silent_since = 0;
    f.state = job_state(job->value("status", ""));
    f.message = job->value("message", "");
    if (job->contains("driver_node_id") && (*job)["driver_node_id"].is_string()) {
      f.node_id = (*job)["driver_node_id"].get<std::string>();
    }
    if (terminal(f.state)) break;
    if (f.state == JobState::kRunning && running_since == 0) running_since = now_s();
    bool late = running_since != 0 ? now_s() - running_since > timeout + 120
                                   : now_s() - started > kPendingLimitS;
    if (late) {
      std::string stop_error;
      api_.stop(id, &stop_error);
      f.timed_out = running_since != 0;
      f.message = running_since != 0
                      ? fmt::format(
                            "still running {:.0f} s after its start (the evaluator's "
                            "timeout is {:.0f} s); stopped",
                            now_s() - running_since, timeout)
                      : fmt::format("no node took it in {:.0f} s; stopped", kPendingLimitS);
      return f;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s_));
  }
  std::string error;
  std::optional<std::string> logs = api_.logs(id, &error);
  if (logs) {
    f.result = eval_result_from_logs(*logs, r.candidate);
    f.logs_tail = tail(*logs, 1500);
  } else {
    f.logs_tail = "(logs unavailable: " + error + ")";
  }
  return f;
}

std::vector<RayNode> RayExecutor::nodes() const {
  std::string error;
  std::optional<json> answer = api_.nodes(&error);
  return answer ? ray_nodes(*answer) : std::vector<RayNode>{};
}

std::string RayExecutor::node_name(const std::string& node_id) {
  if (node_id.empty()) return "";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = node_ips_.find(node_id); it != node_ips_.end()) return it->second;
  }
  std::vector<RayNode> listed = nodes();
  std::lock_guard<std::mutex> lock(mu_);
  for (const RayNode& n : listed) {
    if (!n.ip.empty()) node_ips_[n.id] = n.ip;
  }
  auto it = node_ips_.find(node_id);
  return it != node_ips_.end() ? it->second : node_id.substr(0, 12);
}

ExecutedEval RayExecutor::evaluate(const EvalRequest& r, const EventSink& log) {
  ExecutedEval out;
  std::optional<std::string> package_uri;
  std::optional<RayNode> pinned;  // the retry's node, away from the one the job was lost on
  double t0 = now_s();
  for (int attempt = 0; attempt < kRayAttempts; ++attempt) {
    std::string id = ray_submission_id(r.id, attempt);
    out.where = id;
    std::string error;
    std::optional<json> existing = api_.job(id, &error);
    for (double waited = 0; !error.empty() && waited < kHeadSilenceS; waited += 2) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      error.clear();
      existing = api_.job(id, &error);
    }
    if (!error.empty()) {
      out.outcome =
          failed(EvalStatus::kNonzeroExit,
                 fmt::format("the Ray head at {} did not answer: {}", api_.base_url(), error));
      return out;
    }
    if (existing) {
      spdlog::info("ray executor: job {} was submitted before (a resumed run); following it", id);
    } else {
      if (!package_uri) {
        std::string zip;
        try {
          zip = ray_package(r);
        } catch (const std::exception& e) {
          out.outcome = failed(EvalStatus::kNonzeroExit, e.what());
          return out;
        }
        std::string name = "_ray_pkg_" + sha256_hex(zip).substr(0, 32) + ".zip";
        if (!api_.package_exists(name, &error)) {
          if (error.empty()) api_.put_package(name, zip, &error);
          if (!error.empty()) {
            out.outcome = failed(EvalStatus::kNonzeroExit,
                                 fmt::format("could not upload the candidate's package to the "
                                             "Ray head at {}: {}",
                                             api_.base_url(), error));
            return out;
          }
        }
        package_uri = "gcs://" + name;
      }
      json body = ray_submit_body(r, id, *package_uri, spec_.worker_binary);
      if (pinned) pin_to_node(body, pinned->ip);
      if (log) {
        events::EvalSubmitted sub;
        sub.executor = spec_.to_string();
        sub.submission_id = id;
        sub.attempt = attempt;
        sub.cache_key = r.cache_key;
        sub.candidate = r.candidate;
        sub.entrypoint = body["entrypoint"].get<std::string>();
        sub.num_gpus = body["entrypoint_num_gpus"].get<int64_t>();
        log(make_event(sub));
      }
      bool already = false;
      if (!api_.submit(body, &already, &error)) {
        out.outcome = failed(
            EvalStatus::kNonzeroExit,
            fmt::format("the Ray head at {} refused job {}: {}", api_.base_url(), id, error));
        return out;
      }
    }
    Followed f = follow(id, r);
    out.node = node_name(f.node_id);
    if (f.result) {
      const json& j = *f.result;
      out.outcome.status =
          status_from_string(j.value("eval_status", "")).value_or(EvalStatus::kCrash);
      out.outcome.elapsed_s = j.value("elapsed_s", 0.0);
      json result = j;
      for (const char* k : {"eval_status", "elapsed_s", "candidate", "task"}) result.erase(k);
      out.outcome.result = std::move(result);
      break;
    }
    if (f.timed_out) {
      out.outcome = failed(EvalStatus::kTimeout, "Ray job " + id + " " + f.message);
      break;
    }
    if (f.head_lost) {
      out.outcome = failed(EvalStatus::kNonzeroExit,
                           fmt::format("lost contact with the Ray head at {} while job {} ran: {}",
                                       api_.base_url(), id, f.message));
      break;
    }
    std::string reason = fmt::format("Ray job {} ended {} without a result: {}", id,
                                     f.state == JobState::kStopped ? "stopped" : "failed",
                                     f.message.empty() ? "(no message)" : f.message);
    bool retry = attempt + 1 < kRayAttempts;
    if (retry) pinned = other_node(nodes(), f.node_id);
    spdlog::warn("ray executor: {}{}", reason,
                 !retry   ? ""
                 : pinned ? "; retrying once on node " + pinned->ip
                          : "; retrying once (no other node is alive)");
    if (log) {
      events::ExecutorJobLost lost;
      lost.executor = spec_.to_string();
      lost.submission_id = id;
      lost.attempt = attempt;
      lost.reason = reason;
      lost.logs_tail = f.logs_tail;
      if (retry) lost.retry = ray_submission_id(r.id, attempt + 1);
      lost.node = out.node;
      if (pinned) lost.retry_node = pinned->ip;
      log(make_event(lost));
    }
    if (!retry) {
      out.outcome = failed(EvalStatus::kCrash,
                           fmt::format("the evaluation was lost twice on the Ray cluster; last: "
                                       "{}\n{}",
                                       reason, f.logs_tail));
    }
  }
  double busy = out.outcome.elapsed_s > 0 ? out.outcome.elapsed_s : now_s() - t0;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string slot = ray_slot(spec_.to_string(), out.node);
  SlotUsage& u = usage_[slot];
  u.name = slot;
  u.evaluations += 1;
  u.busy_s += busy;
  return out;
}

std::vector<SlotUsage> RayExecutor::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SlotUsage> out;
  for (const auto& [name, u] : usage_) out.push_back(u);
  return out;
}

}  // namespace marathon::eval
