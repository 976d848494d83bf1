// The command line's conventions through the real binary: usage errors exit 2 (never CLI11's own
// codes), a mistyped command gets a suggestion, bare `marathon` prints the help, a missing folder
// exits the same code for every command, and the help of the main commands has examples.
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

class UsageCli : public ::testing::Test {
 protected:
  int cli(const std::vector<std::string>& args) {
    fs::remove(log_);
    int rc = mt::run_binary(args, {}, log_, 60);
    out_ = mt::read_text(log_);
    return rc;
  }
  bool says(const std::string& text) const { return out_.find(text) != std::string::npos; }

  mt::TempDir tmp_{"usage-cli"};
  fs::path log_ = tmp_ / "out.log";
  std::string out_;
};

TEST_F(UsageCli, BareMarathonPrintsTheHelpAndExits2) {
  EXPECT_EQ(cli({}), 2) << out_;
  EXPECT_TRUE(says("Subcommands:")) << out_;
  EXPECT_TRUE(says("Exit codes")) << out_;
  EXPECT_TRUE(says("marathon run cpu-matmul")) << out_;
}

TEST_F(UsageCli, AMistypedCommandIsRefusedWithTheNearestOne) {
  EXPECT_EQ(cli({"stat", "runs/x"}), 2) << out_;
  EXPECT_TRUE(says("unknown command 'stat'; did you mean 'status'?")) << out_;
  EXPECT_EQ(cli({"goal", "sett", "runs/x", "text"}), 2) << out_;
  EXPECT_TRUE(says("did you mean 'goal set'?")) << out_;
  EXPECT_EQ(cli({"rnu"}), 2) << out_;
  EXPECT_TRUE(says("did you mean 'run'?")) << out_;
  EXPECT_EQ(cli({"frobnicate"}), 2) << out_;
  EXPECT_TRUE(says("unknown command 'frobnicate'")) << out_;
  EXPECT_FALSE(says("did you mean")) << out_;
}

TEST_F(UsageCli, EveryUsageErrorExits2) {
  EXPECT_EQ(cli({"run", "tasks/cpu-matmul", "--bogus"}), 2) << out_;
  EXPECT_TRUE(says("--bogus")) << out_;
  EXPECT_EQ(cli({"status"}), 2) << out_;  // a required argument missing
  EXPECT_TRUE(says("RUN_DIR is required")) << out_;
  EXPECT_EQ(cli({"fork", "x", "--at", "abc", "--run-dir", "y"}), 2) << out_;  // not a number
  EXPECT_EQ(cli({"goal"}), 2) << out_;  // a subcommand missing: the group's help
  EXPECT_TRUE(says("pause")) << out_;
  EXPECT_EQ(cli({"serve", "--port", "70000"}), 2) << out_;
}

TEST_F(UsageCli, AMissingFolderExitsTheSameCodeForEveryCommand) {
  const std::string missing = (tmp_ / "no-such").string();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"status", missing},
           {"eval", missing},
           {"run", missing},
           {"resume", missing},
           {"log", missing},
           {"log", "export", missing, "-o", "-"},
           {"report", missing, "-o", (tmp_ / "r.html").string()},
           {"goal", "pause", missing},
           {"compact", missing},
           {"stop", missing},
           {"fork", missing, "--at", "1", "--run-dir", (tmp_ / "f").string()},
           {"replay", missing, "--run-dir", (tmp_ / "r").string()}}) {
    EXPECT_EQ(cli(args), 2) << args[0] << ": " << out_;
    EXPECT_TRUE(says("no-such")) << args[0] << ": " << out_;
  }
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_FALSE(fs::exists(tmp_ / "f"));
  EXPECT_FALSE(fs::exists(tmp_ / "r"));
}

TEST_F(UsageCli, AFolderThatIsNoRunIsRefusedLikeAMissingOne) {
  fs::create_directories(tmp_ / "plain");
  EXPECT_EQ(cli({"status", (tmp_ / "plain").string()}), 2) << out_;
  EXPECT_TRUE(says("not a marathon run directory")) << out_;
}

TEST_F(UsageCli, HelpAndVersionExit0) {
  EXPECT_EQ(cli({"--help"}), 0) << out_;
  EXPECT_EQ(cli({"--version"}), 0) << out_;
  EXPECT_TRUE(says("marathon ")) << out_;
  EXPECT_EQ(cli({"status", "--help"}), 0) << out_;
}

TEST_F(UsageCli, TheMainCommandsHelpHasExamples) {
  for (const char* command : {"run", "init", "serve", "mcp"}) {
    EXPECT_EQ(cli({command, "--help"}), 0) << command;
    EXPECT_TRUE(says("Examples:")) << command << ": " << out_;
    EXPECT_TRUE(says(std::string("marathon ") + command + " ")) << command << ": " << out_;
  }
  // The top-level footer is the top level's only.
  EXPECT_EQ(cli({"status", "--help"}), 0);
  EXPECT_FALSE(says("Start with:")) << out_;
}

TEST_F(UsageCli, EachGoalVerbDescribesItself) {
  EXPECT_EQ(cli({"goal", "set", "--help"}), 0);
  EXPECT_TRUE(says("new objective")) << out_;
  EXPECT_EQ(cli({"goal", "clear", "--help"}), 0);
  EXPECT_TRUE(says("finishes")) << out_;
}

TEST_F(UsageCli, TheMspFormatIsExplainedInTheHelp) {
  EXPECT_EQ(cli({"log", "export", "--help"}), 0);
  EXPECT_TRUE(says("msp (one record per line")) << out_;
  EXPECT_TRUE(says("docs/protocol.md")) << out_;
}

}  // namespace
}  // namespace marathon
