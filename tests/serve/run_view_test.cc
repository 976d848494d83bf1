// RunView: the series the dashboard draws come from the one fold, one entry per logged evaluation,
// and stay right as the log grows.
#include "serve/run_view.h"

#include <gtest/gtest.h>

#include "run_log.h"
#include "serve/run_json.h"

namespace marathon::serve {
namespace {

namespace mt = marathon::testing;

TEST(RunView, OneEvaluationPerEvalFinishedWithItsKindAndTheBestSoFar) {
  mt::TempDir tmp("view");
  mt::RunLog log(tmp / "run");
  log.write("value = 2\n");
  log.eval(2.0);
  const std::string first = log.candidate();
  log.write("value = 1\n");
  log.eval(1.0, /*correct=*/false);
  log.write("value = 9\n");
  log.eval(9.0, true, "ok", json::array({"reads the reference"}));
  log.eval(std::nullopt, true, "timeout");
  log.write("value = 5\n");
  log.eval(5.0);

  RunView v(log.dir());
  EXPECT_FALSE(v.has_series());
  v.ensure_series();
  const auto& e = v.evaluations();
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].fields.kind, EvalKind::kOk);
  EXPECT_EQ(e[1].fields.kind, EvalKind::kIncorrect);
  EXPECT_EQ(e[2].fields.kind, EvalKind::kViolating);
  EXPECT_EQ(e[3].fields.kind, EvalKind::kFailed);
  EXPECT_EQ(e[4].fields.kind, EvalKind::kOk);
  EXPECT_EQ(e[2].best_after, 2.0) << "a violating 9 never counts";
  EXPECT_EQ(e[4].best_after, 5.0);
  EXPECT_EQ(e[4].previous_best, first);
  EXPECT_EQ(e[0].tool_calls, 1);
  EXPECT_EQ(e[4].tool_calls, 5);
  EXPECT_EQ(e[1].failure, "incorrect");
  ASSERT_EQ(v.starter().size(), 1u);
  EXPECT_EQ(v.starter().at("solution.txt"), sha256_hex("value = 1\n")) << "the task's starter";
}

TEST(RunView, RefreshAddsWhatWasAppendedAfterTheFirstFold) {
  mt::TempDir tmp("view");
  mt::RunLog log(tmp / "run");
  log.write("value = 2\n");
  log.eval(2.0);
  RunView v(log.dir());
  v.ensure_series();
  ASSERT_EQ(v.evaluations().size(), 1u);
  int64_t before = v.state().last_seq;

  log.write("value = 3\n");
  log.eval(3.0);
  log.append(events::GoalChanged::kType, {{"verb", "edit"}, {"objective", "reach 10"}});
  v.refresh();
  ASSERT_EQ(v.evaluations().size(), 2u);
  EXPECT_GT(v.evaluations()[1].seq, before);
  EXPECT_EQ(v.state().best_score, 3.0);
  ASSERT_EQ(v.goal_history().size(), 2u);  // as created, then the edit
  EXPECT_EQ(v.goal_history()[1].fields.objective, "reach 10");
  ASSERT_EQ(v.markers().size(), 1u);
  EXPECT_EQ(v.markers()[0].fields.kind, MarkerKind::kGoal);

  json u = run_update("run", v, RunPhase::kRunning, before, 0);
  EXPECT_EQ(u["evaluations"].size(), 1u) << "only the new evaluation";
  EXPECT_EQ(u["goal_history"].size(), 1u);
  EXPECT_EQ(u["last_seq"], v.state().last_seq);
}

TEST(RunView, AProfileIsShownWithTheEvaluationOfTheSameFiles) {
  mt::TempDir tmp("view");
  mt::RunLog log(tmp / "run");
  log.write("value = 2\n");
  log.tool("profile", "dram 71% of peak\nocc 50%\n");  // before its evaluation
  log.eval(2.0);
  log.write("value = 4\n");
  log.eval(4.0);
  log.tool("profile", "l2 hit 90%\n");  // after its evaluation

  RunView v(log.dir());
  v.ensure_series();  // the outputs are left out of the fold and read afterwards
  ASSERT_EQ(v.evaluations().size(), 2u);
  EXPECT_EQ(v.evaluations()[0].profile, "dram 71% of peak\nocc 50%\n");
  EXPECT_EQ(v.evaluations()[1].profile, "l2 hit 90%\n");

  log.write("value = 6\n");
  log.tool("profile", "smem bound\n");
  log.eval(6.0);
  v.refresh();
  EXPECT_EQ(v.evaluations()[2].profile, "smem bound\n");
}

TEST(RunView, ACandidateDiffsAgainstTheStarterAndThePreviousBest) {
  mt::TempDir tmp("view");
  mt::RunLog log(tmp / "run");
  log.write("value = 2\n");
  log.eval(2.0);
  log.write("value = 7\n");
  log.eval(7.0);
  RunView v(log.dir());
  v.ensure_series();
  std::optional<json> c = candidate_json(v, log.candidate());
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["files"]["solution.txt"], "value = 7\n");
  EXPECT_NE((*c)["diff_vs_previous_best"].get<std::string>().find("-value = 2\n+value = 7\n"),
            std::string::npos)
      << (*c)["diff_vs_previous_best"];
  EXPECT_NE((*c)["diff_vs_starter"].get<std::string>().find("-value = 1\n+value = 7\n"),
            std::string::npos)
      << (*c)["diff_vs_starter"];
  EXPECT_FALSE(candidate_json(v, std::string(64, 'a')));
}

TEST(RunView, EventLinesAreTheNewestFilteredByType) {
  mt::TempDir tmp("view");
  mt::RunLog log(tmp / "run");
  for (int i = 0; i < 30; ++i) log.tool("read_file", "x");
  RunView v(log.dir());
  json all = event_lines(v.store(), 0, 10);
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all.back()["seq"], v.store().last_seq());
  json started = event_lines(v.store(), 0, 5, {events::ToolStarted::kType});
  ASSERT_EQ(started.size(), 5u);
  for (const json& l : started) EXPECT_EQ(l["type"], events::ToolStarted::kType);
  EXPECT_TRUE(event_lines(v.store(), v.store().last_seq(), 10).empty());
}

}  // namespace
}  // namespace marathon::serve
