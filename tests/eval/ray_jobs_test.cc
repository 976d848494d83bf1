// The pure parts of the Ray executor: the executor flag, submission ids, the submit body, the
// working_dir package (a zip Python's zipfile reads back), the result found in a job's logs.
#include "eval/ray_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "eval/executor.h"
#include "eval/ray_executor.h"
#include "eval/zip_writer.h"

namespace marathon::eval {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(ParseExecutor, LocalOrRayHostPort) {
  std::string error;
  EXPECT_EQ(parse_executor("local", &error)->kind, ExecutorKind::kLocal);
  EXPECT_EQ(parse_executor("", &error)->kind, ExecutorKind::kLocal);
  std::optional<ExecutorSpec> r = parse_executor("ray://10.0.0.5:8265", &error);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, ExecutorKind::kRay);
  EXPECT_EQ(r->host, "10.0.0.5");
  EXPECT_EQ(r->port, 8265);
  EXPECT_EQ(r->to_string(), "ray://10.0.0.5:8265");
  ExecutorSpec back = executor_from_config(json{{"executor", r->to_json()}});
  EXPECT_EQ(back.to_string(), "ray://10.0.0.5:8265");
  EXPECT_EQ(back.worker_binary, "marathon");
  for (const char* bad : {"ray://host", "ray://:80", "ray://h:0", "ray://h:99999", "ray://h:8x",
                          "ray://a b:1", "kubernetes", "ray://h:"}) {
    error.clear();
    EXPECT_FALSE(parse_executor(bad, &error)) << bad;
    EXPECT_THAT(error, HasSubstr(bad));
  }
}

TEST(RaySubmission, IdsAreStableAndPlain) {
  EXPECT_EQ(ray_submission_id("run1-42", 0), "marathon-run1-42-0");
  EXPECT_EQ(ray_submission_id("run1-42", 1), "marathon-run1-42-1");
  EXPECT_EQ(ray_submission_id("a/b c", 0), "marathon-a_b_c-0");
}

TEST(RaySubmission, BodyAsksForAGpuWhenTheTaskNeedsOne) {
  TaskSpec task;
  task.needs_gpu = true;
  EvalRequest r;
  r.task = &task;
  r.id = "run-7";
  r.cache_key = "k";
  r.candidate = "c";
  r.options.isolation = sandbox::Isolation::kSandbox;
  json b = ray_submit_body(r, "marathon-run-7-0", "gcs://_ray_pkg_ab.zip", "/opt/m p/marathon");
  EXPECT_EQ(b["submission_id"], "marathon-run-7-0");
  EXPECT_EQ(b["entrypoint_num_gpus"], 1);
  EXPECT_EQ(b["runtime_env"]["working_dir"], "gcs://_ray_pkg_ab.zip");
  EXPECT_EQ(b["entrypoint"], "'/opt/m p/marathon' eval task --candidate candidate --json");
  EXPECT_EQ(b["metadata"]["cache_key"], "k");
  task.needs_gpu = false;
  r.options.isolation = sandbox::Isolation::kNone;
  r.options.timeout_s = 5;
  b = ray_submit_body(r, "x", "gcs://p.zip", "marathon");
  EXPECT_EQ(b["entrypoint_num_gpus"], 0);
  EXPECT_EQ(b["entrypoint"],
            "'marathon' eval task --candidate candidate --json --unsafe-no-sandbox --timeout 5");
}

// The state API's node list (the shape Ray 2.60's GET /api/v0/nodes answers) and the choice of a
// node to retry a lost job on: alive, and not the lost job's node nor another on its IP.
TEST(RayNodes, ARetryGoesToAnotherAliveNode) {
  json answer = json::parse(R"({"result": true, "msg": "", "data": {"result": {"total": 4,
    "result": [
      {"node_id": "aaa", "node_ip": "10.0.0.1", "state": "ALIVE", "is_head_node": true},
      {"node_id": "bbb", "node_ip": "10.0.0.1", "state": "ALIVE"},
      {"node_id": "ccc", "node_ip": "10.0.0.2", "state": "DEAD"},
      {"node_id": "ddd", "node_ip": "10.0.0.3", "state": "ALIVE"},
      {"node_ip": "10.0.0.9", "state": "ALIVE"}]}}})");
  std::vector<RayNode> nodes = ray_nodes(answer);
  ASSERT_EQ(nodes.size(), 4u) << "a node without an id is skipped";
  EXPECT_TRUE(nodes[0].alive);
  EXPECT_FALSE(nodes[2].alive);
  std::optional<RayNode> other = other_node(nodes, "aaa");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->id, "ddd") << "bbb shares aaa's IP, ccc is dead";
  EXPECT_FALSE(other_node({nodes[0], nodes[1]}, "aaa")) << "no node on another IP";
  EXPECT_EQ(other_node(nodes, "")->id, "aaa") << "lost on an unknown node: any alive node";
  EXPECT_TRUE(ray_nodes(json::parse(R"({"data": {"result": 3}})")).empty());
  EXPECT_TRUE(ray_nodes(json::array()).empty());

  json body = {{"entrypoint", "x"}};
  pin_to_node(body, "10.0.0.3");
  EXPECT_EQ(body["entrypoint_resources"], (json{{"node:10.0.0.3", 0.001}}));
}

TEST(ShellQuote, SingleQuotesSurvive) {
  EXPECT_EQ(shell_quote("a'b"), "'a'\\''b'");
  EXPECT_EQ(shell_quote("$(x)"), "'$(x)'");
}

TEST(EvalResultFromLogs, TheLastResultForThisCandidate) {
  std::string logs =
      "[warn] something\n"
      "{\"eval_status\": \"ok\", \"candidate\": \"other\", \"score\": 9}\n"
      "{\"not\": \"a result\"}\n"
      "{\"eval_status\": \"ok\", \"candidate\": \"c1\", \"score\": 3, \"elapsed_s\": 1.5}\n"
      "{broken\n";
  std::optional<json> r = eval_result_from_logs(logs, "c1");
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)["score"], 3);
  EXPECT_FALSE(eval_result_from_logs(logs, "c2"));
  EXPECT_FALSE(eval_result_from_logs("killed\n", "c1"));
}

TEST(ZipStored, Crc32OfAKnownString) {
  EXPECT_EQ(crc32("123456789"), 0xCBF43926u);
  EXPECT_EQ(crc32(""), 0u);
}

TEST(ZipStored, RefusesPathsThatLeaveTheArchive) {
  for (const char* bad : {"", "/etc/passwd", "a/../../b", "a//b", ".."}) {
    EXPECT_THROW(zip_stored({{bad, "x"}}), std::invalid_argument) << bad;
  }
}

std::string run_python(const std::string& script) {
  std::string cmd = "python3 -c '" + script + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(RayPackage, TaskAndCandidateInAZipPythonReads) {
  fs::path dir = fs::temp_directory_path() / ("marathon-raypkg-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "task" / "starter");
  fs::create_directories(dir / "task" / ".git");
  std::ofstream(dir / "task" / "task.toml") << "name = 't'\n";
  std::ofstream(dir / "task" / "run.sh") << "#!/bin/sh\necho hi\n";
  fs::permissions(dir / "task" / "run.sh", fs::perms::owner_all);
  std::ofstream(dir / "task" / "starter" / "k.cc") << "int k;\n";
  std::ofstream(dir / "task" / ".git" / "HEAD") << "ref\n";
  fs::create_symlink("/etc/passwd", dir / "task" / "link");
  EvalRequest r;
  r.task_dir = dir / "task";
  CandidateFile f;
  f.path = "k.cc";
  f.bytes = std::string("int k = 2;\n\0binary", 18);
  r.files = {f};
  std::string zip = ray_package(r);
  std::ofstream(dir / "p.zip", std::ios::binary) << zip;
  std::string out =
      run_python("import zipfile,sys; z=zipfile.ZipFile(\"" + (dir / "p.zip").string() +
                 "\"); assert z.testzip() is None; "
                 "[print(i.filename, oct(i.external_attr>>16 & 0o777), len(z.read(i))) for i in "
                 "z.infolist()]");
  EXPECT_EQ(out,
            "task/run.sh 0o755 18\n"
            "task/starter/k.cc 0o644 7\n"
            "task/task.toml 0o644 11\n"
            "candidate/k.cc 0o644 18\n")
      << "no .git, no link; the candidate's bytes exactly";
  EXPECT_THROW(ray_package(r, 20), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace marathon::eval
