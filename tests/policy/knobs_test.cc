#include "policy/knobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace marathon {
namespace {

using ::testing::HasSubstr;

const char* kCpp =
    "#include <cstddef>\n"
    "constexpr int BLOCK = 32;  // marathon:knob [8, 16, 32, 64]\n"
    "static const std::size_t UNROLL=4; // marathon:knob [1,2,4]\n"
    "int other = 5;  // not a knob\n";

TEST(Knobs, CppLinesGiveNameValuesAndCurrent) {
  auto knobs = parse_knobs("kernel.cc", kCpp);
  ASSERT_EQ(knobs.size(), 2u);
  EXPECT_EQ(knobs[0].name, "BLOCK");
  EXPECT_EQ(knobs[0].line, 2);
  EXPECT_EQ(knobs[0].current, "32");
  EXPECT_EQ(knobs[0].values, (std::vector<std::string>{"8", "16", "32", "64"}));
  EXPECT_EQ(knobs[0].start_index(), 2);
  EXPECT_EQ(knobs[1].name, "UNROLL");
  EXPECT_EQ(knobs[1].current, "4");
}

TEST(Knobs, PythonLinesIncludingAnnotations) {
  auto knobs = parse_knobs("kernel.py",
                           "BLOCK = 64  # marathon:knob [32, 64, 128]\n"
                           "num_warps: int = 4  # marathon:knob [2, 4, 8]\n"
                           "USE_TMA = False  # marathon:knob [False, True]\n");
  ASSERT_EQ(knobs.size(), 3u);
  EXPECT_EQ(knobs[1].name, "num_warps");
  EXPECT_EQ(knobs[1].current, "4");
  EXPECT_EQ(knobs[2].values, (std::vector<std::string>{"False", "True"}));
}

TEST(Knobs, SettingAKnobChangesOnlyItsValue) {
  std::string out = set_knobs("kernel.cc", kCpp, {{"BLOCK", "128"}});
  std::string want = kCpp;
  want.replace(want.find("= 32;"), 5, "= 128;");
  EXPECT_EQ(out, want);
  EXPECT_EQ(set_knobs("kernel.cc", kCpp, {}), kCpp);  // byte for byte, trailing newline kept
}

TEST(Knobs, CurrentValueOutsideTheListStartsInTheMiddle) {
  auto knobs = parse_knobs("k.cc", "constexpr int B = 48;  // marathon:knob [16, 32, 64, 128]\n");
  EXPECT_EQ(knobs[0].start_index(), 2);
}

TEST(Knobs, MarkerWithoutListIsAnErrorWithLine) {
  try {
    parse_knobs("kernel.cc", "int a;\nconstexpr int B = 3;  // marathon:knob 1, 2\n");
    FAIL() << "no error";
  } catch (const KnobError& e) {
    EXPECT_THAT(e.what(), HasSubstr("kernel.cc:2: marathon:knob needs a bracketed list"));
  }
}

TEST(Knobs, MarkerWithoutAssignmentIsAnError) {
  EXPECT_THROW(parse_knobs("k.py", "# marathon:knob [1, 2]\n"), KnobError);
}

TEST(Knobs, DuplicateNamesAcrossFilesAreAnError) {
  try {
    parse_knobs({{"a.cc", "constexpr int B = 1;  // marathon:knob [1, 2]\n"},
                 {"b.cc", "constexpr int B = 2;  // marathon:knob [1, 2]\n"}});
    FAIL() << "no error";
  } catch (const KnobError& e) {
    EXPECT_THAT(e.what(), HasSubstr("b.cc:1: knob B is declared more than once"));
  }
}

TEST(Knobs, ConfigTextRoundTrips) {
  auto knobs = parse_knobs("kernel.cc", kCpp);
  EXPECT_EQ(config_text(knobs, {3, 0}), "BLOCK=64 UNROLL=1");
  EXPECT_EQ(parse_config_text(knobs, "BLOCK=64 UNROLL=1"), (std::vector<int>{3, 0}));
  EXPECT_EQ(parse_config_text(knobs, "try UNROLL=2 BLOCK=8 now"), (std::vector<int>{0, 1}));
  EXPECT_FALSE(parse_config_text(knobs, "BLOCK=64").has_value());           // UNROLL missing
  EXPECT_FALSE(parse_config_text(knobs, "BLOCK=65 UNROLL=1").has_value());  // not allowed
  EXPECT_FALSE(parse_config_text(knobs, "tiled the loops").has_value());
}

}  // namespace
}  // namespace marathon
