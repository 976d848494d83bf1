#include "sandbox/bwrap_args.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace marathon::sandbox {

namespace fs = std::filesystem;

namespace {

std::string normal(const fs::path& p) {
  std::error_code ec;
  std::string s = fs::absolute(p, ec).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool under(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

// Others may read it: what an unprivileged user sees, hence the sandbox too.
bool world_readable_file(mode_t m) { return (m & S_IROTH) || !(m & (S_IRUSR | S_IRGRP)); }
bool world_open_dir(mode_t m) { return (m & S_IROTH) && (m & S_IXOTH); }

// Lists one open folder: its closed folders and unreadable files into `out`, its open folders
// into `subdirs`.
void scan_dir(int dirfd, const std::string& path, Masks& out, std::vector<std::string>& subdirs) {
  DIR* d = fdopendir(dirfd);
  if (!d) {
    close(dirfd);
    return;
  }
  while (dirent* e = readdir(d)) {
    const char* name = e->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    if (e->d_type == DT_LNK) continue;
    struct stat st {};
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string child = path == "/" ? "/" + std::string(name) : path + "/" + name;
    if (S_ISDIR(st.st_mode)) {
      (world_open_dir(st.st_mode) ? subdirs : out.dirs).push_back(child);
    } else if (S_ISREG(st.st_mode) && !world_readable_file(st.st_mode)) {
      out.files.push_back(child);
    }
  }
  closedir(d);
}

// The walk, over a few threads: a cold /usr is mostly waiting on inode reads, which the disk
// serves faster several at a time.
void scan_tree(const std::string& root, Masks& out) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> todo{root};
  size_t busy = 0;
  auto work = [&] {
    Masks mine;
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      cv.wait(lock, [&] { return !todo.empty() || busy == 0; });
      if (todo.empty()) break;
      std::string dir = std::move(todo.back());
      todo.pop_back();
      ++busy;
      lock.unlock();
      std::vector<std::string> subdirs;
      int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) scan_dir(fd, dir, mine, subdirs);
      lock.lock();
      --busy;
      for (std::string& s : subdirs) todo.push_back(std::move(s));
      cv.notify_all();
    }
    out.files.insert(out.files.end(), mine.files.begin(), mine.files.end());
    out.dirs.insert(out.dirs.end(), mine.dirs.begin(), mine.dirs.end());
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 7; ++i) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  std::sort(out.files.begin(), out.files.end());
  std::sort(out.dirs.begin(), out.dirs.end());
}

void append(Masks& to, const Masks& from) {
  to.files.insert(to.files.end(), from.files.begin(), from.files.end());
  to.dirs.insert(to.dirs.end(), from.dirs.begin(), from.dirs.end());
}

}  // namespace

Masks scan_masks(const std::string& root) {
  Masks out;
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return out;
  if (!world_open_dir(st.st_mode)) {
    out.dirs.push_back(root);
    return out;
  }
  scan_tree(root, out);
  return out;
}

Masks system_masks(const std::vector<std::string>& dirs) {
  static std::mutex mu;
  static std::map<std::string, Masks> cache;
  Masks out;
  for (const std::string& d : dirs) {
    if (d == "/etc") {
      append(out, scan_masks(d));
      continue;
    }
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(d);
    if (it == cache.end()) it = cache.emplace(d, scan_masks(d)).first;
    append(out, it->second);
  }
  return out;
}

HostLayout read_host_layout() {
  HostLayout h;
  h.system_dirs = {"/usr", "/etc"};
  for (const char* p : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::error_code ec;
    fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st)) {
      h.symlinks.emplace_back(p, fs::read_symlink(p, ec).string());
    } else if (fs::is_directory(st)) {
      h.system_dirs.push_back(p);
    }
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    if (e.path().filename().string().rfind("nvidia", 0) == 0) {
      h.gpu_devices.push_back(e.path().string());
    }
  }
  std::sort(h.gpu_devices.begin(), h.gpu_devices.end());
  h.root = geteuid() == 0;
  if (h.root) {
    h.masks = system_masks(h.system_dirs);
    for (const char* p :
         {"/sys/kernel/debug", "/sys/kernel/tracing", "/sys/kernel/security", "/sys/kernel/slab",
          "/sys/firmware", "/sys/fs/bpf", "/sys/fs/pstore", "/sys/devices/virtual/dmi"}) {
      struct stat st {};
      if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) h.sys_masks.push_back(p);
    }
  }
  return h;
}

std::vector<std::string> bwrap_args(const std::string& bwrap, const Mounts& m,
                                    const HostLayout& host) {
  std::vector<std::string> a = {bwrap,           "--die-with-parent",   "--new-session",
                                "--unshare-pid", "--unshare-net",       "--unshare-ipc",
                                "--unshare-uts", "--unshare-cgroup-try"};
  if (host.root) a.insert(a.end(), {"--cap-drop", "ALL"});
  for (const std::string& d : host.system_dirs) a.insert(a.end(), {"--ro-bind", d, d});
  for (const auto& [path, target] : host.symlinks) a.insert(a.end(), {"--symlink", target, path});
  // bwrap's bind mounts are nodev: the masked file is a device node nothing can open.
  for (const std::string& f : host.masks.files) a.insert(a.end(), {"--ro-bind", "/dev/null", f});
  for (const std::string& d : host.masks.dirs) {
    a.insert(a.end(), {"--tmpfs", d, "--remount-ro", d});
  }
  const std::string size = std::to_string(m.tmpfs_bytes);
  auto sized_tmpfs = [&](const std::string& dir) {
    if (m.tmpfs_bytes > 0) a.insert(a.end(), {"--size", size});
    a.insert(a.end(), {"--tmpfs", dir});
  };
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  sized_tmpfs("/dev/shm");
  sized_tmpfs("/tmp");
  if (m.gpu && !host.gpu_devices.empty()) {  // the driver reads PCI and NUMA facts from /sys
    for (const std::string& d : host.gpu_devices) a.insert(a.end(), {"--dev-bind-try", d, d});
    a.insert(a.end(), {"--ro-bind-try", "/sys", "/sys"});
    for (const std::string& d : host.sys_masks) {
      a.insert(a.end(), {"--tmpfs", d, "--remount-ro", d});
    }
  }
  // /dev holds its nodes, /dev/shm and /dev/pts, each a mount of its own: the tmpfs under them
  // takes no file.
  a.insert(a.end(), {"--remount-ro", "/dev"});
  // Path -> how: a path named both ways is writable, one named as a tmpfs is that.
  enum How { kRead, kWrite, kTmpfs };
  std::map<std::string, How> binds;
  for (const fs::path& p : m.readable) {
    std::string s = normal(p);
    bool system = std::any_of(host.system_dirs.begin(), host.system_dirs.end(),
                              [&](const std::string& d) { return under(s, d); }) ||
                  std::any_of(host.symlinks.begin(), host.symlinks.end(),
                              [&](const auto& l) { return under(s, l.first); });
    if (!system && s != "/") binds.emplace(s, kRead);
  }
  for (const fs::path& p : m.writable) {
    std::string s = normal(p);
    if (s != "/") binds[s] = kWrite;
  }
  for (const fs::path& p : m.tmpfs) {
    std::string s = normal(p);
    if (s != "/") binds[s] = kTmpfs;
  }
  // std::map orders a folder before everything inside it.
  for (const auto& [path, how] : binds) {
    if (how == kTmpfs) {
      sized_tmpfs(path);
    } else {
      a.insert(a.end(), {how == kWrite ? "--bind" : "--ro-bind-try", path, path});
    }
  }
  a.insert(a.end(), {"--remount-ro", "/"});
  if (!m.cwd.empty()) a.insert(a.end(), {"--chdir", normal(m.cwd)});
  a.push_back("--");
  return a;
}

}  // namespace marathon::sandbox
