#include "eval/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>

extern char** environ;

namespace marathon::eval {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      throw std::runtime_error(std::string("run_process: pipe2: ") + std::strerror(errno));
    }
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    if (r >= 0) close(r);
    if (w >= 0) close(w);
  }
  void close_r() { close(r), r = -1; }
  void close_w() { close(w), w = -1; }
};

// Reads what is available from fd into out (up to cap; the rest is dropped). Returns false at EOF.
bool read_some(int fd, std::string& out, size_t cap, bool& truncated) {
  char buf[8192];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  size_t room = out.size() < cap ? cap - out.size() : 0;
  out.append(buf, std::min(room, static_cast<size_t>(n)));
  if (static_cast<size_t>(n) > room) truncated = true;
  return true;
}

// Child side after fork: only async-signal-safe calls. `parent` is the runner's pid.
[[noreturn]] void exec_child(const ProcessSpec& spec, char* const* argv, char* const* envp,
                             int out_w, int err_w, int status_w, pid_t parent) {
  // The evaluator dies with the runner (SIGKILL included): a killed runner must not leave an
  // evaluator holding the GPU. If the runner died before this line, no signal will come: exit.
  // (Kept across exec; it reaches only this process, not grandchildren in its group.)
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  setpgid(0, 0);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(out_w, 1);
  dup2(err_w, 2);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int err[2] = {0, 0};
  if (!spec.cwd.empty() && chdir(spec.cwd.c_str()) != 0) {
    err[0] = 1;
    err[1] = errno;
  } else {
    execvpe(argv[0], argv, envp);
    err[0] = 2;
    err[1] = errno;
  }
  ssize_t ignored = write(status_w, err, sizeof err);
  (void)ignored;
  _exit(127);
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult res;
  if (spec.argv.empty()) {
    res.spawn_error = "empty command";
    return res;
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strs;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (!spec.env.count(kv.substr(0, kv.find('=')))) env_strs.push_back(std::move(kv));
  }
  for (const auto& [k, v] : spec.env) env_strs.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strs) envp.push_back(s.data());
  envp.push_back(nullptr);

  Pipe out, err, status;
  const auto t0 = Clock::now();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    res.spawn_error = std::string("fork: ") + std::strerror(errno);
    return res;
  }
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), out.w, err.w, status.w, parent);
  setpgid(pid, pid);  // also in the child: whichever runs first, the group exists before a kill
  out.close_w();
  err.close_w();
  status.close_w();

  int child_err[2] = {0, 0};
  ssize_t got;
  do {
    got = read(status.r, child_err, sizeof child_err);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof child_err)) {
    waitpid(pid, nullptr, 0);
    res.spawn_error = std::string(child_err[0] == 1 ? "cannot enter " + spec.cwd.string()
                                                    : "cannot execute " + spec.argv[0]) +
                      ": " + std::strerror(child_err[1]);
    res.exit_code = 127;
    res.elapsed_s = since(t0);
    return res;
  }
  res.started = true;

  const auto deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(spec.timeout_s));
  std::optional<Clock::time_point> drain_until;
  bool exited = false;
  int wstatus = 0;
  while (true) {
    pollfd fds[2];
    int nfds = 0;
    if (out.r >= 0) fds[nfds++] = {out.r, POLLIN, 0};
    if (err.r >= 0) fds[nfds++] = {err.r, POLLIN, 0};
    if (nfds == 0 && exited) break;

    auto now = Clock::now();
    if (!exited && now >= deadline) {
      kill(-pid, SIGKILL);
      res.timed_out = true;
      waitpid(pid, &wstatus, 0);
      exited = true;
      drain_until = Clock::now() + std::chrono::milliseconds(static_cast<int>(spec.drain_s * 1000));
      continue;
    }
    if (drain_until && now >= *drain_until) break;  // something outside the group holds a pipe

    auto limit = exited ? *drain_until : deadline;
    int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(limit - now).count());
    wait_ms = std::clamp(wait_ms, 0, 50);
    if (nfds > 0) {
      int pr = poll(fds, nfds, wait_ms);
      if (pr > 0) {
        for (int i = 0; i < nfds; ++i) {
          if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          bool is_out = fds[i].fd == out.r;
          bool open = is_out ? read_some(out.r, res.out, spec.stdout_cap, res.out_truncated)
                             : read_some(err.r, res.err, spec.stderr_cap, res.err_truncated);
          if (!open) is_out ? out.close_r() : err.close_r();
        }
      }
    } else {
      usleep(static_cast<useconds_t>(wait_ms) * 1000);
    }

    if (!exited) {
      // Peek without reaping, so the pid (and with it the group id) cannot be reused before the
      // stragglers in the group are killed.
      siginfo_t info{};
      if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
        kill(-pid, SIGKILL);
        waitpid(pid, &wstatus, 0);
        exited = true;
        drain_until =
            Clock::now() + std::chrono::milliseconds(static_cast<int>(spec.drain_s * 1000));
      }
    }
  }
  res.elapsed_s = since(t0);
  if (WIFEXITED(wstatus)) {
    res.exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    res.signal = WTERMSIG(wstatus);
  }
  return res;
}

}  // namespace marathon::eval
