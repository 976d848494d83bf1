// The launcher tried as a hostile command would: read the runner's secrets (its own environment,
// /proc/1/environ, every /proc/*/environ), write outside its folders, outlive its launch (setsid),
// survive a runner killed with SIGKILL. Unsandboxed (--unsafe-no-sandbox) it still clears the
// environment and kills its process group.
#include "sandbox/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

namespace marathon::sandbox {
namespace {

namespace fs = std::filesystem;

// A unique token, so that a test looks only for what it planted.
std::string token(const std::string& tag) {
  std::random_device rd;
  return tag + std::to_string(getpid()) + "x" + std::to_string(rd() % 1000000);
}

// A sleep length that marks a process: "1000.<digits>".
std::string sleep_mark() {
  std::random_device rd;
  return "1000." + std::to_string(getpid() % 100000) + std::to_string(rd() % 100000);
}

bool process_with_cmdline(const std::string& needle) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find(needle) != std::string::npos) {
      // A zombie has an empty cmdline; this one is alive.
      return true;
    }
  }
  return false;
}

// Waits (generously: the kernel tears a PID namespace down asynchronously) for no process with
// `needle` in its command line; true when none is left.
bool gone(const std::string& needle, double seconds = 20) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (process_with_cmdline(needle)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

bool appears(const std::string& needle, double seconds = 30) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!process_with_cmdline(needle)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

class TempFolder {
 public:
  TempFolder() {
    path_ = fs::temp_directory_path() / token("marathon-launch-");
    fs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

class Launcher : public ::testing::TestWithParam<Isolation> {
 protected:
  void SetUp() override {
    if (GetParam() == Isolation::kSandbox) {
      if (std::string why = sandbox_unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << "bubblewrap cannot sandbox on this machine: " << why;
      }
    }
  }
  LaunchSpec run_spec(const std::string& command, double timeout_s = 60) {
    LaunchSpec s;
    s.profile = Profile::kRun;
    s.isolation = GetParam();
    s.argv = {"/bin/sh", "-c", command};
    s.writable = {ws_.path()};
    s.timeout_s = timeout_s;
    s.merge_stderr = true;
    return s;
  }
  TempFolder ws_;
};

TEST_P(Launcher, NoSecretOfTheRunnerIsVisibleThroughEnvOrAnyProcEnviron) {
  std::string key = token("sk-launcher-"), password = token("pw-launcher-");
  setenv("OPENAI_API_KEY", key.c_str(), 1);
  setenv("MY_DB_PASSWORD", password.c_str(), 1);
  setenv("MARATHON_PLAIN_SETTING", "visible-setting", 1);
  // Unsandboxed, the host's /proc is the command's: the runner's own /proc/PID/environ is readable
  // by its uid (docs/security.md), so only the sandbox is asked to hide every process's.
  std::string all_procs = GetParam() == Isolation::kSandbox ? "cat /proc/*/environ; echo; " : "";
  LaunchResult r = launch(run_spec("env; echo; cat /proc/self/environ; echo; " + all_procs +
                                   "cat /proc/1/environ; echo; ps -eo pid,args 2>/dev/null"));
  unsetenv("OPENAI_API_KEY");
  unsetenv("MY_DB_PASSWORD");
  unsetenv("MARATHON_PLAIN_SETTING");
  ASSERT_TRUE(r.started) << r.setup_error;
  EXPECT_EQ(r.out.find(key), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(password), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("OPENAI_API_KEY"), std::string::npos) << r.out;
  // The allow-list still passes what it names (so the check above is not vacuous).
  EXPECT_NE(r.out.find("MARATHON_PLAIN_SETTING=visible-setting"), std::string::npos) << r.out;
}

TEST_P(Launcher, AnExitingCommandTakesItsProcessGroupWithIt) {
  std::string mark = sleep_mark();
  LaunchResult r = launch(run_spec("sleep " + mark + " >/dev/null 2>&1 & echo started"));
  ASSERT_TRUE(r.started) << r.setup_error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(gone("sleep " + mark)) << "a background child outlived its launch";
}

TEST_P(Launcher, ARunnerKilledWithSigkillTakesTheLaunchWithIt) {
  std::string mark = sleep_mark();
  // The command announces itself from inside the sandbox: the runner is killed while the command
  // runs, not while bubblewrap is still building the sandbox (docs/security.md: that window).
  const std::filesystem::path started = ws_.path() / "started";
  LaunchSpec spec = run_spec("touch " + started.string() + "; sleep " + mark, 300);
  pid_t runner = fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {
    launch(spec);
    _exit(0);
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(started) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(std::filesystem::exists(started)) << "the command never started";
  ASSERT_TRUE(appears("sleep " + mark)) << "the command never started";
  ASSERT_EQ(kill(runner, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(runner, &status, 0), runner);
  bool ended = gone("sleep " + mark);
  EXPECT_TRUE(ended) << "the command outlived its killed runner";
}

TEST_P(Launcher, MissingCommandIsASetupErrorNamingIt) {
  LaunchSpec s = run_spec("");
  s.argv = {"./no-such-program"};
  LaunchResult r = launch(s);
  EXPECT_FALSE(r.started);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.setup_error.find("cannot execute ./no-such-program"), std::string::npos)
      << r.setup_error;
}

INSTANTIATE_TEST_SUITE_P(Isolations, Launcher,
                         ::testing::Values(Isolation::kSandbox, Isolation::kNone),
                         [](const auto& info) { return to_string(info.param); });

class Sandboxed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = sandbox_unavailable_reason(); !why.empty()) {
      GTEST_SKIP() << "bubblewrap cannot sandbox on this machine: " << why;
    }
  }
};

TEST_F(Sandboxed, SetsidDescendantsDieWhenTheCommandExits) {
  TempFolder ws;
  std::string mark = sleep_mark();
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", "setsid sh -c 'sleep " + mark + "' >/dev/null 2>&1 & sleep 0.2"};
  s.writable = {ws.path()};
  LaunchResult r = launch(s);
  ASSERT_TRUE(r.started) << r.setup_error;
  EXPECT_TRUE(gone("sleep " + mark)) << "a setsid grandchild outlived the sandbox";
}

TEST_F(Sandboxed, EvaluateProfileReadsItsFoldersWritesOnlyItsScratchAndLeavesNothing) {
  TempFolder base;
  fs::path task = base.path() / "task", cand = base.path() / "cand", decoy = base.path() / "decoy";
  fs::create_directories(task);
  fs::create_directories(cand);
  fs::create_directories(decoy);
  std::ofstream(task / "spec.txt") << "task-visible\n";
  std::ofstream(cand / "kernel.cc") << "candidate-visible\n";
  std::ofstream(base.path() / "events.db") << "runner-private\n";
  LaunchSpec s;
  s.profile = Profile::kEvaluate;
  s.readable = {task, cand};
  s.cwd = task;
  s.argv = {"/bin/sh", "-c",
            "cat spec.txt " + (cand / "kernel.cc").string() +
                "; echo home=$HOME; "
                "echo x > $HOME/made && echo scratch-writable; "
                "cat " +
                (base.path() / "events.db").string() +
                " || echo private-hidden; "
                "touch " +
                (decoy / "escaped").string() +
                " || echo decoy-refused; "
                "touch " +
                (cand / "changed").string() +
                " || echo candidate-read-only; "
                "touch " +
                (task / "changed").string() +
                " || echo task-read-only; "
                "echo $HOME > /tmp/home-was; exit 0"};
  LaunchResult r = launch(s);
  ASSERT_TRUE(r.started) << r.setup_error;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* want :
       {"task-visible", "candidate-visible", "scratch-writable", "private-hidden", "decoy-refused",
        "candidate-read-only", "task-read-only"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " missing from: " << r.out;
  }
  EXPECT_EQ(r.out.find("runner-private"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(decoy / "escaped"));
  EXPECT_FALSE(fs::exists(cand / "changed"));
  EXPECT_FALSE(fs::exists(task / "changed"));
  size_t at = r.out.find("home=");
  ASSERT_NE(at, std::string::npos);
  std::string home = r.out.substr(at + 5, r.out.find('\n', at) - at - 5);
  EXPECT_FALSE(home.empty());
  EXPECT_FALSE(fs::exists(home)) << "the scratch folder " << home << " was left behind";
}

TEST_F(Sandboxed, TheFoldersOnPythonpathAreReadableAndReadOnly) {
  // PYTHONPATH passes into the sandbox, so the folders it names must be there too (wheels unpacked
  // beside the interpreter's own site-packages), and read-only.
  TempFolder ws, lib;
  std::ofstream(lib.path() / "mod.txt") << "module-visible\n";
  const char* old = std::getenv("PYTHONPATH");
  std::string saved = old ? old : "";
  setenv("PYTHONPATH", ("relative/ignored:" + lib.path().string()).c_str(), 1);
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c",
            "cat " + (lib.path() / "mod.txt").string() + "; touch " +
                (lib.path() / "planted").string() + " 2>/dev/null || echo lib-read-only"};
  s.writable = {ws.path()};
  LaunchResult r = launch(s);
  if (old)
    setenv("PYTHONPATH", saved.c_str(), 1);
  else
    unsetenv("PYTHONPATH");
  ASSERT_TRUE(r.started) << r.setup_error;
  EXPECT_NE(r.out.find("module-visible"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("lib-read-only"), std::string::npos) << r.out << r.err;
  EXPECT_FALSE(fs::exists(lib.path() / "planted"));
}

TEST_F(Sandboxed, TheCompilerCcNamesIsThereWithItsPrefixsLibrariesNotThePrefix) {
  // CC passes into the sandbox and Triton compiles its launcher stubs with it: a compiler
  // installed under its own prefix (/opt/gcc/bin/gcc on some GPU machines) must be found there,
  // with the prefix's libexec, and read-only; the rest of the prefix stays hidden.
  TempFolder ws, prefix;
  fs::create_directories(prefix.path() / "bin");
  fs::create_directories(prefix.path() / "libexec");
  std::ofstream(prefix.path() / "libexec" / "cc1") << "echo cc1-visible\n";
  std::ofstream(prefix.path() / "private.txt") << "prefix-private\n";
  const fs::path cc = prefix.path() / "bin" / "cc";
  std::ofstream(cc) << "#!/bin/sh\n. \"$(dirname \"$0\")/../libexec/cc1\"\necho cc-ran\n";
  fs::permissions(cc, fs::perms::owner_all);
  const char* old = std::getenv("CC");
  std::string saved = old ? old : "";
  setenv("CC", cc.c_str(), 1);
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c",
            "\"$CC\"; cat " + (prefix.path() / "private.txt").string() +
                " 2>/dev/null || echo private-hidden; touch " +
                (prefix.path() / "bin" / "planted").string() +
                " 2>/dev/null || echo bin-read-only"};
  s.writable = {ws.path()};
  LaunchResult r = launch(s);
  if (old)
    setenv("CC", saved.c_str(), 1);
  else
    unsetenv("CC");
  ASSERT_TRUE(r.started) << r.setup_error;
  for (const char* want : {"cc1-visible", "cc-ran", "private-hidden", "bin-read-only"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " missing from: " << r.out << r.err;
  }
  EXPECT_EQ(r.out.find("prefix-private"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(prefix.path() / "bin" / "planted"));
}

TEST_F(Sandboxed, TheNetworkIsUnreachable) {
  TempFolder ws;
  LaunchSpec s;
  s.argv = {"/bin/sh", "-c", "cat /proc/net/dev; ls /sys/class/net 2>/dev/null; exit 0"};
  s.writable = {ws.path()};
  s.merge_stderr = true;
  LaunchResult r = launch(s);
  ASSERT_TRUE(r.started) << r.setup_error;
  // Only the loopback interface exists in a fresh network namespace.
  EXPECT_NE(r.out.find("lo:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("eth"), std::string::npos) << r.out;
}

TEST(SandboxProbe, AMissingBwrapIsRefusedWithHowToEnableIt) {
  std::string why = sandbox_unavailable_reason("/nonexistent/bwrap");
  EXPECT_NE(why.find("cannot create the sandbox"), std::string::npos) << why;
  EXPECT_NE(why.find("kernel.unprivileged_userns_clone=1"), std::string::npos) << why;
  EXPECT_NE(why.find("kernel.apparmor_restrict_unprivileged_userns=0"), std::string::npos) << why;
  EXPECT_NE(why.find("--unsafe-no-sandbox"), std::string::npos) << why;
  LaunchSpec s;
  s.isolation = Isolation::kSandbox;
  s.bwrap = "/nonexistent/bwrap";
  s.argv = {"/bin/sh", "-c", "exit 0"};
  LaunchResult r = launch(s);
  EXPECT_FALSE(r.started) << "ran without the sandbox";
  EXPECT_EQ(r.setup_error, why);
}

TEST(Unsandboxed, TheTimeoutKillsTheProcessGroup) {
  TempFolder ws;
  std::string mark = sleep_mark();
  LaunchSpec s;
  s.isolation = Isolation::kNone;
  s.argv = {"/bin/sh", "-c", "sleep " + mark + " & wait"};
  s.writable = {ws.path()};
  s.timeout_s = 1;
  LaunchResult r = launch(s);
  EXPECT_TRUE(r.timed_out);
  EXPECT_TRUE(gone("sleep " + mark)) << "a child survived the timeout";
}

}  // namespace
}  // namespace marathon::sandbox
