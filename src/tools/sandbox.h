// Sandbox: runs a shell command under bubblewrap with no network, the host file system read-only,
// only the workspace writable (plus a private /tmp), its own PID namespace, and a timeout after
// which the whole process tree is killed. If bwrap cannot build its namespaces on this machine the
// command is not run at all: there is no unsandboxed fallback.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace marathon {

struct SandboxOptions {
  std::filesystem::path workspace;  // bound read-write at the same path; the working directory
  double timeout_s = 120;
  size_t keep_bytes = 64 << 20;  // output kept beyond this is counted, not stored
  bool gpu = false;              // also bind /dev/nvidia* (for GPU tasks)
  std::string bwrap = "bwrap";
  // Variables passed through from the runner's environment (everything else is cleared: API keys
  // never reach the sandbox). PATH, HOME (= workspace), TMPDIR and LANG are always set.
  std::vector<std::string> pass_env = {"MARATHON_PYTHON",
                                       "CUDA_VISIBLE_DEVICES",
                                       "TRITON_INTERPRET",
                                       "VIRTUAL_ENV",
                                       "PYTHONPATH",
                                       "CC",
                                       "CXX"};
};

struct SandboxResult {
  std::string setup_error;  // non-empty: nothing ran (bwrap missing, namespaces refused, fork)
  int exit_code = -1;       // when the command exited
  int signal = 0;           // when it was killed by a signal
  bool timed_out = false;
  std::string output;       // stdout and stderr interleaved, up to keep_bytes
  size_t output_bytes = 0;  // everything it wrote, kept or not
  double elapsed_s = 0;
};

// The bwrap argument vector for `command` (pure; exposed for tests and docs).
std::vector<std::string> bwrap_argv(const SandboxOptions& options, const std::string& command);

// Empty when bwrap can create the namespaces we need here; else why not (checked once per binary).
std::string sandbox_unavailable_reason(const std::string& bwrap = "bwrap");

SandboxResult run_sandboxed(const SandboxOptions& options, const std::string& command);

}  // namespace marathon
