"""Evaluator of the cpu-matmul task (the contract: docs/evaluation.md).

Reads the candidate's kernel.cc from $MARATHON_CANDIDATE_DIR, checks the task's rules on its
source, compiles it, and has harness.cc's checker judge it: the checker (trusted code only) runs
the candidate in a worker process of its own, times it and the naive baseline the same way, checks
the results, and sends its verdict to this process on a pipe no worker holds, marked with a nonce
given on the checker's stdin (harness.cc says how the worker is kept apart). Nothing the candidate
prints is read. Prints one JSON result line. Verdicts about the candidate (rule violations,
compile errors, wrong results, crashes) are results with "correct": false and exit status 0; only
a failure of the evaluator itself exits non-zero.

This process is non-dumpable (the workers have the same uid: /proc/<this>/fd and mem stay closed
to them) and a child subreaper: before it prints, every process started below it, whatever
session it moved to, is dead, so nothing of the candidate's can write after the result.
"""

import ctypes
import hashlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

TASK_DIR = Path(__file__).resolve().parent
CXX = os.environ.get("CXX", "g++")
CXXFLAGS = ["-std=c++17", "-O2", "-march=native"]
TIMING_REPS = 5
COMPILE_TIMEOUT_S = 60
RUN_TIMEOUT_S = 60
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def result(correct, score=None, metrics=None, details=None, violations=None, log="", **extra):
    out = {
        "schema_version": 1,
        "correct": correct,
        "score": score,
        "metrics": metrics or {},
        "details": details if details is not None else [],
        "violations": violations or [],
        "log": log,
    }
    out.update(extra)
    return out


def strip_comments_and_strings(src):
    """Source with comments and string/char literals blanked, line structure kept."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), src)


def check_rules(src, rules):
    """Violations of the task's static rules, each a short sentence with its line."""
    code = strip_comments_and_strings(src)
    allowed = set(rules.get("allowed_includes", []))
    violations = []
    for lineno, line in enumerate(code.splitlines(), 1):
        m = re.match(r"\s*#\s*include\b(.*)", line)
        if m:
            target = re.match(r"\s*<([^>]+)>\s*$", m.group(1))
            # quoted includes were blanked with the strings; only <header> is allowed
            if not target:
                violations.append(f"line {lineno}: only #include <header> is allowed")
            elif target.group(1) not in allowed:
                violations.append(
                    f"line {lineno}: #include <{target.group(1)}> is not allowed "
                    f"(allowed: {', '.join(sorted(allowed))})"
                )
        for pat in rules.get("banned_patterns", []):
            if re.search(pat, line):
                violations.append(f"line {lineno}: banned construct /{pat}/")
    return violations


def first_errors(text, limit=12):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if "error" in ln]
    picked = (errs or lines)[:limit]
    return "\n".join(ln[:300] for ln in picked)


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    d = Path(base) / "marathon" / "cpu-matmul"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable home: a per-user folder under the temp dir
        d = Path(tempfile.gettempdir()) / f"marathon-cpu-matmul-{os.getuid()}"
        d.mkdir(parents=True, exist_ok=True)
    return d


def prctl(option, value):
    """prctl(2) through libc; False where it is not available (not Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants():
    """{pid: state} of every process below this one (found through /proc's parent links)."""
    me = os.getpid()
    parent, state = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()  # the name before may hold anything
        parent[int(name)] = int(fields[1])
        state[int(name)] = fields[0].decode()
    found, frontier = {}, {me}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in found}
        found.update({p: state[p] for p in frontier})
    return found


def kill_descendants(limit_s=10.0):
    """SIGKILLs every process below this one until none is left alive, and reaps them. As a
    child subreaper this process inherits every orphan below it, so a process that left its
    session (setsid) or double-forked is found too. Call it only once the children whose status
    matters were waited for (it reaps whatever it finds)."""
    end = time.monotonic() + limit_s
    while True:
        alive = [p for p, st in descendants().items() if st != "Z"]
        for p in alive:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not alive:
            return
        if time.monotonic() > end:
            raise RuntimeError(f"processes {alive} survived SIGKILL for {limit_s} s")
        time.sleep(0.002)


def compile_cmd(*args):
    return [CXX, *CXXFLAGS, *args]


def start_trusted_build():
    """Starts building the checker, the worker stub's object and the naive worker from harness.cc,
    once per (source, compiler, flags), shared by every evaluation. Returns a function that waits
    for the build and gives the three paths. The compiles run in parallel (with the candidate's,
    which the caller runs meanwhile)."""
    src = TASK_DIR / "harness.cc"
    version = subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(src.read_bytes() + version.encode() + " ".join(CXXFLAGS).encode()).hexdigest()[:16]
    d = cache_dir()
    out = {"checker": d / f"checker-{key}", "worker": d / f"worker-{key}.o", "naive": d / f"naive-{key}"}
    tag = f".{os.getpid()}.tmp"
    tmp = {name: path.with_name(path.name + tag) for name, path in out.items()}
    naive_o = d / f"naive-{key}.o{tag}"
    worker_o = out["worker"] if out["worker"].exists() else tmp["worker"]
    jobs = {}  # name -> its compiler process

    def start(name, cmd):
        jobs[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    if not out["checker"].exists():
        start("checker", compile_cmd(str(src), "-o", str(tmp["checker"])))
    if not out["worker"].exists():
        start("worker", compile_cmd("-DMATMUL_WORKER", "-c", str(src), "-o", str(tmp["worker"])))
    if not out["naive"].exists():
        start("naive.o", compile_cmd("-DMATMUL_NAIVE", "-c", str(src), "-o", str(naive_o)))

    def finish():
        errors = []

        def wait(name):
            text = jobs[name].communicate(timeout=COMPILE_TIMEOUT_S)[0].decode(errors="replace")
            if jobs[name].returncode != 0:
                errors.append(f"{name}: {text[-2000:]}")
            return jobs[name].returncode == 0

        try:
            if "naive.o" in jobs and wait("naive.o") and ("worker" not in jobs or wait("worker")):
                start("naive", [CXX, str(worker_o), str(naive_o), "-o", str(tmp["naive"])])
                wait("naive")
            for name in ("checker", "worker"):
                if name in jobs and jobs[name].returncode is None:
                    wait(name)
            if errors:
                raise RuntimeError("building harness.cc failed:\n" + "\n".join(errors))
            for name in jobs:
                if name in out:
                    os.replace(tmp[name], out[name])  # atomic: concurrent evaluations see whole files
        finally:
            naive_o.unlink(missing_ok=True)
        return out

    return finish


def run_checker(tmp, bins, worker, seed):
    """Runs the checker on the candidate worker. Returns (its result or None, why not)."""
    nonce = secrets.token_hex(16)
    salt = secrets.randbits(63)
    read_end, write_end = os.pipe()
    err_path = tmp / "checker.stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [str(bins["checker"]), str(write_end), str(worker), str(bins["naive"])],
            cwd=tmp,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            pass_fds=(write_end,),
        )
    os.close(write_end)
    proc.stdin.write(f"{nonce} {seed} {salt} {TIMING_REPS}\n".encode())
    proc.stdin.close()
    data, timed_out = b"", False
    end = time.monotonic() + RUN_TIMEOUT_S
    with os.fdopen(read_end, "rb", buffering=0) as channel:
        while len(data) < (1 << 20):
            left = end - time.monotonic()
            if left <= 0 or not select.select([channel], [], [], left)[0]:
                timed_out = True
                break
            chunk = channel.read(65536)
            if not chunk:
                break
            data += chunk
    if timed_out:
        proc.kill()
    try:
        code = proc.wait(timeout=max(end - time.monotonic(), 5))
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
        timed_out = True
    kill_descendants()
    if timed_out:
        return None, f"the candidate did not finish within {RUN_TIMEOUT_S} s"
    prefix = nonce.encode() + b" "
    line = next((ln for ln in data.splitlines() if ln.startswith(prefix)), None)
    if code != 0 or line is None:
        stderr = err_path.read_bytes()[-1500:].decode(errors="replace")
        raise RuntimeError(f"the checker failed (exit {code}): {stderr}")
    return json.loads(line[len(prefix) :]), ""


def worker_failure(failed):
    """A sentence for the candidate worker's end (harness.cc's worker_failed)."""
    during = failed.get("during", "")
    where = {"start": "while starting", "warm-up": "in its warm-up call", "timing": "while timed"}.get(
        during, f"at {during}"
    )
    if failed.get("signal"):
        try:
            name = signal.Signals(failed["signal"]).name
        except ValueError:
            name = f"signal {failed['signal']}"
        return f"the candidate crashed ({name}) {where}"
    if failed.get("exit_status", -1) >= 0:
        return f"the candidate's process exited (status {failed['exit_status']}) {where}"
    return f"the candidate's process {failed.get('what', 'failed')} {where}"


def evaluate(candidate_dir, rules, seed):
    kernel = candidate_dir / "kernel.cc"
    if not kernel.is_file():
        return result(False, log=f"kernel.cc not found in the candidate folder {candidate_dir}")
    src = kernel.read_text(errors="replace")
    violations = check_rules(src, rules)
    if violations:
        return result(
            False,
            violations=violations,
            log="not compiled: rule violations\n" + "\n".join(violations[:10]),
        )

    finish_build = start_trusted_build()
    with tempfile.TemporaryDirectory(prefix="marathon-matmul-") as tmp:
        tmp = Path(tmp)
        shutil.copy(kernel, tmp / "kernel.cc")
        t0 = time.monotonic()
        comp = subprocess.run(
            [CXX, *CXXFLAGS, "-c", "kernel.cc", "-o", "kernel.o"],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=COMPILE_TIMEOUT_S,
        )
        compile_s = time.monotonic() - t0  # the candidate's compile and link, not the harness's
        bins = finish_build()
        if comp.returncode == 0:
            t0 = time.monotonic()
            comp = subprocess.run(
                [CXX, str(bins["worker"]), "kernel.o", "-o", "worker"],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=COMPILE_TIMEOUT_S,
            )
            compile_s += time.monotonic() - t0
        if comp.returncode != 0:
            return result(
                False,
                metrics={"compile_s": compile_s},
                log="compile failed:\n" + first_errors(comp.stderr + comp.stdout),
            )
        h, why = run_checker(tmp, bins, tmp / "worker", seed)
    if h is None:
        return result(False, log=why, metrics={"compile_s": compile_s})
    details = h["details"]
    if not h["correct"]:
        bad = next((d for d in details if not d["ok"]), None)
        if h.get("worker_failed"):
            why = worker_failure(h["worker_failed"])
        elif h.get("timed_call_wrong") == "inputs":
            why = "a timed call at n=512 modified its inputs A or B"
        elif h.get("timed_call_wrong"):
            why = "a timed call at n=512 returned a wrong result (results must not be cached)"
        elif bad and not bad["inputs_kept"]:
            why = f"n={bad['n']}: the kernel modified its inputs A or B"
        elif bad:
            why = (
                f"n={bad['n']}: wrong result, first bad element C[{bad['first_bad'][0]}]"
                f"[{bad['first_bad'][1]}] (error / tolerance = {bad['err_over_tol']:.3g})"
            )
        else:
            why = "wrong result"
        return result(False, details=details, metrics={"compile_s": compile_s}, log=why)

    speedup = h["naive_ms"] / h["candidate_ms"]
    metrics = {
        "candidate_ms": h["candidate_ms"],
        "naive_ms": h["naive_ms"],
        "gflops": h["gflops"],
        "compile_s": round(compile_s, 3),
        "reps": h["reps"],
    }
    log = (
        f"correct on n in {[d['n'] for d in details]}; n=512: {h['candidate_ms']:.2f} ms vs naive "
        f"{h['naive_ms']:.2f} ms = {speedup:.2f}x ({h['gflops']:.2f} GFLOP/s)"
    )
    return result(
        True,
        score=round(speedup, 4),
        metrics=metrics,
        details=details,
        log=log,
        baseline_score=1.0,
    )


def main():
    # Before any candidate process exists: /proc/<this>/fd and mem become off limits to them, and
    # every orphan below this process is reparented to it (kill_descendants finds them).
    prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    candidate_dir = Path(os.environ.get("MARATHON_CANDIDATE_DIR", TASK_DIR / "starter")).resolve()
    with open(TASK_DIR / "task.toml", "rb") as f:
        rules = tomllib.load(f).get("rules", {})
    seed_env = os.environ.get("MARATHON_EVAL_SEED")
    seed = int(seed_env) if seed_env else secrets.randbits(63)
    try:
        out = evaluate(candidate_dir, rules, seed)
    finally:
        kill_descendants()
    out["seed"] = seed
    # The newline first ends any line a candidate process wrote to the same stream (through the
    # sandbox's PID 1, which holds it) before it was killed: the result is always a line of its own,
    # and the last.
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
