// The bubblewrap command line of a sandbox (pure, given the host's layout), and the host layout
// read from the file system. The sandbox's root is an empty tmpfs, made read-only once built; on it
// only: the system read-only (/usr, /etc and the /bin, /sbin, /lib* links or folders), a fresh
// /proc and /dev, a private /tmp, the GPU device nodes and /sys read-only when asked, and the
// caller's folders at their own paths (read-only or writable). New PID, network, IPC, UTS and
// cgroup namespaces; the sandbox dies with its parent; root keeps no capability inside.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace marathon::sandbox {

struct HostLayout {
  std::vector<std::string> system_dirs;  // bound read-only: /usr, /etc, and /bin etc. when folders
  std::vector<std::pair<std::string, std::string>> symlinks;  // (path, target): /bin -> usr/bin
  std::vector<std::string> gpu_devices;  // /dev/nvidia* (files and the nvidia-caps folder)
  bool root = false;                     // the runner runs as uid 0
};

// Reads /bin, /sbin, /lib, /lib32, /lib64, /libx32 (link or folder), /dev/nvidia*, the euid.
HostLayout read_host_layout();

struct Mounts {
  std::vector<std::filesystem::path> writable;  // bound read-write at the same path
  std::vector<std::filesystem::path> readable;  // bound read-only at the same path (if it exists)
  bool gpu = false;                             // GPU device nodes and /sys (read-only)
  std::filesystem::path cwd;                    // the working directory inside
};

// Pure: bwrap's arguments up to and including "--" (the command follows). Paths are made absolute
// and normal; a folder inside another is bound after it, so the inner mode wins; a readable path
// under a system folder is already there and is not bound again.
std::vector<std::string> bwrap_args(const std::string& bwrap, const Mounts& mounts,
                                    const HostLayout& host);

}  // namespace marathon::sandbox
