// The cpu-matmul harness. One file, three programs (evaluate.py builds each):
//
//   harness.cc                      the checker: trusted, links no candidate code
//   harness.cc -DMATMUL_WORKER      the worker stub, linked with the candidate's kernel.o (the
//                                   candidate worker) or with the naive kernel (the naive worker)
//   harness.cc -DMATMUL_NAIVE       the naive kernel, the baseline's `matmul`
//
// The candidate's code runs only in the candidate worker, a process of its own: whatever it
// prints, writes or leaves behind (a destructor, a global object, a stray write to any fd) never
// reaches the result. The checker
//   - shares A, B and C with each worker through a memfd mapping (one per worker) and keeps its
//     own copies of A and B, against which C is checked and the inputs are compared;
//   - keeps each worker stopped (SIGSTOP) whenever it is not being timed, so the worker cannot
//     see its inputs before the clock starts, cannot queue an early "done", and cannot go on
//     writing C after it said "done" (after "done": SIGSTOP and waitpid(WUNTRACED) before C is
//     read);
//   - times every call, candidate and naive alike, from "go" (before SIGCONT) to "done" on the
//     worker's pipes, so both carry the same overhead;
//   - gives each worker nothing but its two pipes, its mapping and /dev/null as stdin, stdout and
//     stderr, an empty environment, PR_SET_PDEATHSIG, and a seccomp filter that refuses to create
//     processes or act on other processes (signals to others, ptrace, process_vm_*, priorities);
//   - is non-dumpable, so a worker (same uid) cannot open /proc/<checker>/fd/* or mem;
//   - writes its result, "NONCE {json}", on a pipe fd that evaluate.py passed it and no worker
//     holds. The nonce, the seed and the timing salt come on stdin, never on the command line
//     (/proc/PID/cmdline is readable by anyone).
//
//   checker RESULT_FD CANDIDATE_WORKER NAIVE_WORKER    stdin: "NONCE SEED SALT REPS\n"
//
// The naive worker is started (and ready) before the candidate worker, so the candidate's code
// never runs before the baseline's binary is loaded.

constexpr int kMaxN = 512;
constexpr long kMat = static_cast<long>(kMaxN) * kMaxN;  // floats per matrix in the mapping
// The worker's fds: the mapping (closed once mapped), "go" (reads an int n per call), "done"
// (writes one byte when ready, then one per call).
constexpr int kMapFd = 3, kGoFd = 4, kDoneFd = 5;

#if defined(MATMUL_NAIVE)

// The baseline: the textbook i-j-k loop.
void matmul(const float* A, const float* B, float* C, int n) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float acc = 0.f;
      for (int k = 0; k < n; ++k)
        acc += A[static_cast<long>(i) * n + k] * B[static_cast<long>(k) * n + j];
      C[static_cast<long>(i) * n + j] = acc;
    }
  }
}

#elif defined(MATMUL_WORKER)

#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

void matmul(const float* A, const float* B, float* C, int n);  // the kernel linked in

int main() {
  // Keeps the naive worker's memory out of reach of the candidate worker (same uid).
  prctl(PR_SET_DUMPABLE, 0);
  void* p = mmap(nullptr, 3 * kMat * sizeof(float), PROT_READ | PROT_WRITE, MAP_SHARED, kMapFd, 0);
  if (p == MAP_FAILED) return 3;
  close(kMapFd);
  float* A = static_cast<float*>(p);
  float* B = A + kMat;
  float* C = B + kMat;
  const char ready = 'R';
  if (write(kDoneFd, &ready, 1) != 1) return 3;
  while (true) {
    int n = 0;
    size_t got = 0;
    while (got < sizeof n) {
      ssize_t r = read(kGoFd, reinterpret_cast<char*>(&n) + got, sizeof n - got);
      if (r <= 0) return 0;  // the checker is gone
      got += static_cast<size_t>(r);
    }
    if (n < 1 || n > kMaxN) return 3;
    matmul(A, B, C, n);
    const char done = 'D';
    if (write(kDoneFd, &done, 1) != 1) return 3;
  }
}

#else  // the checker

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "the cpu-matmul checker's seccomp filter knows x86-64 and aarch64 only"
#endif

// The worker's seccomp filter: every system call is allowed except those that create a process
// or act on another one. Signals may go to the worker itself only (abort() raises SIGABRT): the
// worker's pid goes into code[self_at] once known. A refused call fails with EPERM; a foreign
// architecture or x32 call kills the worker.
struct Filter {
  std::vector<sock_filter> code;
  size_t self_at = 0;
};

Filter worker_filter() {
  const int refused[] = {
#ifdef __NR_fork
      __NR_fork,
#endif
#ifdef __NR_vfork
      __NR_vfork,
#endif
      __NR_clone,
#ifdef __NR_clone3
      __NR_clone3,
#endif
      __NR_ptrace,
      __NR_process_vm_readv,
      __NR_process_vm_writev,
      __NR_rt_sigqueueinfo,
      __NR_rt_tgsigqueueinfo,
#ifdef __NR_pidfd_open
      __NR_pidfd_open,
#endif
#ifdef __NR_pidfd_send_signal
      __NR_pidfd_send_signal,
#endif
#ifdef __NR_pidfd_getfd
      __NR_pidfd_getfd,
#endif
#ifdef __NR_process_madvise
      __NR_process_madvise,
#endif
      __NR_setpriority,
      __NR_sched_setaffinity,
      __NR_sched_setscheduler,
      __NR_sched_setparam,
#ifdef __NR_sched_setattr
      __NR_sched_setattr,
#endif
      __NR_ioprio_set,
      __NR_kcmp,
      __NR_perf_event_open,
      __NR_unshare,
      __NR_setns,
#ifdef __NR_io_uring_setup
      __NR_io_uring_setup,
#endif
      __NR_bpf,
  };
  const int to_self[] = {__NR_kill, __NR_tkill, __NR_tgkill};  // arg 0: the target pid
  const uint32_t kAllow = SECCOMP_RET_ALLOW;
  const uint32_t kRefuse = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);

  std::vector<sock_filter> f;
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));  // x32
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
  // Jumps are filled in once the labels' positions are known.
  std::vector<size_t> to_refuse, to_signal;
  for (int nr : refused) {
    to_refuse.push_back(f.size());
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 0));
  }
  for (int nr : to_self) {
    to_signal.push_back(f.size());
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 0));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  const size_t signal_at = f.size();
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));  // low word
  const size_t self_at = f.size();
  f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1));
  f.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  const size_t refuse_at = f.size();
  f.push_back(BPF_STMT(BPF_RET | BPF_K, kRefuse));
  for (size_t i : to_refuse) f[i].jt = static_cast<uint8_t>(refuse_at - i - 1);
  for (size_t i : to_signal) f[i].jt = static_cast<uint8_t>(signal_at - i - 1);
  return {f, self_at};
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A worker process: its pid, the checker's ends of its pipes, and its shared A, B, C.
class Worker {
 public:
  Worker() = default;
  ~Worker() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  float* A() const { return map_; }
  float* B() const { return map_ + kMat; }
  float* C() const { return map_ + 2 * kMat; }
  // Why the worker failed, empty while it is fine: "closed its pipe", "ended" (then signal() or
  // exit_status() says how), "did not get ready", or the checker's own setup step that failed.
  const std::string& failure() const { return failure_; }
  int signal() const { return signal_; }            // the signal that ended it, or 0
  int exit_status() const { return exit_status_; }  // its exit status, or -1
  // True when the failure is the checker's own: the worker could not be set up or started.
  bool setup_failed() const { return setup_failed_; }

  // Starts the worker from `path` and waits until it is ready, then stops it.
  bool start(const char* path) {
    const size_t bytes = 3 * kMat * sizeof(float);
    int mfd = memfd_create("matmul", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int go[2], done[2], ex[2];
    if (mfd < 0 || ftruncate(mfd, static_cast<off_t>(bytes)) != 0 ||
        fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
        pipe2(go, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0 || pipe2(ex, O_CLOEXEC) != 0) {
      return setup_error("memfd or pipes", errno);
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (p == MAP_FAILED) return setup_error("mmap", errno);
    map_ = static_cast<float*>(p);
    Filter filter = worker_filter();  // built here: the child only patches in its pid
    const pid_t checker = getpid();
    pid_ = fork();
    if (pid_ < 0) return setup_error("fork", errno);
    if (pid_ == 0) child(path, mfd, go[0], done[1], ex[1], checker, filter);  // never returns
    close(mfd);
    close(go[0]);
    close(done[1]);
    close(ex[1]);
    char step = 0;
    ssize_t r;
    while ((r = read(ex[0], &step, 1)) < 0 && errno == EINTR) {
    }
    close(ex[0]);
    if (r != 0) {
      kill_and_reap();
      const char* what = step == 'd'   ? "setting up its fds"
                         : step == 'p' ? "PR_SET_PDEATHSIG"
                         : step == 's' ? "installing its seccomp filter"
                         : step == 'e' ? "exec"
                                       : "its start";
      failure_ = std::string("could not start the worker: ") + what + " failed";
      setup_failed_ = true;
      return false;
    }
    go_ = go[1];
    done_ = done[0];
    fcntl(done_, F_SETFL, O_NONBLOCK);
    // The worker gets 30 s to load and map (a loaded machine); its first byte says it is ready.
    if (!wait_done(30)) return false;
    return stop();
  }

  // One call of the kernel on n, timed from "go" to "done". A, B and C must be filled (the
  // worker is stopped). Returns false with failure() set when the worker died or misbehaved.
  bool call(int n, double* seconds) {
    if (!drain()) return false;  // nothing queued before the clock starts counts
    const double t0 = now_s();
    kill(pid_, SIGCONT);
    if (write(go_, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) return gone();
    if (!wait_done(-1)) return false;
    *seconds = now_s() - t0;
    return stop();
  }

 private:
  // In the forked child (the checker is single-threaded): the worker's fds, its confinement, and
  // exec. A step that fails before exec writes its number on `ex_w` (closed by exec itself when
  // exec succeeds), so the checker tells its own failure from an exit status of the candidate's.
  [[noreturn]] static void child(const char* path, int mfd, int go_r, int done_w, int ex_w,
                                 pid_t checker, Filter& filter) {
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    // Sources moved above the targets first, so no dup2 overwrites a source still needed.
    int src[] = {devnull, mfd, go_r, done_w, ex_w};
    for (int& fd : src) fd = fcntl(fd, F_DUPFD_CLOEXEC, 64);
    if (devnull < 0 || src[0] < 0 || src[1] < 0 || src[2] < 0 || src[3] < 0 || src[4] < 0) {
      fail(ex_w, 'd');
    }
    ex_w = src[4];
    if (dup2(src[0], 0) < 0 || dup2(src[0], 1) < 0 || dup2(src[0], 2) < 0 ||
        dup2(src[1], kMapFd) < 0 || dup2(src[2], kGoFd) < 0 || dup2(src[3], kDoneFd) < 0 ||
        dup3(ex_w, kDoneFd + 1, O_CLOEXEC) < 0) {
      fail(ex_w, 'd');
    }
    ex_w = kDoneFd + 1;
    // Every other fd is closed: the result pipe, the checker's ends, whatever was inherited.
    if (syscall(SYS_close_range, kDoneFd + 2, ~0u, 0) != 0) {
      rlimit rl{};
      long top = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? static_cast<long>(rl.rlim_cur) : 1024;
      for (long fd = kDoneFd + 2; fd < std::min(top, 1L << 20); ++fd) close(static_cast<int>(fd));
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != checker) fail(ex_w, 'p');
    filter.code[filter.self_at].k = static_cast<uint32_t>(getpid());
    sock_fprog prog{static_cast<unsigned short>(filter.code.size()), filter.code.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      fail(ex_w, 's');
    }
    char* argv[] = {const_cast<char*>(path), nullptr};
    char* envp[] = {nullptr};
    execve(path, argv, envp);
    fail(ex_w, 'e');
  }

  [[noreturn]] static void fail(int ex_w, char step) {
    ssize_t w = write(ex_w, &step, 1);
    _exit(w == 1 ? 126 : 125);
  }

  bool setup_error(const char* what, int err) {
    failure_ = std::string(what) + ": " + std::strerror(err);
    setup_failed_ = true;
    return false;
  }

  // Reads and discards whatever the (stopped) worker queued on its done pipe.
  bool drain() {
    char buf[256];
    while (true) {
      ssize_t r = read(done_, buf, sizeof buf);
      if (r > 0) continue;
      if (r == 0) return gone();
      return errno == EAGAIN || errno == EINTR ? true : gone();
    }
  }

  // Waits for one byte on the done pipe (timeout_s < 0: no limit; the evaluator's own timeout
  // ends a kernel that never returns).
  bool wait_done(double timeout_s) {
    const double until = now_s() + timeout_s;
    while (true) {
      char b;
      ssize_t r = read(done_, &b, 1);
      if (r == 1) return true;
      if (r == 0 || (errno != EAGAIN && errno != EINTR)) return gone();
      int ms = -1;
      if (timeout_s >= 0) {
        double left = until - now_s();
        if (left <= 0) {
          failure_ = "did not get ready";
          kill_and_reap();
          return false;
        }
        ms = static_cast<int>(left * 1000) + 1;
      }
      pollfd pfd{done_, POLLIN, 0};
      poll(&pfd, 1, ms);
    }
  }

  // SIGSTOP, then waits until the worker is stopped for sure.
  bool stop() {
    kill(pid_, SIGSTOP);
    int st = 0;
    pid_t r;
    while ((r = waitpid(pid_, &st, WUNTRACED)) < 0 && errno == EINTR) {
    }
    if (r == pid_ && WIFSTOPPED(st)) return true;
    if (r == pid_) {
      ended(st);
    } else {
      kill_and_reap();
      failure_ = "ended";
    }
    return false;
  }

  // Its end of a pipe is closed: it ended (its status is known within a second), or it closed
  // the pipe itself and is killed.
  bool gone() {
    for (int i = 0; i < 1000; ++i) {
      int st = 0;
      pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_ && !WIFSTOPPED(st)) {
        ended(st);
        return false;
      }
      if (r < 0 && errno != EINTR) break;
      usleep(1000);
    }
    kill_and_reap();
    failure_ = "closed its pipe";
    return false;
  }

  void ended(int st) {
    pid_ = -1;
    failure_ = "ended";
    if (WIFSIGNALED(st)) signal_ = WTERMSIG(st);
    if (WIFEXITED(st)) exit_status_ = WEXITSTATUS(st);
  }

  void kill_and_reap() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  pid_t pid_ = -1;
  int go_ = -1, done_ = -1;
  float* map_ = nullptr;
  std::string failure_;
  int signal_ = 0, exit_status_ = -1;
  bool setup_failed_ = false;
};

void fill(std::vector<float>& v, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (auto& x : v) x = d(rng);
}

// The worker's inputs from the checker's copies, and C poisoned.
void load(const Worker& w, const std::vector<float>& A, const std::vector<float>& B) {
  std::memcpy(w.A(), A.data(), A.size() * sizeof(float));
  std::memcpy(w.B(), B.data(), B.size() * sizeof(float));
  std::fill(w.C(), w.C() + A.size(), std::numeric_limits<float>::quiet_NaN());
}

bool inputs_kept(const Worker& w, const std::vector<float>& A, const std::vector<float>& B) {
  return std::memcmp(w.A(), A.data(), A.size() * sizeof(float)) == 0 &&
         std::memcmp(w.B(), B.data(), B.size() * sizeof(float)) == 0;
}

// Element (i, j) checked against a double-precision dot product. The bound is relative to
// sum_k |a_ik * b_kj|: float32 accumulation in any order stays within n * 2^-24 of that sum.
// Returns err / bound (<= 1 passes; NaN never passes).
double check_entry(const std::vector<float>& A, const std::vector<float>& B, const float* C, int n,
                   int i, int j) {
  double ref = 0, mag = 0;
  for (int k = 0; k < n; ++k) {
    double p =
        static_cast<double>(A[static_cast<long>(i) * n + k]) * B[static_cast<long>(k) * n + j];
    ref += p;
    mag += std::fabs(p);
  }
  const double tol = 2.0 * (n + 2) * std::ldexp(1.0, -24) * mag + 1e-30;
  const double err = std::fabs(static_cast<double>(C[static_cast<long>(i) * n + j]) - ref);
  if (!(err <= tol * 1e6)) return std::numeric_limits<double>::infinity();  // NaN, inf, garbage
  return err / tol;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The one result, "NONCE {json}\n", on the result pipe.
int report(int fd, const std::string& nonce, const std::string& json) {
  std::string line = nonce + " " + json + "\n";
  size_t off = 0;
  while (off < line.size()) {
    ssize_t w = write(fd, line.data() + off, line.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 1;
    off += static_cast<size_t>(w);
  }
  close(fd);
  return 0;
}

// The candidate worker failed: the candidate's verdict, or (setup) the checker's own failure.
int report_failure(int fd, const std::string& nonce, const Worker& w, const std::string& during,
                   const std::string& details) {
  if (w.setup_failed()) {
    std::fprintf(stderr, "the candidate worker: %s (exit status %d)\n", w.failure().c_str(),
                 w.exit_status());
    return 1;
  }
  return report(fd, nonce,
                "{\"correct\":false,\"details\":" + details + ",\"worker_failed\":{\"what\":" +
                    json_string(w.failure()) + ",\"signal\":" + std::to_string(w.signal()) +
                    ",\"exit_status\":" + std::to_string(w.exit_status()) +
                    ",\"during\":" + json_string(during) + "}}");
}

// The naive worker is the checker's own: its failure is the evaluator's.
int naive_failed(const Worker& w) {
  std::fprintf(stderr, "the naive worker: %s (signal %d, exit status %d)\n", w.failure().c_str(),
               w.signal(), w.exit_status());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // First, before anything of a worker exists: /proc/<checker>/fd and mem become off limits.
  prctl(PR_SET_DUMPABLE, 0);
  signal(SIGPIPE, SIG_IGN);
  if (argc != 4) {
    std::fprintf(stderr, "usage: checker RESULT_FD CANDIDATE_WORKER NAIVE_WORKER\n");
    return 2;
  }
  const int result_fd = std::atoi(argv[1]);
  if (fcntl(result_fd, F_SETFD, FD_CLOEXEC) != 0) {
    std::fprintf(stderr, "result fd %d: %s\n", result_fd, std::strerror(errno));
    return 2;
  }
  char nonce_buf[129] = {0};
  unsigned long long seed = 0, salt = 0;
  int reps = 0;
  if (std::scanf("%128s %llu %llu %d", nonce_buf, &seed, &salt, &reps) != 4) {
    std::fprintf(stderr, "stdin: expected NONCE SEED SALT REPS\n");
    return 2;
  }
  const std::string nonce = nonce_buf;
  reps = std::max(1, reps);
  std::mt19937_64 rng(seed);  // the correctness inputs: reproducible from the reported seed
  std::mt19937_64 timed_rng(seed ^ salt);  // the timed inputs: unknown to anyone but the checker

  Worker naive, cand;
  if (!naive.start(argv[3])) return naive_failed(naive);
  if (!cand.start(argv[2])) return report_failure(result_fd, nonce, cand, "start", "[]");

  // Correctness: every entry, several shapes (ragged ones included), fresh inputs, C poisoned.
  const int sizes[] = {1, 3, 16, 31, 64, 100, 257, 512};
  bool all_ok = true;
  std::string details = "[";
  for (int n : sizes) {
    const size_t nn = static_cast<size_t>(n) * n;
    std::vector<float> A(nn), B(nn);
    fill(A, rng);
    fill(B, rng);
    load(cand, A, B);
    double secs = 0;
    if (!cand.call(n, &secs)) {
      return report_failure(result_fd, nonce, cand, "n=" + std::to_string(n), details + "]");
    }
    double worst = 0;
    int bad_i = -1, bad_j = -1;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        double r = check_entry(A, B, cand.C(), n, i, j);
        if (!(r <= worst)) {
          worst = r;
          if (r > 1 && bad_i < 0) bad_i = i, bad_j = j;
        }
      }
    }
    const bool kept = inputs_kept(cand, A, B);
    const bool ok = worst <= 1 && kept;
    all_ok = all_ok && ok;
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "%s{\"n\":%d,\"ok\":%s,\"err_over_tol\":%.4g,\"inputs_kept\":%s,\"first_bad\":[%d,%d]}",
        details.size() > 1 ? "," : "", n, ok ? "true" : "false",
        std::isfinite(worst) ? worst : 1e300, kept ? "true" : "false", bad_i, bad_j);
    details += buf;
    if (!ok) break;  // no point timing a wrong kernel
  }
  details += "]";
  if (!all_ok) return report(result_fd, nonce, "{\"correct\":false,\"details\":" + details + "}");

  // Timing at n = 512: candidate and baseline interleaved, fresh inputs for every call, C poisoned
  // before every call, and 64 random entries of every timed candidate output re-checked, its
  // inputs compared (a kernel that caches results across calls fails here). One untimed warm-up
  // call each first (page tables of the mapping, caches).
  const int n = 512;
  const size_t nn = static_cast<size_t>(n) * n;
  std::vector<float> A(nn), B(nn);
  std::vector<double> t_cand, t_naive;
  for (Worker* w : {&naive, &cand}) {
    fill(A, timed_rng);
    fill(B, timed_rng);
    load(*w, A, B);
    double secs = 0;
    if (!w->call(n, &secs)) {
      if (w == &naive) return naive_failed(naive);
      return report_failure(result_fd, nonce, cand, "warm-up", details);
    }
  }
  std::string timed_wrong;
  std::uniform_int_distribution<int> pick(0, n - 1);
  for (int r = 0; r < reps && timed_wrong.empty(); ++r) {
    fill(A, timed_rng);
    fill(B, timed_rng);
    load(naive, A, B);
    double secs = 0;
    if (!naive.call(n, &secs)) return naive_failed(naive);
    t_naive.push_back(secs);
    fill(A, timed_rng);
    fill(B, timed_rng);
    load(cand, A, B);
    if (!cand.call(n, &secs)) {
      return report_failure(result_fd, nonce, cand, "timing", details);
    }
    t_cand.push_back(secs);
    for (int s = 0; s < 64; ++s) {
      if (!(check_entry(A, B, cand.C(), n, pick(timed_rng), pick(timed_rng)) <= 1)) {
        timed_wrong = "result";
      }
    }
    if (timed_wrong.empty() && !inputs_kept(cand, A, B)) timed_wrong = "inputs";
  }
  if (!timed_wrong.empty()) {
    return report(result_fd, nonce,
                  "{\"correct\":false,\"details\":" + details +
                      ",\"timed_call_wrong\":" + json_string(timed_wrong) + "}");
  }
  const double tc = median(t_cand), tn = median(t_naive);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                ",\"candidate_ms\":%.4f,\"naive_ms\":%.4f,\"reps\":%d,\"gflops\":%.3f}", tc * 1e3,
                tn * 1e3, reps, 2.0 * n * n * n / tc * 1e-9);
  return report(result_fd, nonce, "{\"correct\":true,\"details\":" + details + buf);
}

#endif
