// Per-step limits of a launch: the memory its whole process tree may use, and the size of its
// scratch tmpfs folders (/tmp, /dev/shm, the evaluate profile's HOME). Defaults are fractions of
// the machine's memory (the smaller of RAM and the runner's own cgroup limit); the operator may
// set MARATHON_SANDBOX_MEMORY_MIB and MARATHON_SANDBOX_TMPFS_MIB (0: no limit). Memory is held by a
// cgroup v2 of the step's own where the runner's cgroup delegates the memory controller (probed
// once per process), else by a watchdog on the tree's resident anonymous memory read from /proc
// (works with CUDA, which RLIMIT_AS does not), which kills the tree past the limit.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace marathon::sandbox {

constexpr uint64_t kMiB = 1ull << 20;

// The machine's memory as a step may use it: RAM, or less when the runner's cgroup (v2 memory.max
// up its path, or v1 memory.limit_in_bytes) says so. Read once per process.
uint64_t machine_memory_bytes();

struct StepLimits {
  uint64_t memory_bytes = 0;  // 0: none
  uint64_t tmpfs_bytes = 0;   // each scratch tmpfs; 0: the kernel's default (half the RAM)
};

// The limits of a launch: an explicit value (MiB; 0 = none), else the operator's variable, else
// the default: memory 5/8 of machine_memory_bytes(), each tmpfs 1/16 (at least 64 MiB). A step
// has three scratch tmpfs, so it holds at most 5/8 + 3/16 of the memory.
StepLimits step_limits(std::optional<uint64_t> memory_mib, std::optional<uint64_t> tmpfs_mib);

// "killed: the step used more than N MiB of memory"
std::string memory_limit_message(uint64_t limit_bytes);
// "scratch disk full (limit N MiB): DIR"
std::string tmpfs_full_message(uint64_t size_bytes, const std::string& dir);

// A cgroup v2 for one step, under the runner's own cgroup, with memory.max set (swap off, the
// whole group killed on OOM). Empty (ok() false) when the machine delegates no memory controller
// to the runner. Removed (its processes killed) on destruction.
class StepCgroup {
 public:
  StepCgroup() = default;
  explicit StepCgroup(uint64_t memory_bytes);
  ~StepCgroup();
  StepCgroup(const StepCgroup&) = delete;
  StepCgroup& operator=(const StepCgroup&) = delete;

  bool ok() const { return procs_fd_ >= 0; }
  // An O_WRONLY|O_CLOEXEC descriptor of its cgroup.procs: a forked child writes "0" to join.
  int procs_fd() const { return procs_fd_; }
  // True once the kernel killed something in it for want of memory (memory.events).
  bool oom_killed() const;

 private:
  std::filesystem::path dir_;
  int procs_fd_ = -1;
};

// The parent cgroup steps are made under, or "" when memory cannot be limited that way here.
std::filesystem::path step_cgroup_parent();

// Resident anonymous memory (bytes) of the processes listed in the procfs open at `proc_dirfd`
// (a sandbox's own /proc: every process of its PID namespace).
uint64_t namespace_anon_bytes(int proc_dirfd);

// Resident anonymous memory (bytes) of `root` and all its descendants (the host's /proc).
uint64_t tree_anon_bytes(pid_t root);

}  // namespace marathon::sandbox
