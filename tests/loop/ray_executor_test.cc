// The ray executor against a real Ray head (ray from PyPI, started here on 127.0.0.1 and stopped at
// the end): a run on the slow test task whose every evaluation is a Ray job running `marathon eval`
// on the worker. The runner is SIGKILLed while its first job runs and resumed: the resumed runner
// follows that job instead of submitting it again (counted through the Jobs API and the
// evaluator's own marker). Then the Ray worker running the second job is killed mid-job: the
// evaluation is retried once under a new submission id and the loss is reported.
#include "eval/ray_executor.h"

#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

#include "eval/evaluator.h"
#include "eval/ray_jobs.h"
#include "loop_test_support.h"
#include "scripted_llm_server.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::events_of_type;
using testing::load_events;
using testing::read_lines;
using testing::ScriptedLlmServer;
using testing::ScriptedResponse;
using testing::TempDir;

int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

// A Ray head on 127.0.0.1 with its dashboard (the Jobs API) and 2 CPUs, in a temporary folder of
// its own; `ray stop` and the folder removed when the object dies, whatever the test did.
class RayHead {
 public:
  RayHead(const fs::path& ray, const std::map<std::string, std::string>& env, const fs::path& log)
      : ray_(ray), log_(log) {
    temp_ = fs::path("/tmp") / ("mr" + std::to_string(::getpid()));  // sockets: keep it short
    fs::remove_all(temp_);
    dashboard_port_ = free_port();
    std::vector<std::string> argv = {ray.string(),
                                     "start",
                                     "--head",
                                     "--node-ip-address",
                                     "127.0.0.1",
                                     "--port",
                                     std::to_string(free_port()),
                                     "--dashboard-host",
                                     "127.0.0.1",
                                     "--dashboard-port",
                                     std::to_string(dashboard_port_),
                                     "--ray-client-server-port",
                                     std::to_string(free_port()),
                                     "--dashboard-agent-listen-port",
                                     std::to_string(free_port()),
                                     "--metrics-export-port",
                                     std::to_string(free_port()),
                                     "--num-cpus",
                                     "2",
                                     "--num-gpus",
                                     "0",
                                     "--include-dashboard",
                                     "true",
                                     "--disable-usage-stats",
                                     "--temp-dir",
                                     temp_.string()};
    std::map<std::string, std::string> e = env;
    e["RAY_USAGE_STATS_ENABLED"] = "0";
    started_ = true;
    Child c(argv, e, log_);
    std::optional<int> rc = c.wait_for(180);
    if (!rc || *rc != 0) {
      error_ = "ray start failed (see " + log_.string() + ")";
      return;
    }
    // The dashboard comes up after `ray start` returns.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      if (eval::http_call("GET", url() + "/api/version", "", "", 5).status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    error_ = "the dashboard of the Ray head did not answer at " + url();
  }
  ~RayHead() {
    if (started_) {
      Child stop({ray_.string(), "stop", "--force"}, {}, log_);
      if (!stop.wait_for(120)) stop.kill_group();
    }
    std::error_code ec;
    fs::remove_all(temp_, ec);
  }
  const std::string& error() const { return error_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(dashboard_port_); }
  std::string address() const { return "ray://127.0.0.1:" + std::to_string(dashboard_port_); }

 private:
  fs::path ray_, log_, temp_;
  int dashboard_port_ = 0;
  bool started_ = false;
  std::string error_;
};

json tc(const std::string& name, json args) {
  return {{"name", name}, {"arguments", std::move(args)}};
}

const std::string kFirst = "value = 2\nsleep = 3\n";
const std::string kSecond = "value = 4\nsleep = 6\n";

ScriptedResponse slow_script(size_t turn) {
  auto write = [](const std::string& text) {
    return tc("write_file", {{"path", "solution.txt"}, {"content", text}});
  };
  json calls = json::array();
  switch (turn) {
    case 0:
      calls.push_back(write(kFirst));
      break;
    case 1:
      calls.push_back(tc("evaluate", {{"strategy", "first"}}));
      break;
    case 2:
      calls.push_back(write(kSecond));
      break;
    case 3:
      calls.push_back(tc("evaluate", {{"strategy", "second"}}));
      break;
    case 4:
      calls.push_back(tc("finish", {{"summary", "4 is the best"}}));
      break;
    default:
      return testing::openai_text("the script has ended");
  }
  return testing::openai_tool_calls(calls);
}

// The eval.submitted events of a run (none while the log cannot be read).
std::vector<Event> submitted(const fs::path& run) {
  try {
    if (!fs::exists(run / "events.db")) return {};
    return events_of_type(load_events(run), events::EvalSubmitted::kType);
  } catch (const std::exception&) {
    return {};
  }
}

template <class F>
bool wait_until(F ok, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

pid_t parent_of(pid_t pid) {
  std::string stat = file_text("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(stat.substr(close + 2));
  char state;
  pid_t ppid = 0;
  in >> state >> ppid;
  return ppid;
}

// The job's entrypoint process: the process whose environment names the submission id (Ray's job
// config carries our metadata) and whose parent's does not.
pid_t entrypoint_of(const std::string& submission_id) {
  auto has = [&](pid_t pid) {
    return file_text("/proc/" + std::to_string(pid) + "/environ").find(submission_id) !=
           std::string::npos;
  };
  DIR* d = ::opendir("/proc");
  pid_t found = 0;
  while (dirent* e = ::readdir(d)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || !has(pid)) continue;
    if (!has(parent_of(pid))) found = pid;
  }
  ::closedir(d);
  return found;
}

// Workers that cannot run marathon (no --ray-worker-binary and none on their PATH, here a path
// that does not exist): the run is refused at once by its preflight job, with no run folder.
TEST(RayExecutor, WorkersThatCannotRunMarathonAreRefusedBeforeTheRunStarts) {
  fs::path ray = fs::path(eval::default_python()).parent_path() / "ray";
  if (!fs::exists(ray)) GTEST_SKIP() << "ray is not installed next to " << eval::default_python();
  TempDir dir("ray-preflight");
  RayHead head(ray, {}, dir / "ray.log");
  ASSERT_EQ(head.error(), "") << testing::read_text(dir / "ray.log");
  ScriptedLlmServer server([](size_t, const json& request) {
    return slow_script(ScriptedLlmServer::assistant_turns(request));
  });
  fs::path run = dir / "run";
  int rc = testing::run_binary(
      {"run", (testing::source_dir() / "tests/loop/fixtures/slow-task").string(), "--run-dir",
       run.string(), "--policy", "llm", "--model", "vllm:scripted", "--base-url", server.base_url(),
       "--executor", head.address(), "--ray-worker-binary", (dir / "no-such" / "marathon").string(),
       "--quiet"},
      {}, dir / "run.log", 300);
  EXPECT_EQ(rc, 2) << testing::read_text(dir / "run.log");
  EXPECT_NE(testing::read_text(dir / "run.log").find("cannot run marathon on its workers"),
            std::string::npos)
      << testing::read_text(dir / "run.log");
  EXPECT_FALSE(fs::exists(run));
  EXPECT_EQ(server.request_count(), 0u);
}

TEST(RayExecutor, KilledRunnerAndKilledWorkerNeitherPayTwiceNorLoseTheEvaluation) {
  fs::path ray = fs::path(eval::default_python()).parent_path() / "ray";
  if (!fs::exists(ray)) GTEST_SKIP() << "ray is not installed next to " << eval::default_python();
  TempDir dir("ray");
  fs::path marker = dir / "marks" / "evals.marker";
  RayHead head(ray, testing::eval_marker_env(marker), dir / "ray.log");
  ASSERT_EQ(head.error(), "") << testing::read_text(dir / "ray.log");
  eval::RayJobsApi api(head.url());

  ScriptedLlmServer server([](size_t, const json& request) {
    return slow_script(ScriptedLlmServer::assistant_turns(request));
  });
  fs::path run = dir / "run";
  std::vector<std::string> args = {
      MARATHON_BINARY,
      "run",
      (testing::source_dir() / "tests/loop/fixtures/slow-task").string(),
      "--run-dir",
      run.string(),
      "--policy",
      "llm",
      "--model",
      "vllm:scripted",
      "--base-url",
      server.base_url(),
      "--executor",
      head.address(),
      "--ray-worker-binary",
      MARATHON_BINARY,
      "--quiet"};
  // 1. The runner SIGKILLed while the first evaluation's job runs on the cluster.
  {
    Child runner(args, {}, dir / "run.log");
    ASSERT_TRUE(wait_until([&] { return submitted(run).size() == 1; }, 120))
        << testing::read_text(dir / "run.log");
    std::string id = payload_of<events::EvalSubmitted>(submitted(run)[0]).submission_id;
    ASSERT_TRUE(wait_until(
        [&] {
          std::string error;
          std::optional<json> job = api.job(id, &error);
          return job && job->value("status", "") == "RUNNING";
        },
        120));
    runner.kill_group();
  }
  std::string first_id = payload_of<events::EvalSubmitted>(submitted(run)[0]).submission_id;

  // 2. Resumed: it follows the first job; the second job's worker is killed mid-job.
  Child resumed({MARATHON_BINARY, "resume", run.string(), "--quiet"}, {}, dir / "resume.log");
  ASSERT_TRUE(wait_until([&] { return submitted(run).size() == 2; }, 180))
      << testing::read_text(dir / "resume.log");
  std::string second_id = payload_of<events::EvalSubmitted>(submitted(run)[1]).submission_id;
  pid_t entry = 0;
  ASSERT_TRUE(wait_until([&] { return (entry = entrypoint_of(second_id)) > 0; }, 60));
  std::this_thread::sleep_for(std::chrono::seconds(1));  // well inside its 6 s evaluation
  pid_t supervisor = parent_of(entry);
  ASSERT_GT(supervisor, 1);
  ::kill(-entry, SIGKILL);  // the entrypoint's session (marathon eval and its sandbox)
  ::kill(supervisor, SIGKILL);
  std::optional<int> rc = resumed.wait_for(240);
  ASSERT_TRUE(rc) << testing::read_text(dir / "resume.log");
  EXPECT_EQ(*rc, 0) << testing::read_text(dir / "resume.log");

  std::vector<Event> events = load_events(run);
  std::string run_id = payload_of<events::RunCreated>(events.front()).run_id;

  // Jobs on the head for this run: the first evaluation once, the second twice (the retry).
  std::string error;
  std::optional<std::vector<json>> jobs = api.list(&error);
  ASSERT_TRUE(jobs) << error;
  std::multiset<std::string> ids;
  for (const json& j : *jobs) {
    std::string id = j.value("submission_id", "");
    if (id.rfind("marathon-" + run_id, 0) == 0) ids.insert(id);
  }
  std::string retry_id = second_id.substr(0, second_id.size() - 1) + "1";
  EXPECT_EQ(ids, (std::multiset<std::string>{first_id, second_id, retry_id}));

  // Logged before each submission; the resumed runner submitted nothing for the first evaluation.
  std::vector<Event> subs = events_of_type(events, events::EvalSubmitted::kType);
  ASSERT_EQ(subs.size(), 3u);
  EXPECT_EQ(payload_of<events::EvalSubmitted>(subs[0]).submission_id, first_id);
  EXPECT_EQ(payload_of<events::EvalSubmitted>(subs[1]).submission_id, second_id);
  EXPECT_EQ(payload_of<events::EvalSubmitted>(subs[2]).submission_id, retry_id);
  EXPECT_EQ(payload_of<events::EvalSubmitted>(subs[2]).attempt, 1);

  // The lost job reported once, with its retry.
  std::vector<Event> lost = events_of_type(events, events::ExecutorJobLost::kType);
  ASSERT_EQ(lost.size(), 1u);
  const auto lost0 = payload_of<events::ExecutorJobLost>(lost[0]);
  EXPECT_EQ(lost0.submission_id, second_id);
  EXPECT_EQ(lost0.retry, retry_id);
  EXPECT_FALSE(lost0.node.empty()) << "the node the job was lost on is named";
  EXPECT_EQ(lost0.retry_node, "") << "a one-node cluster has no other node to pin the retry to";

  // Both evaluations finished ok from their jobs; each candidate was evaluated exactly once.
  std::vector<Event> fin = events_of_type(events, events::EvalFinished::kType);
  ASSERT_EQ(fin.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto f = payload_of<events::EvalFinished>(fin[i]);
    EXPECT_EQ(f.status, EvalStatus::kOk) << fin[i].payload.dump();
    EXPECT_EQ(f.result["score"], i == 0 ? 2 : 4);
    ASSERT_TRUE(f.executor);
    EXPECT_EQ(f.executor->where, i == 0 ? first_id : retry_id);
    EXPECT_FALSE(f.executor->node.empty()) << "the node the job ran on";
  }
  std::vector<std::string> marks = read_lines(marker);
  EXPECT_EQ(std::count(marks.begin(), marks.end(), sha256_hex(kFirst)), 1);
  EXPECT_EQ(std::count(marks.begin(), marks.end(), sha256_hex(kSecond)), 1);
  State s = fold(events);
  EXPECT_TRUE(s.done);
  ASSERT_TRUE(s.best_score);
  EXPECT_EQ(*s.best_score, 4);
}

}  // namespace
}  // namespace marathon
