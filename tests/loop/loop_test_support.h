// Helpers for the loop's tests: temporary run folders, the tiny task fixture, child processes of
// the real `marathon` binary (each in its own process group, so a test can SIGKILL the whole tree),
// and reading a run's state back from its log.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/event_store.h"
#include "core/fold.h"

namespace marathon::testing {

namespace fs = std::filesystem;

inline fs::path source_dir() { return MARATHON_SOURCE_DIR; }
inline fs::path tiny_task() { return source_dir() / "tests/loop/fixtures/tiny-task"; }

// A fresh, empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    std::random_device rd;
    path_ = fs::temp_directory_path() /
            ("marathon-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& p) const { return path_ / p; }

 private:
  fs::path path_;
};

// A child process of the real binary, in its own process group; stdout+stderr go to `log`.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        const fs::path& log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      FILE* f = std::fopen(log.c_str(), "a");
      if (f) {
        ::dup2(fileno(f), 1);
        ::dup2(fileno(f), 2);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
  }
  ~Child() {
    if (!reaped_) {
      kill_group();
    }
  }
  // Waits up to `timeout_s`; returns the exit status, or nullopt if it is still running.
  std::optional<int> wait_for(double timeout_s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (true) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // SIGKILL to the whole group (the binary and any evaluator it started in that group), reaped.
  void kill_group() {
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Runs the binary to completion (or kills it after timeout_s); returns the exit status (-1 on
// timeout) and appends its output to `log`.
inline int run_binary(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env, const fs::path& log,
                      double timeout_s = 300) {
  std::vector<std::string> argv{MARATHON_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c(argv, env, log);
  std::optional<int> rc = c.wait_for(timeout_s);
  if (!rc) {
    c.kill_group();
    return -1;
  }
  return *rc;
}

// The environment that makes the tiny task's evaluator append to `marker` (one line per completed
// execution): the marker's folder (created, and holding nothing else) is made writable inside the
// evaluator's sandbox with MARATHON_SANDBOX_RW.
inline std::map<std::string, std::string> eval_marker_env(const fs::path& marker) {
  fs::create_directories(marker.parent_path());
  return {{"MARATHON_EVAL_MARKER", marker.string()},
          {"MARATHON_SANDBOX_RW", marker.parent_path().string()}};
}

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<std::string> read_lines(const fs::path& p) {
  std::vector<std::string> lines;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

inline std::vector<Event> load_events(const fs::path& run_dir) {
  auto store = EventStore::open((run_dir / "events.db").string(), EventStore::Mode::kReadOnly);
  return store->read();
}

inline State load_state(const fs::path& run_dir) { return fold(load_events(run_dir)); }

inline std::vector<Event> events_of_type(const std::vector<Event>& events,
                                         const std::string& type) {
  std::vector<Event> out;
  for (const Event& e : events) {
    if (e.type == type) out.push_back(e);
  }
  return out;
}

}  // namespace marathon::testing
