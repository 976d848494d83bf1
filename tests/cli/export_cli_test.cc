// `marathon export` through the real binary: a scripted run on the tiny task (deterministic
// evaluator) evaluates value 2, 5 and 3; the exported files and the exported patch, applied to the
// starter, evaluate with `marathon eval` to the recorded scores and candidate hashes, on the run
// and on a fork of it; refusals write nothing.
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"
#include "../loop/tiny_script.h"
#include "fresh_repo.h"
#include "goal/task_spec.h"
#include "loop/run_setup.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

class ExportCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new mt::TempDir("export-cli");
    ScriptedLlmServer server = tiny_server();
    int rc = mt::run_binary(tiny_run_args(run(), server.base_url()), {}, *tmp_ / "run.log", 300);
    ASSERT_EQ(rc, 0) << mt::read_text(*tmp_ / "run.log");
  }
  static void TearDownTestSuite() {
    delete tmp_;
    tmp_ = nullptr;
  }
  static fs::path run() { return *tmp_ / "run"; }

  int cli(const std::vector<std::string>& args) {
    fs::remove(log_);
    int rc = mt::run_binary(args, {}, log_, 120);
    out_ = mt::read_text(log_);
    return rc;
  }
  // `marathon eval` of the tiny task on `dir`: {score, candidate}.
  json eval(const fs::path& dir) {
    EXPECT_EQ(cli({"eval", mt::tiny_task().string(), "--candidate", dir.string(), "--json"}), 0)
        << out_;
    return mt::last_json_line(out_);
  }
  fs::path at(const std::string& name) { return here_ / name; }

  static mt::TempDir* tmp_;
  mt::TempDir here_{"export-cli-case"};
  fs::path log_ = here_ / "out.log";
  std::string out_;
};
mt::TempDir* ExportCli::tmp_ = nullptr;

TEST_F(ExportCli, TheBestsFilesEvaluateToTheRecordedScore) {
  State s = mt::load_state(run());
  ASSERT_TRUE(s.best_score.has_value());
  ASSERT_EQ(*s.best_score, 5);
  ASSERT_EQ(cli({"export", run().string(), "-o", at("best").string()}), 0) << out_;
  EXPECT_NE(out_.find("value 5, the run's best"), std::string::npos) << out_;
  EXPECT_EQ(mt::read_text(at("best") / "solution.txt"), "value = 5\n");
  json r = eval(at("best"));
  EXPECT_EQ(r["score"], *s.best_score) << r.dump();
  EXPECT_EQ(r["candidate"], s.best_candidate) << r.dump();
  // --best says the same.
  ASSERT_EQ(cli({"export", run().string(), "--best", "-o", at("best2").string()}), 0) << out_;
  EXPECT_EQ(mt::read_text(at("best2") / "solution.txt"), "value = 5\n");
}

TEST_F(ExportCli, APatchAgainstTheStarterAppliedToItEvaluatesToTheRecordedScore) {
  ASSERT_EQ(cli({"export", run().string(), "--patch", "-o", at("p/best.patch").string()}), 0)
      << out_;
  std::string patch = mt::read_text(at("p/best.patch"));
  EXPECT_NE(patch.find("--- a/solution.txt\n+++ b/solution.txt\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("-value = 1\n+value = 5\n"), std::string::npos) << patch;
  fs::copy(mt::tiny_task() / "starter", at("applied"), fs::copy_options::recursive);
  std::string cmd = "patch -s -p1 -d " + mt::sh_quote(at("applied").string()) + " < " +
                    mt::sh_quote(at("p/best.patch").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  json r = eval(at("applied"));
  EXPECT_EQ(r["score"], 5) << r.dump();
  EXPECT_EQ(r["candidate"], mt::load_state(run()).best_candidate);
  // Without -o, the patch goes to stdout.
  ASSERT_EQ(cli({"export", run().string(), "--patch"}), 0) << out_;
  EXPECT_NE(out_.find("+value = 5"), std::string::npos) << out_;
}

TEST_F(ExportCli, AnyCandidateByAPrefixOfItsHash) {
  const std::string three = tiny_candidate("value = 3\n");
  ASSERT_EQ(cli({"export", run().string(), "--candidate", three.substr(0, 10), "-o",
                 at("three").string()}),
            0)
      << out_;
  EXPECT_EQ(mt::read_text(at("three") / "solution.txt"), "value = 3\n");
  json r = eval(at("three"));
  EXPECT_EQ(r["score"], 3) << r.dump();
  EXPECT_EQ(r["candidate"], three);
}

TEST_F(ExportCli, AForkExportsItsOwnBest) {
  // The fork ends after value 2 was evaluated, before value 5 was.
  int64_t at_seq = 0;
  for (const Event& e : mt::events_of_type(mt::load_events(run()), events::EvalFinished::kType)) {
    if (e.payload.value("candidate", "") == tiny_candidate("value = 2\n")) at_seq = e.seq;
  }
  ASSERT_GT(at_seq, 0);
  ASSERT_EQ(cli({"fork", run().string(), "--at", std::to_string(at_seq), "--run-dir",
                 at("fork").string()}),
            0)
      << out_;
  ASSERT_EQ(cli({"export", at("fork").string(), "-o", at("fork-best").string()}), 0) << out_;
  EXPECT_EQ(mt::read_text(at("fork-best") / "solution.txt"), "value = 2\n");
  EXPECT_EQ(eval(at("fork-best"))["score"], 2);
  ASSERT_EQ(cli({"export", at("fork").string(), "--patch"}), 0) << out_;
  EXPECT_NE(out_.find("+value = 2"), std::string::npos) << out_;
}

TEST_F(ExportCli, RefusalsExit2AndWriteNothing) {
  fs::create_directories(at("full"));
  std::ofstream(at("full") / "keep.txt") << "mine\n";
  EXPECT_EQ(cli({"export", run().string(), "-o", at("full").string()}), 2) << out_;
  EXPECT_NE(out_.find("not an empty folder"), std::string::npos) << out_;
  EXPECT_EQ(mt::read_text(at("full") / "keep.txt"), "mine\n");
  EXPECT_FALSE(fs::exists(at("full") / "solution.txt"));

  EXPECT_EQ(
      cli({"export", run().string(), "--candidate", "ffffffffffff", "-o", at("none").string()}), 2)
      << out_;
  EXPECT_NE(out_.find("no candidate ffffffffffff"), std::string::npos) << out_;
  EXPECT_FALSE(fs::exists(at("none")));

  EXPECT_EQ(cli({"export", run().string()}), 2) << out_;  // neither -o nor --patch
  EXPECT_EQ(cli({"export", run().string(), "--best", "--candidate", "ab", "-o", "x"}), 2) << out_;

  NewRunOptions o;  // a run with no evaluation has no best
  o.run_dir = at("fresh");
  o.policy = "search";
  create_run(load_task(mt::tiny_task()), o);
  EXPECT_EQ(cli({"export", at("fresh").string(), "-o", at("fresh-out").string()}), 2) << out_;
  EXPECT_NE(out_.find("no best candidate yet"), std::string::npos) << out_;
  EXPECT_FALSE(fs::exists(at("fresh-out")));
}

}  // namespace
}  // namespace marathon
