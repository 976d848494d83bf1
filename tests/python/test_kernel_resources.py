"""What the compiler makes of the KDA kernels and the MLA kernels for an H200 (sm_90a), checked on
any machine.

The default knobs were chosen on the GPU for their occupancy: the intra kernel capped at 168
registers runs 3 blocks of 4 warps per SM, and the scans (tl and both Gluon ones) may not spill (the
intra kernel a little);
the MLA tl prefill holds q and two kv stages (221 KB) in one block of 8 warps per SM, and the
Gluon decode / prefill kernel (q, a kv stage of 64 rows and p: 153 KB at one stage) one block of
8 warps without spills, as the prefill with q's first 320 columns in registers too.
A change to the kernels that breaks this shows here, without a GPU: bench/sass_report.py compiles
them with Triton's own ptxas, in a process of its own (these tests run with Triton's interpreter
on).
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGS_PER_SM = 65536


def report(*args):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "sass_report.py"), "--json", *args],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    return p, [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def defaults():
    p, rows = report()
    assert p.returncode == 0, p.stderr[-2000:]
    return {r["kernel"]: r for r in rows}


@pytest.mark.parametrize(
    "name,blocks_per_sm",
    [
        ("intra", 3),
        ("intra_strong", 3),
        ("scan", 1),
        ("scan_gl", 1),
        ("scan_glt", 1),
        ("prefill", 1),
        ("decode_gl", 1),
        ("prefill_gl", 1),
    ],  # fmt: skip
)
def test_kernels_fit_their_occupancy(defaults, name, blocks_per_sm):
    r = defaults[name]
    assert r["registers"] * 32 * r["num_warps"] * blocks_per_sm <= REGS_PER_SM, r
    assert r["shared"] * blocks_per_sm <= 227 * 1024, r
    assert r["instructions"] > 100, r  # a real kernel body was compiled


# Bytes of local memory (spills) allowed: the intra kernel with the solve fused spilled 32 B at
# its 168-register cap and was measured faster so than uncapped (bench/results/kda-2026-12-03.md).
# Its fast form now spills 128 B (the diagonal blocks' own accumulators across the K loop; the K
# loop loads 12 spilled registers a slice, 2 before) and its STRONG form, run only for the chunks
# the fast form flags, 192 B (bench/results/kda-2026-12-05.md; both still to be timed on the H200).
# The Gluon MLA prefill holds q's first 320 columns in registers beside its 64 x 512 accumulator:
# the most that fit without spilling (kernel.QREG_MAX, checked at each stage count below).
SPILL_LIMIT = {
    "intra": 128, "intra_strong": 192, "scan": 0, "scan_gl": 0, "scan_glt": 0, "decode_gl": 0, "prefill_gl": 0,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SPILL_LIMIT))
def test_kernels_spill_little_or_nothing(defaults, name):
    r = defaults[name]
    assert r["stack"] <= SPILL_LIMIT[name], f"{name} spills {r['stack']} B to local memory: {r}"


def test_a_register_cap_that_spills_is_seen():
    p, rows = report("intra", '{"maxnreg": 128}')
    assert p.returncode == 0, p.stderr[-2000:]
    assert rows[0]["registers"] <= 128 and rows[0]["stack"] > 0, rows


def test_unknown_override_is_refused():
    p, _ = report("scan", '{"NOT_A_KNOB": 1}')
    assert p.returncode != 0 and "no constexpr" in p.stderr


def _host_module(kernel_dir: str, name: str):
    """A kernel module of kernels/ (its host-side helpers need no GPU), loaded by its path under a
    name of its own: kernels/kda and kernels/mla both have a kernel.py."""
    path = ROOT / "kernels" / kernel_dir / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"host_{kernel_dir}_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    return mod


def _scan_gluon():
    return _host_module("kda", "scan_gluon")


@pytest.mark.parametrize("bv,stages,o_tma", [(32, 3, True), (64, 3, False), (16, 2, True), (64, 2, True)])
def test_the_gluon_scans_shared_memory_estimate_matches_the_compiler(bv, stages, o_tma):
    """kda_scan_gluon decides from _smem_gl whether o's two buffers fit (else o goes by pointers):
    the estimate must be what the compiler allocates, to within the 1 KB it keeps in reserve."""
    scan_gluon = _scan_gluon()
    p, rows = report("scan_gl", json.dumps({"BV": bv, "STAGES": stages, "O_TMA": o_tma}))
    assert p.returncode == 0, p.stderr[-2000:]
    est = scan_gluon._smem_gl(128, bv, stages, o_tma)
    assert abs(rows[0]["shared"] - est) <= 1024, (rows[0]["shared"], est)
    assert rows[0]["shared"] <= scan_gluon.SMEM_BYTES


def test_o_buffers_that_do_not_fit_are_left_out():
    scan_gluon = _scan_gluon()
    assert scan_gluon._smem_gl(128, 64, 3, True) > scan_gluon.SMEM_BYTES - 1024
    assert scan_gluon._smem_gl(128, 32, 3, True) <= scan_gluon.SMEM_BYTES - 1024


@pytest.mark.parametrize("stages,kslices", [(1, 4), (2, 1), (2, 2)])
def test_the_mla_kernels_shared_memory_estimate_matches_the_compiler(stages, kslices):
    """The MLA decode / prefill takes as many kv stages as smem_bytes says fit (max_stages): the
    estimate must be what the compiler allocates, to within the 1 KB it keeps in reserve, and two
    stages must fit at every slicing."""
    dg = _host_module("mla", "decode_gluon")
    p, rows = report("decode_gl", json.dumps({"STAGES": stages, "KS": kslices}))
    assert p.returncode == 0, p.stderr[-2000:]
    est = dg.smem_bytes(512, 64, stages, kslices)
    assert abs(rows[0]["shared"] - est) <= 1024, (rows[0]["shared"], est)
    assert rows[0]["shared"] <= dg.SMEM_BYTES
    assert dg.max_stages(512, 64, kslices) == 2


@pytest.mark.parametrize("stages", [1, 2])
def test_q_columns_held_in_registers_at_most_fit_without_spilling(stages):
    """kernel.gl_qreg holds up to QREG_MAX[stages] of q's columns in registers where a split refills
    its stages: that many compile without spills, in the decode (SPLIT) and the prefill form."""
    mk = _host_module("mla", "kernel")
    for split in (True, False):
        over = {"STAGES": stages, "KS": 1, "SPLIT": split, "QREG": mk.QREG_MAX[stages]}
        p, rows = report("decode_gl", json.dumps(over))
        assert p.returncode == 0, p.stderr[-2000:]
        assert rows[0]["stack"] == 0 and rows[0]["registers"] <= 255, (over, rows[0])
