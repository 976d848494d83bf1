// The loop's view of the conversation, fed event by event: which calls are left, whether a request
// was in flight, whether a goal turn is due; and tool-call ids made unique.
#include "core/turn_tracker.h"

#include <gtest/gtest.h>

#include "core/events.h"

namespace marathon {
namespace {

Event event(int64_t seq, const std::string& type, json payload) {
  Event e;
  e.seq = seq;
  e.id = "e" + std::to_string(seq);
  e.type = type;
  e.payload = std::move(payload);
  return e;
}

json response(json calls, const std::string& text = "") {
  json m = {{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  return {{"message", m}};
}

TEST(TurnTracker, CallsOfTheLastResponseStayUnfinishedUntilTheirToolFinishedArrives) {
  TurnTracker t;
  t.apply(event(1, events::ModelRequest::kType, {}));
  EXPECT_TRUE(t.request_pending());
  t.apply(event(2, events::ModelResponse::kType,
                response({{{"id", "a"}, {"name", "note"}, {"arguments", "{}"}},
                          {{"id", "b"}, {"name", "evaluate"}, {"arguments", "{}"}}})));
  EXPECT_FALSE(t.request_pending());
  ASSERT_EQ(t.unfinished_calls().size(), 2u);
  t.apply(event(3, events::ToolFinished::kType, {{"call_id", "a"}}));
  ASSERT_EQ(t.unfinished_calls().size(), 1u);
  EXPECT_EQ(t.unfinished_calls()[0].name, "evaluate");
  EXPECT_EQ(t.unfinished_calls()[0].index, 1u);
  t.apply(event(4, events::ToolFinished::kType, {{"call_id", "b"}}));
  EXPECT_TRUE(t.unfinished_calls().empty());
  EXPECT_FALSE(t.goal_turn_due());
}

TEST(TurnTracker, AStopWithoutToolCallsMakesAGoalTurnDueUntilOneIsStarted) {
  TurnTracker t;
  t.apply(event(1, events::ModelResponse::kType, response(json::array(), "done?")));
  EXPECT_TRUE(t.policy_stopped());
  EXPECT_TRUE(t.goal_turn_due());
  EXPECT_EQ(t.goal_turn(), 1);
  t.apply(event(2, "user.message", {{"reason", "goal_turn"}, {"content", "go on"}}));
  EXPECT_FALSE(t.goal_turn_due());
  EXPECT_EQ(t.goal_turn(), 2);
}

TEST(TurnTracker, AFailedModelCallActsOnNothingAndCountsConsecutiveErrors) {
  TurnTracker t;
  json failed = {{"message", json::object()}, {"error", {{"kind", "transport"}}}};
  t.apply(event(1, events::ModelResponse::kType, failed));
  t.apply(event(2, events::ModelResponse::kType, failed));
  EXPECT_EQ(t.consecutive_model_errors(), 2);
  EXPECT_EQ(t.last_error_kind(), "transport");
  EXPECT_FALSE(t.goal_turn_due()) << "an error is not the policy stopping";
  t.apply(event(3, events::ModelResponse::kType, response(json::array(), "ok")));
  EXPECT_EQ(t.consecutive_model_errors(), 0);
}

TEST(TurnTracker, ASummariserResponseIsNotAModelTurn) {
  TurnTracker t;
  t.apply(event(1, events::ModelResponse::kType,
                response({{{"id", "a"}, {"name", "note"}, {"arguments", "{}"}}})));
  t.apply(event(2, events::ModelResponse::kType,
                {{"purpose", "compaction"}, {"message", {{"content", "sum"}}}}));
  EXPECT_EQ(t.unfinished_calls().size(), 1u) << "the turn's calls are still to run";
}

TEST(NormaliseAssistantMessage, MissingAndRepeatedIdsBecomeUniqueAndDeterministic) {
  json m = {{"role", "assistant"},
            {"content", nullptr},
            {"tool_calls",
             {{{"type", "function"}, {"function", {{"name", "note"}, {"arguments", "{}"}}}},
              {{"id", "x"},
               {"type", "function"},
               {"function", {{"name", "note"}, {"arguments", {{"a", 1}}}}}},
              {{"id", "x"}, {"name", "finish"}, {"arguments", "{}"}}}}};
  json n = normalise_assistant_message(m, 7);
  EXPECT_EQ(n["content"], "");
  ASSERT_EQ(n["tool_calls"].size(), 3u);
  EXPECT_EQ(n["tool_calls"][0]["id"], "call_7_0");
  EXPECT_EQ(n["tool_calls"][1]["id"], "x");
  EXPECT_EQ(n["tool_calls"][1]["arguments"], R"({"a":1})");
  EXPECT_EQ(n["tool_calls"][2]["id"], "call_7_2");
  EXPECT_EQ(n["tool_calls"][2]["name"], "finish");
  EXPECT_EQ(normalise_assistant_message(n, 9), n) << "normalising twice changes nothing";
}

TEST(TurnTracker, PausedTurnsAreCarriedOnUpToTheCapThenTheNextCountsAsAStop) {
  TurnTracker t;
  json paused = response(json::array(), "more to come");
  paused["finish_reason"] = "pause_turn";
  for (int i = 1; i <= kMaxPausedTurnsInARow; ++i) {
    t.apply(event(2 * i, events::ModelRequest::kType, {}));
    t.apply(event(2 * i + 1, events::ModelResponse::kType, paused));
    EXPECT_FALSE(t.policy_stopped()) << i;
    EXPECT_FALSE(t.goal_turn_due()) << i;
  }
  t.apply(event(100, events::ModelResponse::kType, paused));
  EXPECT_TRUE(t.policy_stopped());
  EXPECT_TRUE(t.goal_turn_due());
  EXPECT_EQ(TurnTracker::from_json(t.to_json()), t);
  // A turn that is not paused resets the count.
  t.apply(event(101, events::ModelResponse::kType,
                response({{{"id", "a"}, {"name", "note"}, {"arguments", "{}"}}})));
  EXPECT_EQ(t.paused_turns_in_a_row(), 0);
  t.apply(event(102, events::ModelResponse::kType, paused));
  EXPECT_FALSE(t.policy_stopped());
}

}  // namespace
}  // namespace marathon
