// The capability probe through the real binary, on a machine where bubblewrap cannot build its
// namespaces (simulated by a `bwrap` first on PATH that fails the way a kernel without
// unprivileged user namespaces makes it fail): run, resume and eval refuse, saying why and how to
// enable it; with --unsafe-no-sandbox they go on, the run logs sandbox.disabled and status shows
// it.
#include <gtest/gtest.h>

#include "hostile_run.h"
#include "loop/tiny_script.h"
#include "sandbox/launcher.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
using testing::events_of_type;
using testing::load_events;
using testing::read_text;
using testing::run_binary;
using testing::TempDir;

class NoUserNamespaces : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "bin");
    std::ofstream(dir_ / "bin" / "bwrap")
        << "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n";
    fs::permissions(dir_ / "bin" / "bwrap", fs::perms::owner_all);
    const char* path = std::getenv("PATH");
    env_ = {{"PATH", (dir_ / "bin").string() + ":" + (path ? path : "/usr/bin:/bin")}};
  }
  int marathon(const std::vector<std::string>& args, const std::string& log) {
    fs::remove(dir_ / log);
    return run_binary(args, env_, dir_ / log);
  }
  TempDir dir_{"gate"};
  std::map<std::string, std::string> env_;
};

TEST_F(NoUserNamespaces, RunResumeAndEvalRefuseNamingTheCauseAndTheFix) {
  fs::path run = dir_ / "run";
  EXPECT_EQ(marathon(tiny_run_args(run, "http://127.0.0.1:9/v1"), "run.log"), 2);
  std::string out = read_text(dir_ / "run.log");
  for (const char* want :
       {"refuses to start", "uid map: Permission denied", "kernel.unprivileged_userns_clone=1",
        "kernel.apparmor_restrict_unprivileged_userns=0", "apt-get install bubblewrap",
        "--unsafe-no-sandbox"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << " missing from:\n" << out;
  }
  EXPECT_FALSE(fs::exists(run / "events.db")) << "a run was created without a sandbox";
  EXPECT_EQ(marathon({"eval", testing::tiny_task().string(), "--json"}, "eval.log"), 2);
  EXPECT_NE(read_text(dir_ / "eval.log").find("uid map"), std::string::npos);
  // resume of a run that exists (made without the sandbox) refuses as run does.
  ScriptedLlmServer server = tiny_server();
  fs::path made = dir_ / "made";
  std::vector<std::string> args = tiny_run_args(made, server.base_url());
  args.push_back("--unsafe-no-sandbox");
  ASSERT_EQ(marathon(args, "made.log"), 0) << read_text(dir_ / "made.log");
  EXPECT_EQ(marathon({"resume", made.string()}, "resume.log"), 2);
  EXPECT_NE(read_text(dir_ / "resume.log").find("refuses to start"), std::string::npos)
      << read_text(dir_ / "resume.log");
}

TEST_F(NoUserNamespaces, UnsafeNoSandboxRunsLogsItAndStatusShowsIt) {
  ScriptedLlmServer server = tiny_server();
  fs::path run = dir_ / "run";
  std::vector<std::string> args = tiny_run_args(run, server.base_url());
  args.push_back("--unsafe-no-sandbox");
  ASSERT_EQ(marathon(args, "run.log"), 0) << read_text(dir_ / "run.log");
  EXPECT_NE(read_text(dir_ / "run.log").find("WITHOUT the sandbox"), std::string::npos);

  std::vector<Event> disabled = events_of_type(load_events(run), events::SandboxDisabled::kType);
  ASSERT_EQ(disabled.size(), 1u);
  std::vector<Event> calls = events_of_type(load_events(run), events::ToolStarted::kType);
  ASSERT_FALSE(calls.empty());
  EXPECT_LT(disabled[0].seq, calls.front().seq) << "logged at the start, before any tool ran";
  EXPECT_EQ(disabled[0].payload["command"], "run");
  EXPECT_NE(disabled[0].payload["reason"].get<std::string>().find("uid map"), std::string::npos);
  EXPECT_TRUE(testing::load_state(run).done);

  ASSERT_EQ(marathon({"status", run.string()}, "status.log"), 0);
  EXPECT_NE(read_text(dir_ / "status.log").find("sandbox    OFF in 1 session(s)"),
            std::string::npos)
      << read_text(dir_ / "status.log");
  ASSERT_EQ(marathon({"status", run.string(), "--json"}, "status.json"), 0);
  std::string text = read_text(dir_ / "status.json");
  json st = json::parse(text.substr(text.find('{')));
  EXPECT_EQ(st["sandbox"]["enabled"], false);
  EXPECT_EQ(st["sandbox"]["disabled_at"], json::array({disabled[0].seq}));

  EXPECT_EQ(marathon({"eval", testing::tiny_task().string(), "--json", "--unsafe-no-sandbox"},
                     "eval.log"),
            0)
      << read_text(dir_ / "eval.log");
}

TEST(SandboxStatus, ASandboxedRunSaysSo) {
  if (std::string why = sandbox::sandbox_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << "bubblewrap cannot sandbox here: " << why;
  }
  TempDir dir("gate-on");
  ScriptedLlmServer server = tiny_server();
  fs::path run = dir / "run";
  ASSERT_EQ(run_binary(tiny_run_args(run, server.base_url()), {}, dir / "run.log"), 0)
      << read_text(dir / "run.log");
  EXPECT_TRUE(events_of_type(load_events(run), events::SandboxDisabled::kType).empty());
  ASSERT_EQ(run_binary({"status", run.string()}, {}, dir / "status.log"), 0);
  EXPECT_NE(read_text(dir / "status.log").find("sandbox    on"), std::string::npos);
}

}  // namespace
}  // namespace marathon
