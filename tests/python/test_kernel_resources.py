"""What the compiler makes of the KDA kernels for an H200 (sm_90a), checked on any machine.

The default knobs were chosen on the GPU for their occupancy: the intra kernel capped at 168
registers runs 3 blocks of 4 warps per SM, and neither it nor the scan may spill. A change to the
kernels that breaks this shows here, without a GPU (Triton's own ptxas compiles them offline).
"""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("sass_report", ROOT / "bench" / "sass_report.py")
sass_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sass_report)

REGS_PER_SM = 65536


@pytest.mark.parametrize("name,blocks_per_sm", [("intra", 3), ("scan", 1), ("solve", 4)])
def test_kda_kernels_fit_their_occupancy(name, blocks_per_sm):
    ck = sass_report.compile_kernel(name)
    r = sass_report.resources(ck)
    threads = 32 * ck.metadata.num_warps
    assert r["registers"] * threads * blocks_per_sm <= REGS_PER_SM, r
    assert r["shared"] * blocks_per_sm <= 227 * 1024, r
    assert r["instructions"] > 100, r  # a real kernel body was compiled


@pytest.mark.parametrize("name", ["intra", "scan"])
def test_kda_kernels_do_not_spill(name):
    r = sass_report.resources(sass_report.compile_kernel(name))
    assert r["stack"] == 0, f"{name} spills {r['stack']} bytes to local memory: {r}"


def test_unknown_override_is_refused():
    with pytest.raises(SystemExit, match="no constexpr"):
        sass_report.compile_kernel("scan", {"NOT_A_KNOB": 1})
