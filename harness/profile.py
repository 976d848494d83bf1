"""``python -m harness profile``: Nsight Compute on one call of the candidate, in a few lines.

The candidate runs in the evaluation child (same guards as ``eval``) under ``ncu --clock-control
none --profile-from-start off``; the child opens the profiling range around one call of the chosen
shape after warm-up. The raw CSV is reduced per kernel to: time, achieved DRAM bandwidth and FLOP
rate against the measured ceilings, achieved occupancy, registers per thread, spilled bytes, and
the top stall reason. Without a GPU, or without ncu, it says so.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .runner import REPO_ROOT
from .static_check import check_dir
from .taskspec import Task

SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
)
_STALL = re.compile(r"smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def find_ncu() -> str | None:
    p = shutil.which("ncu")
    if p:
        return p
    for pat in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        hits = sorted(glob.glob(pat))
        if hits:
            return hits[-1]
    return None


def _num(s: str) -> float | None:
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return None


def _scale(unit: str) -> float:
    """Factor to the base unit (bytes, ns, %) for ncu's units."""
    u = (unit or "").strip().lower()
    return {
        "byte": 1,
        "kbyte": 1e3,
        "mbyte": 1e6,
        "gbyte": 1e9,
        "ns": 1,
        "us": 1e3,
        "usecond": 1e3,
        "ms": 1e6,
        "msecond": 1e6,
        "nsecond": 1,
        "s": 1e9,
        "second": 1e9,
    }.get(u, 1)


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of ``ncu --csv --page raw`` (header, units, one row per kernel) as dicts of floats."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 2:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, units, data = rows[0], rows[1], rows[2:]
    out = []
    for r in data:
        d = {"name": ""}
        for h, u, v in zip(header, units, r):
            if h == "Kernel Name":
                d["name"] = v
            else:
                x = _num(v)
                if x is not None:
                    d[h] = x * _scale(u)
        out.append(d)
    return out


def summarize(rows: list[dict], ceil: dict | None, flops: float = 0.0) -> dict:
    """Per kernel name: time, bandwidth and FLOP rate vs the ceilings, occupancy, registers, spills, top stall."""
    by: dict[str, dict] = {}
    for r in rows:
        k = by.setdefault(r["name"], {"name": r["name"], "launches": 0, "ns": 0.0, "bytes": 0.0, "stalls": {}})
        k["launches"] += 1
        k["ns"] += r.get("gpu__time_duration.sum", 0.0)
        k["bytes"] += r.get("dram__bytes_read.sum", 0.0) + r.get("dram__bytes_write.sum", 0.0)
        k["regs"] = r.get("launch__registers_per_thread")
        k["occupancy_pct"] = r.get("sm__warps_active.avg.pct_of_peak_sustained_active")
        k["tensor_pipe_pct"] = r.get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
        spill = r.get("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", 0.0) + r.get(
            "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", 0.0
        )
        k["spill_bytes"] = k.get("spill_bytes", 0.0) + spill
        for h, v in r.items():
            m = _STALL.match(h) if isinstance(h, str) else None
            if m and m.group(1) not in ("selected",):
                k["stalls"][m.group(1)] = k["stalls"].get(m.group(1), 0.0) + v
    kernels = sorted(by.values(), key=lambda k: -k["ns"])
    total_ns = sum(k["ns"] for k in kernels)
    lines = []
    for k in kernels:
        us = k["ns"] / 1e3
        gbps = k["bytes"] / k["ns"] if k["ns"] else 0.0  # bytes/ns = GB/s
        parts = [f"{k['name'][:60]}: {us:.1f} us x{k['launches']}"]
        if ceil:
            parts.append(f"DRAM {gbps:.0f} GB/s ({100 * gbps / (ceil['copy_TBps'] * 1e3):.0f}% of measured copy)")
        else:
            parts.append(f"DRAM {gbps:.0f} GB/s")
        if k.get("occupancy_pct") is not None:
            parts.append(f"occupancy {k['occupancy_pct']:.0f}%")
        if k.get("regs") is not None:
            parts.append(f"{k['regs']:.0f} regs/thread")
        parts.append(f"spills {k['spill_bytes'] / 1e6:.2f} MB" if k["spill_bytes"] else "no spills")
        if k.get("tensor_pipe_pct") is not None:
            parts.append(f"tensor pipe {k['tensor_pipe_pct']:.0f}%")
        if k["stalls"]:
            top = max(k["stalls"].items(), key=lambda kv: kv[1])
            parts.append(f"top stall {top[0]} ({top[1]:.1f} cycles/issue)")
        k["top_stall"] = max(k["stalls"], key=k["stalls"].get) if k["stalls"] else None
        lines.append("; ".join(parts))
    summary = {"kernels": kernels, "total_us": total_ns / 1e3, "lines": lines}
    if flops and total_ns and ceil:
        rate = flops / total_ns / 1e3  # TFLOP/s
        summary["tflops"] = rate
        lines.insert(
            0,
            f"all kernels {total_ns / 1e3:.1f} us; {rate:.1f} TFLOP/s ({100 * rate / ceil['bf16_TFLOPs']:.0f}% of measured bf16 matmul)",
        )
    elif total_ns:
        lines.insert(0, f"all kernels {total_ns / 1e3:.1f} us")
    return summary


def _gpu_present() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return shutil.which("nvidia-smi") is not None or os.path.exists("/dev/nvidia0")


def _ncu_command(ncu: str) -> list[str]:
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--target-processes", "all"]
    cmd += ["--csv", "--page", "raw"]
    for s in SECTIONS:
        cmd += ["--section", s]
    return cmd + ["--metrics", ",".join(METRICS), sys.executable, "-m", "harness.child"]


def _launch(cmd: list[str], req: dict, wd: Path, env: dict, timeout_s: float):
    """Run the evaluation child (under ``cmd``) on ``req``; its result, or None where the child
    wrote none with this request's nonce (it never ran, or something else wrote the file)."""
    p = subprocess.run(cmd, input=json.dumps(req).encode(), capture_output=True, cwd=wd, env=env, timeout=timeout_s)
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
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    err = next((ln for ln in lines if "ERR" in ln.upper()), lines[0] if lines else f"exit {p.returncode}")
    return err[:300]


def _failed(child: dict, p) -> str:
    return (
        "the profiled run failed: "
        + "\n".join(child.get("log", []))
        + "\n"
        + p.stderr.decode("utf-8", "replace")[-1500:]
    )


def profile(task: Task, candidate_dir: Path, shape: str | None = None, timeout_s: float = 300) -> dict:
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
        try:
            return _profiled(res, ncu, req, wd, env, timeout_s)
        except subprocess.TimeoutExpired:
            res["log"] = f"profiling did not finish within {timeout_s:.0f} s"
            return res


def _profiled(res: dict, ncu: str | None, req: dict, wd: Path, env: dict, timeout_s: float) -> dict:
    """Profiles under ncu when it reads counters, else through torch.profiler alone, saying why."""
    rows: list[dict] = []
    why_not_ncu = "Nsight Compute (ncu) not found"
    if ncu:
        p, child = _launch(_ncu_command(ncu), req | {"ncu": True}, wd, env, timeout_s)
        if child is not None and child.get("status") != "ok":
            res["log"] = _failed(child, p)
            return res
        rows = parse_ncu_csv(p.stdout.decode("utf-8", "replace")) if child is not None else []
        if not rows:
            # ncu did not run the candidate (a CUDA toolkit's `ncu` wrapper without Nsight Compute
            # installed) or read no counters (ERR_NVGPUCTRPERM): the kernel times still come from
            # torch.profiler, and the reply says why there are no counters.
            why_not_ncu = f"Nsight Compute at {ncu} gave no counters ({_first_error(p)})"
    if not rows:
        p, child = _launch([sys.executable, "-m", "harness.child"], req | {"ncu": False}, wd, env, timeout_s)
        if child is None or child.get("status") != "ok":
            res["log"] = _failed(child or {}, p)
            return res
        res["shape"] = child.get("shape")
        res["ok"] = True
        res["lines"] = [f"{why_not_ncu}: kernel times from torch.profiler only"] + child.get("kernel_lines", [])
        res["log"] = "\n".join(res["lines"])
        return res
    res["shape"] = child.get("shape")
    s = summarize(rows, child.get("ceilings"), child.get("flops", 0.0))
    res.update(ok=True, lines=s["lines"], total_us=s["total_us"], tflops=s.get("tflops"))
    res["kernels"] = [{k: v for k, v in x.items() if k != "stalls"} | {"stalls": x["stalls"]} for x in s["kernels"]]
    res["log"] = "\n".join([f"ncu on one call of {res['shape']} (--clock-control none):"] + s["lines"])
    return res
