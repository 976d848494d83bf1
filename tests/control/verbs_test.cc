// The control verbs shared by the CLI and the dashboard: what each appends, and that a refused
// request appends nothing.
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"
#include "control/compact_verb.h"
#include "control/goal_verb.h"
#include "goal/task_spec.h"
#include "loop/run_setup.h"

namespace marathon::control {
namespace {

namespace mt = marathon::testing;

class Verbs : public ::testing::Test {
 protected:
  void SetUp() override {
    NewRunOptions o;
    o.run_dir = run_;
    o.policy = "search";
    create_run(load_task(mt::tiny_task()), o);
  }
  size_t events() { return mt::load_events(run_).size(); }
  void append(const std::string& type, json payload) {
    auto store = EventStore::open((run_ / "events.db").string(), EventStore::Mode::kOpen);
    store->append({type, std::move(payload)});
  }
  mt::TempDir tmp_{"verbs"};
  std::filesystem::path run_ = tmp_ / "run";
};

TEST_F(Verbs, VerbNamesRoundTripAndUnknownOnesAreRefused) {
  for (GoalVerb v : kGoalVerbs) EXPECT_EQ(goal_verb_from_string(to_string(v)), v);
  EXPECT_FALSE(goal_verb_from_string("explode"));
  EXPECT_EQ(goal_verb_names(), "set, edit, pause, resume, clear");
}

TEST_F(Verbs, EditKeepsTheStatusAndNeedsText) {
  size_t before = events();
  VerbResult bad = change_goal(run_, GoalVerb::kEdit, "");
  EXPECT_EQ(bad.status, VerbStatus::kBadInput);
  EXPECT_EQ(exit_code_of(bad.status), 2);
  EXPECT_EQ(events(), before);

  ASSERT_EQ(change_goal(run_, GoalVerb::kPause, "").status, VerbStatus::kDone);
  VerbResult r = change_goal(run_, GoalVerb::kEdit, "reach 10");
  ASSERT_EQ(r.status, VerbStatus::kDone);
  EXPECT_EQ(r.state.goal.objective, "reach 10");
  EXPECT_EQ(r.state.goal.status, marathon::GoalStatus::kPaused);
  EXPECT_EQ(r.seq, static_cast<int64_t>(before + 2));
  EXPECT_EQ(events(), before + 2);
}

TEST_F(Verbs, CompactNowIsRefusedOnAnOpenRunAndRunsOnAStoppedOne) {
  size_t before = events();
  CompactResult open = compact_run(run_, /*now=*/true);
  EXPECT_EQ(open.status, VerbStatus::kWrongState);
  EXPECT_EQ(events(), before);

  CompactResult asked = compact_run(run_, /*now=*/false);
  ASSERT_EQ(asked.status, VerbStatus::kDone);
  EXPECT_EQ(events(), before + 1);
  EXPECT_EQ(compact_run(run_, false).seq, asked.seq) << "a pending request is not asked twice";
  EXPECT_EQ(events(), before + 1);

  append(events::RunPaused::kType, {{"reason", "interrupted"}});
  CompactResult now = compact_run(run_, /*now=*/true);
  ASSERT_EQ(now.status, VerbStatus::kDone) << now.message;
  EXPECT_TRUE(now.compacted_now);
  EXPECT_EQ(now.state.compaction.pending_request_seq, 0);
}

TEST_F(Verbs, ALogWithoutARunIsRefused) {
  std::filesystem::path empty = tmp_ / "empty";
  std::filesystem::create_directories(empty);
  EventStore::open((empty / "events.db").string(), EventStore::Mode::kCreate);
  EXPECT_EQ(change_goal(empty, GoalVerb::kPause, "").status, VerbStatus::kNoRun);
  EXPECT_EQ(compact_run(empty, false).status, VerbStatus::kNoRun);
}

}  // namespace
}  // namespace marathon::control
