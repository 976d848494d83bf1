// `marathon run` budget flags out of range: refused before anything is created, the flag named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;
using ::testing::HasSubstr;

TEST(RunFlags, NonFiniteOrOutOfRangeBudgetsAreRefusedNamingTheFlag) {
  mt::TempDir tmp("run-flags");
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--max-hours", "nan"}, "--max-hours: must be a number"},
      {{"--max-hours", "inf"}, "--max-hours: must be finite"},
      {{"--max-hours", "-1"}, "--max-hours: must be >= 0"},
      {{"--max-cost", "nan"}, "--max-cost: must be a number"},
      {{"--max-gpu-seconds", "inf"}, "--max-gpu-seconds: must be finite"},
      {{"--target", "nan"}, "--target: must be a number"},
      {{"--target", "-inf"}, "--target: must be finite"},
      {{"--max-tool-calls", "99999999999"}, "--max-tool-calls: must be <= "},
      {{"--max-tool-calls", "-5"}, "--max-tool-calls: must be >= 0"},
      {{"--max-tokens", "-1"}, "--max-tokens: must be >= 0"},
      {{"--context-window", "0"}, "--context-window: must be > 0"},
      {{"--goal-auto-pause", "-1"}, "--goal-auto-pause: must be >= 0"},
  };
  for (const auto& [flag, why] : cases) {
    fs::path run = tmp / "run";
    fs::path log = tmp / "out.log";
    fs::remove(log);
    std::vector<std::string> args{
        "run", mt::tiny_task().string(), "--run-dir", run.string(), "--policy", "search"};
    args.insert(args.end(), flag.begin(), flag.end());
    int rc = mt::run_binary(args, {}, log, 60);
    std::string out = mt::read_text(log);
    EXPECT_EQ(rc, 2) << flag[0] << " " << flag[1] << ":\n" << out;
    EXPECT_THAT(out, HasSubstr(why)) << flag[0] << " " << flag[1];
    EXPECT_FALSE(fs::exists(run)) << flag[0] << " " << flag[1] << " created the run directory";
  }
  // Fractions and exponents for integer flags are not numbers CLI11 converts.
  for (const char* v : {"2.5", "1e30"}) {
    int rc = mt::run_binary({"run", mt::tiny_task().string(), "--run-dir", (tmp / "run").string(),
                             "--max-tool-calls", v},
                            {}, tmp / "int.log", 60);
    EXPECT_NE(rc, 0) << v;
    EXPECT_FALSE(fs::exists(tmp / "run")) << v;
  }
}

}  // namespace
}  // namespace marathon
