#include "core/utf8.h"

#include <gtest/gtest.h>

namespace marathon {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, WellFormedTextComesBackUnchanged) {
  for (std::string s : {std::string(""), std::string("plain"), std::string("caf\xC3\xA9"),
                        std::string("\xE2\x82\xAC 5"), std::string("\xF0\x9F\x98\x80"),
                        std::string("nul\0in", 6)}) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    EXPECT_EQ(valid_utf8(s), s);
  }
}

TEST(Utf8, IllFormedBytesBecomeReplacementCharacters) {
  EXPECT_EQ(valid_utf8("a\xFF"
                       "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(valid_utf8("\x80"), kFffd);                                      // lone continuation
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kFffd + kFffd);                          // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // a surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(valid_utf8("\xE2\x82"), kFffd);  // cut at the end: one maximal subpart
  EXPECT_EQ(valid_utf8("\xE2\x82x"), kFffd + "x");
  for (const char* s : {"\xFF", "\xC0\xAF", "\xED\xA0\x80", "\xE2\x82"}) {
    EXPECT_FALSE(is_valid_utf8(s));
    EXPECT_TRUE(is_valid_utf8(valid_utf8(s)));
  }
}

}  // namespace
}  // namespace marathon
