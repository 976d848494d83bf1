// `marathon init` through the real binary on repositories it has never seen: the task it writes
// evaluates its starter correctly (and a changed candidate differently); every bad input is an
// error that says what is wrong and leaves no task folder, not even a half-written hidden one.
#include <gtest/gtest.h>

#include <regex>

#include "fresh_repo.h"
#include "goal/task_spec.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

// A repository whose metric is the number in value.txt (measured by a script) and whose check
// refuses a value below 1.
const std::map<std::string, std::string> kValueRepo = {
    {"value.txt", "7\n"},
    {"measure.sh", "#!/bin/sh\necho measuring >&2\ncat value.txt\n"},
    {"tests/check.sh", "#!/bin/sh\n[ \"$(cat value.txt)\" -ge 1 ]\n"},
    {"src/notes.md", "nothing to see\n"},
};

class InitCli : public ::testing::Test {
 protected:
  void SetUp() override { mt::make_repo(repo_, kValueRepo); }

  int marathon(const std::vector<std::string>& args, const std::string& input = "") {
    fs::remove(log_);
    int rc = mt::run_in(tmp_.path(), MARATHON_BINARY, args, {}, log_, input, 300);
    out_ = mt::read_text(log_);
    return rc;
  }
  std::vector<std::string> init_args(const std::string& task, std::vector<std::string> more = {}) {
    std::vector<std::string> a = {"init",         task,       "--repo",
                                  repo_.string(), "--metric", "sh measure.sh"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  // Nothing of a task named `name` beside the repository: no folder, no hidden build folder.
  void expect_no_trace(const std::string& name) {
    EXPECT_FALSE(fs::exists(tmp_ / name)) << name;
    for (const auto& e : fs::directory_iterator(tmp_.path())) {
      EXPECT_EQ(e.path().filename().string().find(".init-"), std::string::npos)
          << "left behind: " << e.path();
    }
  }
  void expect_says(const std::string& words) {
    EXPECT_NE(out_.find(words), std::string::npos) << "expected \"" << words << "\" in:\n" << out_;
  }

  mt::TempDir tmp_{"init-cli"};
  fs::path repo_ = tmp_ / "repo";
  fs::path log_ = tmp_ / "out.log";
  std::string out_;
};

TEST_F(InitCli, AFreshRepositoryBecomesATaskWhoseStarterEvaluatesToItsBaseline) {
  ASSERT_EQ(marathon(init_args("value-task", {"--check", "sh tests/check.sh", "--runs", "2"})), 0)
      << out_;
  expect_says("baseline    7");
  TaskSpec t = load_task(tmp_ / "value-task");
  EXPECT_EQ(t.name, "value-task");
  EXPECT_EQ(t.goal.direction, Direction::kMin);
  EXPECT_EQ(t.rules["baseline"], 7);
  EXPECT_EQ(t.rules["runs"], 2);
  EXPECT_EQ(t.rules["protected"], json({"measure.sh", "tests/*"}))
      << "the files the commands name and the tests";
  EXPECT_EQ(t.starter, (std::vector<std::string>{"measure.sh", "src/notes.md", "tests/check.sh",
                                                 "value.txt"}));
  EXPECT_EQ(mt::read_text(tmp_ / "value-task/evaluate.py"),
            mt::read_text(mt::source_dir() / "harness/repo_eval.py"));
  EXPECT_FALSE(fs::exists(repo_ / "task.toml")) << "nothing is written into the repository";

  ASSERT_EQ(marathon({"eval", (tmp_ / "value-task").string(), "--json"}), 0) << out_;
  json r = mt::last_json_line(out_);
  EXPECT_EQ(r["correct"], true) << out_;
  EXPECT_EQ(r["score"], 7);
  EXPECT_EQ(r["baseline_score"], 7);

  fs::path cand = tmp_ / "cand";
  fs::copy(tmp_ / "value-task/repo", cand, fs::copy_options::recursive);
  std::ofstream(cand / "value.txt") << "3\n";
  ASSERT_EQ(
      marathon({"eval", (tmp_ / "value-task").string(), "--json", "--candidate", cand.string()}),
      0);
  EXPECT_EQ(mt::last_json_line(out_)["score"], 3) << out_;
  std::ofstream(cand / "value.txt") << "0\n";
  ASSERT_EQ(
      marathon({"eval", (tmp_ / "value-task").string(), "--json", "--candidate", cand.string()}),
      0);
  EXPECT_EQ(mt::last_json_line(out_)["correct"], false) << "the check refuses 0";
  std::ofstream(cand / "measure.sh") << "echo 0\n";
  ASSERT_EQ(
      marathon({"eval", (tmp_ / "value-task").string(), "--json", "--candidate", cand.string()}),
      0);
  EXPECT_EQ(mt::last_json_line(out_)["violations"][0],
            "measure.sh: a protected file was changed (it must stay as committed)");
}

TEST_F(InitCli, TheCommittedFilesAreTheTaskNotTheWorkingTree) {
  std::ofstream(repo_ / "value.txt") << "99\n";       // uncommitted
  std::ofstream(repo_ / "untracked.txt") << "new\n";  // never added
  ASSERT_EQ(marathon(init_args("t")), 0) << out_;
  expect_says("baseline    7");
  expect_says("2 uncommitted change(s)");
  EXPECT_FALSE(fs::exists(tmp_ / "t/repo/untracked.txt"));
}

TEST_F(InitCli, ASubfolderOfARepositoryIsATaskOfItsOwn) {
  mt::make_repo(tmp_ / "mono",
                {{"tools/x.txt", "1\n"}, {"app/count.sh", "echo 42\n"}, {"app/lib/a.txt", "a\n"}});
  ASSERT_EQ(marathon({"init", "sub", "--repo", (tmp_ / "mono/app").string(), "--metric",
                      "sh count.sh", "--direction", "max"}),
            0)
      << out_;
  TaskSpec t = load_task(tmp_ / "sub");
  EXPECT_EQ(t.starter, (std::vector<std::string>{"count.sh", "lib/a.txt"}));
  EXPECT_EQ(t.rules["baseline"], 42);
}

TEST_F(InitCli, AMetricPrintingNoNumberIsRefusedWithWhatItPrinted) {
  EXPECT_EQ(marathon({"init", "t", "--repo", repo_.string(), "--metric", "echo hello"}), 2);
  expect_says("the starter, as committed, does not evaluate");
  expect_says("its last line is not a number: \"hello\"");
  expect_no_trace("t");
}

TEST_F(InitCli, ACheckFailingOnTheStarterIsRefusedWithItsOutput) {
  EXPECT_EQ(marathon(init_args("t", {"--check", "echo broken-build; exit 3"})), 2);
  expect_says("exited with status 3");
  expect_says("broken-build");
  expect_no_trace("t");
}

TEST_F(InitCli, AMissingRepositoryIsRefused) {
  EXPECT_EQ(marathon({"init", "t", "--repo", (tmp_ / "nowhere").string(), "--metric", "echo 1"}),
            2);
  expect_says("nowhere: no such folder");
  expect_no_trace("t");
}

TEST_F(InitCli, AFolderOutsideGitIsRefusedSayingHowToCommit) {
  fs::create_directories(tmp_ / "plain");
  std::ofstream(tmp_ / "plain/a.sh") << "echo 1\n";
  EXPECT_EQ(marathon({"init", "t", "--repo", (tmp_ / "plain").string(), "--metric", "sh a.sh"}), 2);
  expect_says("not inside a git repository");
  expect_says("git init");
  expect_no_trace("t");
}

TEST_F(InitCli, AnEditableGlobMatchingNothingIsRefusedNamingIt) {
  EXPECT_EQ(marathon(init_args("t", {"--editable", "value.txt", "--editable", "src/*.rs"})), 2);
  expect_says("--editable 'src/*.rs' matches none of the files committed at");
  expect_no_trace("t");
}

TEST_F(InitCli, BadFlagsAndAnExistingFolderAreRefusedBeforeAnythingRuns) {
  EXPECT_EQ(marathon(init_args("t", {"--direction", "up"})), 2);
  expect_says("--direction: must be min or max, got \"up\"");
  expect_no_trace("t");
  EXPECT_EQ(marathon(init_args("t", {"--runs", "0"})), 2);
  expect_says("--runs");
  fs::create_directories(tmp_ / "taken");
  std::ofstream(tmp_ / "taken/keep.txt") << "mine\n";
  EXPECT_EQ(marathon(init_args("taken")), 2);
  expect_says("already exists");
  EXPECT_EQ(mt::read_text(tmp_ / "taken/keep.txt"), "mine\n");
}

// Parent folders are made, as `mkdir -p` would; --json gives the task written as one object.
TEST_F(InitCli, ParentFoldersAreMadeAndJsonDescribesTheTask) {
  const fs::path deep = tmp_ / "new/parent/t";
  ASSERT_EQ(marathon(init_args(deep.string(), {"--json"})), 0) << out_;
  EXPECT_TRUE(fs::is_regular_file(deep / "task.toml"));
  json j = mt::last_json_line(out_);
  EXPECT_EQ(j["task_dir"], deep.string()) << out_;
  EXPECT_EQ(j["name"], "t");
  EXPECT_EQ(j["baseline"], 7);
  EXPECT_EQ(j["direction"], "min");
  EXPECT_NE(j["protected"].dump().find("measure.sh"), std::string::npos) << j.dump();
  EXPECT_EQ(out_.find("  baseline    7"), std::string::npos) << "no text summary: " << out_;
}

TEST_F(InitCli, EveryEditableFileProtectedIsRefusedUnlessAskedFor) {
  EXPECT_EQ(marathon(init_args("t", {"--editable", "measure.sh"})), 2);
  expect_says("every editable file is protected");
  expect_no_trace("t");
  ASSERT_EQ(marathon(init_args("t", {"--editable", "measure.sh", "--no-default-protect"})), 0)
      << out_;
  EXPECT_EQ(load_task(tmp_ / "t").rules["protected"], json::array());
}

TEST_F(InitCli, InteractiveAsksTheSameQuestions) {
  fs::path answers = tmp_ / "answers.txt";
  std::ofstream(answers) << "asked\n"               // task folder
                         << repo_.string() << "\n"  // repository
                         << "sh measure.sh\n"       // metric
                         << "sideways\nmax\n"       // direction: asked again
                         << "sh tests/check.sh\n"   // check
                         << "value.txt src/*\n"     // editable
                         << "-\n"                   // protected
                         << "zero\n1\n";            // runs: asked again
  ASSERT_EQ(marathon({"init", "--interactive"}, answers.string()), 0) << out_;
  expect_says("answer min or max");
  TaskSpec t = load_task(tmp_ / "asked");
  EXPECT_EQ(t.goal.direction, Direction::kMax);
  EXPECT_EQ(t.editable, (std::vector<std::string>{"value.txt", "src/*"}));
  EXPECT_EQ(t.rules["check"], "sh tests/check.sh");
  EXPECT_EQ(t.rules["runs"], 1);
}

TEST_F(InitCli, InteractiveInputEndingEarlyIsAnError) {
  fs::path answers = tmp_ / "short.txt";
  std::ofstream(answers) << "t\n" << repo_.string() << "\n";
  EXPECT_EQ(marathon({"init", "--interactive"}, answers.string()), 2);
  expect_says("the input ended before every question was answered");
  expect_no_trace("t");
}

// --metric-time: the evaluator times the command and keeps the starter's output; --guard runs
// after the check; init says what a candidate may touch and what it never can.
TEST_F(InitCli, MetricTimeIsTimedByTheEvaluatorWithTheGuardAfterTheCheck) {
  ASSERT_EQ(marathon({"init", "timed", "--repo", repo_.string(), "--metric-time", "sh measure.sh",
                      "--check", "sh tests/check.sh", "--guard", "test \"$(cat v*.txt)\" != 5"}),
            0)
      << out_;
  expect_says("timed by the evaluator (seconds, median of 3); its output must stay the starter's");
  expect_says("refused     anywhere: conftest.py, pytest.ini");
  expect_says("sitecustomize.py");
  expect_says("a candidate's changes to other files are ignored");
  expect_says("`test \"$(cat v*.txt)\" != 5` must exit 0 after the check");
  EXPECT_EQ(out_.find("can fake"), std::string::npos) << out_;
  TaskSpec t = load_task(tmp_ / "timed");
  EXPECT_EQ(t.rules["metric_kind"], "wall_time");
  EXPECT_EQ(t.rules["metric_output"].get<std::string>().rfind("sha256:", 0), 0u) << t.rules;
  EXPECT_EQ(t.rules["integrity"], "test \"$(cat v*.txt)\" != 5");
  EXPECT_LT(t.rules["baseline"].get<double>(), 5.0) << "seconds, not the 7 it prints";

  fs::path cand = tmp_ / "cand";
  fs::copy(tmp_ / "timed/repo", cand, fs::copy_options::recursive);
  auto verdict = [&](const std::string& value) {
    std::ofstream(cand / "value.txt") << value;
    EXPECT_EQ(marathon({"eval", (tmp_ / "timed").string(), "--json", "--candidate", cand.string()}),
              0);
    return mt::last_json_line(out_);
  };
  json r = verdict("5\n");
  EXPECT_EQ(r["correct"], false) << out_;
  EXPECT_NE(r["log"].get<std::string>().find("integrity `test \"$(cat v*.txt)\" != 5`"),
            std::string::npos)
      << r.dump();
  r = verdict("3\n");
  EXPECT_EQ(r["correct"], false) << out_;
  EXPECT_NE(r["log"].get<std::string>().find("its output is not the starter's"), std::string::npos)
      << r.dump();
  r = verdict("7\n");
  EXPECT_EQ(r["correct"], true) << out_;
}

TEST_F(InitCli, AMetricTimingItselfIsWarnedOfAndPointedToMetricTime) {
  mt::make_repo(tmp_ / "bench", {{"bench.py",
                                  "import time\nt = time.perf_counter()\n"
                                  "print(time.perf_counter() - t)\n"},
                                 {"lib.py", "x = 1\n"}});
  ASSERT_EQ(marathon({"init", "t", "--repo", (tmp_ / "bench").string(), "--metric",
                      "python3 bench.py", "--runs", "1"}),
            0)
      << out_;
  expect_says("bench.py reads a clock (perf_counter)");
  expect_says("a candidate can fake it");
  expect_says("--metric-time 'CMD'");
}

TEST(VersionCli, NamesTheCommit) {
  mt::TempDir tmp("version");
  ASSERT_EQ(mt::run_binary({"--version"}, {}, tmp / "log"), 0);
  std::string out = mt::read_text(tmp / "log");
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(^marathon \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\))")))
      << out;
}

}  // namespace
}  // namespace marathon
