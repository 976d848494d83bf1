"""``python -m harness profile``: Nsight Compute on one call of the candidate and one of the task's
baseline, side by side.

The evaluation child (same guards as ``eval``: the static rules before, the import guard and the
timer checks around every candidate call) runs under ``ncu --clock-control none --profile-from-start
off``; after warm-up it opens one profiling range around a call of the candidate, a marker kernel and
a call of the baseline, at the chosen shape (default: the headline shape) on fresh inputs.
harness/ncu_report.py reduces the raw counters to a compact table and a full report. Where ncu
cannot give counters (not installed, not permitted, past its own time limit) the profile falls back
to torch.profiler's kernel times and its first line says why. The compiler's facts of the
candidate's Triton/Gluon kernels (registers, stack, shared memory) come either way.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from . import ncu_report as nr
from .runner import REPO_ROOT
from .static_check import check_dir
from .taskspec import Task

COMPACT_MAX = 2100  # bytes of the view the model gets
# What the child said of the profiled call that a reader of the result may want again.
_CHILD_KEPT = (
    "shape",
    "headline",
    "device",
    "baseline",
    "floor",
    "floor_ms",
    "sms",
    "ceilings",
    "compiled",
    "violations",
)


def find_ncu() -> str | None:
    """ncu on PATH, else the newest /opt/nvidia/nsight-compute/*/ncu, else CUDA's wrapper (which
    itself looks for an nsight-compute folder beside the toolkit or under /opt/nvidia)."""
    p = shutil.which("ncu")
    if p:
        return p
    pats = ["/opt/nvidia/nsight-compute/*/ncu"]
    if os.environ.get("CUDA_HOME"):
        pats += [
            os.path.join(os.environ["CUDA_HOME"], "nsight-compute*", "ncu"),
            os.path.join(os.environ["CUDA_HOME"], "bin", "ncu"),
        ]
    pats += ["/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu"]
    for pat in pats:
        hits = sorted(glob.glob(pat))
        if hits:
            return hits[-1]
    return None


def _gpu_present() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return shutil.which("nvidia-smi") is not None or os.path.exists("/dev/nvidia0")


def ncu_timeout_s(task: Task) -> float:
    """ncu's own limit: MARATHON_NCU_TIMEOUT_S, else 300 s or less within the child's budget, so
    that the fallback still has time to run."""
    v = os.environ.get("MARATHON_NCU_TIMEOUT_S")
    if v:
        return float(v)
    return max(30.0, min(300.0, 0.55 * task.child_timeout_s))


def ncu_command(ncu: str, extras: bool = True) -> list[str]:
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all"]
    cmd += ["--csv", "--page", "raw"]
    for s in nr.SECTIONS:
        cmd += ["--section", s]
    if extras:
        cmd += ["--metrics", ",".join(nr.EXTRA_METRICS)]
    return cmd + [sys.executable, "-m", "harness.child"]


class _Ran:
    def __init__(self, returncode, stdout: bytes, stderr: bytes, timed_out: bool):
        self.returncode, self.stdout, self.stderr, self.timed_out = returncode, stdout, stderr, timed_out


def _launch(cmd: list[str], req: dict, wd: Path, env: dict, timeout_s: float):
    """Run the evaluation child (under ``cmd``) on ``req`` in a process group of its own (killed
    whole at the timeout); its result, or None where the child wrote none with this nonce."""
    out_p, err_p = wd / "launch.stdout", wd / "launch.stderr"
    with open(out_p, "wb") as out, open(err_p, "wb") as err:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=wd, env=env, start_new_session=True
        )
        try:
            proc.stdin.write(json.dumps(req).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    p = _Ran(proc.returncode, out_p.read_bytes(), err_p.read_bytes(), timed_out)
    try:
        child = json.loads((wd / "result.json").read_text())
    except (OSError, ValueError):
        child = None
    if child is not None and child.get("nonce") != req["nonce"]:
        child = None
    (wd / "result.json").unlink(missing_ok=True)
    return p, child


def _first_error(p) -> str:
    text = (p.stderr + p.stdout).decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith('"')]
    err = next((ln for ln in lines if "ERR" in ln.upper()), lines[0] if lines else f"exit {p.returncode}")
    return err[:300]


def _failed(child: dict, p) -> str:
    return (
        "the profiled run failed: "
        + "\n".join(child.get("log", []))
        + "\n"
        + p.stderr.decode("utf-8", "replace")[-1500:]
    )


def profile(task: Task, candidate_dir: Path, shape: str | None = None, timeout_s: float | None = None) -> dict:
    res = {"schema_version": 1, "task": task.name, "ok": False, "lines": [], "log": ""}
    if not _gpu_present():
        res["log"] = (
            "profiling needs a GPU: no NVIDIA GPU on this machine (correctness runs on a CPU; timing and profiling do not)"
        )
        return res
    viols = check_dir(candidate_dir, task.banned)
    if viols:
        res["log"] = "not profiled: the candidate breaks the static rules: " + "; ".join(v.reason for v in viols[:5])
        return res
    ncu = find_ncu()
    with tempfile.TemporaryDirectory(prefix="marathon-prof-") as d:
        wd = Path(d)
        req = {
            "nonce": secrets.token_hex(16),
            "result_path": str(wd / "result.json"),
            "task_dir": str(task.dir),
            "candidate_dir": str(Path(candidate_dir).resolve()),
            "banned": list(task.banned),
            "seed": secrets.randbelow(2**31 - 10000),
            "mode": "profile",
            "shape": shape,
        }
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONUNBUFFERED"] = "1"
        env.setdefault("TRITON_CACHE_AUTOTUNING", "1")
        return _profiled(res, task, ncu, req, wd, env, timeout_s or task.child_timeout_s)


def _header(child: dict, what: str) -> str:
    shape = child.get("shape", "?") + (" (headline)" if child.get("headline") else "")
    return f"{what}, one call each at {shape}, fresh inputs; {child.get('device', '?')}"


def _violations(child: dict) -> list[str]:
    v = child.get("violations") or []
    if not v:
        return []
    return [
        "rule violations seen while profiling (the candidate gets no score): " + "; ".join(x["reason"] for x in v)[:400]
    ]


def _profiled(res: dict, task: Task, ncu: str | None, req: dict, wd: Path, env: dict, timeout_s: float) -> dict:
    """Profiles under ncu when it gives counters, else through torch.profiler alone, saying why."""
    import time

    t0 = time.monotonic()
    launches: list = []
    child = None
    why_not = "no Nsight Compute (ncu) found: not on PATH, not under /opt/nvidia/nsight-compute, not in CUDA_HOME"
    if ncu:
        limit = min(ncu_timeout_s(task), timeout_s)
        for extras in (True, False):
            p, child = _launch(ncu_command(ncu, extras), req | {"ncu": True}, wd, env, limit)
            if p.timed_out:
                why_not = f"Nsight Compute did not finish within its {limit:.0f} s limit"
                child = None
                break
            if child is not None and child.get("status") != "ok":
                res["log"] = _failed(child, p)
                return res
            out = p.stdout.decode("utf-8", "replace")
            if os.environ.get("MARATHON_NCU_CSV"):  # ncu's own output kept (the tests' fixtures)
                Path(os.environ["MARATHON_NCU_CSV"]).write_text(out)
            launches = nr.parse_raw_csv(out) if child is not None else []
            if launches:
                break
            why_not = f"Nsight Compute at {ncu} gave no counters ({_first_error(p)})"
            # A counter this chip or this ncu does not know fails the whole run: once more without them.
            if "metric" not in (out + p.stderr.decode("utf-8", "replace")).lower():
                break
    if not launches:
        left = max(30.0, timeout_s - (time.monotonic() - t0))
        p, child = _launch([sys.executable, "-m", "harness.child"], req | {"ncu": False}, wd, env, left)
        if p.timed_out:
            res["log"] = f"profiling did not finish within {left:.0f} s ({why_not})"
            return res
        if child is None or child.get("status") != "ok":
            res["log"] = _failed(child or {}, p)
            return res
        return _fallback(res, child, why_not)
    return _from_counters(res, child, launches, ncu)


def _fallback(res: dict, child: dict, why_not: str) -> dict:
    kt = child.get("kernel_times") or {}
    lines = [f"{why_not}: kernel times from torch.profiler only (no counters)"]
    lines += _violations(child)
    lines.append(_header(child, "torch.profiler"))
    for side, label in (("candidate", "candidate"), ("baseline", f"baseline {child.get('baseline')}")):
        ks = kt.get(side)
        if ks is None:
            continue
        total = sum(t for _, t, _ in ks)
        lines.append(f"{label}: {total:.1f} us in {len(ks)} kernels")
        for name, t, n in ks[:4]:
            lines.append(f" {nr.short_name(name, 40)}: {t:.1f} us" + (f" x{n}" if n > 1 else ""))
        if len(ks) > 4:
            lines.append(f" +{len(ks) - 4} more: {sum(t for _, t, _ in ks[4:]):.1f} us")
    if child.get("compiled"):
        lines.append("compiled (Triton metadata, no counters):")
        lines += nr.compile_lines(child["compiled"])
    res.update(ok=True, lines=lines, shape=child.get("shape"), counters=False)
    res["child"] = {k: child.get(k) for k in _CHILD_KEPT}
    res["report"] = "\n".join(lines) + "\n"
    res["log"] = "\n".join(lines)
    return res


def _from_counters(res: dict, child: dict, launches: list, ncu: str) -> dict:
    cand_l, base_l, marked = nr.split_at_marker(launches)
    cand = nr.Side("candidate", nr.fold(cand_l))
    base = nr.Side(f"baseline {child.get('baseline')}", nr.fold(base_l)) if marked and child.get("baseline") else None
    for side in (cand, base):
        for k in side.kernels if side else []:
            if k.facts.get("sms") is None:
                k.facts["sms"] = child.get("sms")
    floor = child.get("floor")
    floor_ns = child["floor_ms"] * 1e6 if child.get("floor_ms") else None
    header = _header(child, "ncu")
    compiled = child.get("compiled") or []
    lines = []
    # The whole view when it fits COMPACT_MAX, else fewer kernels a side and shorter names.
    lines = _violations(child) + nr.compact(
        cand, base, header=header, floor=floor, floor_ns=floor_ns, compile_facts=compiled[:4]
    )
    for top, max_len in ((3, 150), (2, 150), (1, 120)):
        if len("\n".join(lines)) <= COMPACT_MAX:
            break
        lines = _violations(child) + _trim(cand, base, header, floor, floor_ns, compiled[:top], top, max_len)
    if child.get("baseline") is None:
        lines.append("no baseline profiled: " + ("; ".join(child.get("log", [])) or "the task names none valid here"))
    sides = [cand] + ([base] if base else [])
    res.update(ok=True, lines=lines, shape=child.get("shape"), counters=True, total_us=cand.ns / 1e3)
    res["baseline_us"] = base.ns / 1e3 if base else None
    res["child"] = {k: child.get(k) for k in _CHILD_KEPT}
    res["report"] = nr.full_report(lines, sides, launches, floor, compiled)
    res["log"] = "\n".join(lines)
    return res


def _trim(cand, base, header, floor, floor_ns, compiled, top, max_len):
    sides = [cand] + ([base] if base else [])
    out = [header] + nr.floor_line(sides, floor_ns) + nr.table(sides, floor)
    for s in sides:
        out.append(f"{s.label} kernels:")
        out += nr.kernel_lines(s, floor, top=top, name_width=24, max_len=max_len)
    if compiled:
        out.append("compiled (Triton metadata, no counters):")
        out += nr.compile_lines(compiled, limit=len(compiled))
    return out
