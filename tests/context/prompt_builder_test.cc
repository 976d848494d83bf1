#include "context/prompt_builder.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "context/goal_block.h"
#include "context/ledger_view.h"
#include "core/compaction_log.h"
#include "log_builder.h"

namespace marathon::context {
namespace {

using testing::demo_state;
using testing::filler;
using testing::LogBuilder;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

ContextConfig small_window() {
  ContextConfig c;
  c.context_window = 8000;
  return c;
}

TEST(PromptBuilder, OrderIsRulesTaskSummaryTurnsThenLedgerAndGoal) {
  LogBuilder b;
  b.tool("read_file", {{"path", "kernel.cc"}}, "int main() {}");
  b.add(events::CompactionInstalled::kType, {{"outcome", "compacted"},
                                             {"summary", "SUMMARY-TEXT"},
                                             {"summarized_through", 0},
                                             {"trigger", "manual"}});
  b.tool("note", {{"text", "x"}}, "noted");
  State s = demo_state(b.events);
  Prompt p = build_prompt(s, b.events, ContextConfig{});
  // What changes every step comes last: the system message holds only the rules, the task message
  // the task and then the summary, and the live tail (the last message) the ledger and the goal.
  const std::string sys = p.messages[0]["content"];
  EXPECT_FALSE(contains(sys, kGoalBlockHeading));
  EXPECT_FALSE(contains(sys, kLedgerHeading));
  EXPECT_EQ(p.messages[1]["role"], "user");
  const std::string task = p.messages[1]["content"];
  ASSERT_TRUE(contains(task, "Make matmul fast."));
  ASSERT_TRUE(contains(task, "SUMMARY-TEXT"));
  EXPECT_LT(task.find("Make matmul fast."), task.find("SUMMARY-TEXT"));
  ASSERT_EQ(p.messages.size(), 2u + 4u + 1u);  // two units of assistant + tool, the tail
  EXPECT_EQ(p.messages[2]["role"], "assistant");
  const json& tail = p.messages.back();
  EXPECT_EQ(tail["role"], "user");
  const std::string live = tail["content"];
  size_t ledger = live.find(kLedgerHeading), goal = live.find(kGoalBlockHeading);
  ASSERT_NE(ledger, std::string::npos);
  ASSERT_NE(goal, std::string::npos);
  EXPECT_LT(ledger, goal);
  EXPECT_TRUE(contains(live, "Beat the naive matmul by 4x"));
  // Breakpoints: system, task (+summary), end of the previous step's turns, end of this one's.
  EXPECT_EQ(p.cache_breakpoints, (std::vector<int64_t>{0, 1, 3, 5}));
}

// The cacheable prefix: between compactions, every request starts with every message of the
// previous request but its live tail, byte for byte, however the goal block, the budget and the
// ledger changed in between.
TEST(PromptBuilder, PreviousRequestButItsTailIsABytePrefixOfTheNext) {
  LogBuilder b;
  b.created();
  ContextConfig c;
  c.context_window = 200000;
  json previous;
  for (int i = 0; i < 30; ++i) {
    b.tool("read_file", {{"path", "k.cc"}}, filler(400 + i));
    State s = b.state;
    s.best_score = 1.0 + i;  // the goal block changes every step
    s.used.cost_usd = 0.01 * i;
    s.ledger.push_back(LedgerEntry{
        i + 1, LedgerKind::kFinding, fmt::format("finding {}", i), "", {}, {}, "", json::object()});
    Prompt p = build_prompt(s, b.events, c);
    ASSERT_EQ(p.units_omitted, 0);
    if (!previous.is_null()) {
      ASSERT_GT(p.messages.size(), previous.size());
      for (size_t m = 0; m + 1 < previous.size(); ++m) {
        ASSERT_EQ(p.messages[m].dump(), previous[m].dump()) << "step " << i << " message " << m;
      }
      EXPECT_NE(p.messages.back().dump(), previous.back().dump());
      // The previous request's last breakpoint is among this one's (its cache entry is read).
      EXPECT_NE(std::find(p.cache_breakpoints.begin(), p.cache_breakpoints.end(),
                          static_cast<int64_t>(previous.size()) - 2),
                p.cache_breakpoints.end());
    }
    EXPECT_TRUE(contains(p.messages.back()["content"], "Best so far: " + fmt_number(1.0 + i)));
    previous = p.messages;
  }
}

TEST(PromptBuilder, SameStateAndLogGiveTheSameBytes) {
  LogBuilder b;
  for (int i = 0; i < 50; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(300 + i));
  State s = demo_state(b.events);
  s.ledger.push_back(
      LedgerEntry{10, LedgerKind::kDeadEnd, "unroll 16", "", {}, {}, "", json::object()});
  Prompt a = build_prompt(s, b.events, small_window());
  // The log read back from its JSON form (what a resumed process sees) gives the same prompt.
  std::vector<Event> reread;
  for (const Event& e : b.events) {
    Event r = e;
    r.payload = json::parse(e.payload.dump());
    reread.push_back(r);
  }
  Prompt c = build_prompt(s, reread, small_window());
  EXPECT_EQ(a.messages.dump(), c.messages.dump());
  EXPECT_EQ(a.tokens_raw, c.tokens_raw);
}

TEST(PromptBuilder, ElidedOutputsBecomeRecallPointersAndShortOnesStay) {
  LogBuilder b;
  int64_t big = b.tool("read_file", {{"path", "k.cc"}}, filler(2000));
  int64_t small = b.tool("note", {}, "ok");
  b.tool("read_file", {{"path", "k.cc"}}, filler(2000, 'c'));
  b.add(events::CompactionElided::kType, {{"outcome", "compacted"}, {"elided_through", small}});
  Prompt p = build_prompt(demo_state(b.events), b.events, ContextConfig{});
  std::string all = p.messages.dump();
  EXPECT_TRUE(contains(all, elision_pointer(big)));
  EXPECT_FALSE(contains(all, elision_pointer(small)));
  EXPECT_EQ(p.elided_through, small);
}

TEST(PromptBuilder, NeverExceedsTheHardThresholdAndKeepsCallResultPairs) {
  LogBuilder b;
  for (int i = 0; i < 200; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(900));
  ContextConfig c = small_window();
  Prompt p = build_prompt(demo_state(b.events), b.events, c);
  EXPECT_LE(p.tokens_estimate, c.hard_tokens());
  EXPECT_GT(p.units_omitted, 0);
  EXPECT_TRUE(contains(p.messages.back()["content"], "older turns are left out"));
  // After the task message the turns start with an assistant message, never an orphan tool result.
  ASSERT_GT(p.messages.size(), 2u);
  EXPECT_EQ(p.messages[2]["role"], "assistant");
  for (size_t i = 2; i + 1 < p.messages.size(); ++i) {
    if (p.messages[i]["role"] == "tool") {
      EXPECT_TRUE(p.messages[i - 1]["role"] == "assistant" || p.messages[i - 1]["role"] == "tool");
    }
  }
}

TEST(PromptBuilder, OneHugeOutputIsCutWithAPointer) {
  LogBuilder b;
  int64_t seq = b.tool("run", {{"cmd", "make"}}, filler(200000));
  ContextConfig c = small_window();
  Prompt p = build_prompt(demo_state(b.events), b.events, c);
  EXPECT_LE(p.tokens_estimate, c.hard_tokens());
  EXPECT_TRUE(contains(p.messages.dump(), "recall(seq=" + std::to_string(seq) + ")"));
}

TEST(PromptBuilder, CalibrationRaisesTheEstimate) {
  LogBuilder b;
  b.call("note", {}, "", 1000, 2000);
  b.finish("call-1", "note", "ok");
  Prompt p = build_prompt(demo_state(b.events), b.events, ContextConfig{});
  EXPECT_NEAR(p.ratio, 2.0, 1e-9);
  EXPECT_GE(p.tokens_estimate, 2 * p.tokens_raw);
}

TEST(PromptBuilder, GoalBlockShowsBestBudgetAndStaleness) {
  State s = demo_state();
  s.best_score = 2.5;
  s.best_candidate = "0123456789abcdef";
  s.used.tool_calls = 300;
  s.evaluations = 40;
  s.evals_since_improvement = 7;
  std::string g = render_goal_block(s);
  EXPECT_TRUE(contains(g, "Best so far: 2.5 (candidate 0123456789ab), target not reached"));
  EXPECT_TRUE(contains(g, "tool calls 300 used of 1200 (900 left)"));
  EXPECT_TRUE(contains(g, "40 (7 since the last improvement)"));
  EXPECT_TRUE(contains(g, "target 4"));
}

TEST(ContextConfig, ReadsWindowAndThresholdsAndRejectsBadValues) {
  json cfg = {{"context_window", 32000}, {"context", {{"soft_threshold", 0.5}}}};
  ContextConfig c = ContextConfig::from_run_config(cfg);
  EXPECT_EQ(c.context_window, 32000);
  EXPECT_DOUBLE_EQ(c.soft_threshold, 0.5);
  EXPECT_THROW(ContextConfig::from_run_config({{"context", {{"soft_threshold", 1.5}}}}),
               std::invalid_argument);
  EXPECT_THROW(ContextConfig::from_run_config({{"context_window", "big"}}), std::invalid_argument);
  EXPECT_THROW(ContextConfig::from_run_config(
                   {{"context", {{"soft_threshold", 0.95}, {"hard_threshold", 0.9}}}}),
               std::invalid_argument);
  EXPECT_EQ(ContextConfig::from_run_config(json::object()).context_window, 128000);
}

}  // namespace
}  // namespace marathon::context
