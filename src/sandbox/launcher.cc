#include "sandbox/launcher.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "sandbox/bwrap_args.h"
#include "sandbox/limits.h"
#include "sandbox/nsight.h"
#include "sandbox/python_env.h"

namespace marathon::sandbox {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

std::mutex g_mu;
bool g_unsandboxed = false;
std::set<std::string> g_never;

std::set<std::string> never_set() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_never;
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : std::string(1, sep)) + p;
  return out;
}

bool under(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         (dir == "/" || path[dir.size()] == '/'));
}

// The executable argv0 names: relative to cwd when it has a '/', else found on `path`. nullopt and
// *err = errno when there is none.
std::optional<std::string> find_executable(const std::string& argv0, const fs::path& cwd,
                                           const std::string& path, int* err) {
  auto usable = [&](const fs::path& p) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) return (*err = errno), false;
    if (!S_ISREG(st.st_mode)) return (*err = EACCES), false;
    if (access(p.c_str(), X_OK) != 0) return (*err = errno), false;
    return true;
  };
  *err = ENOENT;
  if (argv0.find('/') != std::string::npos) {
    fs::path p = fs::path(argv0).is_absolute() || cwd.empty() ? fs::path(argv0) : cwd / argv0;
    if (usable(p)) return p.string();
    return std::nullopt;
  }
  for (const std::string& dir : split(path, ':')) {
    if (usable(fs::path(dir) / argv0)) return (fs::path(dir) / argv0).string();
  }
  *err = ENOENT;
  return std::nullopt;
}

// A fresh folder for one evaluation, removed (with whatever the candidate left in it, modes and
// all) when the launch ends.
class ScratchDir {
 public:
  ScratchDir() {
    std::error_code ec;
    std::string tmpl = (fs::temp_directory_path(ec) / "marathon-eval-XXXXXX").string();
    if (ec) tmpl = "/tmp/marathon-eval-XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~ScratchDir() {
    if (path_.empty()) return;
    std::error_code ec;
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (fs::remove_all(path_, ec) != static_cast<std::uintmax_t>(-1) && !fs::exists(path_, ec))
        return;
      // A folder the candidate made unreadable or unwritable: give it back its modes and retry.
      for (auto it = fs::recursive_directory_iterator(
               path_, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::end(it); it.increment(ec)) {
        if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0700);
      }
      chmod(path_.c_str(), 0700);
    }
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Pipe {
  int r = -1, w = -1;
  bool open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return false;
    r = fds[0];
    w = fds[1];
    return true;
  }
  ~Pipe() {
    if (r >= 0) close(r);
    if (w >= 0) close(w);
  }
  void close_r() { close(r), r = -1; }
  void close_w() { close(w), w = -1; }
};

// The supervisor: the process between the runner and what it runs (bwrap, or the command when
// unsandboxed). It gets SIGTERM when the runner dies (its parent-death signal; SIGKILL included)
// and when the runner stops the step (timeout, memory limit). Unsandboxed it then kills its whole
// process group. Sandboxed it kills bwrap, and, being a child subreaper, it inherits whatever bwrap
// leaves: the namespace's init, which a bwrap killed while it still builds the sandbox leaves
// running before the init has armed its own parent-death signal. It kills those too, reaps
// everything, and exits as bwrap (or the command) did.
volatile sig_atomic_t g_supervised = 0;  // the pid the supervisor's SIGTERM handler kills

void kill_supervised(int) {
  pid_t p = g_supervised;
  if (p > 0) kill(p, SIGKILL);
}

void kill_own_group(int) { kill(0, SIGKILL); }

struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// Async-signal-safe: the parent pid in a /proc/PID/stat text, or -1.
long stat_ppid(const char* stat, ssize_t n) {
  ssize_t paren = -1;
  for (ssize_t i = 0; i < n; ++i) {
    if (stat[i] == ')') paren = i;
  }
  if (paren < 0 || paren + 4 >= n) return -1;
  ssize_t i = paren + 4;  // ") S " then the parent pid
  long v = 0;
  bool any = false;
  for (; i < n && stat[i] >= '0' && stat[i] <= '9'; ++i) v = v * 10 + (stat[i] - '0'), any = true;
  return any ? v : -1;
}

// Async-signal-safe: SIGKILL every child of this process (read from /proc/*/stat).
void kill_own_children() {
  const pid_t self = getpid();
  int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return;
  alignas(8) char buf[8192];
  while (true) {
    long n = syscall(SYS_getdents64, proc, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(buf + off);
      off += d->d_reclen;
      long pid = 0;
      bool numeric = d->d_name[0] != 0;
      for (const char* c = d->d_name; *c; ++c) {
        if (*c < '0' || *c > '9') numeric = false;
        pid = pid * 10 + (*c - '0');
      }
      if (!numeric) continue;
      char path[48] = "/proc/";
      size_t len = 6;
      for (const char* c = d->d_name; *c && len < 30; ++c) path[len++] = *c;
      for (const char* c = "/stat"; *c; ++c) path[len++] = *c;
      path[len] = 0;
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char stat[512];
      ssize_t got = read(fd, stat, sizeof stat);
      close(fd);
      if (stat_ppid(stat, got) == self) kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  close(proc);
}

struct ChildSetup {
  const char* exe;
  char* const* argv;
  char* const* envp;
  const char* cwd;
  int out_w, err_w, status_w;
  int info_w;     // bwrap's --info-fd (kept open across exec), or -1
  int cgroup_fd;  // the step's cgroup.procs, or -1
  pid_t parent;
  bool sandboxed;
};

// In the child it forks: async-signal-safe calls only (the runner has threads).
[[noreturn]] void run_supervisor(const ChildSetup& c) {
  // Dies with the runner; a runner gone before this line sends no signal, hence the check.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != c.parent) _exit(127);
  setsid();  // its own session and process group: the group is killed at the end
  sigset_t term, none;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigemptyset(&none);
  // A SIGTERM from here on waits until the handler knows whom to kill.
  sigprocmask(SIG_BLOCK, &term, nullptr);
  if (c.sandboxed) prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGTERM, c.sandboxed ? kill_supervised : kill_own_group);
  if (getppid() != c.parent) _exit(127);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(c.out_w, 1);
  dup2(c.err_w, 2);
  for (int sig : {SIGPIPE, SIGINT, SIGCHLD}) signal(sig, SIG_DFL);
  const pid_t self = getpid();
  pid_t child = fork();
  if (child < 0) _exit(127);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != self) _exit(127);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    int err[2] = {0, 0};
    if (c.cgroup_fd >= 0 && write(c.cgroup_fd, "0", 1) != 1) {
      err[0] = 3;
      err[1] = errno;
    } else if (c.info_w >= 0 && fcntl(c.info_w, F_SETFD, 0) != 0) {
      err[0] = 2;
      err[1] = errno;
    } else if (c.cwd && chdir(c.cwd) != 0) {
      err[0] = 1;
      err[1] = errno;
    } else {
      execve(c.exe, c.argv, c.envp);
      err[0] = 2;
      err[1] = errno;
    }
    ssize_t ignored = write(c.status_w, err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  g_supervised = child;
  close(c.status_w);
  if (c.info_w >= 0) close(c.info_w);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_supervised = 0;
  if (c.sandboxed) {
    // bwrap is gone: whatever it left is this process's child now. Usually that is the
    // namespace's init, already exited; one still alive (bwrap was killed) is killed.
    while (true) {
      siginfo_t info{};
      if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG) != 0) {
        if (errno == EINTR) continue;
        break;  // no child left
      }
      if (info.si_pid == 0) {
        kill_own_children();
        while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
        }
        break;
      }
    }
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

// What a sandboxed launch watches while it runs: bwrap's report of the namespace's init, the
// sandbox's own /proc and its scratch tmpfs (reached through /proc/INIT/root once the init has
// entered the finished sandbox), for the memory limit and the tmpfs sizes.
struct Watch {
  bool sandboxed = false;
  uint64_t memory_bytes = 0;       // 0: none
  bool by_cgroup = false;          // the kernel holds the memory limit
  uint64_t tmpfs_bytes = 0;        // the size of each tmpfs below
  std::vector<std::string> tmpfs;  // paths inside: /tmp first
  Pipe* info = nullptr;            // bwrap's --info-fd
};

struct Watcher {
  const Watch& cfg;
  std::string info_text;
  pid_t init = 0;
  bool attached = false;
  Clock::time_point init_seen{}, last_scan{};
  int proc_fd = -1;
  struct Tmpfs {
    int fd;
    std::string dir;
    bool full = false;
  };
  std::vector<Tmpfs> tmpfs;

  explicit Watcher(const Watch& c) : cfg(c) {}
  ~Watcher() {
    if (proc_fd >= 0) close(proc_fd);
    for (const Tmpfs& t : tmpfs) close(t.fd);
  }

  void read_info() {
    if (!cfg.info || cfg.info->r < 0) return;
    char buf[512];
    ssize_t n = read(cfg.info->r, buf, sizeof buf);
    if (n > 0) {
      info_text.append(buf, static_cast<size_t>(n));
      size_t at = info_text.find("\"child-pid\":");
      if (init == 0 && at != std::string::npos &&
          info_text.find_first_of(",}", at) != std::string::npos) {
        init = static_cast<pid_t>(std::atol(info_text.c_str() + at + 12));
        init_seen = Clock::now();
      }
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      cfg.info->close_r();
    }
  }

  // A tmpfs of the configured size at `dir` under /proc/INIT/root, or -1.
  int open_tmpfs(const std::string& dir) const {
    std::string p = "/proc/" + std::to_string(init) + "/root" + dir;
    int fd = open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct statfs sf {};
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t want = (cfg.tmpfs_bytes + page - 1) / page * page;
    if (fstatfs(fd, &sf) != 0 || sf.f_type != TMPFS_MAGIC ||
        static_cast<uint64_t>(sf.f_blocks) * static_cast<uint64_t>(sf.f_bsize) != want) {
      close(fd);
      return -1;
    }
    return fd;
  }

  // Once the init's root is the finished sandbox (its /tmp is the sized tmpfs; before bwrap's
  // last pivot_root it is not), hold its /proc and tmpfs folders: a held folder keeps its tmpfs
  // countable after the sandbox is gone.
  void attach() {
    if (attached || init <= 0 || cfg.tmpfs.empty()) return;
    int first = open_tmpfs(cfg.tmpfs.front());
    if (first < 0) return;
    attached = true;
    tmpfs.push_back({first, cfg.tmpfs.front()});
    for (size_t i = 1; i < cfg.tmpfs.size(); ++i) {
      int fd = open_tmpfs(cfg.tmpfs[i]);
      if (fd >= 0) tmpfs.push_back({fd, cfg.tmpfs[i]});
    }
    std::string p = "/proc/" + std::to_string(init) + "/root/proc";
    proc_fd = open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct statfs sf {};
    if (proc_fd >= 0 && (fstatfs(proc_fd, &sf) != 0 || sf.f_type != PROC_SUPER_MAGIC)) {
      close(proc_fd);
      proc_fd = -1;
    }
  }

  void check_tmpfs() {
    for (Tmpfs& t : tmpfs) {
      struct statvfs sv {};
      if (fstatvfs(t.fd, &sv) != 0) continue;
      const uint64_t free_bytes = static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
      const uint64_t size = static_cast<uint64_t>(sv.f_blocks) * sv.f_frsize;
      if (free_bytes < std::max<uint64_t>(size / 100, 256 << 10)) t.full = true;
    }
  }

  // How long the runner may wait before the next look (ms).
  int wait_ms() const {
    if (cfg.sandboxed && init > 0 && !attached && since(init_seen) < 2) return 2;
    return 50;
  }

  // The tree's memory, or nullopt when not yet measurable (or not measured by this watcher).
  std::optional<uint64_t> memory_used(pid_t supervisor) const {
    if (cfg.memory_bytes == 0 || cfg.by_cgroup) return std::nullopt;
    if (!cfg.sandboxed) return tree_anon_bytes(supervisor);
    if (proc_fd >= 0) return namespace_anon_bytes(proc_fd);
    // The sandbox's /proc cannot be reached (not yet, or not allowed): the host's tree.
    if (init > 0 && since(init_seen) >= 2) return tree_anon_bytes(supervisor);
    return std::nullopt;
  }

  // True when the step must stop: it used more memory than its limit.
  bool over_limit(pid_t supervisor) {
    read_info();
    attach();
    const auto interval = std::chrono::milliseconds(cfg.sandboxed ? 50 : 100);
    if (Clock::now() - last_scan < interval) return false;
    last_scan = Clock::now();
    check_tmpfs();
    std::optional<uint64_t> used = memory_used(supervisor);
    return used && *used > cfg.memory_bytes;
  }

  // The first tmpfs found full during the step or at its end, or "".
  std::string full_tmpfs() {
    check_tmpfs();
    for (const Tmpfs& t : tmpfs) {
      if (t.full) return t.dir;
    }
    return "";
  }
};

// Runs `exe` with argv/env in its own session under the supervisor; captures, times out, holds the
// limits, kills the tree.
LaunchResult spawn(const std::string& exe, const std::vector<std::string>& argv_s,
                   const EnvMap& env, const std::string& cwd, const LaunchSpec& spec,
                   const Watch& watch, StepCgroup* cgroup) {
  LaunchResult res;
  std::vector<char*> argv;
  for (const auto& a : argv_s) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_s = envp_strings(env);
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);

  Pipe out, err, status;
  if (!out.open() || !err.open() || !status.open()) {
    res.setup_error = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  const auto t0 = Clock::now();
  ChildSetup c{exe.c_str(),
               argv.data(),
               envp.data(),
               cwd.empty() ? nullptr : cwd.c_str(),
               out.w,
               spec.merge_stderr ? out.w : err.w,
               status.w,
               watch.info ? watch.info->w : -1,
               cgroup && cgroup->ok() ? cgroup->procs_fd() : -1,
               getpid(),
               spec.isolation == Isolation::kSandbox};
  pid_t pid = fork();
  if (pid < 0) {
    res.setup_error = std::string("fork: ") + std::strerror(errno);
    return res;
  }
  if (pid == 0) run_supervisor(c);
  out.close_w();
  err.close_w();
  status.close_w();
  if (watch.info) {
    watch.info->close_w();
    fcntl(watch.info->r, F_SETFL, O_NONBLOCK);
  }

  int child_err[2] = {0, 0};
  ssize_t got;
  do {
    got = read(status.r, child_err, sizeof child_err);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof child_err)) {
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    res.setup_error = (child_err[0] == 1   ? "cannot enter " + cwd
                       : child_err[0] == 3 ? std::string("cannot join the step's cgroup")
                                           : "cannot execute " + exe) +
                      ": " + std::strerror(child_err[1]);
    res.exit_code = 127;
    res.elapsed_s = since(t0);
    return res;
  }
  res.started = true;

  Watcher watcher(watch);
  Capture cout(spec.out_head, spec.out_tail), cerr(spec.err_head, spec.err_tail);
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(spec.timeout_s));
  const auto drain =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.drain_s));
  std::optional<Clock::time_point> drain_until, stop_sent;
  // Stopping goes through the supervisor, which kills what bwrap would leave; a supervisor that
  // does not exit within a few seconds is killed with its group.
  auto stop = [&] {
    if (stop_sent) return;
    kill(pid, SIGTERM);
    stop_sent = Clock::now();
  };
  bool exited = false;
  int wstatus = 0;
  char buf[65536];
  while (true) {
    pollfd fds[3];
    int nfds = 0;
    if (out.r >= 0) fds[nfds++] = {out.r, POLLIN, 0};
    if (err.r >= 0) fds[nfds++] = {err.r, POLLIN, 0};
    const bool info_open = watch.info && watch.info->r >= 0 && !exited;
    if (info_open) fds[nfds++] = {watch.info->r, POLLIN, 0};
    if (nfds == 0 && exited) break;

    auto now = Clock::now();
    if (!exited && now >= deadline && !res.timed_out) {
      res.timed_out = true;
      stop();
    }
    if (!exited && stop_sent && now - *stop_sent > std::chrono::seconds(3)) {
      kill(-pid, SIGKILL);
    }
    if (drain_until && now >= *drain_until) break;  // something outside the group holds a pipe

    int wait_ms = 0;
    if (exited) {
      wait_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(*drain_until - now).count());
    } else if (stop_sent) {
      wait_ms = 10;
    } else {
      wait_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
      wait_ms = std::min(wait_ms, watcher.wait_ms());
    }
    wait_ms = std::clamp(wait_ms, 0, 50);
    if (nfds > 0) {
      if (poll(fds, nfds, wait_ms) > 0) {
        for (int i = 0; i < nfds; ++i) {
          if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          if (info_open && fds[i].fd == watch.info->r) {
            watcher.read_info();
            continue;
          }
          bool is_out = fds[i].fd == out.r;
          ssize_t n = read(fds[i].fd, buf, sizeof buf);
          if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
          if (n <= 0) {
            is_out ? out.close_r() : err.close_r();
            continue;
          }
          (is_out ? cout : cerr).append(buf, static_cast<size_t>(n));
        }
      }
    } else {
      usleep(static_cast<useconds_t>(wait_ms) * 1000);
    }

    if (!exited) {
      if (!stop_sent && watcher.over_limit(pid)) {
        res.limit_error = memory_limit_message(watch.memory_bytes);
        stop();
      }
      // Peek without reaping, so the pid (and the group id) cannot be reused before the group is
      // killed.
      siginfo_t info{};
      if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        kill(-pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        exited = true;
        drain_until = Clock::now() + drain;
      }
    }
  }
  kill(-pid, SIGKILL);  // stragglers of an unsandboxed launch that kept the group
  res.elapsed_s = since(t0);
  if (WIFEXITED(wstatus)) {
    res.exit_code = WEXITSTATUS(wstatus);
    // bubblewrap reports a command killed by signal N as exit status 128 + N (as shells do).
    if (spec.isolation == Isolation::kSandbox && res.exit_code > 128 && res.exit_code <= 128 + 64) {
      res.signal = res.exit_code - 128;
      res.exit_code = -1;
    }
  } else if (WIFSIGNALED(wstatus)) {
    res.signal = WTERMSIG(wstatus);
  }
  if (res.limit_error.empty() && cgroup && cgroup->ok() && cgroup->oom_killed()) {
    res.limit_error = memory_limit_message(watch.memory_bytes);
  }
  if (res.limit_error.empty() && (res.exit_code != 0 || res.signal != 0)) {
    std::string dir = watcher.full_tmpfs();
    if (!dir.empty()) res.limit_error = tmpfs_full_message(watch.tmpfs_bytes, dir);
  }
  if (!res.limit_error.empty()) {
    const std::string note = "\nmarathon: " + res.limit_error + "\n";
    (spec.merge_stderr ? cout : cerr).append(note.data(), note.size());
  }
  res.out = cout.text();
  res.err = cerr.text();
  res.out_bytes = cout.total();
  res.err_bytes = cerr.total();
  res.out_truncated = cout.truncated();
  res.err_truncated = cerr.truncated();
  return res;
}

std::string host_path(const EnvMap& host) {
  auto it = host.find("PATH");
  return it != host.end() && !it->second.empty() ? it->second : "/usr/local/bin:/usr/bin:/bin";
}

LaunchResult launch_unchecked(const LaunchSpec& spec) {
  LaunchResult fail;
  if (spec.argv.empty()) {
    fail.setup_error = "empty command";
    return fail;
  }
  const bool sandboxed = spec.isolation == Isolation::kSandbox;
  if (spec.profile == Profile::kHostTool && sandboxed) {
    fail.setup_error = "a host tool runs without the sandbox (Isolation::kNone)";
    return fail;
  }
  const EnvMap host = host_environment();
  std::vector<fs::path> writable = spec.writable;
  std::vector<fs::path> readable = spec.readable;
  auto host_var = [&](const char* k) {
    auto it = host.find(k);
    return it == host.end() ? std::string() : it->second;
  };
  // The operator's extra folders (a shared compile cache, a marker folder for tests).
  for (const std::string& p : split(host_var("MARATHON_SANDBOX_RW"), ':')) writable.push_back(p);
  for (const std::string& p : split(host_var("MARATHON_SANDBOX_RO"), ':')) readable.push_back(p);
  // PYTHONPATH passes into the sandbox (environment.cc), so the folders it names are bound
  // read-only: an interpreter's query runs with -I and does not list them.
  for (const std::string& p : split(host_var("PYTHONPATH"), ':')) {
    if (fs::path(p).is_absolute()) readable.push_back(p);
  }
  // CC and CXX pass in too, and evaluators compile with them (Triton builds its launcher stubs
  // with CC): the folder holding each compiler is bound read-only, and when that folder is a
  // prefix's bin/, the prefix's lib, lib64 and libexec (where a compiler keeps its own programs
  // and libraries), never the prefix itself (it may be a home folder).
  for (const char* var : {"CC", "CXX"}) {
    const fs::path compiler = host_var(var);
    if (!compiler.is_absolute()) continue;
    const fs::path dir = compiler.parent_path();
    readable.push_back(dir);
    if (dir.filename() != "bin" || dir.parent_path() == dir.root_path()) continue;
    for (const char* sub : {"lib", "lib64", "libexec"}) {
      std::error_code ec;
      if (fs::is_directory(dir.parent_path() / sub, ec))
        readable.push_back(dir.parent_path() / sub);
    }
  }

  std::optional<ScratchDir> scratch;
  if (spec.profile == Profile::kEvaluate) {
    scratch.emplace();
    if (scratch->path().empty()) {
      fail.setup_error = std::string("cannot create a scratch folder: ") + std::strerror(errno);
      return fail;
    }
    writable.push_back(scratch->path());
    // Nsight Compute's install folders, read-only (sandbox/nsight.h): a profile runs under ncu.
    for (const fs::path& d : nsight_compute_dirs(host_path(host), host_var("CUDA_HOME"))) {
      readable.push_back(d);
    }
  }

  std::string python_bin;
  if (!spec.python.empty()) {
    const PythonEnv& py = python_env(spec.python);
    if (py.error.empty()) {
      readable.insert(readable.end(), py.dirs.begin(), py.dirs.end());
      python_bin = fs::path(py.executable).parent_path().string();
      // The interpreter may be reached through links that live outside its prefix (a recorded
      // name, a venv's bin/python): every folder on the way to the real file is bound read-only.
      fs::path hop = py.executable;
      for (int i = 0; i < 40 && hop.is_absolute(); ++i) {
        fs::path dir = hop.parent_path();
        bool bound = false;
        for (const auto& r : readable) bound = bound || under(dir.string(), r.string());
        if (!bound) readable.push_back(dir);
        std::error_code ec;
        if (!fs::is_symlink(hop, ec)) break;
        fs::path target = fs::read_symlink(hop, ec);
        if (ec) break;
        hop = (target.is_absolute() ? target : dir / target).lexically_normal();
      }
    }
  }

  fs::path cwd = spec.cwd;
  if (cwd.empty() && spec.profile == Profile::kRun && !spec.writable.empty()) {
    cwd = spec.writable.front();
  }
  if (!cwd.empty()) cwd = fs::absolute(cwd).lexically_normal();

  HostLayout layout = read_host_layout();
  // PATH: the interpreter's folder first, then the runner's folders that exist in the sandbox.
  std::vector<std::string> path_dirs;
  if (!python_bin.empty()) path_dirs.push_back(python_bin);
  for (const std::string& d : split(host_path(host), ':')) {
    if (!fs::path(d).is_absolute()) continue;
    bool visible = !sandboxed;
    for (const auto& s : layout.system_dirs) visible = visible || under(d, s);
    for (const auto& [link, target] : layout.symlinks) visible = visible || under(d, link);
    for (const auto& r : readable) visible = visible || under(d, r.string());
    for (const auto& w : writable) visible = visible || under(d, w.string());
    if (visible && std::find(path_dirs.begin(), path_dirs.end(), d) == path_dirs.end()) {
      path_dirs.push_back(d);
    }
  }
  if (path_dirs.empty()) path_dirs = {"/usr/local/bin", "/usr/bin", "/bin"};

  EnvMap fixed{{"PATH", join(path_dirs, ':')}, {"LANG", "C.UTF-8"}};
  std::error_code ec;
  std::string host_tmp = fs::temp_directory_path(ec).string();
  if (ec) host_tmp = "/tmp";
  switch (spec.profile) {
    case Profile::kRun:
      fixed["HOME"] = cwd.string();
      fixed["TMPDIR"] = sandboxed ? "/tmp" : host_tmp;
      break;
    case Profile::kEvaluate:
      fixed["HOME"] = scratch->path().string();
      if (sandboxed) {
        fixed["TMPDIR"] = "/tmp";
      } else {
        fs::create_directories(scratch->path() / "tmp", ec);
        fixed["TMPDIR"] = (scratch->path() / "tmp").string();
      }
      break;
    case Profile::kHostTool:
      fixed["HOME"] = host_var("HOME").empty() ? "/" : host_var("HOME");
      fixed["TMPDIR"] = host_tmp;
      break;
  }
  EnvMap env = sandbox_environment(host, fixed, spec.env, never_set());

  int err = 0;
  std::optional<std::string> exe = find_executable(spec.argv[0], cwd, env["PATH"], &err);
  if (!exe) {
    fail.setup_error = "cannot execute " + spec.argv[0] + ": " + std::strerror(err);
    fail.exit_code = 127;
    return fail;
  }
  const StepLimits limits = step_limits(spec.memory_mib, spec.tmpfs_mib);
  Watch watch;
  watch.sandboxed = sandboxed;
  watch.memory_bytes = limits.memory_bytes;
  std::optional<StepCgroup> cgroup;
  if (limits.memory_bytes > 0) {
    cgroup.emplace(limits.memory_bytes);
    watch.by_cgroup = cgroup->ok();
  }
  StepCgroup* cg = cgroup && cgroup->ok() ? &*cgroup : nullptr;
  if (!sandboxed) {
    std::vector<std::string> argv = spec.argv;
    return spawn(*exe, argv, env, cwd.string(), spec, watch, cg);
  }

  std::string bwrap = spec.bwrap;
  if (bwrap.find('/') == std::string::npos) {
    int berr = 0;
    std::optional<std::string> found = find_executable(bwrap, {}, host_path(host), &berr);
    if (!found) {
      fail.setup_error =
          "cannot execute " + bwrap + ": " + std::strerror(berr) + " (is bubblewrap installed?)";
      return fail;
    }
    bwrap = *found;
  }
  Mounts m;
  m.writable = writable;
  m.readable = readable;
  m.gpu = spec.profile == Profile::kEvaluate || spec.gpu;
  m.cwd = cwd;
  // Unlimited tmpfs are sized at the machine's memory: a size is how the watcher knows them.
  m.tmpfs_bytes = limits.tmpfs_bytes > 0
                      ? limits.tmpfs_bytes
                      : std::max(machine_memory_bytes() / kMiB, uint64_t{64}) * kMiB;
  watch.tmpfs_bytes = m.tmpfs_bytes;
  watch.tmpfs = {"/tmp", "/dev/shm"};
  if (scratch) {
    // The scratch HOME is a tmpfs inside, at the host folder's path (which stays empty).
    m.writable.erase(std::remove(m.writable.begin(), m.writable.end(), scratch->path()),
                     m.writable.end());
    m.tmpfs.push_back(scratch->path());
    watch.tmpfs.push_back(scratch->path().string());
  }
  Pipe info;
  if (!info.open()) {
    fail.setup_error = std::string("pipe: ") + std::strerror(errno);
    return fail;
  }
  watch.info = &info;
  std::vector<std::string> argv = bwrap_args(bwrap, m, layout);
  argv.pop_back();  // "--"
  argv.insert(argv.end(), {"--info-fd", std::to_string(info.w), "--"});
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return spawn(bwrap, argv, env, "", spec, watch, cg);
}

}  // namespace

std::string to_string(Isolation i) { return i == Isolation::kSandbox ? "sandbox" : "none"; }

Isolation default_isolation() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_unsandboxed ? Isolation::kNone : Isolation::kSandbox;
}

void allow_unsandboxed() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_unsandboxed = true;
  // Unsandboxed commands see the host's /proc: make the runner's /proc/PID files (environ, mem)
  // root-only, so a command of the same non-root uid cannot read the runner's API key there.
  prctl(PR_SET_DUMPABLE, 0);
}

void never_pass(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_never.insert(name);
}

LaunchResult launch(const LaunchSpec& spec) {
  if (spec.isolation == Isolation::kSandbox) {
    if (std::string why = sandbox_unavailable_reason(spec.bwrap); !why.empty()) {
      LaunchResult r;
      r.setup_error = why;
      return r;
    }
  }
  return launch_unchecked(spec);
}

std::string sandbox_unavailable_reason(const std::string& bwrap) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(bwrap); it != cache.end()) return it->second;
  LaunchSpec probe;
  probe.profile = Profile::kRun;
  probe.isolation = Isolation::kSandbox;
  probe.argv = {"true"};
  probe.cwd = "/";
  probe.bwrap = bwrap;
  probe.timeout_s = 30;
  probe.merge_stderr = true;
  probe.out_head = 4096;
  LaunchResult r = launch_unchecked(probe);
  std::string how =
      ". marathon runs the model's commands and candidates' code only inside this sandbox. To "
      "enable it: install bubblewrap (apt-get install bubblewrap) and allow unprivileged user "
      "namespaces (sysctl -w kernel.unprivileged_userns_clone=1 on Debian; sysctl -w "
      "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 23.10 and later; "
      "user.max_user_namespaces > 0), or run as root. Or pass --unsafe-no-sandbox to run "
      "unsandboxed (the environment is still cleared; nothing else is contained)";
  std::string reason;
  if (!r.started) {
    reason = "bubblewrap (" + bwrap +
             ") cannot create the sandbox on this machine: " + r.setup_error + how;
  } else if (r.timed_out || r.signal != 0 || r.exit_code != 0) {
    std::string out = r.out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    reason = "bubblewrap (" + bwrap + ") cannot create the sandbox on this machine: " +
             (out.empty() ? "exit code " + std::to_string(r.exit_code) : out) + how;
  }
  cache[bwrap] = reason;
  return reason;
}

}  // namespace marathon::sandbox
