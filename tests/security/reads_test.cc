// A task whose `[evaluator] reads` names too much: the root folder, the home folder, a folder
// holding the home folder, a folder holding the task itself (directly, by `..`, or through a
// link). The evaluator's sandbox binds each such folder read-only, and the candidate's code runs
// inside the evaluator: it would read the user's files (keys, other runs' logs). The real binary
// refuses each task before anything runs, naming `reads` and why; a task reading a folder of its
// own data beside it still evaluates, and its candidate reads that folder.
#include <gtest/gtest.h>

#include "hostile_run.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::run_binary;
using testing::TempDir;

class EvaluatorReads : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = dir_ / "home";
    task_ = home_ / "tasks/hostile";
    data_ = home_ / "tasks/data";
    fs::create_directories(data_);
    std::ofstream(data_ / "inputs.txt") << "data-visible\n";
    fs::create_directories(home_ / ".ssh");
    std::ofstream(home_ / ".ssh/id_ed25519") << secret_ << "\n";
    fs::copy(testing::hostile_task(), task_, fs::copy_options::recursive);
    // The candidate reports what it can read: the data, and the home folder's key.
    std::ofstream(task_ / "starter/kernel.py")
        << "def main():\n"
           "    out = []\n"
           "    for p in ["
        << json((data_ / "inputs.txt").string()).dump() << ", "
        << json((home_ / ".ssh/id_ed25519").string()).dump()
        << "]:\n"
           "        try:\n"
           "            out.append(open(p).read())\n"
           "        except OSError as e:\n"
           "            out.append('refused ' + p)\n"
           "    return ' '.join(out)\n";
    toml_ = read_text(task_ / "task.toml");
  }
  // `marathon eval` of the task with `reads` set to `value` (a TOML array).
  int eval_with(const std::string& value) {
    std::string t = toml_;
    const std::string at = "[evaluator]\n";
    t.insert(t.find(at) + at.size(), "reads = " + value + "\n");
    std::ofstream(task_ / "task.toml", std::ios::trunc) << t;
    fs::remove(dir_ / "eval.log");
    int rc = run_binary({"eval", task_.string(), "--json"}, {{"HOME", home_.string()}},
                        dir_ / "eval.log");
    out_ = read_text(dir_ / "eval.log");
    return rc;
  }
  TempDir dir_{"reads"};
  fs::path home_, task_, data_;
  std::string toml_, out_;
  std::string secret_ = testing::unique_token("ssh-key-");
};

TEST_F(EvaluatorReads, FoldersThatHoldTheHomeOrTheTaskAreRefusedBeforeAnythingRuns) {
  fs::create_symlink("/", dir_ / "root-link");
  fs::create_symlink(home_ / "tasks", dir_ / "tasks-link");
  struct Case {
    std::string reads, why;
  };
  for (const Case& c :
       {Case{"[\"/\"]", "is the root folder"},
        Case{json(home_.string()).dump(), "holds the home folder"},
        Case{json(dir_.path().string()).dump(), "holds the home folder"},
        Case{"[\"..\"]", "holds the task folder"}, Case{"[\"../..\"]", "holds the home folder"},
        Case{"[\".\"]", "holds the task folder"},
        Case{json((dir_ / "root-link").string()).dump(), "is the root folder"},
        Case{json((dir_ / "tasks-link").string()).dump(), "holds the task folder"}}) {
    std::string reads = c.reads.front() == '[' ? c.reads : "[" + c.reads + "]";
    EXPECT_EQ(eval_with(reads), 2) << reads << ":\n" << out_;
    EXPECT_NE(out_.find("[evaluator].reads"), std::string::npos) << reads << ":\n" << out_;
    EXPECT_NE(out_.find(c.why), std::string::npos) << reads << ":\n" << out_;
    EXPECT_EQ(out_.find(secret_), std::string::npos) << reads << ": the key was read:\n" << out_;
  }
}

TEST_F(EvaluatorReads, AFolderOfTheTasksOwnDataBesideItIsRead) {
  ASSERT_EQ(eval_with("[\"../data\"]"), 0) << out_;
  EXPECT_NE(out_.find("data-visible"), std::string::npos) << out_;
  EXPECT_EQ(out_.find(secret_), std::string::npos) << "the key was read:\n" << out_;
}

}  // namespace
}  // namespace marathon
