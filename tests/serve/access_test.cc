// Who may use the dashboard: loopback names, tokens compared exactly, and the checks that keep web
// pages in the user's browser from driving a loopback server.
#include "serve/access.h"

#include <gtest/gtest.h>

namespace marathon::serve {
namespace {

TEST(Access, OnlyTrueLoopbackNamesAreLoopback) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(is_loopback_address(a)) << a;
  }
  for (const char* a : {"0.0.0.0", "10.0.0.1", "127.1.evil.com", "127.0.0.1.evil.com", "127.0.0",
                        "127.0.0.256", "128.0.0.1", "", "::", "localhost.evil"}) {
    EXPECT_FALSE(is_loopback_address(a)) << a;
  }
}

TEST(Access, TokensMatchOnlyExactly) {
  std::string t = generate_token();
  EXPECT_EQ(t.size(), 64u);
  EXPECT_NE(t, generate_token());
  EXPECT_TRUE(token_matches(t, t));
  EXPECT_FALSE(token_matches(t.substr(0, 63), t));
  EXPECT_FALSE(token_matches(t + "0", t));
  EXPECT_FALSE(token_matches("", t));
}

TEST(Access, EachDenialHasItsStatus) {
  AccessPolicy loop{true, ""};
  EXPECT_EQ(check_access(loop, {"127.0.0.1:8765"}), Denial::kNone);
  EXPECT_EQ(check_access(loop, {"localhost:8765"}), Denial::kNone);
  EXPECT_EQ(check_access(loop, {"attacker.example:8765"}), Denial::kBadHost);

  RequestFacts write{"127.0.0.1:8765", "", "", "application/json", true};
  EXPECT_EQ(check_access(loop, write), Denial::kNone);
  write.origin = "http://127.0.0.1:8765";
  EXPECT_EQ(check_access(loop, write), Denial::kNone);
  write.origin = "http://attacker.example";
  EXPECT_EQ(check_access(loop, write), Denial::kBadOrigin);
  write.origin = "null";
  EXPECT_EQ(check_access(loop, write), Denial::kBadOrigin);
  write.origin = "";
  write.content_type = "text/plain";
  EXPECT_EQ(check_access(loop, write), Denial::kNotJson);

  AccessPolicy remote{false, "tok"};
  EXPECT_EQ(check_access(remote, {"box.lan:8765"}), Denial::kMissingToken);
  EXPECT_EQ(check_access(remote, {"box.lan:8765", "", "tik"}), Denial::kWrongToken);
  EXPECT_EQ(check_access(remote, {"box.lan:8765", "", "tok"}), Denial::kNone);
  EXPECT_EQ(http_status(Denial::kMissingToken), 401);
  EXPECT_EQ(http_status(Denial::kWrongToken), 403);
  EXPECT_EQ(http_status(Denial::kNotJson), 415);
}

}  // namespace
}  // namespace marathon::serve
