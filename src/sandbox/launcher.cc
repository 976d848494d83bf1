#include "sandbox/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

// Unsandboxed, the process between the runner and the command: when the runner dies it gets
// SIGTERM (its parent-death signal) and kills its whole process group, which a SIGKILL'd runner
// cannot do itself. It exits as the command did.
[[noreturn]] void supervise(pid_t command) {
  int status = 0;
  while (waitpid(command, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  signal(sig, SIG_DFL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

void kill_own_group(int) { kill(0, SIGKILL); }

// Child side after fork: async-signal-safe calls only. With `supervised` (no sandbox: no PID
// namespace to end the command's descendants), a supervisor stays between runner and command.
[[noreturn]] void exec_child(const char* exe, char* const* argv, char* const* envp, const char* cwd,
                             int out_w, int err_w, int status_w, pid_t parent, bool supervised) {
  // Dies with the runner (SIGKILL included); a runner gone before this line sends no signal.
  prctl(PR_SET_PDEATHSIG, supervised ? SIGTERM : SIGKILL);
  if (getppid() != parent) _exit(127);
  setsid();  // its own session and process group: the group is killed at the end
  if (supervised) {
    signal(SIGTERM, kill_own_group);  // only now: the group is this launch's alone
    if (getppid() != parent) _exit(127);
  }
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(out_w, 1);
  dup2(err_w, 2);
  for (int sig : {SIGPIPE, SIGINT, SIGCHLD}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (supervised) {
    pid_t command = fork();
    if (command < 0) _exit(127);
    if (command > 0) {
      close(status_w);
      supervise(command);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
  }
  signal(SIGTERM, SIG_DFL);
  int err[2] = {0, 0};
  if (cwd && chdir(cwd) != 0) {
    err[0] = 1;
    err[1] = errno;
  } else {
    execve(exe, argv, envp);
    err[0] = 2;
    err[1] = errno;
  }
  ssize_t ignored = write(status_w, err, sizeof err);
  (void)ignored;
  _exit(127);
}

// Runs `exe` with argv/env in its own session; captures, times out, kills the group.
LaunchResult spawn(const std::string& exe, const std::vector<std::string>& argv_s,
                   const EnvMap& env, const std::string& cwd, const LaunchSpec& spec) {
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
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    res.setup_error = std::string("fork: ") + std::strerror(errno);
    return res;
  }
  if (pid == 0) {
    exec_child(exe.c_str(), argv.data(), envp.data(), cwd.empty() ? nullptr : cwd.c_str(), out.w,
               spec.merge_stderr ? out.w : err.w, status.w, parent,
               spec.isolation == Isolation::kNone);
  }
  out.close_w();
  err.close_w();
  status.close_w();

  int child_err[2] = {0, 0};
  ssize_t got;
  do {
    got = read(status.r, child_err, sizeof child_err);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof child_err)) {
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    res.setup_error = (child_err[0] == 1 ? "cannot enter " + cwd : "cannot execute " + exe) + ": " +
                      std::strerror(child_err[1]);
    res.exit_code = 127;
    res.elapsed_s = since(t0);
    return res;
  }
  res.started = true;

  Capture cout(spec.out_head, spec.out_tail), cerr(spec.err_head, spec.err_tail);
  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(spec.timeout_s));
  const auto drain =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.drain_s));
  std::optional<Clock::time_point> drain_until;
  bool exited = false;
  int wstatus = 0;
  char buf[65536];
  while (true) {
    pollfd fds[2];
    int nfds = 0;
    if (out.r >= 0) fds[nfds++] = {out.r, POLLIN, 0};
    if (err.r >= 0) fds[nfds++] = {err.r, POLLIN, 0};
    if (nfds == 0 && exited) break;

    auto now = Clock::now();
    if (!exited && now >= deadline) {
      // In the sandbox, killing bwrap kills its PID namespace's init (--die-with-parent), and the
      // kernel then kills everything left in the namespace, setsid'd descendants included.
      kill(-pid, SIGKILL);
      res.timed_out = true;
      waitpid(pid, &wstatus, 0);
      exited = true;
      drain_until = Clock::now() + drain;
      continue;
    }
    if (drain_until && now >= *drain_until) break;  // something outside the group holds a pipe

    auto limit = exited ? *drain_until : deadline;
    int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(limit - now).count());
    wait_ms = std::clamp(wait_ms, 0, 50);
    if (nfds > 0) {
      if (poll(fds, nfds, wait_ms) > 0) {
        for (int i = 0; i < nfds; ++i) {
          if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
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
  if (!sandboxed) {
    std::vector<std::string> argv = spec.argv;
    return spawn(*exe, argv, env, cwd.string(), spec);
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
  std::vector<std::string> argv = bwrap_args(bwrap, m, layout);
  argv.insert(argv.end(), spec.argv.begin(), spec.argv.end());
  return spawn(bwrap, argv, env, "", spec);
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
