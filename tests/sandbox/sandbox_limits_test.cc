// Per-step limits: a step that uses more memory than its limit is killed, the whole tree, with a
// message saying so; writing past a sized scratch tmpfs (/tmp, /dev/shm, the evaluate profile's
// scratch HOME) fails with ENOSPC and the launch says which limit was hit. The limits come from
// the operator settings MARATHON_SANDBOX_MEMORY_MIB and MARATHON_SANDBOX_TMPFS_MIB here, small.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "sandbox/launcher.h"

namespace marathon::sandbox {
namespace {

namespace fs = std::filesystem;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(name_);
    else
      setenv(name_, old_.c_str(), 1);
  }

 private:
  const char* name_;
  std::string old_;
};

class SandboxLimits : public ::testing::TestWithParam<Isolation> {
 protected:
  void SetUp() override {
    if (GetParam() == Isolation::kSandbox) {
      if (std::string why = sandbox_unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << "bubblewrap cannot sandbox on this machine: " << why;
      }
    }
    std::random_device rd;
    ws_ = fs::temp_directory_path() /
          ("marathon-limits-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(ws_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(ws_, ec);
  }
  LaunchSpec spec(Profile profile, const std::string& command) {
    LaunchSpec s;
    s.profile = profile;
    s.isolation = GetParam();
    s.argv = {"/bin/sh", "-c", command};
    if (profile == Profile::kRun) {
      s.writable = {ws_};
      s.merge_stderr = true;
    } else {
      s.readable = {ws_};
      s.cwd = ws_;
    }
    s.timeout_s = 120;
    return s;
  }
  fs::path ws_;
};

// Python: touches `mib` MiB, then holds it.
std::string allocate(int mib) {
  return "python3 -c 'import time; b = bytearray(" + std::to_string(mib) +
         " << 20); b[::4096] = b\"x\" * len(b[::4096]); print(\"allocated\", flush=True); "
         "time.sleep(30)'";
}

TEST_P(SandboxLimits, AStepPastItsMemoryLimitIsKilledWithTheLimitNamed) {
  ScopedEnv mem("MARATHON_SANDBOX_MEMORY_MIB", "200");
  for (Profile profile : {Profile::kRun, Profile::kEvaluate}) {
    // The allocation runs in a child of the shell: the whole tree counts and dies.
    LaunchResult r = launch(spec(profile, allocate(400) + "; echo survived"));
    ASSERT_TRUE(r.started) << r.setup_error;
    const std::string text = r.out + r.err;
    EXPECT_EQ(r.signal, SIGKILL) << text;
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.limit_error, "killed: the step used more than 200 MiB of memory");
    EXPECT_NE((profile == Profile::kRun ? r.out : r.err).find(r.limit_error), std::string::npos)
        << text;
    EXPECT_EQ(text.find("survived"), std::string::npos) << text;
    EXPECT_LT(r.elapsed_s, 25) << "killed only at the end of its sleep";
  }
}

TEST_P(SandboxLimits, AStepUnderItsMemoryLimitRuns) {
  ScopedEnv mem("MARATHON_SANDBOX_MEMORY_MIB", "400");
  LaunchResult r = launch(spec(Profile::kRun, allocate(100) + " & sleep 1; kill $!; echo done"));
  ASSERT_TRUE(r.started) << r.setup_error;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("allocated"), std::string::npos) << r.out;
  EXPECT_TRUE(r.limit_error.empty()) << r.limit_error;
}

INSTANTIATE_TEST_SUITE_P(Isolations, SandboxLimits,
                         ::testing::Values(Isolation::kSandbox, Isolation::kNone),
                         [](const auto& info) { return to_string(info.param); });

class SandboxScratchLimits : public SandboxLimits {};

TEST_P(SandboxScratchLimits, WritingPastTheScratchSizeFailsWithEnospcAndSaysSo) {
  ScopedEnv size("MARATHON_SANDBOX_TMPFS_MIB", "16");
  struct Case {
    Profile profile;
    std::string dir;
  };
  for (const Case& c : {Case{Profile::kRun, "/tmp"}, Case{Profile::kRun, "/dev/shm"},
                        Case{Profile::kEvaluate, "$HOME"}, Case{Profile::kEvaluate, "/tmp"}}) {
    LaunchResult r = launch(spec(c.profile, "dd if=/dev/zero of=" + c.dir +
                                                "/fill bs=1M count=64 2>&1; echo dd=$?; exit 1"));
    ASSERT_TRUE(r.started) << r.setup_error;
    const std::string text = r.out + r.err;
    EXPECT_NE(text.find("No space left on device"), std::string::npos) << c.dir << ": " << text;
    EXPECT_NE(text.find("16777216 bytes"), std::string::npos) << c.dir << ": " << text;
    const std::string want = "scratch disk full (limit 16 MiB): ";
    EXPECT_EQ(r.limit_error.substr(0, want.size()), want) << c.dir << ": " << text;
    if (c.dir != "$HOME") {
      EXPECT_EQ(r.limit_error, want + c.dir);
    }
    EXPECT_NE(text.find(r.limit_error), std::string::npos) << text;
  }
  // A step that fills nothing says nothing.
  LaunchResult ok = launch(spec(Profile::kRun, "echo small > /tmp/f; exit 1"));
  EXPECT_TRUE(ok.limit_error.empty()) << ok.limit_error;
}

INSTANTIATE_TEST_SUITE_P(Isolations, SandboxScratchLimits, ::testing::Values(Isolation::kSandbox),
                         [](const auto& info) { return to_string(info.param); });

}  // namespace
}  // namespace marathon::sandbox
