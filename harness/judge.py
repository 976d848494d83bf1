"""The judge: confirms a candidate's claimed result from a process that never runs candidate code.

The evaluation child (harness.child) runs the candidate, its rules and its timing in one process;
what it writes is the candidate process's claim, and a candidate that takes over its own process
(ctypes, patched harness objects) can write any claim. When the claim says correct, the runner
asks the judge, which runs in the runner's process and loads the candidate only into a separate
process of its own (harness.serve), and itself:

- checks correctness on fresh inputs from a seed the claim never saw: the judge makes the inputs,
  computes the reference, and compares the bytes the candidate's process sends back;
- times the candidate from outside its process (GPU): the judge's stream holds the GPU (a sleep
  kernel) while the candidate's calls are queued behind an IPC event; then, between two of the
  judge's own CUDA events, it writes fresh inputs into buffers it owns, releases the candidate,
  and stops its clock when the candidate's done event (recorded after its outputs were copied into
  the judge's buffers) has passed; those buffers are read right then and checked. Work done before
  the fresh inputs existed gives wrong outputs; a done event recorded early stops the clock before
  outputs the judge then finds unwritten. The clock includes two context switches and the input
  copy, both measured and subtracted (the switches before the candidate is loaded);
- times the baselines the score is against in its own process, before its candidate process loads
  any candidate code and after the evaluation child and everything it started are gone, so no
  candidate code runs beside them to slow them down;
- redoes the floor check on the claimed times.

A claimed time below CONFIRM_SHARE of the outside time is refused (``timing_unconfirmed``): the
outside clock has no CUDA-graph replay and no L2 flush, so it differs from the claim, but not by
half. Wrong outputs from the judge's check give ``result_unconfirmed``. Rules that watch the
candidate inside its process (which kernels ran, on which stream, imports at run time) stay the
claim's: docs/evaluation.md says what a candidate that takes over its process can still hide.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path

from .taskspec import Task, load_reference

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIRM_SHARE = 0.5  # a claimed time must be at least this share of the time measured outside
TIMED_REPS = 10  # bracketed calls per timed shape (each checked)
NULL_REPS = 10
MAX_HOLD_MS = 200.0
HEADER_LIMIT = 1 << 16


class WorkerGone(Exception):
    """The candidate's process broke the protocol: died, hung, or said something malformed."""


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(self.end - time.monotonic(), 0.0)


class Worker:
    """The judge's end of the candidate's process: pickles go in, JSON and raw bytes come out."""

    def __init__(self, env: dict, workdir: Path, deadline: Deadline, gpu: bool):
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        self.deadline = deadline
        self.gpu = gpu
        self.err_path = workdir / "serve.stderr"
        with open(workdir / "serve.stdout", "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.serve", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=str(workdir),
                env=env,
                start_new_session=True,
            )
        theirs.close()

    def send(self, **msg) -> None:
        if self.gpu:
            from multiprocessing.reduction import ForkingPickler

            import torch.multiprocessing  # noqa: F401 - CUDA tensors and events as IPC handles

            data = bytes(ForkingPickler.dumps(msg))
        else:
            data = pickle.dumps(msg)
        try:
            self.conn.send_bytes(data)
        except OSError as e:
            raise WorkerGone(f"the candidate's process closed its channel ({e})") from e

    def recv_bytes(self, limit: int) -> bytes:
        if not self.conn.poll(self.deadline.left()):
            raise WorkerGone("the candidate's process did not answer in time")
        try:
            return self.conn.recv_bytes(limit)
        except (EOFError, OSError) as e:
            raise WorkerGone(f"the candidate's process closed its channel or sent too much ({e})") from e

    def recv(self, expect: str) -> dict:
        data = self.recv_bytes(HEADER_LIMIT)
        try:
            msg = json.loads(data)
        except (ValueError, RecursionError) as e:
            raise WorkerGone(f"the candidate's process sent malformed JSON ({e})") from e
        if not isinstance(msg, dict):
            raise WorkerGone("the candidate's process sent something other than an object")
        if msg.get("op") == "error":
            raise WorkerGone(str(msg.get("text", ""))[:1500])
        if msg.get("op") != expect:
            raise WorkerGone(f"the candidate's process said {str(msg.get('op'))[:40]!r}, expected {expect!r}")
        return msg

    def stderr_tail(self) -> str:
        try:
            return self.err_path.read_bytes()[-800:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        try:
            self.send(op="exit")
        except WorkerGone:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.conn.close()


def _outputs(worker: Worker, expected: list, torch, device) -> list:
    """The candidate's outputs of one call, rebuilt from bytes and bounded by what is expected."""
    head = worker.recv("outputs").get("outputs")
    if not isinstance(head, list):
        raise WorkerGone("the candidate's process sent no output list")
    outs = []
    for i, h in enumerate(head[: len(expected) + 1]):
        if h is None:
            outs.append(None)
            continue
        exp = expected[i] if i < len(expected) else None
        want = math.prod(exp[0]) * exp[1].itemsize if exp is not None else 0
        data = worker.recv_bytes(max(want, 1) + 64)
        dtype = getattr(torch, str(h.get("dtype", "")), None) if isinstance(h, dict) else None
        shape = h.get("shape") if isinstance(h, dict) else None
        if not isinstance(dtype, torch.dtype) or not isinstance(shape, list):
            raise WorkerGone(f"output {i}: malformed description")
        if not all(isinstance(s, int) and 0 <= s < 1 << 40 for s in shape) or len(shape) > 16:
            raise WorkerGone(f"output {i}: malformed shape")
        if math.prod(shape) * dtype.itemsize != len(data):
            raise WorkerGone(f"output {i}: {len(data)} bytes do not fill shape {shape} of {dtype}")
        flat = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else torch.empty(0, dtype=torch.uint8)
        outs.append(flat.view(dtype).reshape(shape).to(device))
    return outs


class Judge:
    def __init__(self, task: Task, candidate_dir: Path, env: dict, workdir: Path, deadline: Deadline, force_cpu):
        import torch

        self.torch = torch
        self.task = task
        self.ref = load_reference(task.dir)
        self.gpu = torch.cuda.is_available() and not force_cpu
        self.device = "cuda" if self.gpu else "cpu"
        self.candidate_dir = candidate_dir
        self.env, self.workdir, self.deadline = env, workdir, deadline
        self.problems: list[str] = []
        self.wrong_shapes: dict[str, list[str]] = {}
        self.violations: list[dict] = []
        self.notes: list[str] = []
        self._baseline_fns: dict | None = None  # the task's baselines, imported on first use

    # -- the outside clock -------------------------------------------------------------------
    def _events(self, worker: Worker) -> None:
        torch = self.torch
        self.go = torch.cuda.Event(enable_timing=False, interprocess=True)
        self.done = torch.cuda.Event(enable_timing=False, interprocess=True)
        worker.send(op="events", go=self.go.ipc_handle(), done=self.done.ipc_handle())
        worker.recv("ok")
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        torch.cuda._sleep(1_000_000)
        b.record()
        b.synchronize()
        self.cycles_per_ms = 1_000_000 / max(a.elapsed_time(b), 1e-3)
        self.hold_ms = 2.0

    def _window(self, worker: Worker | None, fill, op: str, snapshot=None):
        """One bracketed call: (ms between the judge's events, whether the hold covered the
        candidate's queueing, the judge's copy of the output buffers at its clock's stop)."""
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(self.hold_ms * self.cycles_per_ms))
        start.record()
        fill()
        covered = True
        if worker is not None:
            self.go.record()
            worker.send(op=op)
            worker.recv("enqueued")
            covered = not start.query()
            torch.cuda.current_stream().wait_event(self.done)
        end.record()
        snap = [o.clone() if o is not None else None for o in snapshot] if snapshot is not None else None
        end.synchronize()
        return start.elapsed_time(end), covered, snap

    def _bracketed(self, worker, fill, op, reps, snapshot=None, check=None) -> tuple[list[float], bool]:
        times, blocked = [], False
        while len(times) < reps:
            ms, covered, snap = self._window(worker, fill, op, snapshot)
            if not covered and self.hold_ms < MAX_HOLD_MS:
                self.hold_ms *= 2  # the candidate's queueing outlasted the hold: longer, and again
                continue
            blocked = blocked or not covered
            if check is not None:
                check(len(times), snap)
            times.append(ms)
        return times, blocked

    # -- the checks ----------------------------------------------------------------------------
    def confirm(self, claim: dict, seed: int, quick: bool, timing: bool) -> None:
        from .correctness import check_outputs

        torch, ref = self.torch, self.ref
        shapes = ref.shapes(self.gpu)
        if quick:
            shapes = shapes[:1]
        claimed = {d.get("shape"): d for d in claim.get("details", []) if d.get("ms") is not None}
        timed = self.gpu and timing and bool(claimed)
        worker = Worker(self.env, self.workdir, self.deadline, self.gpu)
        try:
            worker.recv("ready")
            if timed:
                # Before any candidate code runs: the baselines, and the clock's own cost.
                self.baselines = {}
                for idx, shape in enumerate(shapes):
                    if shape["name"] in claimed:
                        self.baselines[shape["name"]] = self._time_baselines(shape, self._sets(shape, seed, idx))
                self._events(worker)
                null, _ = self._bracketed(worker, lambda: None, "null", NULL_REPS)
                self.null_ms = statistics.median(null)
            worker.send(
                op="load",
                task_dir=str(self.task.dir),
                candidate_dir=str(self.candidate_dir),
                banned=list(self.task.banned),
            )
            worker.recv("ok")
            for idx, shape in enumerate(shapes):
                name = shape["name"]
                sets = (
                    self._sets(shape, seed, idx)
                    if name in claimed and timed
                    else [ref.make_inputs(shape, seed + 7 * idx, self.device)]
                )
                refs = [ref.reference(s) for s in sets]
                expected = [ref.expected_outputs(s) for s in sets]
                worker.send(op="call", inputs=sets[0])
                outs = _outputs(worker, expected[0], torch, self.device)
                ok, _, problems = check_outputs(outs, refs[0], expected[0], ref.OUTPUT_NAMES, ref.TOLERANCE)
                del outs
                if not ok:
                    self.problems.append(f"{name}: " + "; ".join(problems))
                    self.wrong_shapes[name] = problems
                elif name in claimed and timed:
                    self._time_outside(worker, name, claimed[name], sets, refs, expected)
                del sets, refs
                if self.gpu:
                    torch.cuda.empty_cache()
        except WorkerGone as e:
            tail = worker.stderr_tail().strip()
            self.problems.append(
                f"the candidate's process failed the judge's check: {e}" + (f"\n{tail}" if tail else "")
            )
        finally:
            worker.close()
        if timed and not self.problems:
            self._score(claim, shapes)

    def _sets(self, shape, seed: int, idx: int) -> list:
        """The judge's input sets of one shape (the same for the baselines and the candidate)."""
        n = 2 if self.ref.floor(shape)["bytes"] > (1 << 30) else 3
        return [self.ref.make_inputs(shape, seed + 7 * idx + r, self.device) for r in range(n)]

    def _time_outside(self, worker, name, detail, sets, refs, expected) -> None:
        from .correctness import check_outputs

        torch, ref = self.torch, self.ref
        live = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in sets[0].items()}
        bufs = [
            torch.full(tuple(e[0]), float("nan"), dtype=e[1], device=self.device) if e is not None else None
            for e in expected[0]
        ]
        worker.send(op="bind", inputs=live, outputs=bufs)
        worker.recv("ok")
        turn = [0]

        def fill():
            src = sets[turn[0] % len(sets)]
            for k, v in live.items():
                if isinstance(v, torch.Tensor):
                    v.copy_(src[k])
            for b in bufs:
                if b is not None and b.is_floating_point():
                    b.fill_(float("nan"))

        wrong = []

        def check(i, snap):
            r = turn[0] % len(sets)
            ok, _, problems = check_outputs(snap, refs[r], expected[r], ref.OUTPUT_NAMES, ref.TOLERANCE)
            if not ok and not wrong:
                wrong.append(f"timed call {i + 1}: " + "; ".join(problems))
            turn[0] += 1

        times, blocked = self._bracketed(worker, fill, "go", TIMED_REPS, snapshot=bufs, check=check)
        turn[0] = 0
        fills, _ = self._bracketed(None, fill, "", TIMED_REPS)
        outside = max(statistics.median(times) - statistics.median(fills) - self.null_ms, 0.0)
        detail["outside_ms"] = outside
        if wrong:
            self.violations.append(
                {
                    "rule": "timing_unconfirmed",
                    "reason": f"{name}: when the judge's clock stopped, the outputs it owns were not right "
                    f"({wrong[0][:300]}): the candidate said done before its work was",
                }
            )
        elif detail["ms"] < CONFIRM_SHARE * outside:
            self.violations.append(
                {
                    "rule": "timing_unconfirmed",
                    "reason": f"{name}: the candidate's process reported {detail['ms'] * 1e3:.1f} us a call; measured "
                    f"from the judge's process the call took {outside * 1e3:.1f} us (a claim below "
                    f"{CONFIRM_SHARE:.0%} of that is refused)",
                }
            )
        if blocked:
            self.notes.append(f"{name}: the candidate's call waits on the GPU, so its outside time includes CPU time")

    def _time_baselines(self, shape, sets) -> dict:
        """{baseline: timing.measure result} of the baselines the score is against, timed here."""
        import importlib

        from . import timing

        torch, ref = self.torch, self.ref
        if self._baseline_fns is None:
            try:
                self._baseline_fns = ref.baselines(importlib.import_module)
            except Exception as e:  # noqa: BLE001 - a missing baseline library leaves no score
                self.notes.append(f"baseline unavailable to the judge: {type(e).__name__}: {str(e)[:200]}")
                self._baseline_fns = {}
            self._flusher = timing.Flusher(self.device)
        fns = self._baseline_fns
        measured = {}
        for bname in tuple(getattr(ref, "SCORE_AGAINST", tuple(fns)[:1])):
            if bname not in fns or not ref.baseline_valid(bname, sets[0]):
                continue
            try:
                measured[bname] = timing.measure(lambda a, f=fns[bname]: ref.call(f, a), sets, self._flusher)
            except Exception as e:  # noqa: BLE001
                torch.cuda.synchronize()
                self.notes.append(f"{shape['name']}: baseline {bname} failed in the judge: {str(e)[:160]}")
        torch.cuda.empty_cache()
        return measured

    def _score(self, claim: dict, shapes) -> None:
        """The claim's score fields again, from the judge's baseline times and floor check."""
        from . import ceilings, kernel_rules, timing

        ceil = ceilings.get()
        spreads, speedups = [], []
        for shape in shapes:
            name = shape["name"]
            detail = next((d for d in claim["details"] if d.get("shape") == name and d.get("ms") is not None), None)
            if detail is None:
                continue
            fl = ceilings.floor_ms(self.ref.floor(shape), ceil)
            detail["floor_ms"] = fl
            detail["floor_fraction"] = fl / detail["ms"] if detail["ms"] > 0 else None
            for v in kernel_rules.check_floor(detail["ms"], fl):
                self.violations.append({"rule": v.rule, "reason": f"{name}: {v.reason}"})
            measured = self.baselines.get(name, {})
            for bname, b in measured.items():
                detail.setdefault("baselines_ms", {})[bname] = b["ms"]
            detail.pop("speedup", None)
            detail.pop("baseline_ms", None)
            if not measured or detail["ms"] <= 0:
                continue
            fastest = min(measured, key=lambda b: measured[b]["ms"])
            detail["baseline_ms"] = measured[fastest]["ms"]
            detail["speedup"] = measured[fastest]["ms"] / detail["ms"]
            speedups.append(detail["speedup"])
            sp = detail.get("ms_spread") or {}
            spreads.append(
                {
                    "base_q1": measured[fastest].get("q1_ms"),
                    "base_q3": measured[fastest].get("q3_ms"),
                    "cand_q1": sp.get("q1"),
                    "cand_q3": sp.get("q3"),
                }
            )
        claim.pop("speedup_geomean", None)
        claim.pop("score_ci", None)
        timed = sum(1 for d in claim["details"] if d.get("ms") is not None)
        if speedups and len(speedups) == timed:
            claim["speedup_geomean"] = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
            ci = timing.speedup_ci(spreads)
            if ci is not None:
                claim["score_ci"] = ci


def confirm(
    task: Task,
    candidate_dir: Path,
    claim: dict,
    *,
    env: dict,
    workdir: Path,
    seconds: float,
    quick: bool,
    timing: bool,
    force_cpu: bool,
) -> dict:
    """Check a claim that says correct; returns the claim corrected (details, score fields,
    violations, log) by what the judge found. Its seed is fresh and never the claim's."""
    judge = Judge(task, candidate_dir, env, workdir, Deadline(seconds), force_cpu)
    judge.confirm(claim, secrets.randbelow(2**31 - 100000), quick, timing)
    claim.setdefault("violations", []).extend(judge.violations)
    claim.setdefault("log", []).extend(judge.notes)
    for d in claim.get("details", []):
        if d.get("shape") in judge.wrong_shapes or (judge.problems and not judge.wrong_shapes):
            d["ok"] = False
            d["problems"] = ["judge: " + p for p in judge.wrong_shapes.get(d["shape"], ["not confirmed"])]
            d["rel_err"] = {}
    if judge.problems:
        claim["correct"] = False
        claim["violations"].append(
            {
                "rule": "result_unconfirmed",
                "reason": "the candidate's process reported correct outputs, but the judge's check in a process "
                "apart, on fresh inputs, found: " + " | ".join(p[:600] for p in judge.problems),
            }
        )
        claim.pop("speedup_geomean", None)
        claim.pop("score_ci", None)
    return claim
