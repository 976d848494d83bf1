// run_process: a child in its own process group, output captured and capped, a timeout that
// kills the whole group (grandchildren included).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace marathon::eval {

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH unless it has a '/'
  std::filesystem::path cwd;               // empty: the caller's
  std::map<std::string, std::string> env;  // set on top of the caller's environment
  double timeout_s = 60;
  size_t stdout_cap = 1 << 20;  // bytes kept; the rest is read and dropped
  size_t stderr_cap = 64 << 10;
  // After the child exits, how long to keep reading output that stragglers still write; then the
  // group is killed anyway.
  double drain_s = 1.0;
};

struct ProcessResult {
  bool started = false;  // false: fork/exec failed; spawn_error says why
  std::string spawn_error;
  bool timed_out = false;  // we killed the group at the deadline
  int exit_code = -1;      // when it exited normally
  int signal = 0;          // when a signal ended it (SIGKILL after a timeout included)
  std::string out;
  std::string err;
  bool out_truncated = false;
  bool err_truncated = false;
  double elapsed_s = 0;
};

// Never throws for a failure of the child; throws std::runtime_error only when the parent cannot
// make pipes.
ProcessResult run_process(const ProcessSpec& spec);

}  // namespace marathon::eval
