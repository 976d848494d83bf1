// cut_middle: a text too long for its share of the window, as the prompt shows it.
#include <gtest/gtest.h>

#include "context/prompt_cache.h"
#include "context/token_estimate.h"
#include "log_builder.h"

namespace marathon::context {
namespace {

TEST(CutMiddle, KeepsHeadAndTailWithANoteAndFitsTheLimit) {
  const std::string text = "BEGIN " + testing::filler(500000) + " END";
  const std::string cut = cut_middle(text, 1000, 42);
  EXPECT_LE(estimate_text_tokens(cut), 1000);
  EXPECT_EQ(cut.rfind("BEGIN ", 0), 0u);
  EXPECT_EQ(cut.substr(cut.size() - 4), " END");
  EXPECT_NE(cut.find("500010 bytes in all"), std::string::npos) << cut.substr(0, 200);
  EXPECT_NE(cut.find("recall(seq=42)"), std::string::npos);
}

TEST(CutMiddle, TextWithinTheLimitIsUnchanged) {
  EXPECT_EQ(cut_middle("short text", 1000, 1), "short text");
}

TEST(CutMiddle, NeverSplitsAUtf8Sequence) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "\xC3\xA9\xE2\x82\xAC";  // é€
  const std::string cut = cut_middle(text, 300, 7);
  EXPECT_LE(estimate_text_tokens(cut), 300);
  // Every byte is a lead or follows the right number of continuation bytes.
  for (size_t i = 0; i < cut.size();) {
    unsigned char c = static_cast<unsigned char>(cut[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 0;
    ASSERT_NE(n, 0u) << "stray byte at " << i;
    for (size_t k = 1; k < n; ++k) {
      ASSERT_LT(i + k, cut.size());
      ASSERT_EQ(static_cast<unsigned char>(cut[i + k]) & 0xC0, 0x80) << "split at " << i;
    }
    i += n;
  }
}

TEST(CutMiddle, ALimitBelowTheFloorStillLeavesRoomForTheNote) {
  const std::string cut = cut_middle(testing::filler(100000), 1, 9);
  EXPECT_LE(estimate_text_tokens(cut), kMinCutTokens);
  EXPECT_NE(cut.find("recall(seq=9)"), std::string::npos);
}

}  // namespace
}  // namespace marathon::context
