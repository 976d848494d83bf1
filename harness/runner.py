"""The evaluator's parent side: static rules, the child process, and the one JSON result.

The candidate never runs in this process. The child is started in its own process group with a
timeout; a crash (signal or exit without a result), a hang (timeout) and a CUDA fault each give a
distinct ``status`` with ``correct: false``. What the child writes is the candidate process's
claim: a claim of correct outputs is confirmed by the judge (harness.judge) from this process,
which checks outputs and times calls without ever loading candidate code. The output follows
docs/evaluation.md (schema 1).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import EVALUATOR_VERSION
from .result import EvalResult
from .static_check import check_dir
from .taskspec import Task

REPO_ROOT = Path(__file__).resolve().parent.parent
JUDGE_SHARE = 0.4  # of the evaluation's time limit, kept for the judge
_hardened = False


def harden() -> None:
    """For the evaluator's own process (harness.cli): a child subreaper, so that whatever the
    candidate's processes start (setsid, double fork) stays below it and is killed by
    reap_strays(), and non-dumpable, so that those processes (same uid) cannot open its
    /proc/PID/fd or mem to write a result or change its memory."""
    global _hardened
    from .repo_eval import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, prctl

    _hardened = prctl(PR_SET_CHILD_SUBREAPER, 1) and prctl(PR_SET_DUMPABLE, 0)


def reap_strays() -> None:
    """Kill every process left below this one (only once harden() made it their reaper)."""
    if _hardened:
        from .repo_eval import kill_descendants

        kill_descendants()


def child_env(force_cpu: bool) -> dict:
    """The environment of the processes that load candidate code (the child and the judge's)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TRITON_CACHE_AUTOTUNING", "1")  # keep autotune results on disk between evaluations
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never write __pycache__ into the candidate folder
    if force_cpu:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["TRITON_INTERPRET"] = "1"
    return env


def _tail(path: Path, n: int = 1500) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode("utf-8", "replace")


def run_child(req: dict, timeout_s: float, workdir: Path) -> tuple[dict | None, str, str]:
    """Run the child; returns (its result or None, outcome, stderr tail)."""
    env = child_env(bool(req.get("force_cpu")))
    out_p, err_p = workdir / "child.stdout", workdir / "child.stderr"
    with open(out_p, "wb") as out, open(err_p, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.child"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            cwd=str(workdir),
            env=env,
            start_new_session=True,
        )
        try:
            proc.stdin.write(json.dumps(req).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        outcome = "exited"
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            outcome = "timeout"
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        else:
            try:  # stragglers the candidate left in the group
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    rc = proc.returncode
    result = None
    rp = Path(req["result_path"])
    try:
        result = json.loads(rp.read_text())
        if result.get("nonce") != req["nonce"]:
            result = None
            outcome = "forged"
    except (OSError, ValueError):
        result = None
    if outcome == "exited" and rc != 0:
        outcome = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit status {rc}"
    elif outcome == "exited" and (result is None or result.get("status") == "running"):
        outcome = "exit without result"
    stderr = _tail(err_p) + ("\n[stdout] " + _tail(out_p, 600) if out_p.stat().st_size else "")
    return result, outcome, stderr


def evaluate(
    task: Task,
    candidate_dir: Path,
    *,
    seed: int | None = None,
    timing: bool = True,
    quick: bool = False,
    static: bool = True,
    force_cpu: bool = False,
    timeout_s: float | None = None,
) -> dict:
    t0 = time.time()
    candidate_dir = Path(candidate_dir).resolve()
    seed = int(seed if seed is not None else secrets.randbelow(2**31 - 10000))
    res = {
        "schema_version": 1,
        "task": task.name,
        "evaluator_version": EVALUATOR_VERSION,
        "status": "ok",
        "correct": False,
        "score": None,
        "metrics": {"seed": seed},
        "details": [],
        "violations": [],
        "violation_details": [],
        "log": "",
        "seed": seed,
    }
    logs: list[str] = []
    viols: list[dict] = []
    if not candidate_dir.is_dir():
        res["status"] = "candidate_error"
        res["log"] = f"candidate folder {candidate_dir} does not exist"
        return EvalResult.from_dict(res).to_dict()
    if static:
        for v in check_dir(candidate_dir, task.banned):
            viols.append(v.as_dict())
    if viols:
        res["status"] = "rule_violation"
        logs.append("not run: the candidate breaks the static rules (see violations)")
    else:
        with tempfile.TemporaryDirectory(prefix="marathon-eval-") as d:
            wd = Path(d)
            req = {
                "nonce": secrets.token_hex(16),
                "result_path": str(wd / "result.json"),
                "task_dir": str(task.dir),
                "candidate_dir": str(candidate_dir),
                "banned": list(task.banned),
                "seed": seed,
                "quick": quick,
                "no_timing": not timing,
                "force_cpu": force_cpu,
            }
            if timeout_s is not None:  # the caller's limit is the child's; the judge's is in proportion
                limit = timeout_s
                total = timeout_s / (1 - JUDGE_SHARE)
            else:
                total = task.child_timeout_s
                limit = total * (1 - JUDGE_SHARE)
            child, outcome, stderr = run_child(req, limit, wd)
            reap_strays()
            if outcome == "exited" and child and child.get("status") == "ok" and child.get("correct") is True:
                from . import judge

                child = judge.confirm(
                    task,
                    candidate_dir,
                    child,
                    env=child_env(force_cpu),
                    workdir=wd,
                    seconds=max(total - (time.time() - t0), 5.0),
                    quick=quick,
                    timing=timing,
                    force_cpu=force_cpu,
                )
                reap_strays()
        res.update(_merge(child, outcome, stderr, logs, viols, limit))
    res["violation_details"] = viols
    res["violations"] = [f"{v['rule']}: {v['reason']}" for v in viols]
    if viols:
        res["score"] = None
    res["metrics"]["eval_s"] = round(time.time() - t0, 2)
    res["log"] = _log_text(res, logs)
    return EvalResult.from_dict(res).to_dict()


def _merge(child, outcome, stderr, logs, viols, limit) -> dict:
    """Fold the child's result and the way it ended into the evaluator's fields."""
    out: dict = {}
    if child:
        viols.extend(child.get("violations", []))
        logs.extend(child.get("log", []))
        out["details"] = child.get("details", [])
        out["device"] = child.get("device")
        if child.get("timing"):
            out["timing"] = child["timing"]
        if child.get("ceilings"):
            out["ceilings"] = child["ceilings"]
    phase = (child or {}).get("phase", "start")
    if outcome == "timeout":
        out["status"] = "timeout"
        logs.append(f"the candidate did not finish within {limit:.0f} s (during {phase}); killed")
    elif outcome == "forged":
        out["status"] = "harness_error"
        viols.append({"rule": "result_forged", "reason": "the result file was not written by the harness"})
    elif outcome != "exited":
        out["status"] = "crash"
        logs.append(f"the evaluation process died ({outcome}) during {phase}")
        if stderr.strip():
            logs.append("stderr: " + stderr.strip()[-800:])
    else:
        out["status"] = child.get("status", "harness_error")
        if out["status"] == "harness_error" and stderr.strip():
            logs.append("stderr: " + stderr.strip()[-800:])
    correct = bool(child and out["status"] == "ok" and child.get("correct") is True)
    out["correct"] = correct
    metrics = {}
    details = out.get("details", [])
    errs = [e for d in details for e in (d.get("rel_err") or {}).values() if e is not None]
    if errs:
        metrics["max_rel_err"] = max(errs)
    if child:
        head = next((d for d in details if d.get("shape") == child.get("headline")), None)
        if head:
            metrics["headline_shape"] = head["shape"]
            metrics["candidate_ms"] = head.get("ms")
            metrics["baseline_ms"] = head.get("baseline_ms")
            metrics["headline_speedup"] = head.get("speedup")
            metrics["floor_ms"] = head.get("floor_ms")
            metrics["floor_fraction"] = head.get("floor_fraction")
        if child.get("speedup_geomean") is not None:
            metrics["speedup_geomean"] = child["speedup_geomean"]
            out["baseline_score"] = 1.0  # the score is the speed-up over the baseline
            if correct:
                out["score"] = child["speedup_geomean"]
                if child.get("score_ci"):
                    out["score_ci"] = child["score_ci"]
    out["metrics"] = metrics
    return out


def _log_text(res: dict, logs: list[str]) -> str:
    lines = [f"status: {res['status']}; correct: {'yes' if res['correct'] else 'no'}; seed {res['seed']}"]
    for d in res.get("details", []):
        errs = ", ".join(f"{k} {v:.2e}" for k, v in (d.get("rel_err") or {}).items() if v is not None)
        line = f"{d['shape']}: {'ok' if d.get('ok') else 'WRONG'} (rel err {errs or 'n/a'})"
        if d.get("ms") is not None:
            line += f"; {d['ms'] * 1e3:.1f} us"
            sp = d.get("ms_spread") or {}
            if sp.get("q1") is not None and sp.get("q3") is not None:
                line += f" (middle half {sp['q1'] * 1e3:.1f}-{sp['q3'] * 1e3:.1f} us over {sp.get('reps')} reps)"
            if d.get("speedup") is not None:
                line += f" vs baseline {d['baseline_ms'] * 1e3:.1f} us = {d['speedup']:.2f}x"
            if d.get("floor_fraction") is not None:
                line += f"; {100 * d['floor_fraction']:.1f}% of floor"
        lines.append(line)
    ci = res.get("score_ci")
    if ci and res.get("score") is not None:
        lines.append(f"score {res['score']:.4g}, interquartile interval {ci['low']:.4g} to {ci['high']:.4g}")
    lines.extend(logs)
    lines.extend(f"VIOLATION {v}" for v in res.get("violations", []))
    if res.get("timing"):
        lines.append("timing: " + res["timing"])
    text = "\n".join(lines)
    return text if len(text) < 6000 else text[:3000] + "\n...\n" + text[-2800:]
