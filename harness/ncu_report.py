"""Nsight Compute's raw CSV (``ncu --csv --page raw``) reduced to what an agent acts on (pure: no GPU).

One profiled call holds the candidate's kernels, then the harness's marker kernel (PyTorch's
``spin_kernel``, from ``torch.cuda._sleep``), then the baseline's kernels; ``split_at_marker`` tells
them apart. Every launch becomes a ``Launch`` of curated facts in base units (ns, bytes, bytes/s,
percent); launches of one kernel name are folded into one ``Kernel`` (times and bytes summed, rates
and shares weighted by time). ``compact`` gives the side-by-side view (candidate beside baseline, at
most ~2 KB, a diagnosis line per top kernel placed against the task's floor); ``full_report`` every
kernel's facts and every counter ncu returned, for paging through.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: the boundary between candidate and baseline

# The sections asked for; their metrics are what the raw page holds (besides EXTRA_METRICS).
SECTIONS = (
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "Occupancy",
    "LaunchStats",
    "WarpStateStats",
    "ComputeWorkloadAnalysis",
    "InstructionStats",
)
# Counters no section above collects: DRAM bytes each way and local-memory (spill) traffic.
EXTRA_METRICS = (
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
    "smsp__inst_executed.sum",
)

# curated fact -> the raw metric names that give it, first found wins
NAMES = {
    "ns": ("gpu__time_duration.sum",),
    "sm_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "mem_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_pct": (
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ),
    "dram_read": ("dram__bytes_read.sum",),
    "dram_write": ("dram__bytes_write.sum",),
    "dram_bps": ("dram__bytes.sum.per_second",),
    "l1_hit": ("l1tex__t_sector_hit_rate.pct",),
    "l2_hit": ("lts__t_sector_hit_rate.pct",),
    "occ": ("sm__warps_active.avg.pct_of_peak_sustained_active",),
    "occ_theory": ("sm__maximum_warps_per_active_cycle_pct",),
    "regs": ("launch__registers_per_thread",),
    "smem_static": ("launch__shared_mem_per_block_static",),
    "smem_dynamic": ("launch__shared_mem_per_block_dynamic",),
    "block": ("launch__block_size",),
    "grid": ("launch__grid_size",),
    "sms": ("device__attribute_multiprocessor_count", "launch__sm_count"),
    "waves": ("launch__waves_per_multiprocessor",),
    "local_ld": ("l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",),
    "local_st": ("l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",),
    "inst": ("smsp__inst_executed.sum", "sm__inst_executed.sum"),
}
LIMITS = {  # blocks per SM each resource allows (the smallest is the occupancy limiter)
    "registers": "launch__occupancy_limit_registers",
    "shared mem": "launch__occupancy_limit_shared_mem",
    "warps": "launch__occupancy_limit_warps",
    "blocks": "launch__occupancy_limit_blocks",
    "barriers": "launch__occupancy_limit_barriers",
}
_TENSOR = re.compile(r"^sm__pipe_tensor\w*_cycles_active\.avg\.pct_of_peak_sustained_(active|elapsed)$")
_TENSOR_INST = re.compile(r"^sm__inst_executed_pipe_tensor\w*\.avg\.pct_of_peak_sustained_active$")
_STALL = re.compile(
    r"^smsp__average_warps?(?:_latency)?_issue_stalled_(\w+?)_per_(?:issue|warp)_active\.(?:ratio|pct)$"
)
_NOT_STALLS = ("selected", "not_issued")

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def unit_factor(unit: str) -> float:
    """Factor to base units: bytes, ns for a time, per second for a rate (``Gbyte/second`` -> 1e9)."""
    u = (unit or "").strip()
    num, _, den = u.partition("/")
    f = 1.0
    if num.endswith("byte") and num[:-4] in _PREFIX:
        f = _PREFIX[num[:-4]]
    elif num in _TIME_NS:
        f = _TIME_NS[num]
    if den in _TIME_NS:
        f /= _TIME_NS[den] / 1e9  # per (that time) -> per second
    elif den.endswith("byte") and den[:-4] in _PREFIX:
        f /= _PREFIX[den[:-4]]
    return f


def _num(s: str) -> float | None:
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return None


@dataclass
class Launch:
    id: int
    name: str
    raw: dict  # metric -> (value text, unit)
    values: dict  # metric -> float in base units (numeric metrics only)


def parse_raw_csv(text: str) -> list[Launch]:
    """The launches of ``ncu --csv --page raw`` (a header row, a units row, a row per launch)."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 2:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, units, data = rows[0], rows[1], rows[2:]
    out = []
    for n, r in enumerate(data):
        raw, values, name, lid = {}, {}, "", n
        for h, u, v in zip(header, units, r):
            if h == "Kernel Name":
                name = v
            elif h == "ID":
                lid = int(_num(v) or n)
            raw[h] = (v, u)
            x = _num(v)
            if x is not None:
                values[h] = x * unit_factor(u)
        out.append(Launch(lid, name, raw, values))
    return out


def split_at_marker(launches: list[Launch]) -> tuple[list[Launch], list[Launch], bool]:
    """(candidate's, baseline's, marker found): the launches before and after the last marker kernel.
    The baseline never runs the marker, so a candidate that launches one itself only moves its own
    launches; without any marker every launch is the candidate's."""
    idx = [i for i, k in enumerate(launches) if MARKER in k.name]
    if not idx:
        return list(launches), [], False
    return launches[: idx[-1]], launches[idx[-1] + 1 :], True


def _first(values: dict, names: tuple[str, ...]) -> float | None:
    for n in names:
        if n in values:
            return values[n]
    return None


def launch_facts(k: Launch) -> dict:
    v = k.values
    f = {key: _first(v, names) for key, names in NAMES.items()}
    f["ns"] = f["ns"] or 0.0
    if f["dram_bps"] is None and f["dram_read"] is not None and f["ns"]:
        f["dram_bps"] = ((f["dram_read"] or 0) + (f["dram_write"] or 0)) / (f["ns"] * 1e-9)
    smem = [x for x in (f.pop("smem_static"), f.pop("smem_dynamic")) if x is not None]
    f["smem"] = sum(smem) if smem else None
    ld, st = f.pop("local_ld"), f.pop("local_st")
    f["spill_bytes"] = None if ld is None and st is None else (ld or 0) + (st or 0)
    tensor = [x for m, x in v.items() if _TENSOR.match(m) or _TENSOR_INST.match(m)]
    f["tensor_pct"] = max(tensor) if tensor else None
    lim = {what: v[m] for what, m in LIMITS.items() if m in v}
    low = min(lim.values()) if lim else None
    f["limiter"] = "+".join(w for w, x in lim.items() if x == low) if lim else None
    f["limits"] = lim
    stalls = {}
    for m, x in v.items():
        s = _STALL.match(m)
        if s and not any(s.group(1).endswith(n) or s.group(1) == n for n in _NOT_STALLS):
            stalls[s.group(1)] = stalls.get(s.group(1), 0.0) + x
    f["stalls"] = stalls
    return f


_WEIGHTED = ("sm_pct", "mem_pct", "dram_pct", "l1_hit", "l2_hit", "occ", "occ_theory", "tensor_pct")
_SUMMED = ("ns", "dram_read", "dram_write", "spill_bytes", "inst")
_CONFIG = ("regs", "smem", "block", "grid", "sms", "waves", "limiter", "limits")


@dataclass
class Kernel:
    name: str
    launches: int = 0
    facts: dict = field(default_factory=dict)


def fold(launches: list[Launch]) -> list[Kernel]:
    """Launches of one kernel name folded together, longest first."""
    by: dict[str, list[dict]] = {}
    for k in launches:
        by.setdefault(k.name, []).append(launch_facts(k))
    out = []
    for name, fs in by.items():
        total = sum(f["ns"] for f in fs) or 0.0
        w = [(f["ns"] / total) if total else 1.0 / len(fs) for f in fs]
        agg: dict = {}
        for key in _SUMMED:
            xs = [f[key] for f in fs if f.get(key) is not None]
            agg[key] = sum(xs) if xs else None
        for key in _WEIGHTED:
            xs = [(f[key], wi) for f, wi in zip(fs, w) if f.get(key) is not None]
            ws = sum(wi for _, wi in xs)
            agg[key] = sum(x * wi for x, wi in xs) / ws if xs and ws else None
        longest = max(fs, key=lambda f: f["ns"])
        for key in _CONFIG:
            agg[key] = longest.get(key)
        stalls: dict[str, float] = {}
        for f, wi in zip(fs, w):
            for s, x in f["stalls"].items():
                stalls[s] = stalls.get(s, 0.0) + x * wi
        agg["stalls"] = stalls
        agg["dram_bps"] = ((agg["dram_read"] or 0) + (agg["dram_write"] or 0)) / (total * 1e-9) if total else None
        if agg["dram_read"] is None:
            bps = [f["dram_bps"] for f in fs if f.get("dram_bps") is not None]
            agg["dram_bps"] = sum(bps) / len(bps) if bps else None
        out.append(Kernel(name, len(fs), agg))
    return sorted(out, key=lambda k: -k.facts["ns"])


def top_stalls(stalls: dict, n: int = 3) -> list[tuple[str, float]]:
    """The n largest stall reasons with their share of all stall cycles (0..1)."""
    total = sum(stalls.values())
    if total <= 0:
        return []
    return [(s, x / total) for s, x in sorted(stalls.items(), key=lambda kv: -kv[1])[:n]]


def short_name(name: str, n: int = 40) -> str:
    """A kernel's name without its template arguments and parameter list, at most n characters."""
    s = re.sub(r"\(.*$", "", name)
    depth, out = 0, []
    for c in s:
        depth += c == "<"
        if depth == 0:
            out.append(c)
        depth -= c == ">" and depth > 0
    s = "".join(out).strip() or name
    s = s.split("::")[-1] if "::" in s and len(s) > n else s
    return s if len(s) <= n else s[: n - 2] + ".."


_SHORT_STALL = {
    "long_scoreboard": "long_sb",
    "short_scoreboard": "short_sb",
    "math_pipe_throttle": "math_thr",
    "mio_throttle": "mio_thr",
    "lg_throttle": "lg_thr",
    "tex_throttle": "tex_thr",
    "branch_resolving": "branch",
    "dispatch_stall": "dispatch",
    "no_instruction": "no_inst",
    "not_selected": "not_sel",
}


def stall_name(s: str) -> str:
    return _SHORT_STALL.get(s, s[:10])


def _pct(x) -> str:
    return "-" if x is None else f"{x:.0f}%"


def _bytes(x) -> str:
    if x is None:
        return "-"
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(x) >= f:
            return f"{x / f:.3g} {unit}"
    return f"{x:.0f} B"


def _us(ns) -> str:
    return "-" if ns is None else (f"{ns / 1e3:.1f} us" if ns < 1e7 else f"{ns / 1e6:.2f} ms")


def _count(x) -> str:
    if x is None:
        return "-"
    for unit, f in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if x >= f:
            return f"{x / f:.3g}{unit}"
    return f"{x:.0f}"


def diagnose(k: Kernel, floor_bytes: float | None = None) -> str:
    """One line from the numbers: which limit the kernel is at, against the task's byte floor."""
    f = k.facts
    mem = max((x for x in (f.get("mem_pct"), f.get("dram_pct")) if x is not None), default=None)
    sm = f.get("sm_pct")
    moved = (f.get("dram_read") or 0) + (f.get("dram_write") or 0)
    parts = []
    if mem is not None and mem >= 60 and (sm is None or mem >= sm):
        d = f.get("dram_pct")
        where = f"DRAM {d:.0f}% of peak" if d is not None and d >= 0.8 * mem else f"memory {mem:.0f}% of peak"
        parts.append(f"{where}: memory-bound")
        if floor_bytes and moved:
            r = moved / floor_bytes
            parts.append(
                f"bytes moved {r:.2g}x the task's floor" + (": cut the traffic" if r > 1.5 else ": near the floor")
            )
    elif sm is not None and sm >= 60:
        t = f.get("tensor_pct")
        parts.append(f"SM {sm:.0f}% of peak: compute-bound" + (f", tensor pipe {t:.0f}%" if t is not None else ""))
    else:
        parts.append(f"latency-bound (memory {_pct(mem)}, SM {_pct(sm)} of peak)")
        grid, sms = f.get("grid"), f.get("sms")
        occ, theo = f.get("occ"), f.get("occ_theory")
        if grid is not None and sms and grid < sms:
            parts.append(f"{grid:.0f} blocks for {sms:.0f} SMs")
        elif occ is not None and theo and occ < 0.6 * theo:
            parts.append(f"occupancy {occ:.0f}% of {theo:.0f}% possible (tail or imbalance)")
        elif theo is not None and theo <= 25 and f.get("limiter"):
            parts.append(f"occupancy capped at {theo:.0f}% by {f['limiter']}")
        st = top_stalls(f.get("stalls") or {}, 1)
        if st:
            parts.append(f"top stall {st[0][0]} {100 * st[0][1]:.0f}%")
        if floor_bytes and moved and moved > 1.5 * floor_bytes:
            parts.append(f"bytes moved {moved / floor_bytes:.2g}x the floor")
    if f.get("spill_bytes"):  # second: a line cut to fit keeps it
        parts.insert(1, f"spills {_bytes(f['spill_bytes'])} to local memory")
    return "; ".join(parts)


@dataclass
class Side:
    """One side of the table: the candidate or the baseline."""

    label: str
    kernels: list[Kernel]

    @property
    def ns(self) -> float:
        return sum(k.facts["ns"] for k in self.kernels)

    def bytes_moved(self) -> float | None:
        xs = [(k.facts.get("dram_read") or 0) + (k.facts.get("dram_write") or 0) for k in self.kernels]
        return sum(xs) if any(k.facts.get("dram_read") is not None for k in self.kernels) else None

    def total(self, key: str) -> float | None:
        xs = [k.facts.get(key) for k in self.kernels if k.facts.get(key) is not None]
        return sum(xs) if xs else None


def _rows(sides: list[Side], floor: dict | None) -> list[tuple[str, list[str]]]:
    fb = (floor or {}).get("bytes")
    rows = []

    def row(label, fn):
        rows.append((label, [fn(s) for s in sides]))

    row("time (all kernels)", lambda s: f"{_us(s.ns)} ({len(s.kernels)} kernels)" if s.kernels else "-")
    row("DRAM read / write", lambda s: f"{_bytes(s.total('dram_read'))} / {_bytes(s.total('dram_write'))}")
    if fb:
        row("bytes vs floor", lambda s: f"{s.bytes_moved() / fb:.2f}x" if s.bytes_moved() else "-")

    def top(s, fn):
        return fn(s.kernels[0].facts) if s.kernels else "-"

    row(
        "top kernel (share)",
        lambda s: (
            f"{short_name(s.kernels[0].name, 20)} {100 * s.kernels[0].facts['ns'] / s.ns:.0f}%"
            if s.kernels and s.ns
            else "-"
        ),
    )
    row("  SOL SM / memory", lambda s: top(s, lambda f: f"{_pct(f.get('sm_pct'))} / {_pct(f.get('mem_pct'))}"))
    row(
        "  DRAM BW (% peak)",
        lambda s: top(
            s,
            lambda f: (
                "-" if f.get("dram_bps") is None else f"{f['dram_bps'] / 1e12:.2f} TB/s ({_pct(f.get('dram_pct'))})"
            ),
        ),
    )
    row("  L1 / L2 hit", lambda s: top(s, lambda f: f"{_pct(f.get('l1_hit'))} / {_pct(f.get('l2_hit'))}"))
    row(
        "  occupancy ach/theo",
        lambda s: top(
            s,
            lambda f: (
                f"{_pct(f.get('occ'))} / {_pct(f.get('occ_theory'))}"
                + (f" ({f['limiter']})" if f.get("limiter") else "")
            ),
        ),
    )
    row(
        "  regs, smem, block",
        lambda s: top(
            s,
            lambda f: (
                f"{_count(f.get('regs'))}, {_bytes(f.get('smem'))}, {_count(f.get('block'))}"
                + (f" x{_count(f.get('grid'))}" if f.get("grid") is not None else "")
            ),
        ),
    )
    row("  spills (local mem)", lambda s: top(s, lambda f: _bytes(f.get("spill_bytes"))))
    row("  tensor pipe", lambda s: top(s, lambda f: _pct(f.get("tensor_pct"))))
    row(
        "  top stalls",
        lambda s: top(
            s,
            lambda f: ", ".join(f"{stall_name(n)} {100 * x:.0f}%" for n, x in top_stalls(f.get("stalls") or {})) or "-",
        ),
    )
    row("  instructions", lambda s: top(s, lambda f: _count(f.get("inst"))))
    return rows


def table(sides: list[Side], floor: dict | None) -> list[str]:
    rows = _rows(sides, floor)
    w0 = max(len(r[0]) for r in rows)
    ws = [max(len(s.label), *(len(r[1][i]) for r in rows)) for i, s in enumerate(sides)]
    out = ["  ".join([" " * w0] + [s.label.ljust(w) for s, w in zip(sides, ws)]).rstrip()]
    for label, cells in rows:
        out.append("  ".join([label.ljust(w0)] + [c.ljust(w) for c, w in zip(cells, ws)]).rstrip())
    return out


def kernel_lines(
    side: Side, floor: dict | None, top: int = 3, name_width: int = 32, max_len: int | None = None
) -> list[str]:
    fb = (floor or {}).get("bytes")
    out = []
    for k in side.kernels[:top]:
        x = f" x{k.launches}" if k.launches > 1 else ""
        line = f" {short_name(k.name, name_width)} {_us(k.facts['ns'])}{x}: {diagnose(k, fb)}"
        out.append(line if max_len is None or len(line) <= max_len else line[: max_len - 2] + "..")
    rest = side.kernels[top:]
    if rest:
        out.append(f" +{len(rest)} more kernels: {_us(sum(k.facts['ns'] for k in rest))}")
    return out


def compile_lines(facts: list[dict], limit: int = 4) -> list[str]:
    """The compiler's view of the candidate's Triton/Gluon kernels (from their compiled metadata)."""
    out = []
    for c in facts[:limit]:
        bits = []
        if c.get("regs") is not None:
            bits.append(f"{c['regs']} regs")
        if c.get("stack") is not None:
            bits.append(f"{c['stack']} B stack/thread" + (" (spills)" if c["stack"] else ""))
        elif c.get("spills") is not None:
            bits.append(f"{c['spills']} spilled")
        if c.get("shared") is not None:
            bits.append(f"{_bytes(c['shared'])} smem")
        if c.get("num_warps") is not None:
            bits.append(f"{c['num_warps']} warps")
        if c.get("num_stages") is not None:
            bits.append(f"stages {c['num_stages']}")
        out.append(f" {short_name(c.get('name', '?'), 32)}: " + ", ".join(bits))
    if len(facts) > limit:
        out.append(f" +{len(facts) - limit} more compiled kernels")
    return out


def floor_line(sides: list[Side], floor_ns: float | None) -> list[str]:
    """Where each side stands against the task's floor (its bytes at the measured copy rate or its
    FLOPs at the measured matmul rate, whichever is slower)."""
    if not floor_ns:
        return []
    pos = ", ".join(f"{s.label.split()[0]} {floor_ns / s.ns:.0%}" for s in sides if s.ns)
    return [f"task floor {_us(floor_ns)} (bytes at measured copy, FLOPs at measured matmul); speed of floor: {pos}"]


def compact(
    cand: Side, base: Side | None, *, header: str, floor: dict | None, floor_ns: float | None, compile_facts=()
) -> list[str]:
    """The view the model gets: the table side by side, the top kernels' diagnoses, the compiler's facts."""
    sides = [cand] + ([base] if base is not None else [])
    out = [header]
    out += floor_line(sides, floor_ns)
    out += table(sides, floor)
    for s in sides:
        out.append(f"{s.label} kernels:")
        out += kernel_lines(s, floor)
    if compile_facts:
        out.append("compiled (Triton metadata, no counters):")
        out += compile_lines(list(compile_facts))
    return out


def _fact_lines(k: Kernel, fb) -> list[str]:
    f = k.facts
    lines = [
        f"{k.name}",
        f"  launches {k.launches}, time {_us(f['ns'])}",
        f"  diagnosis: {diagnose(k, fb)}",
        f"  SOL: SM {_pct(f.get('sm_pct'))}, memory {_pct(f.get('mem_pct'))}, DRAM {_pct(f.get('dram_pct'))}",
        f"  DRAM read {_bytes(f.get('dram_read'))}, write {_bytes(f.get('dram_write'))}, "
        + ("-" if f.get("dram_bps") is None else f"{f['dram_bps'] / 1e9:.0f} GB/s"),
        f"  L1 hit {_pct(f.get('l1_hit'))}, L2 hit {_pct(f.get('l2_hit'))}",
        f"  occupancy achieved {_pct(f.get('occ'))}, theoretical {_pct(f.get('occ_theory'))}, limiter {f.get('limiter') or '-'}"
        + (
            " (blocks/SM: " + ", ".join(f"{n} {x:.0f}" for n, x in f["limits"].items()) + ")" if f.get("limits") else ""
        ),
        f"  registers/thread {_count(f.get('regs'))}, shared mem/block {_bytes(f.get('smem'))}, block {_count(f.get('block'))}, "
        f"grid {_count(f.get('grid'))}, waves/SM {'-' if f.get('waves') is None else format(f['waves'], '.2f')}",
        f"  local memory (spills) {_bytes(f.get('spill_bytes'))}, tensor pipe {_pct(f.get('tensor_pct'))}, "
        f"instructions {_count(f.get('inst'))}",
        "  stalls: " + (", ".join(f"{n} {100 * x:.0f}%" for n, x in top_stalls(f.get("stalls") or {}, 8)) or "-"),
    ]
    return lines


def full_report(
    compact_lines: list[str],
    sides: list[Side],
    launches: list[Launch],
    floor: dict | None,
    compile_facts=(),
    raw_cap: int = 600_000,
) -> str:
    """Everything: the compact view, every kernel's facts, the compiler's, then every counter of every
    launch as ncu gave it (name [unit] = value), cut at raw_cap bytes."""
    fb = (floor or {}).get("bytes")
    out = list(compact_lines) + ["", "== every kernel"]
    for s in sides:
        out.append(f"-- {s.label}")
        for k in s.kernels:
            out += _fact_lines(k, fb)
    if compile_facts:
        out.append("== compiled kernels (Triton metadata)")
        out += [" " + ", ".join(f"{k}={v}" for k, v in c.items()) for c in compile_facts]
    out.append("== every counter of every launch (ncu --page raw)")
    text = "\n".join(out) + "\n"
    raw = []
    for i, k in enumerate(launches):  # the device's attributes once, with the first launch
        raw.append(f"-- launch {k.id}: {k.name}")
        raw += [
            f"  {m} [{u}] = {v}"
            for m, (v, u) in k.raw.items()
            if m not in ("ID", "Kernel Name") and (i == 0 or not m.startswith("device__attribute_"))
        ]
    body = "\n".join(raw) + "\n"
    if len(body) > raw_cap:
        body = body[:raw_cap] + f"\n[counters cut at {raw_cap} bytes]\n"
    return text + body
