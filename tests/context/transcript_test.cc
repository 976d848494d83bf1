#include "context/transcript.h"

#include <gtest/gtest.h>

#include "log_builder.h"

namespace marathon::context {
namespace {

using testing::LogBuilder;

TEST(Transcript, AssistantCallsAndResultsFormOneUnitInCallOrder) {
  LogBuilder b;
  b.add(events::ModelResponse::kType,
        {{"message",
          {{"content", "two reads"},
           {"tool_calls",
            json::array({{{"id", "a"}, {"name", "read_file"}, {"arguments", "{}"}},
                         {{"id", "b"}, {"name", "read_file"}, {"arguments", "{}"}}})}}}});
  b.finish("b", "read_file", "B");  // results may finish in any order
  b.finish("a", "read_file", "A");
  auto units = build_units(b.events);
  ASSERT_EQ(units.size(), 1u);
  const auto& m = units[0].messages;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].message["role"], "assistant");
  EXPECT_EQ(m[0].message["tool_calls"][0]["function"]["name"], "read_file");
  EXPECT_EQ(m[1].message["tool_call_id"], "a");
  EXPECT_EQ(m[1].message["content"], "A");
  EXPECT_EQ(m[2].message["tool_call_id"], "b");
  EXPECT_EQ(units[0].first_seq, 1);
  EXPECT_EQ(units[0].last_seq, 3);
}

TEST(Transcript, CallWithoutLoggedResultGetsAPlaceholderSoTheApiAcceptsIt) {
  LogBuilder b;
  b.call("run", {{"cmd", "make"}});
  b.tool("note", {{"text", "x"}}, "noted");
  auto units = build_units(b.events);
  ASSERT_EQ(units.size(), 2u);
  ASSERT_EQ(units[0].messages.size(), 2u);
  EXPECT_EQ(units[0].messages[1].message["role"], "tool");
  EXPECT_NE(units[0].messages[1].message["content"].get<std::string>().find("no result"),
            std::string::npos);
}

TEST(Transcript, ResultForAnUnknownCallIsDropped) {
  LogBuilder b;
  b.finish("ghost", "read_file", "orphan");
  b.tool("note", {}, "ok");
  auto units = build_units(b.events);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].messages.size(), 2u);
}

TEST(Transcript, FailedAndSummariserResponsesAreNotTurns) {
  LogBuilder b;
  b.add(events::ModelResponse::kType,
        {{"message", {{"content", ""}}},
         {"error", {{"kind", "context_length"}, {"message", "too long"}}}});
  b.add(events::ModelResponse::kType,
        {{"purpose", "compaction"}, {"message", {{"content", "summary"}}}});
  b.add(events::ModelResponse::kType,
        {{"message", {{"content", ""}}}});  // empty: nothing to send back
  EXPECT_TRUE(build_units(b.events).empty());
}

TEST(Transcript, UserMessagesAreTheirOwnUnits) {
  LogBuilder b;
  b.tool("note", {}, "ok");
  b.add(events::UserMessage::kType,
        {{"content", "Keep going: the goal is open."}, {"reason", "goal_turn"}});
  b.tool("note", {}, "ok");
  auto units = build_units(b.events);
  ASSERT_EQ(units.size(), 3u);
  EXPECT_EQ(units[1].messages[0].message["role"], "user");
}

TEST(Transcript, StartsAfterTheGivenSeq) {
  LogBuilder b;
  b.tool("note", {}, "one");
  int64_t cut = b.events.back().seq;
  b.tool("note", {}, "two");
  auto units = build_units(b.events, cut);
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].messages[1].message["content"], "two");
}

TEST(Transcript, FindsTheAssistantWordsForAnEvaluateCall) {
  LogBuilder b;
  std::string id = b.call("evaluate", {}, "Tile 64x64 and unroll by 4.");
  EXPECT_EQ(assistant_text_for_call(b.events, id), "Tile 64x64 and unroll by 4.");
  EXPECT_EQ(assistant_text_for_call(b.events, "nope"), "");
}

}  // namespace
}  // namespace marathon::context
