// unified_diff: the hunks a reader expects, and bounded work whatever the texts.
#include "serve/line_diff.h"

#include <gtest/gtest.h>

namespace marathon::serve {
namespace {

TEST(LineDiff, EqualTextsHaveNoDiff) { EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "x", "y"), ""); }

TEST(LineDiff, OneChangedLineWithItsContext) {
  std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  std::string b = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
  EXPECT_EQ(unified_diff(a, b, "a/f", "b/f"),
            "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n");
}

TEST(LineDiff, FarApartChangesAreTwoHunks) {
  std::string a, b;
  for (int i = 1; i <= 30; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 3 || i == 25 ? "x" : std::to_string(i)) + "\n";
  }
  std::string d = unified_diff(a, b, "a", "b");
  EXPECT_NE(d.find("@@ -1,6 +1,6 @@"), std::string::npos) << d;
  EXPECT_NE(d.find("@@ -22,7 +22,7 @@"), std::string::npos) << d;
}

TEST(LineDiff, AddedFileAndMissingFinalNewline) {
  EXPECT_EQ(unified_diff("", "a\nb", "/dev/null", "b/f"),
            "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n");
}

TEST(LineDiff, HugeUnrelatedTextsStayBounded) {
  std::string a, b;
  for (int i = 0; i < 5000; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += "b" + std::to_string(i) + "\n";
  }
  std::string d = unified_diff(a, b, "a", "b");  // 25M cells: shown as removed then added
  EXPECT_NE(d.find("@@ -1,5000 +1,5000 @@"), std::string::npos);
}

}  // namespace
}  // namespace marathon::serve
