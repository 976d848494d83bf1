// `marathon eval TASK_DIR [--candidate DIR] [--json]` through the real binary: exit 0 with the
// evaluator's JSON whenever the evaluation ran (correct or not), 1 when the evaluator itself
// failed, 2 for a bad task or candidate folder; on a machine without a GPU a kernel task gives
// correctness only, with a note saying timing needs a GPU.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../loop/loop_test_support.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

class EvalCli : public ::testing::Test {
 protected:
  int eval(std::vector<std::string> args, double timeout_s = 120) {
    args.insert(args.begin(), "eval");
    fs::remove(log_);
    int rc = mt::run_binary(args, {}, log_, timeout_s);
    out_ = mt::read_text(log_);
    return rc;
  }
  // The JSON line of the output (spdlog lines may precede it).
  json result() const {
    std::istringstream in(out_);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.front() == '{') return json::parse(line);
    }
    ADD_FAILURE() << "no JSON line in: " << out_;
    return json::object();
  }
  fs::path candidate(const std::string& solution) {
    fs::path dir = tmp_ / ("cand" + std::to_string(++n_));
    fs::create_directories(dir);
    std::ofstream(dir / "solution.txt") << solution;
    return dir;
  }

  mt::TempDir tmp_{"eval-cli"};
  fs::path log_ = tmp_ / "out.log";
  std::string out_;
  int n_ = 0;
};

TEST_F(EvalCli, CorrectCandidatePrintsTheVerdictAndExitsZero) {
  ASSERT_EQ(
      eval({mt::tiny_task().string(), "--json", "--candidate", candidate("value = 7\n").string()}),
      0)
      << out_;
  json r = result();
  EXPECT_TRUE(r.value("correct", false));
  EXPECT_EQ(r["score"], 7);
  EXPECT_EQ(r["eval_status"], "ok");
  EXPECT_EQ(r["task"], "tiny");
  EXPECT_EQ(r["candidate"].get<std::string>().size(), 64u);
}

TEST_F(EvalCli, IncorrectCandidateIsAVerdictAndStillExitsZero) {
  ASSERT_EQ(eval({mt::tiny_task().string(), "--json", "--candidate",
                  candidate("nothing here\n").string()}),
            0)
      << out_;
  EXPECT_FALSE(result().value("correct", true));
}

TEST_F(EvalCli, HangingEvaluatorIsATimeoutAndExitsOne) {
  EXPECT_EQ(eval({mt::tiny_task().string(), "--json", "--timeout", "1", "--candidate",
                  candidate("hang\nvalue = 3\n").string()}),
            1)
      << out_;
  EXPECT_EQ(result()["eval_status"], "timeout");
}

TEST_F(EvalCli, BadTaskOrCandidateFolderExitsTwoNamingIt) {
  fs::path bad_task = tmp_ / "bad-task";
  fs::create_directories(bad_task);
  std::ofstream(bad_task / "task.toml") << "name = \"x\"\n[goal\nmetric = 1\n";
  EXPECT_EQ(eval({bad_task.string(), "--json"}), 2);
  EXPECT_NE(out_.find("task.toml"), std::string::npos) << out_;

  EXPECT_EQ(eval({mt::tiny_task().string(), "--candidate", (tmp_ / "missing").string()}), 2);
  EXPECT_NE(out_.find("missing"), std::string::npos) << out_;
}

// The flagship task through the real Python harness. Without a GPU it runs the correctness checks
// in Triton's interpreter on small shapes and says that timing needs a GPU; with one it times.
TEST_F(EvalCli, KdaTaskGivesCorrectnessOnTheCpuWithANote) {
  const char* py = std::getenv("MARATHON_PYTHON");
  std::string python = py ? py : "python3";
  if (std::system((python + " -c 'import torch, triton' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << python << " cannot import torch and triton (run through `make test`)";
  }
  ASSERT_EQ(eval({(mt::source_dir() / "tasks/kda").string(), "--json"}, 600), 0) << out_;
  json r = result();
  EXPECT_EQ(r["eval_status"], "ok");
  EXPECT_TRUE(r.value("correct", false)) << r.dump();
  EXPECT_TRUE(r["violations"].empty()) << r.dump();
  std::string device = r.value("device", "");
  if (device.find("cpu") != std::string::npos) {
    EXPECT_TRUE(r["score"].is_null());
    EXPECT_NE(r.value("timing", "").find("needs a GPU"), std::string::npos) << r.dump();
  } else {
    EXPECT_TRUE(r["score"].is_number()) << r.dump();
  }
}

// Both MLA tasks through the sandboxed evaluator: the prefill's reference reads the input families
// of the decode task's folder (`[evaluator] reads`), which the sandbox must make readable.
TEST_F(EvalCli, MlaTasksGiveCorrectnessInTheSandbox) {
  const char* py = std::getenv("MARATHON_PYTHON");
  std::string python = py ? py : "python3";
  if (std::system((python + " -c 'import torch, triton' >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << python << " cannot import torch and triton (run through `make test`)";
  }
  for (const char* task : {"tasks/mla", "tasks/mla-prefill"}) {
    SCOPED_TRACE(task);
    ASSERT_EQ(eval({(mt::source_dir() / task).string(), "--json"}, 600), 0) << out_;
    json r = result();
    EXPECT_EQ(r["eval_status"], "ok");
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_TRUE(r.value("correct", false)) << r.dump();
  }
}

}  // namespace
}  // namespace marathon
