"""Every kernel task on this GPU: the starter and our best-known kernels against each baseline.

    python bench/kernels.py [--tasks kda,mla,mla-prefill] [--out FILE.md] [--json FILE.json]

Each candidate goes through the real evaluator (harness.runner.evaluate: correctness on every
shape, the rules, then CUDA-graph timing with a cold L2, baseline and candidate in one process).
Candidates: each task's starter, plus kernels/kda/kernel.py (kda) and kernels/mla/kernel.py (mla,
mla-prefill) when they exist. Prints one markdown table; --out also writes it with the date, GPU
and commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.runner import evaluate  # noqa: E402
from harness.taskspec import load_task  # noqa: E402

OURS = {"kda": REPO / "kernels" / "kda", "mla": REPO / "kernels" / "mla", "mla-prefill": REPO / "kernels" / "mla"}
HEADER = (
    "| task | candidate | shape | ms | baseline | baseline ms | speed-up | other baselines ms | floor ms | "
    "fraction of floor | correct | violations |"
)


def candidates(task: str, which: str = "all") -> list[tuple[str, Path]]:
    out = [("starter", REPO / "tasks" / task / "starter")] if which in ("all", "starter") else []
    ours = OURS.get(task)
    if which in ("all", "ours") and ours and (ours / "kernel.py").is_file():
        out.append(("ours (" + ours.relative_to(REPO).as_posix() + ")", ours))
    return out


def rows_for(task: str, name: str, res: dict) -> list[str]:
    rows = []
    viol = "; ".join(v["rule"] for v in res.get("violation_details", [])) or "-"
    timed = [d for d in res.get("details", []) if d.get("ms") is not None]
    if not timed:
        rows.append(
            f"| {task} | {name} | - | - | - | - | - | - | - | - | {res['correct']} ({res['status']}) | {viol} |"
        )
        return rows
    against = None
    for d in timed:
        bms = d.get("baselines_ms", {})
        if d.get("baseline_ms") is not None:
            against = next((b for b, v in bms.items() if v == d["baseline_ms"]), "?")
        others = ", ".join(f"{b} {v:.4f}" for b, v in bms.items() if b != against) or "-"
        sp = f"{d['speedup']:.2f}x" if d.get("speedup") is not None else "-"
        ff = f"{100 * d['floor_fraction']:.1f}%" if d.get("floor_fraction") is not None else "-"
        bm = f"{d['baseline_ms']:.4f}" if d.get("baseline_ms") is not None else "-"
        rows.append(
            f"| {task} | {name} | {d['shape']} | {d['ms']:.4f} | {against or '-'} | {bm} | {sp} | {others} | "
            f"{d.get('floor_ms', 0):.4f} | {ff} | {d['ok']} | {viol} |"
        )
    return rows


def _git_commit() -> str:
    """HEAD's short hash, with "-dirty" when the working tree differs from it."""
    try:
        git = ["git", "-C", str(REPO)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    except OSError:
        return "unknown"
    return (head or "unknown") + ("-dirty" if dirty.stdout.strip() else "")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default="mla,mla-prefill,kda")
    p.add_argument("--out", help="write the table (markdown, with date, GPU, commit) here")
    p.add_argument("--json", help="write every evaluator result here")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--candidates", default="all", choices=["all", "ours", "starter"])
    args = p.parse_args()
    # MARATHON_COMMIT names the tree when the .git beside it may be stale (a copy sent to a GPU machine)
    commit = os.environ.get("MARATHON_COMMIT") or _git_commit()
    results, device, ceil = {}, None, None
    lines = [HEADER, "|" + "---|" * (HEADER.count("|") - 1)]
    print(HEADER, flush=True)
    print(lines[1], flush=True)
    for task in args.tasks.split(","):
        t = load_task(REPO / "tasks" / task)
        for name, cand in candidates(task, args.candidates):
            res = evaluate(t, cand, seed=args.seed)
            results[f"{task}/{name}"] = res
            device = res.get("device") or device
            ceil = res.get("ceilings") or ceil
            for row in rows_for(task, name, res):
                print(row, flush=True)
                lines.append(row)
            if not res["correct"] or res["violations"]:
                print("  " + res["log"].replace("\n", "\n  ")[:3000], flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
    if args.out:
        head = [
            "# Kernel benchmarks",
            "",
            f"- date: {datetime.date.today().isoformat()}",
            f"- GPU: {device}",
            f"- commit: {commit}",
            f"- measured ceilings: {json.dumps(ceil)}",
            "- method: `python bench/kernels.py` (the evaluator of each task: correctness on every shape, rules, "
            "CUDA events over CUDA-graph replay, L2 flushed, inputs rotated, median; baseline and candidate in one process)",
            "",
        ]
        Path(args.out).write_text("\n".join(head + lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
