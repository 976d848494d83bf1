#include "context/token_estimate.h"

#include <gtest/gtest.h>

#include "log_builder.h"

namespace marathon::context {
namespace {

using testing::LogBuilder;

TEST(TokenEstimate, EnglishProseIsAboutFourCharactersPerToken) {
  std::string prose =
      "The kernel tiles the matrix into blocks that fit in cache and unrolls the inner loop so "
      "the compiler can keep the accumulators in registers.";
  int64_t t = estimate_text_tokens(prose);
  EXPECT_GE(t, static_cast<int64_t>(prose.size() / 6));
  EXPECT_LE(t, static_cast<int64_t>(prose.size() / 3));
}

TEST(TokenEstimate, PunctuationHeavyCodeCostsMoreThanProseOfTheSameLength) {
  std::string code = "for(int i=0;i<n;++i){c[i*n+j]+=a[i*k+p]*b[p*n+j];}";
  std::string prose(code.size(), 'x');
  for (size_t i = 5; i < prose.size(); i += 6) prose[i] = ' ';
  EXPECT_GT(estimate_text_tokens(code), estimate_text_tokens(prose));
}

TEST(TokenEstimate, NonAsciiCodePointsCountOnceEach) {
  EXPECT_EQ(estimate_text_tokens("\xe6\x97\xa5\xe6\x9c\xac"), 2);  // two CJK code points
}

TEST(TokenEstimate, EmptyTextIsZeroButAMessageHasOverhead) {
  EXPECT_EQ(estimate_text_tokens(""), 0);
  EXPECT_GT(estimate_message_tokens(json{{"role", "user"}, {"content", ""}}), 0);
}

TEST(TokenEstimate, ToolCallArgumentsAreCounted) {
  json bare{{"role", "assistant"}, {"content", ""}};
  json with_call = bare;
  with_call["tool_calls"] = json::array(
      {{{"id", "c1"},
        {"type", "function"},
        {"function",
         {{"name", "write_file"}, {"arguments", R"({"path":"k.cc","content":"int x;"})"}}}}});
  EXPECT_GT(estimate_message_tokens(with_call), estimate_message_tokens(bare) + 10);
}

TEST(TokenRatio, NoUsablePairsGivesOne) {
  LogBuilder b;
  EXPECT_DOUBLE_EQ(fit_token_ratio(b.events), 1.0);
  b.call("note", {{"text", "x"}}, "", /*estimate=*/0, /*reported=*/500);  // no estimate logged
  EXPECT_DOUBLE_EQ(fit_token_ratio(b.events), 1.0);
}

TEST(TokenRatio, FitsReportedOverEstimated) {
  LogBuilder b;
  b.call("note", {}, "", 1000, 1500);
  b.call("note", {}, "", 3000, 4500);
  EXPECT_NEAR(fit_token_ratio(b.events), 1.5, 1e-9);
}

TEST(TokenRatio, AbsurdReportsAreClamped) {
  LogBuilder b;
  b.call("note", {}, "", 100, 100000);
  EXPECT_DOUBLE_EQ(fit_token_ratio(b.events), 4.0);
}

TEST(TokenRatio, SummariserResponsesAreNotPaired) {
  LogBuilder b;
  b.call("note", {}, "", 1000, 1000);
  b.add(events::ModelResponse::kType, {{"purpose", "compaction"},
                                       {"message", {{"content", "s"}}},
                                       {"usage", {{"prompt_tokens", 90000}}}});
  EXPECT_NEAR(fit_token_ratio(b.events), 1.0, 1e-9);
}

TEST(TokenRatio, OnlyTheMostRecentPairsCount) {
  LogBuilder b;
  for (int i = 0; i < 10; ++i) b.call("note", {}, "", 1000, 3000);
  for (int i = 0; i < 4; ++i) b.call("note", {}, "", 1000, 1000);
  EXPECT_NEAR(fit_token_ratio(b.events, 4), 1.0, 1e-9);
}

}  // namespace
}  // namespace marathon::context
