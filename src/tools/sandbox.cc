#include "tools/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace marathon {
namespace fs = std::filesystem;

namespace {

std::string path_env() {
  const char* p = std::getenv("PATH");
  return p && *p ? p : "/usr/local/bin:/usr/bin:/bin";
}

// Runs argv (already a full bwrap command line) in its own session with output on one pipe.
// Kills the whole process group at the deadline; returns when the pipe closes and the child is
// reaped.
SandboxResult spawn_and_collect(const std::vector<std::string>& argv, double timeout_s,
                                size_t keep_bytes) {
  SandboxResult r;
  auto start = std::chrono::steady_clock::now();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    r.setup_error = std::string("pipe failed: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    r.setup_error = std::string("fork failed: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    setsid();  // its own session and process group: killpg reaches every descendant that stays
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execvp(cargv[0], cargv.data());
    const char msg[] = "cannot execute bwrap\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  close(fds[1]);
  auto deadline = start + std::chrono::duration<double>(timeout_s);
  bool killed = false;
  char buf[65536];
  for (;;) {
    // After the kill, wait a bounded grace for the namespace to die and the pipe to close.
    auto until = killed ? deadline + std::chrono::seconds(10) : deadline;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    int wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    pollfd p{fds[0], POLLIN, 0};
    int n = poll(&p, 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && killed) break;  // something still holds the pipe; give up on the rest
    if (n == 0 && !killed) {
      // Killing bwrap's group kills bwrap; its PID-namespace init dies with it (--die-with-parent)
      // and the kernel then kills everything left in the namespace, setsid'd grandchildren too.
      killpg(pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
      r.timed_out = true;
      continue;
    }
    ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.output_bytes += static_cast<size_t>(got);
    if (r.output.size() < keep_bytes) {
      r.output.append(buf, std::min(static_cast<size_t>(got), keep_bytes - r.output.size()));
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

std::vector<std::string> bwrap_argv(const SandboxOptions& o, const std::string& command) {
  std::string ws = fs::absolute(o.workspace).lexically_normal().string();
  while (ws.size() > 1 && ws.back() == '/') ws.pop_back();
  std::vector<std::string> a = {o.bwrap,
                                "--die-with-parent",
                                "--new-session",
                                "--unshare-net",
                                "--unshare-pid",
                                "--unshare-ipc",
                                "--unshare-uts",
                                "--ro-bind",
                                "/",
                                "/",
                                "--dev",
                                "/dev",
                                "--proc",
                                "/proc",
                                "--tmpfs",
                                "/tmp"};
  if (o.gpu) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev", ec)) {
      if (e.path().filename().string().rfind("nvidia", 0) == 0) {
        a.insert(a.end(), {"--dev-bind", e.path().string(), e.path().string()});
      }
    }
  }
  a.insert(a.end(),
           {"--bind", ws, ws, "--chdir", ws, "--clearenv", "--setenv", "PATH", path_env(),
            "--setenv", "HOME", ws, "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8"});
  for (const auto& name : o.pass_env) {
    if (const char* v = std::getenv(name.c_str())) a.insert(a.end(), {"--setenv", name, v});
  }
  if (geteuid() == 0) a.insert(a.end(), {"--cap-drop", "ALL"});  // root keeps none inside
  a.insert(a.end(), {"--", "/bin/sh", "-c", command});
  return a;
}

std::string sandbox_unavailable_reason(const std::string& bwrap) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(bwrap); it != cache.end()) return it->second;
  SandboxOptions o;
  o.workspace = fs::temp_directory_path();
  o.bwrap = bwrap;
  o.timeout_s = 30;
  SandboxResult r = spawn_and_collect(bwrap_argv(o, "exit 0"), o.timeout_s, 4096);
  std::string reason;
  if (!r.setup_error.empty()) {
    reason = r.setup_error;
  } else if (r.exit_code != 0) {
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    reason = "bubblewrap (" + bwrap + ") cannot create the sandbox on this machine" +
             (r.exit_code == 127 ? " (is bubblewrap installed?)" : "") + ": " +
             (out.empty() ? "exit code " + std::to_string(r.exit_code) : out) +
             ". `run` does not execute commands unsandboxed; allow unprivileged user namespaces "
             "(sysctl kernel.unprivileged_userns_clone=1, or "
             "kernel.apparmor_restrict_unprivileged_userns=0) or run as root";
  }
  cache[bwrap] = reason;
  return reason;
}

SandboxResult run_sandboxed(const SandboxOptions& options, const std::string& command) {
  if (std::string why = sandbox_unavailable_reason(options.bwrap); !why.empty()) {
    SandboxResult r;
    r.setup_error = why;
    return r;
  }
  return spawn_and_collect(bwrap_argv(options, command), options.timeout_s, options.keep_bytes);
}

}  // namespace marathon
