// The texts the runtime writes to the model are part of every prompt: these pin them byte for
// byte (a change here changes what scripted runs send).
#include "context/prompt_texts.h"

#include <gtest/gtest.h>

namespace marathon::context {
namespace {

TEST(PromptTexts, BudgetNote) {
  EXPECT_EQ(budget_note("tool_calls", 90.4, "tool calls 9/10"),
            "Budget note: tool_calls is at 90% of its limit (tool calls 9/10). Wrap up: evaluate "
            "your best idea, note what you learned, and call `finish` with a summary before the "
            "run is stopped.");
}

TEST(PromptTexts, GoalTurnNote) {
  EXPECT_EQ(goal_turn_note("tool calls 3/10", "best speedup 1.5 (candidate abc)", 2),
            "You stopped without calling `finish`, but the goal is still open and budget remains "
            "(tool calls 3/10). Progress so far: best speedup 1.5 (candidate abc); 2 evaluation(s) "
            "since the last improvement. Keep working toward the goal: try the next idea, "
            "evaluate it, note what you learn. Call `finish` with a summary only when you are "
            "done.");
}

TEST(PromptTexts, UnusableReplyNote) {
  EXPECT_EQ(unusable_reply_note("no choices"),
            "Your previous reply could not be used (no choices). Reply again: text and/or tool "
            "calls with JSON arguments.");
}

TEST(PromptTexts, InterruptedToolOutput) {
  EXPECT_EQ(interrupted_tool_output("run"),
            "interrupted: the runner stopped while `run` was running and it was not re-run on "
            "resume (it is not idempotent). Its effects, if any, are unknown: check before you "
            "retry it.");
}

}  // namespace
}  // namespace marathon::context
