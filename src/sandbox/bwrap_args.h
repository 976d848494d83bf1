// The bubblewrap command line of a sandbox (pure, given the host's layout), and the host layout
// read from the file system. The sandbox's root is an empty tmpfs, made read-only once built; on it
// only: the system read-only (/usr, /etc and the /bin, /sbin, /lib* links or folders), a fresh
// /proc and a read-only /dev, a private /tmp and /dev/shm (sized tmpfs), the GPU device nodes and
// /sys read-only when asked, and the caller's folders at their own paths (read-only, writable, or a
// sized tmpfs). New PID, network, IPC, UTS and cgroup namespaces; the sandbox dies with its parent;
// root keeps no capability inside, and when the runner is root what only root could read of the
// system folders is masked (uid 0 without capabilities still passes the owner's permission bits).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace marathon::sandbox {

// What a sandbox of a root runner must not show of the system folders: files whose owner or
// group may read them but others may not (each covered by an unreadable node), and folders others
// may not list or enter (each covered by an empty read-only folder; nothing below is looked at).
struct Masks {
  std::vector<std::string> files;
  std::vector<std::string> dirs;
};

// Walks `root` without following links (mount points are crossed: binds are recursive) and
// returns its masks, sorted. A root that is itself closed is one masked folder; a missing
// root gives none.
Masks scan_masks(const std::string& root);

// The masks of every folder in `dirs`: /etc scanned at each call (credentials are added there
// while a runner lives), the others once per process and cached.
Masks system_masks(const std::vector<std::string>& dirs);

struct HostLayout {
  std::vector<std::string> system_dirs;  // bound read-only: /usr, /etc, and /bin etc. when folders
  std::vector<std::pair<std::string, std::string>> symlinks;  // (path, target): /bin -> usr/bin
  std::vector<std::string> gpu_devices;  // /dev/nvidia* (files and the nvidia-caps folder)
  bool root = false;                     // the runner runs as uid 0
  Masks masks;                           // when root: system_masks(system_dirs)
  // When root: the folders of /sys that hold only root's data (debugfs, tracefs, securityfs,
  // firmware tables, DMI serials, slab statistics, BPF and pstore), masked when /sys is bound.
  std::vector<std::string> sys_masks;
};

// Reads /bin, /sbin, /lib, /lib32, /lib64, /libx32 (link or folder), /dev/nvidia*, the euid, and
// as root the masks.
HostLayout read_host_layout();

struct Mounts {
  std::vector<std::filesystem::path> writable;  // bound read-write at the same path
  std::vector<std::filesystem::path> readable;  // bound read-only at the same path (if it exists)
  bool gpu = false;                             // GPU device nodes and /sys (read-only)
  std::filesystem::path cwd;                    // the working directory inside
  // Folders that are a fresh tmpfs of tmpfs_bytes inside (the evaluate profile's scratch): at the
  // same path, writable, gone with the sandbox.
  std::vector<std::filesystem::path> tmpfs;
  // The size of /tmp, /dev/shm and each `tmpfs` folder (0: the kernel's default, half the RAM).
  unsigned long long tmpfs_bytes = 0;
};

// Pure: bwrap's arguments up to and including "--" (the command follows). Paths are made absolute
// and normal; a folder inside another is bound after it, so the inner mode wins; a readable path
// under a system folder is already there and is not bound again. Masks follow the system binds.
std::vector<std::string> bwrap_args(const std::string& bwrap, const Mounts& mounts,
                                    const HostLayout& host);

}  // namespace marathon::sandbox
