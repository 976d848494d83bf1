#include "goal/budget.h"

#include <gtest/gtest.h>

namespace marathon {
namespace {

TEST(Budget, LimitsOfZeroAreNotReported) {
  BudgetLimits l;  // tool calls and wall time only
  BudgetUsed u;
  auto items = budget_items(l, u);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].which, "tool_calls");
  EXPECT_EQ(items[1].which, "wall_time");
}

TEST(Budget, NearAndOverAreDistinct) {
  BudgetLimits l;
  l.max_tool_calls = 100;
  l.max_cost_usd = 10;
  BudgetUsed u;
  u.tool_calls = 90;
  u.cost_usd = 10.0;
  auto items = budget_items(l, u);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_TRUE(items[0].near);
  EXPECT_FALSE(items[0].over);
  EXPECT_EQ(items[2].which, "cost");
  EXPECT_TRUE(items[2].over);
  EXPECT_FALSE(items[2].near);
  auto ex = exhausted_budget(l, u);
  ASSERT_TRUE(ex.has_value());
  EXPECT_EQ(ex->which, "cost");
}

TEST(Budget, NothingExhaustedBelowLimits) {
  BudgetLimits l;
  l.max_tool_calls = 10;
  BudgetUsed u;
  u.tool_calls = 9;
  EXPECT_FALSE(exhausted_budget(l, u).has_value());
  u.tool_calls = 10;
  EXPECT_TRUE(exhausted_budget(l, u).has_value());
}

TEST(Budget, TokensCountPromptAndCompletion) {
  BudgetLimits l;
  l.max_tokens = 1000;
  BudgetUsed u;
  u.prompt_tokens = 600;
  u.completion_tokens = 400;
  auto ex = exhausted_budget(l, u);
  ASSERT_TRUE(ex.has_value());
  EXPECT_EQ(ex->which, "tokens");
}

TEST(Budget, AlreadyWarnedBudgetIsNotWarnedAgain) {
  BudgetLimits l;
  l.max_tool_calls = 100;
  BudgetUsed u;
  u.tool_calls = 95;
  EXPECT_EQ(budgets_to_warn(l, u, {}).size(), 1u);
  EXPECT_TRUE(budgets_to_warn(l, u, {"tool_calls"}).empty());
}

TEST(Budget, LineShowsEachLimitedBudget) {
  BudgetLimits l;
  l.max_tool_calls = 1000;
  l.max_wall_s = 24 * 3600.0;
  l.max_cost_usd = 10;
  BudgetUsed u;
  u.tool_calls = 412;
  u.wall_s = 3600 * 3.1;
  u.cost_usd = 1.2;
  EXPECT_EQ(budget_line(l, u), "tool calls 412/1000, wall time 3.1/24.0 h, cost $1.20/$10.00");
}

}  // namespace
}  // namespace marathon

namespace marathon {
namespace {

TEST(Budget, AStepThatWouldJumpPastTheLimitIsWarnedBeforeIt) {
  BudgetLimits l;
  l.max_cost_usd = 10;
  BudgetUsed u;
  u.cost_usd = 8.0;  // 80%: no note yet by the 90% rule
  BudgetUsed step;
  step.cost_usd = 3.0;  // the next step would land at 110%, past the limit in one jump
  EXPECT_TRUE(budgets_to_warn(l, u, {}).empty());
  auto due = budgets_predicted_to_cross(l, u, step, {});
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].which, "cost");
  EXPECT_DOUBLE_EQ(due[0].used, 8.0) << "reported with what is used now";
  // Once warned, never again; a small step is not warned early.
  EXPECT_TRUE(budgets_predicted_to_cross(l, u, step, {"cost"}).empty());
  step.cost_usd = 0.5;
  EXPECT_TRUE(budgets_predicted_to_cross(l, u, step, {}).empty());
}

}  // namespace
}  // namespace marathon
