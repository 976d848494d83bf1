"""A product run as a user makes it, killed with SIGKILL and resumed until it finishes.

    python bench/run_resume.py --marathon BIN --task tasks/mla --run-dir DIR [--max-tool-calls N]
        [--kills 5] [--eval-kills 2] [--deadline-s 480] [--seed 1] [--json OUT.json]
        [--resume] [--end stop|kill]

`marathon run TASK --policy search` is started (`--policy scripted`: the LLM policy against
bench/scripted_model.py's scripted model on 127.0.0.1:`--model-port`, which reads, writes,
evaluates and profiles kernels; started by this script on each machine before the first
segment); the runner (that one process, as a crash or the OOM killer would) is sent SIGKILL
`--kills` times, `--eval-kills` of them while an evaluator process is running (the first one to
start after a random wait of up to `--spread-s`, once it has run for 0.5 to 3 s), the others at a
random moment up to `--spread-s` into the segment; after each kill the script checks that no
evaluator and no GPU compute process is left behind, then runs `marathon resume` (or `marathon
run` again when the kill came before the run's log existed). The last segment runs to the end (or to the deadline, where `marathon stop`
asks for a clean stop).

A run moved between machines: `--end kill` ends the last segment at the deadline with SIGKILL and
no resume, as a machine taken away mid-run leaves it; the run folder is then copied to another
machine, where `--resume` starts with `marathon resume DIR --task TASK` (the task's folder there)
instead of `marathon run`. The counts read from the log (tool calls, evaluations, candidates
executed twice, best over time) are the whole run's; the processes seen are this machine's.

Independent of the run's log, a watcher thread lists the runner's evaluator processes (`harness/__main__.py
eval`, or a task's `evaluate.py`) every 50 ms: the harness executions seen. From the log it reads the
evaluations recorded (executed / served from the cache), whether any candidate was executed to a
recorded result twice, the best score over time, the evaluator's busy fraction of the runner's wall
time, and the runtime's own time per tool call (the segments' wall time less the evaluators' and
profiles' time, divided by the tool calls).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

# An evaluator's command line: the kernel tasks' harness, or a task's own evaluate.py (cpu-matmul).
EVAL_MARKS = (("harness/__main__.py", "eval"), ("evaluate.py", None))


def parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def descends_from(pid: int, root: int) -> bool:
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = parent(pid)
    return False


def evaluator_pids(root: int | None = None) -> dict[int, bool]:
    """Live evaluator processes (not the bwrap that starts them), below `root` when given:
    pid -> profile run or not."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv or not argv[0] or argv[0].endswith(b"bwrap"):
            continue
        words = [a.decode(errors="replace") for a in argv]
        if any(any(w.endswith(m) for w in words) and (a is None or a in words) for m, a in EVAL_MARKS) and (
            root is None or descends_from(int(d), root)
        ):
            try:
                env = Path(f"/proc/{d}/environ").read_bytes()
            except OSError:
                env = b""
            out[int(d)] = b"MARATHON_PROFILE=1" in env
    # a child forked by an evaluator shows its parent's command line until it execs
    return {pid: prof for pid, prof in out.items() if parent(pid) not in out}


def gpu_processes() -> list[str]:
    try:
        r = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in r.stdout.splitlines() if line.strip()]


class Watcher(threading.Thread):
    """Every evaluator process seen: pid -> [first seen, last seen, profile]."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen: dict[int, list] = {}
        self.lock = threading.Lock()
        self.stop = False
        self.root = None  # the runner of the current segment

    def run(self):
        while not self.stop:
            now = time.monotonic()
            root = self.root
            for pid, prof in (evaluator_pids(root) if root else {}).items():
                with self.lock:
                    if pid in self.seen:
                        self.seen[pid][1] = now
                    else:
                        self.seen[pid] = [now, now, prof]
            time.sleep(0.05)

    def live_since(self, t0: float) -> list[int]:
        with self.lock:
            return [p for p, (a, b, _) in self.seen.items() if a >= t0 and time.monotonic() - b < 0.2]


def events(marathon: str, run_dir: str) -> list[dict]:
    r = subprocess.run([marathon, "log", run_dir, "--json"], capture_output=True, text=True, check=True)
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--marathon", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--max-tool-calls", type=int, default=150)
    p.add_argument("--kills", type=int, default=5)
    p.add_argument("--eval-kills", type=int, default=2)
    p.add_argument("--deadline-s", type=float, default=480)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--spread-s", type=float, default=30, help="a kill comes up to this long into a segment")
    p.add_argument("--json")
    p.add_argument("--policy", choices=("search", "scripted"), default="search")
    p.add_argument("--model-port", type=int, default=18431, help="the scripted model's port (the log records it)")
    p.add_argument("--resume", action="store_true", help="carry on the run in --run-dir (moved here)")
    p.add_argument(
        "--end", choices=("stop", "kill"), default="stop", help="at the deadline: `marathon stop`, or SIGKILL"
    )
    args = p.parse_args()
    rng = random.Random(args.seed)
    # alternate: a random moment, then during an evaluation, ...
    plan = []
    for i in range(args.kills):
        plan.append("eval" if (i % 2 == 1 and plan.count("eval") < args.eval_kills) else "any")
    while plan.count("eval") < min(args.eval_kills, args.kills):
        plan[plan.index("any")] = "eval"

    model = None
    if args.policy == "scripted":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from scripted_model import ScriptedModel

        model = ScriptedModel(args.run_dir, port=args.model_port).__enter__()
    watcher = Watcher()
    watcher.start()
    t_start = time.monotonic()
    t_wall0 = time.time()  # this machine's share of a moved run: what its log records from here on
    segments, kills = [], []
    first = True
    status = "running"
    while True:
        # a kill before the run's log existed leaves nothing to resume: the user runs it again
        fresh = not args.resume and not (Path(args.run_dir) / "events.db").exists()
        if fresh:
            shutil.rmtree(args.run_dir, ignore_errors=True)
            cmd = [args.marathon, "run", args.task, "--run-dir", args.run_dir]
            cmd += ["--policy", "search"] if model is None else ["--policy", "llm", "--model", "vllm:scripted"]
            cmd += ["--base-url", model.base_url] if model else []
            cmd += ["--max-tool-calls", str(args.max_tool_calls), "--quiet"]
        else:
            cmd = [args.marathon, "resume", args.run_dir, "--quiet"]
            # moved here: the task's folder on this machine (later resumes keep it)
            cmd += ["--task", args.task] if first else []
        first = False
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        watcher.root = proc.pid
        deadline = t_start + args.deadline_s
        # Past the deadline no more kills: the segment is the last, and is asked to stop.
        kind = plan.pop(0) if plan and time.monotonic() < deadline else None
        killed = False
        if kind == "any":
            time.sleep(rng.uniform(1.0, max(1.0, args.spread_s)))
        elif kind == "eval":
            # the first evaluation that starts after a random wait, 0.5 to 3 s into it
            t_eval = t0 + rng.uniform(0.0, args.spread_s)
            while proc.poll() is None and not watcher.live_since(t_eval):
                time.sleep(0.05)
            time.sleep(rng.uniform(0.5, 3.0))
        if kind and proc.poll() is None:
            in_eval = bool(watcher.live_since(t0))
            proc.send_signal(signal.SIGKILL)
            killed = True
        moved = False
        while proc.poll() is None:
            # `marathon stop` only for a live runner: a stop asked of a killed one is overridden by
            # the `marathon resume` that follows (the user's later word).
            if not killed and time.monotonic() > deadline and status == "running":
                if args.end == "kill":
                    in_eval = bool(watcher.live_since(t0))
                    proc.send_signal(signal.SIGKILL)
                    killed = moved = True
                    status = "killed at the deadline, to be resumed on another machine"
                    continue
                subprocess.run([args.marathon, "stop", args.run_dir], capture_output=True)
                status = "stopped at the deadline"
            time.sleep(0.2)
        out = proc.stdout.read()
        seg = {"cmd": cmd[1], "wall_s": round(time.monotonic() - t0, 2), "exit": proc.returncode}
        if killed:
            left, t_kill = [], time.monotonic()
            while time.monotonic() - t_kill < 15:
                left = [p for p in evaluator_pids() if p in watcher.seen]  # this run's, now orphaned
                if not left:
                    break
                time.sleep(0.1)
            gpu = gpu_processes()
            kills.append(
                {
                    "when": ("at the deadline, " if moved else "")
                    + ("during an evaluation" if in_eval else "at a random moment"),
                    "after_s": seg["wall_s"],
                    "evaluators_left_after_15s": left,
                    "gpu_processes_left": gpu,
                }
            )
            seg["killed"] = kills[-1]["when"]
            seg["left_after_kill"] = {"evaluators": left, "gpu_processes": gpu}
        else:
            seg["tail"] = out[-600:]
        segments.append(seg)
        print(json.dumps(seg), flush=True)
        if not killed or moved:
            break
    watcher.stop = True
    watcher.join()
    if model:
        model.__exit__(None, None, None)

    evs = events(args.marathon, args.run_dir)
    t_first = evs[0]["recorded_at"] / 1e6
    evals = [e for e in evs if e["type"] == "eval.finished"]
    executed = [e["payload"] for e in evals if not e["payload"].get("cached")]
    per_candidate: dict[str, int] = {}
    for e in executed:
        per_candidate[e["candidate"]] = per_candidate.get(e["candidate"], 0) + 1
    twice = {c: n for c, n in per_candidate.items() if n > 1}
    tools = [e["payload"] for e in evs if e["type"] == "tool.finished"]
    profiles = [t for t in tools if t.get("name") == "profile"]
    best, curve = None, []
    direction = next((e["payload"]["goal"]["direction"] for e in evs if e["type"] == "run.created"), "max")
    for e in evals:
        r = e["payload"].get("result", {})
        s = r.get("score")
        if r.get("correct") and isinstance(s, (int, float)):
            if best is None or (s > best if direction == "max" else s < best):
                best = s
                curve.append({"t_s": round(e["recorded_at"] / 1e6 - t_first, 1), "score": s})
    here = [e for e in evs if e["recorded_at"] / 1e6 >= t_wall0]
    eval_s = sum(
        e["payload"].get("elapsed_s", 0.0)
        for e in here
        if (e["type"] == "eval.finished" and not e["payload"].get("cached")) or e["type"] == "eval.remeasured"
    )
    prof_s = sum(
        e["payload"].get("elapsed_s", 0.0)
        for e in here
        if e["type"] == "tool.finished" and e["payload"].get("name") == "profile"
    )
    calls_here = sum(1 for e in here if e["type"] == "tool.finished")
    wall = sum(s["wall_s"] for s in segments)
    state = json.loads(
        subprocess.run([args.marathon, "status", args.run_dir, "--json"], capture_output=True, text=True).stdout
    )
    seen = watcher.seen
    gpu = (
        subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
        if shutil.which("nvidia-smi")
        else ""
    )
    summary = {
        "task": args.task,
        "machine": {"host": socket.gethostname(), "gpu": gpu, "run_dir": str(Path(args.run_dir).resolve())},
        "started_with": "resume (moved here)" if args.resume else "run",
        "policy": args.policy,
        "model_requests_here": model.requests if model else 0,
        "status": "finished" if state.get("done") else status,
        "finish_reason": state.get("finish_reason"),
        "tool_calls": state["budget"]["used"]["tool_calls"],
        "evaluations_recorded": len(evals),
        "evaluations_executed": len(executed),
        "evaluations_cached": len(evals) - len(executed),
        "candidates_executed_twice": twice,
        "harness_processes_seen": sum(1 for v in seen.values() if not v[2]),
        "profile_processes_seen": sum(1 for v in seen.values() if v[2]),
        "profiles": [
            {"ok": t.get("ok"), "elapsed_s": t.get("elapsed_s"), "output": (t.get("output") or "")[:1500]}
            for t in profiles
        ],
        "best_score": state.get("best_score"),
        "baseline_score": state.get("baseline_score"),
        "best_over_time": curve,
        "segments": segments,
        "kills": kills,
        "wall_s": round(wall, 1),
        # this machine's segments: evaluations, re-measurements and profiles against its wall time
        "tool_calls_here": calls_here,
        "evaluator_busy_fraction": round((eval_s + prof_s) / wall, 3) if wall else None,
        "runtime_s_per_tool_call": round((wall - eval_s - prof_s) / max(1, calls_here), 3),
        "gpu_processes_at_end": gpu_processes(),
    }
    text = json.dumps(summary, indent=1)
    print(text)
    if args.json:
        Path(args.json).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
