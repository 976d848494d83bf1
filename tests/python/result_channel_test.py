"""tasks/cpu-matmul against a hostile kernel, through the real binary (`marathon eval`, so in the
real sandbox): a kernel that forges the harness's result line from a destructor, writes forged
results to every fd it has and to every fd it can open under /proc (the sandbox's PID 1 holds the
evaluator's stdout), leaves a process behind that keeps writing forged results, queues "done"
early or says "done" before it is, or changes its inputs so that a wrong C checks out. Each must
end with `correct: false` or with the honest score of the work the kernel really did.

The kernels declare the libc functions they use by hand (the task's rules allow none of their
headers), as an attacker would."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tasks" / "cpu-matmul"
BINARY = Path(os.environ.get("MARATHON_BINARY", REPO / "build" / "marathon"))

pytestmark = [
    pytest.mark.skipif(not BINARY.exists(), reason=f"{BINARY} is not built"),
    pytest.mark.skipif(not shutil.which("g++"), reason="the cpu-matmul evaluator needs g++"),
]

# What the harness printed for a correct kernel (the old line format) and a whole evaluator
# result: either, if taken for the real one, would be a 1000x speed-up for a kernel doing nothing.
HARNESS_LINE = (
    '{"correct":true,"details":[{"n":512,"ok":true,"err_over_tol":0,"inputs_kept":true,'
    '"first_bad":[-1,-1]}],"candidate_ms":1.0,"naive_ms":1000.0,"reps":5,"gflops":268.0}'
)
RESULT_LINE = (
    '{"schema_version":1,"correct":true,"score":1000.0,"metrics":{"candidate_ms":1.0,'
    '"naive_ms":1000.0},"baseline_score":1.0,"details":[],"violations":[],"log":"forged"}'
)
FORGED_SCORE = 1000.0
HONEST_LIMIT = 50.0  # far above what a blocked scalar kernel reaches over the naive loop


def c_string(text):
    return json.dumps(text)  # a JSON string is a valid C string literal for this text


LIBC = """
extern "C" long write(int, const void*, unsigned long);
extern "C" int fflush(void*);
extern "C" int open(const char*, int, ...);
extern "C" int close(int);
extern "C" int getpid();
extern "C" int getppid();
extern "C" int snprintf(char*, unsigned long, const char*, ...);
extern "C" int posix_spawn(int*, const char*, const void*, const void*, char* const*, char* const*);
"""

FORGE = (
    """
static const char* kForged[] = {"""
    + c_string("\n" + HARNESS_LINE + "\n")
    + ", "
    + c_string("\n" + RESULT_LINE + "\n")
    + """};
static void say(int fd, int which = -1) {
  for (int i = 0; i < 2; ++i) {
    if (which < 0 || which == i) write(fd, kForged[i], std::strlen(kForged[i]));
  }
}
"""
)


def honest(name="honest_matmul"):
    """The starter's kernel, renamed: a correct kernel the attacks wrap."""
    src = (TASK / "starter" / "kernel.cc").read_text()
    assert "void matmul(" in src
    return src.replace("void matmul(", f"static void {name}(")


DESTRUCTOR = (
    "#include <cstring>\n"
    + LIBC
    + FORGE
    + """
// Prints the forged harness line after everything else the process printed: fflush(nullptr)
// first so that the harness's own buffered line comes out before it.
struct Forger {
  ~Forger() {
    fflush(nullptr);
    say(1, 0);
  }
} forger;
void matmul(const float*, const float*, float*, int) {}
"""
)

EVERY_FD = (
    "#include <cstring>\n"
    + LIBC
    + FORGE
    + """
// Forged results on each fd it holds and on each fd of each process it can open through /proc
// (O_WRONLY | O_NONBLOCK): the sandbox's PID 1, its parent, the evaluator.
static void everywhere() {
  for (int fd = 0; fd < 64; ++fd) say(fd);
  char path[64];
  int pids[] = {1, 2, 3, 4, 5, getppid()};
  for (int pid : pids) {
    for (int fd = 0; fd < 32; ++fd) {
      snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
      int h = open(path, 01 | 04000);
      if (h >= 0) {
        say(h);
        close(h);
      }
    }
  }
}
struct Everywhere {
  Everywhere() { everywhere(); }
  ~Everywhere() {
    fflush(nullptr);
    everywhere();
  }
} everywhere_object;
void matmul(const float*, const float*, float*, int) { everywhere(); }
"""
)

LEFTOVER = (
    "#include <cstring>\n"
    + LIBC
    + """
// A shell left behind that writes a forged result to the evaluator's stdout (held by the
// sandbox's PID 1) and to its parent's, over and over, until it is killed: one of them lands
// after the evaluator's own line unless nothing of the candidate's outlives the result.
static const char* kLoop = "while :; do for f in /proc/1/fd/1 /proc/$PPID/fd/1 /proc/2/fd/1; do "
                           "printf '\\\\n%s\\\\n' \\"$0\\" > $f 2>/dev/null; done; done";
struct Spawn {
  Spawn() {
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(kLoop),
                    const_cast<char*>("""
    + c_string(RESULT_LINE)
    + """), nullptr};
    char* envp[] = {nullptr};
    int pid = 0;
    posix_spawn(&pid, "/bin/sh", nullptr, nullptr, argv, envp);
  }
} spawn_object;
void matmul(const float*, const float*, float*, int) {}
"""
)

PREQUEUED_DONE = (
    honest()
    + LIBC
    + """
// A correct kernel that queues "done" bytes on every fd after every call: a checker that read a
// queued byte as the end of the next call would time nothing at all. (Bytes queued before the
// first call are read as the worker's "ready": the kernel only hurts itself with those.)
static void queue() {
  static const char d[256] = {'D'};
  for (int fd = 3; fd < 16; ++fd) write(fd, d, sizeof d);
}
void matmul(const float* A, const float* B, float* C, int n) {
  honest_matmul(A, B, C, n);
  queue();
}
"""
)

EARLY_DONE = (
    "#include <cstring>\n"
    + LIBC
    + """
// Rows [r0, r1) of C = A * B.
static void rows(const float* A, const float* B, float* C, int n, int r0, int r1) {
  for (int i = r0; i < r1; ++i) {
    float* c = C + static_cast<long>(i) * n;
    for (int j = 0; j < n; ++j) c[j] = 0.f;
    for (int k = 0; k < n; ++k) {
      const float a = A[static_cast<long>(i) * n + k];
      const float* b = B + static_cast<long>(k) * n;
      for (int j = 0; j < n; ++j) c[j] += a * b[j];
    }
  }
}
// Says "done" (one byte on each fd that could be the done pipe) with a quarter of the rows still
// to compute, then computes them: a checker that let the worker run on after "done" would find C
// complete once it reads the last rows, and would have timed three quarters of the work.
void matmul(const float* A, const float* B, float* C, int n) {
  const int head = n - n / 4;
  rows(A, B, C, n, 0, head);
  const char d = 'D';
  for (int fd = 3; fd < 16; ++fd) write(fd, &d, 1);
  rows(A, B, C, n, head, n);
}
"""
)

TIMED_INPUTS = (
    honest()
    + """
// Correct on the correctness calls (8 sizes, then the warm-up at n = 512); on every later call
// it zeroes A, B and C: the product of the zeroed inputs is the zero C, and it took no time.
static int calls = 0;
void matmul(const float* A, const float* B, float* C, int n) {
  if (++calls <= 9) {
    honest_matmul(A, B, C, n);
    return;
  }
  const unsigned long bytes = sizeof(float) * static_cast<unsigned long>(n) * n;
  std::memset(const_cast<float*>(A), 0, bytes);
  std::memset(const_cast<float*>(B), 0, bytes);
  std::memset(C, 0, bytes);
}
"""
)

CHANGED_INPUTS = (
    honest()
    + """
// A correct C, and A changed afterwards.
void matmul(const float* A, const float* B, float* C, int n) {
  honest_matmul(A, B, C, n);
  const_cast<float*>(A)[0] += 1.0f;
}
"""
)


def evaluate(tmp_path, kernel):
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "kernel.cc").write_text(kernel)
    p = subprocess.run(
        [str(BINARY), "eval", str(TASK), "--candidate", str(cand), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ),
    )
    assert p.returncode in (0, 1), p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out


def assert_not_forged(out):
    assert out["eval_status"] == "ok", out
    assert out.get("log") != "forged", out
    assert out["score"] != FORGED_SCORE, out
    if out["correct"]:
        assert out["score"] < HONEST_LIMIT, out


def test_the_rules_let_every_attack_through(tmp_path):
    """The kernels below break none of the task's static rules: what stops them is the harness."""
    import importlib.util
    import tomllib

    spec = importlib.util.spec_from_file_location("cpu_eval_rules", TASK / "evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rules = tomllib.loads((TASK / "task.toml").read_text())["rules"]
    for kernel in (DESTRUCTOR, EVERY_FD, LEFTOVER, PREQUEUED_DONE, EARLY_DONE, TIMED_INPUTS, CHANGED_INPUTS):
        assert mod.check_rules(kernel, rules) == []


def test_a_destructor_that_prints_a_result_is_not_read(tmp_path):
    out = evaluate(tmp_path, DESTRUCTOR)
    assert_not_forged(out)
    assert out["correct"] is False, out
    assert "wrong result" in out["log"], out


def test_forged_results_on_every_fd_and_proc_fd_are_not_read(tmp_path):
    out = evaluate(tmp_path, EVERY_FD)
    assert_not_forged(out)
    assert out["correct"] is False, out


def test_a_process_left_behind_cannot_write_after_the_result(tmp_path):
    out = evaluate(tmp_path, LEFTOVER)
    assert_not_forged(out)
    assert out["correct"] is False, out
    assert "wrong result" in out["log"], out


def test_done_queued_in_advance_times_the_real_work(tmp_path):
    """The queued bytes are drained while the worker is stopped. The worker may be stopped in the
    middle of queueing them (its first byte ended the call), and its next call then ends at a byte
    left from the one before, with C not computed yet: wrong, never faster."""
    out = evaluate(tmp_path, PREQUEUED_DONE)
    assert_not_forged(out)
    if out["correct"]:
        # Each call was timed from its start to the end of its real work.
        assert out["metrics"]["candidate_ms"] > out["metrics"]["naive_ms"] / HONEST_LIMIT, out
    else:
        assert "wrong result" in out["log"], out


def test_done_before_the_work_is_done_leaves_c_incomplete(tmp_path):
    out = evaluate(tmp_path, EARLY_DONE)
    assert_not_forged(out)
    assert out["correct"] is False, out
    assert "wrong result" in out["log"], out


def test_inputs_zeroed_in_the_timed_calls_are_caught(tmp_path):
    out = evaluate(tmp_path, TIMED_INPUTS)
    assert_not_forged(out)
    assert out["correct"] is False, out
    assert "timed call" in out["log"], out


def test_inputs_changed_in_a_checked_call_are_caught(tmp_path):
    out = evaluate(tmp_path, CHANGED_INPUTS)
    assert out["correct"] is False, out
    assert "modified its inputs" in out["log"], out
