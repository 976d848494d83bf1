"""The kernel tasks' evaluator command.

    python -m harness eval    [--task-dir DIR] [--candidate DIR] [--seed N] [--quick] [--no-timing] [--cpu]
    python -m harness profile [--task-dir DIR] [--candidate DIR] [--shape NAME] [--text]
    python -m harness check   [--task-dir DIR] [--candidate DIR]      (static rules only)
    python -m harness ceilings                                         (measured GPU ceilings)

The task folder defaults to MARATHON_TASK_DIR, else the working directory (the runner starts the
evaluator in the task folder); the candidate to MARATHON_CANDIDATE_DIR, else the task's starter/.
``eval`` prints one JSON object (docs/evaluation.md, schema 1) and exits 0 whenever the evaluation
ran, whatever its verdict; 2 when the evaluator itself could not run (bad task folder).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .taskspec import TaskError, load_task


def _paths(args):
    task_dir = Path(args.task_dir or os.environ.get("MARATHON_TASK_DIR") or os.getcwd())
    cand = args.candidate or os.environ.get("MARATHON_CANDIDATE_DIR") or str(task_dir / "starter")
    return task_dir, Path(cand)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd")
    for name in ("eval", "profile", "check"):
        s = sub.add_parser(name)
        s.add_argument("--task-dir", help="task folder (default: MARATHON_TASK_DIR or the working directory)")
        s.add_argument("--candidate", help="candidate folder (default: MARATHON_CANDIDATE_DIR or TASK/starter)")
        s.add_argument("--json", action="store_true", help="accepted for symmetry; output is always JSON")
        if name == "eval":
            s.add_argument("--seed", type=int, default=None)
            s.add_argument("--quick", action="store_true", help="first correctness shape only (tests)")
            s.add_argument("--no-timing", action="store_true", help="correctness and rules only")
            s.add_argument("--cpu", action="store_true", help="run on the CPU through Triton's interpreter")
            s.add_argument("--timeout", type=float, default=None, help="child time limit in seconds")
            s.add_argument("--no-static", action="store_true", help=argparse.SUPPRESS)  # tests of run-time guards
        if name == "profile":
            s.add_argument("--shape", default=None, help="shape name (default: the task's headline shape)")
            s.add_argument("--text", action="store_true", help="print the whole report as text, not JSON")
    sub.add_parser("ceilings")
    args = p.parse_args(argv)
    cmd = args.cmd or "eval"
    if args.cmd is None:
        args = p.parse_args(["eval", *(argv if argv is not None else sys.argv[1:])])

    if cmd == "ceilings":
        from . import ceilings

        try:
            import torch

            if not torch.cuda.is_available():
                print(json.dumps({"error": "measuring ceilings needs a GPU"}))
                return 0
        except ImportError as e:
            print(json.dumps({"error": f"torch is not importable: {e}"}))
            return 0
        print(json.dumps(ceilings.get(), indent=1))
        return 0

    task_dir, cand = _paths(args)
    try:
        task = load_task(task_dir)
    except TaskError as e:
        print(f"harness: {e}", file=sys.stderr)
        return 2

    if cmd == "check":
        from .static_check import check_dir

        v = [x.as_dict() for x in check_dir(cand, task.banned)]
        print(json.dumps({"violations": v, "ok": not v}, indent=1))
        return 0

    if cmd == "profile":
        from .profile import profile

        prof = profile(task, cand, shape=args.shape)
        if args.text:
            print(prof.get("report") or prof.get("log", ""))
        else:
            print(json.dumps(prof))
        return 0

    if os.environ.get("MARATHON_PROFILE") == "1":
        # The runner's `profile` tool runs the task's evaluator command with MARATHON_PROFILE=1: answer
        # with the profile, in the evaluator's result schema (never counted as an evaluation).
        from .profile import profile

        print(json.dumps(profile_as_result(profile(task, cand))))
        return 0

    from .runner import evaluate, harden

    harden()
    seed = args.seed
    if seed is None and os.environ.get("MARATHON_EVAL_SEED"):
        seed = int(os.environ["MARATHON_EVAL_SEED"])
    res = evaluate(
        task,
        cand,
        seed=seed,
        timing=not args.no_timing,
        quick=args.quick,
        static=not args.no_static,
        force_cpu=args.cpu,
        timeout_s=args.timeout,
    )
    print(json.dumps(res))
    return 0


def profile_as_result(prof: dict) -> dict:
    """A profile in the evaluator's result schema (docs/evaluation.md): no verdict, no score."""
    from .result import EvalResult

    return EvalResult(
        task=prof.get("task"),
        profile=prof.get("lines", []),
        profile_ok=bool(prof.get("ok")),
        profile_report=prof.get("report"),
        log="profile (not an evaluation): " + prof.get("log", ""),
    ).to_dict()
