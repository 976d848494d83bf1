"""Evaluator of the cpu-matmul task (the contract: docs/evaluation.md).

Reads the candidate's kernel.cc from $MARATHON_CANDIDATE_DIR, checks the task's rules on its
source, compiles it with harness.cc, runs the harness in a child process (a crash or hang of the
candidate kills the child, not this evaluator), and prints one JSON result line. Verdicts about
the candidate (rule violations, compile errors, wrong results, crashes) are results with
"correct": false and exit status 0; only a failure of the evaluator itself exits non-zero.
"""

import hashlib
import json
import os
import re
import secrets
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


def harness_object():
    """harness.cc compiled once per (source, compiler, flags), shared by every evaluation."""
    src = (TASK_DIR / "harness.cc").read_bytes()
    version = subprocess.run([CXX, "--version"], capture_output=True, text=True).stdout
    key = hashlib.sha256(src + version.encode() + " ".join(CXXFLAGS).encode()).hexdigest()[:16]
    obj = cache_dir() / f"harness-{key}.o"
    if not obj.exists():
        tmp = obj.with_suffix(f".{os.getpid()}.tmp")
        subprocess.run(
            [CXX, *CXXFLAGS, "-c", str(TASK_DIR / "harness.cc"), "-o", str(tmp)],
            check=True,
            timeout=COMPILE_TIMEOUT_S,
        )
        os.replace(tmp, obj)  # atomic: concurrent evaluations never see half an object
    return obj


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

    harness = harness_object()
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
        if comp.returncode == 0:
            comp = subprocess.run(
                [CXX, str(harness), "kernel.o", "-o", "bench"],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=COMPILE_TIMEOUT_S,
            )
        compile_s = time.monotonic() - t0
        if comp.returncode != 0:
            return result(
                False,
                metrics={"compile_s": compile_s},
                log="compile failed:\n" + first_errors(comp.stderr + comp.stdout),
            )
        try:
            run = subprocess.run(
                [str(tmp / "bench"), str(seed), str(TIMING_REPS)],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return result(False, log=f"the candidate did not finish within {RUN_TIMEOUT_S} s")

    if run.returncode < 0:
        name = signal.Signals(-run.returncode).name
        return result(False, log=f"the candidate crashed ({name})", metrics={"compile_s": compile_s})
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    if run.returncode != 0 or not lines:
        return result(
            False,
            log=f"the harness failed (exit {run.returncode}): {run.stderr[-500:]}",
        )
    h = json.loads(lines[-1])
    details = h["details"]
    if not h["correct"]:
        bad = next((d for d in details if not d["ok"]), None)
        if h.get("timed_call_wrong"):
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
    candidate_dir = Path(os.environ.get("MARATHON_CANDIDATE_DIR", TASK_DIR / "starter")).resolve()
    with open(TASK_DIR / "task.toml", "rb") as f:
        rules = tomllib.load(f).get("rules", {})
    seed_env = os.environ.get("MARATHON_EVAL_SEED")
    seed = int(seed_env) if seed_env else secrets.randbits(63)
    out = evaluate(candidate_dir, rules, seed)
    out["seed"] = seed
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
