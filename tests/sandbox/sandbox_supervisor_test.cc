// A runner SIGKILLed at any moment of a sandboxed launch, bubblewrap's setup included (after its
// outer process started, before the namespace's init has set its own parent-death signal), leaves
// no process of the command behind. The launcher's supervisor (a child subreaper between the
// runner and bubblewrap) kills whatever bubblewrap left when the runner goes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/launcher.h"

namespace marathon::sandbox {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Live processes whose command line holds `needle`: their pids.
std::vector<pid_t> with_cmdline(const std::string& needle) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // read(2): a process that exits meanwhile fails the read (ESRCH), which a stream would throw.
    int fd = open((e.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n <= 0) continue;
    std::string cmd(buf, static_cast<size_t>(n));
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find(needle) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

// Those still alive after `seconds` (a PID namespace is torn down asynchronously).
std::vector<pid_t> survivors(const std::string& needle, double seconds) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<pid_t> left = with_cmdline(needle);
  while (!left.empty() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = with_cmdline(needle);
  }
  return left;
}

class SandboxSupervisor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = sandbox_unavailable_reason(); !why.empty()) {
      GTEST_SKIP() << "bubblewrap cannot sandbox on this machine: " << why;
    }
    std::random_device rd;
    mark_ = "1000." + std::to_string(getpid() % 100000) + std::to_string(rd() % 100000);
    ws_ = fs::temp_directory_path() / ("marathon-supervisor-" + std::to_string(getpid()));
    fs::create_directories(ws_);
  }
  void TearDown() override {
    for (pid_t p : with_cmdline("sleep " + mark_)) kill(p, SIGKILL);
    std::error_code ec;
    fs::remove_all(ws_, ec);
  }
  // A runner (a forked copy of this process) launching `sleep MARK` in the run profile.
  pid_t start_runner() {
    LaunchSpec s;
    s.profile = Profile::kRun;
    s.isolation = Isolation::kSandbox;
    s.argv = {"/bin/sh", "-c", "exec sleep " + mark_};
    s.writable = {ws_};
    s.timeout_s = 600;
    pid_t runner = fork();
    if (runner == 0) {
      launch(s);
      _exit(0);
    }
    return runner;
  }
  std::string mark_;
  fs::path ws_;
};

TEST_F(SandboxSupervisor, ARunnerKilledAtRandomMomentsOfTheSetupLeavesNoCommandRunning) {
  // How long a launch takes to reach its command here: the kills are spread over that time.
  auto t0 = Clock::now();
  pid_t first = start_runner();
  ASSERT_GT(first, 0);
  while (with_cmdline("sleep " + mark_).empty() && Clock::now() - t0 < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const double setup_s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_FALSE(with_cmdline("sleep " + mark_).empty()) << "the command never started";
  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  ASSERT_TRUE(survivors("sleep " + mark_, 20).empty()) << "a killed runner's command survived";

  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<double> at(0, 1.5 * setup_s);
  const int rounds = 80;
  int alive_after = 0;
  for (int i = 0; i < rounds; ++i) {
    pid_t runner = start_runner();
    ASSERT_GT(runner, 0);
    std::this_thread::sleep_for(std::chrono::duration<double>(at(rng)));
    kill(runner, SIGKILL);
    waitpid(runner, nullptr, 0);
    if (!with_cmdline("sleep " + mark_).empty()) ++alive_after;
  }
  std::vector<pid_t> left = survivors("sleep " + mark_, 20);
  EXPECT_TRUE(left.empty()) << left.size() << " command(s) outlived their runner (" << rounds
                            << " runners killed within " << 1.5 * setup_s * 1000
                            << " ms of their start; " << alive_after
                            << " were alive right after the kill)";
}

}  // namespace
}  // namespace marathon::sandbox
