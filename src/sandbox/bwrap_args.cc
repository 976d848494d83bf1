#include "sandbox/bwrap_args.h"

#include <unistd.h>

#include <algorithm>
#include <map>

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

}  // namespace

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
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"});
  if (m.gpu && !host.gpu_devices.empty()) {  // the driver reads PCI and NUMA facts from /sys
    for (const std::string& d : host.gpu_devices) a.insert(a.end(), {"--dev-bind-try", d, d});
    a.insert(a.end(), {"--ro-bind-try", "/sys", "/sys"});
  }
  // Path -> writable; a path named both ways is writable.
  std::map<std::string, bool> binds;
  for (const fs::path& p : m.readable) {
    std::string s = normal(p);
    bool system = std::any_of(host.system_dirs.begin(), host.system_dirs.end(),
                              [&](const std::string& d) { return under(s, d); }) ||
                  std::any_of(host.symlinks.begin(), host.symlinks.end(),
                              [&](const auto& l) { return under(s, l.first); });
    if (!system && s != "/") binds.emplace(s, false);
  }
  for (const fs::path& p : m.writable) {
    std::string s = normal(p);
    if (s != "/") binds[s] = true;
  }
  // std::map orders a folder before everything inside it.
  for (const auto& [path, writable] : binds) {
    a.insert(a.end(), {writable ? "--bind" : "--ro-bind-try", path, path});
  }
  a.insert(a.end(), {"--remount-ro", "/"});
  if (!m.cwd.empty()) a.insert(a.end(), {"--chdir", normal(m.cwd)});
  a.push_back("--");
  return a;
}

}  // namespace marathon::sandbox
