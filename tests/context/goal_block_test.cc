// The goal block shows the baseline a GPU evaluation measured: the harness's result
// (tests/fixtures/harness_result_gpu.json, kept equal to what harness/runner.py writes by
// tests/python/test_result_schema.py) validated as the evaluator runner does, logged as
// eval.finished, folded, rendered.
#include "context/goal_block.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/eval_result.h"
#include "core/fold.h"

namespace marathon::context {
namespace {

using namespace marathon::events;

Event at(NewEvent n, int64_t seq) {
  Event e;
  e.seq = seq;
  e.type = n.type;
  e.payload = std::move(n.payload);
  return e;
}

TEST(GoalBlock, AGpuHarnessResultRecordsItsBaselineAndTheBlockShowsIt) {
  std::ifstream in(std::string(MARATHON_SOURCE_DIR) + "/tests/fixtures/harness_result_gpu.json");
  json result = json::parse(in);
  ASSERT_EQ(validate_eval_output(result), "");

  RunCreated created;
  created.run_id = "r";
  created.goal = GoalSpec{"faster decode", "speedup", Direction::kMax, 2.0};
  EvalFinished ev;
  ev.candidate = "c0ffee";
  ev.result = result;
  State s = fold({at(make_event(created), 1), at(make_event(ev), 2)});

  ASSERT_TRUE(s.baseline_score.has_value()) << "the GPU result's baseline was not recorded";
  EXPECT_EQ(*s.baseline_score, 1.0);
  std::string block = render_goal_block(s);
  EXPECT_NE(block.find("Baseline: 1\n"), std::string::npos) << block;
  EXPECT_EQ(block.find("not measured yet"), std::string::npos) << block;
  EXPECT_NE(block.find("Best so far: 1.8"), std::string::npos) << block;
  EXPECT_NE(block.find("target not reached"), std::string::npos) << block;
}

TEST(GoalBlock, WithoutABaselineItSaysSo) {
  RunCreated created;
  created.run_id = "r";
  State s = fold({at(make_event(created), 1)});
  EXPECT_NE(render_goal_block(s).find("Baseline: not measured yet"), std::string::npos);
}

}  // namespace
}  // namespace marathon::context
