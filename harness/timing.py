"""GPU timing: CUDA events around CUDA-graph replays, L2 flushed and inputs rotated between calls.

The primitives are bound when this module is imported, before any candidate code runs, so a
candidate that later patches torch.cuda.Event or time cannot change what the harness measures.
"""

from __future__ import annotations

import math
import statistics
import time

import torch

_Event = torch.cuda.Event
_Graph = torch.cuda.CUDAGraph
_graph_ctx = torch.cuda.graph
_Stream = torch.cuda.Stream
_stream_ctx = torch.cuda.stream
_current_stream = torch.cuda.current_stream
_synchronize = torch.cuda.synchronize
_elapsed = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_replay = torch.cuda.CUDAGraph.replay
_median = statistics.median
_perf = time.perf_counter
_sum = torch.sum

# Read between timed calls: more than the H100/H200 L2 (50-60 MB), so each call starts cold.
FLUSH_BYTES = 256 << 20


class Flusher:
    """Empties L2 of everything a timed call reads by reading FLUSH_BYTES of its own.

    A read, not a write: a written flush leaves L2 full of dirty lines, and every line the timed
    call then brings in first writes one of them back to memory, a cost no real caller pays (on an
    H200, 1.1 us of a 9 us stream of the MLA cache, 0.7 us of the 19 us decode: bench/mla_floor.py).
    The lines a read leaves are clean. The buffer is written once, here, and only read after.
    """

    def __init__(self, device):
        self.buf = torch.zeros(FLUSH_BYTES // 4, dtype=torch.float32, device=device)
        self.out = torch.empty(1, dtype=torch.float32, device=device)

    def __call__(self):
        _sum(self.buf, dim=0, keepdim=True, out=self.out)


def quartiles(times):
    """(first, third) quartile of the repetitions' times: the spread a timed shape reports."""
    ts = sorted(times)
    if len(ts) < 2:
        return (ts[0], ts[0]) if ts else (None, None)
    q = statistics.quantiles(ts, n=4, method="inclusive")
    return q[0], q[2]


def speedup_ci(shapes):
    """The score's interval from each timed shape's repetitions: the geometric means, over the
    shapes, of the slowest-quartile and fastest-quartile speed-ups (baseline's first quartile over
    the candidate's third, and third over first). ``shapes`` holds per shape a dict with
    ``base_q1``, ``base_q3``, ``cand_q1``, ``cand_q3`` (ms); None when any is missing."""
    lo, hi = [], []
    for s in shapes:
        vals = [s.get(k) for k in ("base_q1", "base_q3", "cand_q1", "cand_q3")]
        if any(v is None or not v > 0 for v in vals):
            return None
        b1, b3, c1, c3 = vals
        lo.append(math.log(b1 / c3))
        hi.append(math.log(b3 / c1))
    if not lo:
        return None
    return {
        "low": math.exp(sum(lo) / len(lo)),
        "high": math.exp(sum(hi) / len(hi)),
        "level": 0.5,
        "method": "geometric mean over timed shapes of the interquartile speed-up range of the repetitions",
    }


def _capture(fn, args_list):
    """One CUDA graph per rotated input set; raises if the call cannot be captured."""
    s = _Stream()
    s.wait_stream(_current_stream())
    with _stream_ctx(s):
        for a in args_list:
            fn(a)
    _current_stream().wait_stream(s)
    _synchronize()
    graphs = []
    for a in args_list:
        g = _Graph()
        with _graph_ctx(g):
            fn(a)
        graphs.append(g)
    _synchronize()
    return graphs


def measure(fn, args_list, flusher: Flusher, *, use_graph=True, warmup=3, min_reps=10, max_reps=100, budget_s=1.0):
    """Median ms of one call of fn(args) over rotated args, cold L2. Returns a dict with the mode.

    With use_graph the call is captured once per input set and replayed (launch overhead out of
    the picture); when capture fails (host synchronisation, unsupported op) the call is timed
    eagerly and the reason is returned in ``note``.
    """
    note = ""
    for i in range(warmup):
        fn(args_list[i % len(args_list)])
    _synchronize()
    graphs = None
    if use_graph:
        try:
            graphs = _capture(fn, args_list)
        except Exception as e:  # noqa: BLE001 - capture failure is reported, not fatal
            note = f"CUDA-graph capture failed ({str(e).splitlines()[0][:160]}); timed eagerly"
            graphs = None
            _synchronize()

    def one(i):
        if graphs is not None:
            _replay(graphs[i % len(graphs)])
        else:
            fn(args_list[i % len(args_list)])

    # Estimate the cost of one call to size the run to the budget.
    t0 = _perf()
    one(0)
    _synchronize()
    est = max(_perf() - t0, 1e-6)
    reps = int(min(max_reps, max(min_reps, budget_s / (est + 2e-4))))
    starts = [_Event(enable_timing=True) for _ in range(reps)]
    ends = [_Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flusher()
        _record(starts[i])
        one(i)
        _record(ends[i])
    _synchronize()
    times = sorted(_elapsed(a, b) for a, b in zip(starts, ends))
    q1_ms, q3_ms = quartiles(times)
    return {
        "ms": _median(times),
        "min_ms": times[0],
        "q1_ms": q1_ms,
        "q3_ms": q3_ms,
        "max_ms": times[-1],
        "reps": reps,
        "mode": "graph" if graphs is not None else "eager",
        "note": note,
    }
