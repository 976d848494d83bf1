#include "context/prompt_builder.h"

#include <gtest/gtest.h>

#include "context/compaction_log.h"
#include "context/goal_block.h"
#include "context/ledger_view.h"
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

TEST(PromptBuilder, OrderIsRulesGoalLedgerSummaryThenTaskThenTurns) {
  LogBuilder b;
  b.tool("read_file", {{"path", "kernel.cc"}}, "int main() {}");
  b.add(events::CompactionInstalled::kType, {{"outcome", "compacted"},
                                             {"summary", "SUMMARY-TEXT"},
                                             {"summarized_through", 0},
                                             {"trigger", "manual"}});
  b.tool("note", {{"text", "x"}}, "noted");
  State s = demo_state();
  Prompt p = build_prompt(s, b.events, ContextConfig{});
  const std::string sys = p.messages[0]["content"];
  size_t goal = sys.find(kGoalBlockHeading), ledger = sys.find(kLedgerHeading),
         summary = sys.find("SUMMARY-TEXT");
  ASSERT_NE(goal, std::string::npos);
  ASSERT_NE(ledger, std::string::npos);
  ASSERT_NE(summary, std::string::npos);
  EXPECT_LT(goal, ledger);
  EXPECT_LT(ledger, summary);
  EXPECT_TRUE(contains(sys, "Beat the naive matmul by 4x"));
  EXPECT_EQ(p.messages[1]["role"], "user");
  EXPECT_TRUE(contains(p.messages[1]["content"], "Make matmul fast."));
  EXPECT_EQ(p.messages.size(), 2u + 4u);  // two units of assistant + tool
}

TEST(PromptBuilder, SameStateAndLogGiveTheSameBytes) {
  LogBuilder b;
  for (int i = 0; i < 50; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(300 + i));
  State s = demo_state();
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
  Prompt p = build_prompt(demo_state(), b.events, ContextConfig{});
  std::string all = p.messages.dump();
  EXPECT_TRUE(contains(all, elision_pointer(big)));
  EXPECT_FALSE(contains(all, elision_pointer(small)));
  EXPECT_EQ(p.elided_through, small);
}

TEST(PromptBuilder, NeverExceedsTheHardThresholdAndKeepsCallResultPairs) {
  LogBuilder b;
  for (int i = 0; i < 200; ++i) b.tool("read_file", {{"path", "k.cc"}}, filler(900));
  ContextConfig c = small_window();
  Prompt p = build_prompt(demo_state(), b.events, c);
  EXPECT_LE(p.tokens_estimate, c.hard_tokens());
  EXPECT_GT(p.units_omitted, 0);
  EXPECT_TRUE(contains(p.messages[0]["content"], "older turns are left out"));
  // After the task message the turns start with an assistant message, never an orphan tool result.
  ASSERT_GT(p.messages.size(), 2u);
  EXPECT_EQ(p.messages[2]["role"], "assistant");
  for (size_t i = 2; i < p.messages.size(); ++i) {
    if (p.messages[i]["role"] == "tool") {
      EXPECT_TRUE(p.messages[i - 1]["role"] == "assistant" || p.messages[i - 1]["role"] == "tool");
    }
  }
}

TEST(PromptBuilder, OneHugeOutputIsCutWithAPointer) {
  LogBuilder b;
  int64_t seq = b.tool("run", {{"cmd", "make"}}, filler(200000));
  ContextConfig c = small_window();
  Prompt p = build_prompt(demo_state(), b.events, c);
  EXPECT_LE(p.tokens_estimate, c.hard_tokens());
  EXPECT_TRUE(contains(p.messages.dump(), "recall(seq=" + std::to_string(seq) + ")"));
}

TEST(PromptBuilder, CalibrationRaisesTheEstimate) {
  LogBuilder b;
  b.call("note", {}, "", 1000, 2000);
  b.finish("call-1", "note", "ok");
  Prompt p = build_prompt(demo_state(), b.events, ContextConfig{});
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
