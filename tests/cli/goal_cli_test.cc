// `marathon goal set|edit|pause|resume|clear RUN_DIR [TEXT]` through the real binary: each verb
// appends one goal.changed to a stopped run's log and the folded goal follows; a bad use is a
// clear error that appends nothing.
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"
#include "goal/task_spec.h"
#include "loop/run_setup.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

class GoalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    NewRunOptions o;
    o.run_dir = run_;
    o.policy = "search";
    create_run(load_task(mt::tiny_task()), o);
  }
  // Runs `marathon goal ARGS...`; returns the exit status, the output in out_.
  int goal(std::vector<std::string> args) {
    args.insert(args.begin(), "goal");
    fs::remove(log_);
    int rc = mt::run_binary(args, {}, log_, 60);
    out_ = mt::read_text(log_);
    return rc;
  }
  size_t goal_events() {
    return mt::events_of_type(mt::load_events(run_), events::GoalChanged::kType).size();
  }

  mt::TempDir tmp_{"goal-cli"};
  fs::path run_ = tmp_ / "run";
  fs::path log_ = tmp_ / "out.log";
  std::string out_;
};

TEST_F(GoalCli, EachVerbAppendsOneGoalChangedAndTheFoldFollows) {
  ASSERT_EQ(goal({"set", run_.string(), "make the value at least 10"}), 0) << out_;
  State s = mt::load_state(run_);
  EXPECT_EQ(s.goal.objective, "make the value at least 10");
  EXPECT_EQ(s.goal.status, GoalStatus::kActive);
  EXPECT_EQ(goal_events(), 1u);

  ASSERT_EQ(goal({"pause", run_.string(), "waiting for a new evaluator"}), 0) << out_;
  s = mt::load_state(run_);
  EXPECT_EQ(s.goal.status, GoalStatus::kPaused);
  EXPECT_EQ(s.goal.progress, "waiting for a new evaluator");

  ASSERT_EQ(goal({"edit", run_.string(), "make the value at least 20"}), 0) << out_;
  s = mt::load_state(run_);
  EXPECT_EQ(s.goal.objective, "make the value at least 20");
  EXPECT_EQ(s.goal.status, GoalStatus::kPaused) << "edit changes the text, not the status";

  ASSERT_EQ(goal({"resume", run_.string()}), 0) << out_;
  EXPECT_EQ(mt::load_state(run_).goal.status, GoalStatus::kActive);

  ASSERT_EQ(goal({"clear", run_.string()}), 0) << out_;
  EXPECT_EQ(mt::load_state(run_).goal.status, GoalStatus::kCleared);
  EXPECT_EQ(goal_events(), 5u);
}

TEST_F(GoalCli, SetWithoutTextIsAClearErrorAndAppendsNothing) {
  size_t before = mt::load_events(run_).size();
  EXPECT_EQ(goal({"set", run_.string()}), 2);
  EXPECT_NE(out_.find("needs the objective text"), std::string::npos) << out_;
  EXPECT_EQ(mt::load_events(run_).size(), before);
}

TEST_F(GoalCli, MissingRunDirIsAnErrorNamingIt) {
  fs::path missing = tmp_ / "no-such-run";
  EXPECT_NE(goal({"pause", missing.string()}), 0);
  EXPECT_NE(out_.find("no-such-run"), std::string::npos) << out_;
  EXPECT_FALSE(fs::exists(missing)) << "a goal verb must not create a run";
}

TEST_F(GoalCli, UnknownVerbIsRefused) {
  size_t before = mt::load_events(run_).size();
  EXPECT_NE(goal({"delete", run_.string()}), 0);
  EXPECT_EQ(mt::load_events(run_).size(), before);
}

}  // namespace
}  // namespace marathon
