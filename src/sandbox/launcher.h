// The one way marathon starts a process that runs the model's commands or a candidate's code:
// bubblewrap exec'd with an environment built from scratch (bwrap itself never sees the runner's
// variables), in its own PID namespace so that every descendant (setsid ones too) dies with it,
// with no network, a read-only system (what only root could read of it masked), only the folders
// the profile names writable, sized scratch tmpfs, a memory limit on the whole tree, output
// captured head and tail, and a timeout that kills the whole tree. Between the runner and bwrap a
// supervisor process (a child subreaper) kills whatever bwrap leaves when the runner dies, even
// while bwrap is still building the sandbox. docs/security.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/capture.h"
#include "sandbox/environment.h"

namespace marathon::sandbox {

enum class Profile {
  kRun,  // `run`: the workspace writable (HOME), the Python environment and the system read-only
  kEvaluate,  // an evaluator: task, harness and candidate folders read-only, a fresh scratch folder
              // writable (HOME, removed after), the GPU when the machine has one
  kHostTool,  // a program of the runner's own (nvidia-smi, the Python query): Isolation::kNone only
};

enum class Isolation {
  kSandbox,  // bubblewrap; refused (nothing runs) when the machine cannot build it
  kNone,     // --unsafe-no-sandbox: no namespaces, but still the built environment, the process
             // group killed at the end and at the timeout, the scratch folder and the caps
};

std::string to_string(Isolation i);  // "sandbox" | "none"

// The isolation a spec gets when it names none: kSandbox, unless the runner was started with
// --unsafe-no-sandbox (allow_unsandboxed). Process-wide, as the flag is.
Isolation default_isolation();
void allow_unsandboxed();

// Variables never passed into a sandbox whatever their name (e.g. the one --api-key-env names).
void never_pass(const std::string& name);

struct LaunchSpec {
  Profile profile = Profile::kRun;
  Isolation isolation = default_isolation();
  std::vector<std::string> argv;  // argv[0]: a path (relative to cwd) or a name looked up on PATH
  std::filesystem::path cwd;      // kRun: defaults to writable[0]; kEvaluate: must be readable
  std::vector<std::filesystem::path> writable;  // kRun: the workspace first (it is HOME)
  std::vector<std::filesystem::path> readable;  // candidate, task and harness folders
  std::string python;  // an interpreter whose environment is bound read-only ("" = none)
  bool gpu = false;    // kRun: the GPU device nodes too (kEvaluate: whenever the machine has them)
  EnvMap env;          // set inside, on top of the allow-list (secret names dropped)
  double timeout_s = 60;
  size_t out_head = 1 << 20, out_tail = 0;  // stdout kept: its first and last bytes
  size_t err_head = 32 << 10, err_tail = 32 << 10;
  bool merge_stderr = false;  // stderr into the stdout capture, interleaved (`run`)
  // Per-step limits in MiB (0: none); unset: MARATHON_SANDBOX_MEMORY_MIB / _TMPFS_MIB, else a
  // fraction of the machine's memory (sandbox/limits.h). Memory: the whole tree's; tmpfs: each of
  // /tmp, /dev/shm and the evaluate profile's scratch HOME (sandboxed only).
  std::optional<uint64_t> memory_mib;
  std::optional<uint64_t> tmpfs_mib;
  double drain_s = 1.0;  // after the exit, how long to wait for output still buffered
  std::string bwrap = "bwrap";
};

struct LaunchResult {
  bool started = false;     // false: nothing ran; setup_error says why
  std::string setup_error;  // sandbox unavailable, command not found, fork failed
  bool timed_out = false;   // killed (the whole tree) at the deadline
  int exit_code = -1;       // when it exited
  int signal = 0;           // when a signal ended it (in the sandbox: an exit status 128 + N,
                            // bubblewrap's way of passing on a command's death by signal N)
  std::string out, err;     // captured text (head, a line saying what was left out, tail)
  size_t out_bytes = 0, err_bytes = 0;  // everything written
  bool out_truncated = false, err_truncated = false;
  double elapsed_s = 0;
  // A per-step limit the step hit, also appended to the captured stderr (stdout when merged):
  // "killed: the step used more than N MiB of memory" (the tree was killed: signal SIGKILL), or,
  // for a step that failed, "scratch disk full (limit N MiB): DIR".
  std::string limit_error;
};

// Never throws for anything the command does; a failure to start is setup_error.
LaunchResult launch(const LaunchSpec& spec);

// Empty when bubblewrap can build the sandbox here (checked once per bwrap per process, by running
// `true` in it); else why not and how to enable it.
std::string sandbox_unavailable_reason(const std::string& bwrap = "bwrap");

}  // namespace marathon::sandbox
