// run_process: an evaluator child does not outlive a runner killed with SIGKILL.
#include "eval/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace marathon::eval {
namespace {

namespace fs = std::filesystem;

// True while `pid` exists and is not a zombie.
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

TEST(RunProcess, ChildDiesWithAKilledParent) {
  fs::path dir = fs::temp_directory_path() / ("marathon-pdeathsig-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path pidfile = dir / "child.pid";

  // The "runner": a forked process that runs an evaluator which records its pid and sleeps.
  pid_t runner = fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {
    ProcessSpec spec;
    spec.argv = {"sh", "-c",
                 "echo $$ > " + pidfile.string() + ".tmp && mv " + pidfile.string() + ".tmp " +
                     pidfile.string() + " && exec sleep 120"};
    spec.timeout_s = 300;
    run_process(spec);
    _exit(0);
  }

  pid_t child = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(pidfile);
    if (in >> child && child > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_GT(child, 0) << "the evaluator never started";
  ASSERT_TRUE(alive(child));

  ASSERT_EQ(kill(runner, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(runner, &status, 0), runner);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  // Without the parent-death signal the evaluator would sleep on for two minutes.
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (alive(child) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  bool survived = alive(child);
  if (survived) kill(child, SIGKILL);
  EXPECT_FALSE(survived) << "the evaluator (pid " << child << ") outlived its killed runner";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace marathon::eval
