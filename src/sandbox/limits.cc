#include "sandbox/limits.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

namespace marathon::sandbox {

namespace fs = std::filesystem;

namespace {

std::string read_small(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool write_small(const fs::path& p, const std::string& text) {
  int fd = open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

std::optional<uint64_t> parse_u64(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i == s.size() || s[i] < '0' || s[i] > '9') return std::nullopt;
  uint64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  while (i < s.size() && (s[i] == ' ' || s[i] == '\n')) ++i;
  if (i != s.size()) return std::nullopt;
  return v;
}

bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  for (std::string w; in >> w;) {
    if (w == word) return true;
  }
  return false;
}

bool in_comma_list(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  for (std::string w; std::getline(in, w, ',');) {
    if (w == word) return true;
  }
  return false;
}

struct CgroupDir {
  fs::path mount, dir;  // dir is the runner's cgroup, under mount; both empty when none
};

// The runner's cgroup in the hierarchy whose /proc/self/cgroup line matches `controller` ("" for
// the unified v2 hierarchy, "memory" for v1's memory hierarchy).
CgroupDir own_cgroup(const std::string& controller) {
  std::string rel;
  bool found = false;
  std::istringstream cg(read_small("/proc/self/cgroup"));
  for (std::string line; std::getline(cg, line);) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (controller.empty() ? line.rfind("0::", 0) == 0 : in_comma_list(controllers, controller)) {
      rel = line.substr(b + 1);
      found = true;
    }
  }
  if (!found) return {};
  std::istringstream mi(read_small("/proc/self/mountinfo"));
  for (std::string line; std::getline(mi, line);) {
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream after(line.substr(dash + 3));
    std::string fstype, source, options;
    after >> fstype >> source >> options;
    if (controller.empty() ? fstype != "cgroup2"
                           : fstype != "cgroup" || !in_comma_list(options, controller))
      continue;
    std::istringstream before(line.substr(0, dash));
    std::string id, parent, dev, root, mount;
    before >> id >> parent >> dev >> root >> mount;
    // The mount shows the hierarchy from `root` down (a cgroup namespace's root is "/").
    if (root != "/" && rel.rfind(root, 0) != 0) continue;
    std::string below = root == "/" ? rel : rel.substr(root.size());
    return {mount, (fs::path(mount) / fs::path(below).relative_path()).lexically_normal()};
  }
  return {};
}

fs::path own_cgroup_v2() { return own_cgroup("").dir; }

// The parent of step cgroups: the runner's own cgroup when it already hands the memory controller
// to its children, or can be made to (the runner alone in it: it moves into a leaf of its own,
// since a cgroup with processes cannot enable controllers for its children).
fs::path probe_step_parent() {
  const fs::path own = own_cgroup_v2();
  if (own.empty() || access(own.c_str(), W_OK) != 0) return {};
  if (!has_word(read_small(own / "cgroup.controllers"), "memory")) return {};
  auto delegated = [&] { return has_word(read_small(own / "cgroup.subtree_control"), "memory"); };
  if (delegated() || write_small(own / "cgroup.subtree_control", "+memory")) return own;
  std::istringstream procs(read_small(own / "cgroup.procs"));
  std::vector<std::string> pids;
  for (std::string p; procs >> p;) pids.push_back(p);
  if (pids != std::vector<std::string>{std::to_string(getpid())}) return {};
  const fs::path leaf = own / ("marathon-runner-" + std::to_string(getpid()));
  std::error_code ec;
  fs::create_directory(leaf, ec);
  if (ec || !write_small(leaf / "cgroup.procs", std::to_string(getpid()))) {
    fs::remove(leaf, ec);
    return {};
  }
  if (write_small(own / "cgroup.subtree_control", "+memory") && delegated()) return own;
  write_small(own / "cgroup.procs", std::to_string(getpid()));
  fs::remove(leaf, ec);
  return {};
}

std::optional<uint64_t> env_mib(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  std::optional<uint64_t> n = parse_u64(v);
  if (!n || *n > (UINT64_MAX >> 20)) return std::nullopt;
  return n;
}

// Pages of resident anonymous memory in a statm text: resident minus shared (file and shmem).
uint64_t anon_pages(const char* statm) {
  unsigned long long size = 0, resident = 0, shared = 0;
  if (sscanf(statm, "%llu %llu %llu", &size, &resident, &shared) != 3) return 0;
  return resident > shared ? resident - shared : 0;
}

uint64_t read_anon(int dirfd, const char* rel) {
  int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  return anon_pages(buf) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

bool numeric(const char* s) {
  if (!*s) return false;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
  }
  return true;
}

}  // namespace

uint64_t machine_memory_bytes() {
  static const uint64_t bytes = [] {
    uint64_t total = 0;
    std::istringstream mi(read_small("/proc/meminfo"));
    for (std::string line; std::getline(mi, line);) {
      unsigned long long kb = 0;
      if (sscanf(line.c_str(), "MemTotal: %llu kB", &kb) == 1) total = kb * 1024;
    }
    if (total == 0) total = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    // cgroup v2: every memory.max from the runner's cgroup up to the hierarchy's root; v1: the
    // runner's memory cgroup.
    CgroupDir v2 = own_cgroup("");
    for (fs::path d = v2.dir; !d.empty(); d = d.parent_path()) {
      if (auto v = parse_u64(read_small(d / "memory.max"))) total = std::min(total, *v);
      if (d == v2.mount || d == d.parent_path()) break;
    }
    CgroupDir v1 = own_cgroup("memory");
    if (!v1.dir.empty()) {
      if (auto v = parse_u64(read_small(v1.dir / "memory.limit_in_bytes"))) {
        total = std::min(total, *v);
      }
    }
    return total;
  }();
  return bytes;
}

StepLimits step_limits(std::optional<uint64_t> memory_mib, std::optional<uint64_t> tmpfs_mib) {
  StepLimits l;
  const uint64_t machine = machine_memory_bytes();
  if (!memory_mib) memory_mib = env_mib("MARATHON_SANDBOX_MEMORY_MIB");
  if (!tmpfs_mib) tmpfs_mib = env_mib("MARATHON_SANDBOX_TMPFS_MIB");
  l.memory_bytes = memory_mib ? *memory_mib * kMiB : machine / 8 * 5 / kMiB * kMiB;
  l.tmpfs_bytes =
      tmpfs_mib ? *tmpfs_mib * kMiB : std::max<uint64_t>(machine / 16 / kMiB, 64) * kMiB;
  return l;
}

std::string memory_limit_message(uint64_t limit_bytes) {
  return "killed: the step used more than " + std::to_string(limit_bytes / kMiB) + " MiB of memory";
}

std::string tmpfs_full_message(uint64_t size_bytes, const std::string& dir) {
  return "scratch disk full (limit " + std::to_string(size_bytes / kMiB) + " MiB): " + dir;
}

fs::path step_cgroup_parent() {
  static std::once_flag once;
  static fs::path parent;
  std::call_once(once, [] { parent = probe_step_parent(); });
  return parent;
}

StepCgroup::StepCgroup(uint64_t memory_bytes) {
  const fs::path parent = step_cgroup_parent();
  if (parent.empty() || memory_bytes == 0) return;
  static std::atomic<unsigned> counter{0};
  dir_ = parent / ("marathon-step-" + std::to_string(getpid()) + "-" + std::to_string(++counter));
  std::error_code ec;
  if (!fs::create_directory(dir_, ec) || ec) {
    dir_.clear();
    return;
  }
  if (!write_small(dir_ / "memory.max", std::to_string(memory_bytes))) {
    fs::remove(dir_, ec);
    dir_.clear();
    return;
  }
  write_small(dir_ / "memory.swap.max", "0");  // absent without swap accounting
  write_small(dir_ / "memory.oom.group", "1");
  procs_fd_ = open((dir_ / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (procs_fd_ < 0) {
    fs::remove(dir_, ec);
    dir_.clear();
  }
}

bool StepCgroup::oom_killed() const {
  if (dir_.empty()) return false;
  std::istringstream in(read_small(dir_ / "memory.events"));
  for (std::string key; in >> key;) {
    unsigned long long n = 0;
    in >> n;
    if ((key == "oom_kill" || key == "oom_group_kill") && n > 0) return true;
  }
  return false;
}

StepCgroup::~StepCgroup() {
  if (procs_fd_ >= 0) close(procs_fd_);
  if (dir_.empty()) return;
  // Whatever is still in it dies (cgroup.kill since Linux 5.14; else each listed process).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    std::istringstream procs(read_small(dir_ / "cgroup.procs"));
    std::vector<pid_t> pids;
    for (long p; procs >> p;) pids.push_back(static_cast<pid_t>(p));
    if (pids.empty() && rmdir(dir_.c_str()) == 0) return;
    if (!write_small(dir_ / "cgroup.kill", "1")) {
      for (pid_t p : pids) kill(p, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  rmdir(dir_.c_str());
}

uint64_t namespace_anon_bytes(int proc_dirfd) {
  int fd = openat(proc_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return 0;
  }
  uint64_t total = 0;
  while (dirent* e = readdir(d)) {
    if (!numeric(e->d_name)) continue;
    total += read_anon(proc_dirfd, (std::string(e->d_name) + "/statm").c_str());
  }
  closedir(d);
  return total;
}

uint64_t tree_anon_bytes(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  DIR* d = opendir("/proc");
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    if (!numeric(e->d_name)) continue;
    std::string stat = read_small(std::string("/proc/") + e->d_name + "/stat");
    size_t close_paren = stat.rfind(')');
    if (close_paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (sscanf(stat.c_str() + close_paren + 1, " %c %ld", &state, &ppid) != 2) continue;
    children.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(atol(e->d_name)));
  }
  closedir(d);
  int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return 0;
  uint64_t total = 0;
  std::vector<pid_t> todo{root};
  for (size_t i = 0; i < todo.size() && i < 100000; ++i) {
    total += read_anon(proc, (std::to_string(todo[i]) + "/statm").c_str());
    auto [a, b] = children.equal_range(todo[i]);
    for (auto it = a; it != b; ++it) todo.push_back(it->second);
  }
  close(proc);
  return total;
}

}  // namespace marathon::sandbox
