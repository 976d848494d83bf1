"""`profile`: Nsight Compute's raw CSV reduced to the side-by-side view and the full report, the
diagnosis lines, and the fallback to kernel times that says why (all without a GPU).

The fixtures under fixtures/ are ncu's own output of `python -m harness profile` on a GPU
(MARATHON_NCU_CSV kept it), beside the profile's JSON of the same run (its `captured` names the
machine; its whole report is left out, rebuilt here from the CSV), for kernels/mla at the
MLA task's headline shape and kernels/kda at the KDA task's: the candidate's kernels, the marker,
the baseline's kernels.
"""

import json
import subprocess
from pathlib import Path

import pytest

from harness import ncu_report as nr
from harness import profile as prof
from harness.ceilings import floor_ms

FIX = Path(__file__).resolve().parent / "fixtures"
CAPTURED = sorted(FIX.glob("ncu_*.csv"))


def _result(csv_path: Path) -> dict:
    """The profile's JSON of the same run (the child's facts of the call: floor, device, baseline)."""
    return json.loads(
        csv_path.with_name(csv_path.name.replace("ncu_", "profile_", 1).replace(".csv", ".json")).read_text()
    )


@pytest.fixture(params=CAPTURED, ids=[p.stem for p in CAPTURED])
def captured(request):
    text = request.param.read_text()
    return request.param, nr.parse_raw_csv(text), _result(request.param)


def test_fixtures_were_captured():
    assert {p.stem.split("_")[1] for p in CAPTURED} >= {"mla", "kda"}


def test_raw_csv_splits_into_the_candidates_and_the_baselines_launches(captured):
    path, launches, res = captured
    cand, base, marked = nr.split_at_marker(launches)
    assert marked and cand and base
    names = {k.name for k in cand}
    if "mla" in path.name:
        assert any("_mla_decode_gl" in n for n in names), names
    else:
        assert any("kda" in n for n in names), names
    assert not any(nr.MARKER in k.name for k in base)


def test_every_curated_fact_is_read_for_the_top_kernels(captured):
    _, launches, _ = captured
    cand, base, _ = nr.split_at_marker(launches)
    for side in (cand, base):
        top = nr.fold(side)[0]
        f = top.facts
        assert f["ns"] > 0
        for key in ("sm_pct", "mem_pct", "dram_pct", "dram_read", "dram_write", "dram_bps", "l1_hit", "l2_hit"):
            assert f[key] is not None, (top.name, key)
        for key in ("occ", "occ_theory", "regs", "smem", "block", "grid", "limiter", "spill_bytes", "inst"):
            assert f[key] is not None, (top.name, key)
        assert f["stalls"] and all(s not in ("selected",) for s in f["stalls"]), f["stalls"]
        shares = nr.top_stalls(f["stalls"])
        assert len(shares) == 3 and abs(sum(x for _, x in nr.top_stalls(f["stalls"], 99)) - 1) < 1e-6


def test_the_view_is_side_by_side_compact_and_diagnoses_each_top_kernel(captured):
    path, launches, res = captured
    lines = res["lines"]
    text = "\n".join(lines)
    assert len(text.encode()) <= prof.COMPACT_MAX, len(text)
    assert lines[0].startswith("ncu, one call each at ") and "(headline)" in lines[0]
    head = next(ln for ln in lines if ln.lstrip().startswith("candidate") and "baseline" in ln)
    assert head.index("candidate") < head.index("baseline")
    for row in (
        "time (all kernels)",
        "DRAM read / write",
        "bytes vs floor",
        "SOL SM / memory",
        "DRAM BW",
        "L1 / L2 hit",
    ):
        assert any(ln.lstrip().startswith(row) for ln in lines), row
    for row in ("occupancy ach/theo", "regs, smem, block", "spills", "tensor pipe", "top stalls", "instructions"):
        assert any(ln.lstrip().startswith(row) for ln in lines), row
    diag = [ln for ln in lines if ln.startswith(" ") and ": " in ln and "-bound" in ln]
    assert len(diag) >= 2, text  # at least one a side
    assert any("compiled (Triton metadata" in ln for ln in lines)
    # The same lines come out of the parser again (the view is a function of the counters).
    again = prof._from_counters({}, res["child"], launches, "ncu")
    assert again["lines"] == lines


def test_the_full_report_holds_every_launch_and_every_counter(captured):
    _, launches, res = captured
    report = prof._from_counters({}, res["child"], launches, "ncu")["report"]
    assert report.startswith(res["lines"][0])
    for k in launches:
        assert f"-- launch {k.id}: {k.name}" in report
    assert "gpu__time_duration.sum [" in report and "== every kernel" in report


def test_units_go_to_base_units():
    assert nr.unit_factor("usecond") == 1e3 and nr.unit_factor("msecond") == 1e6
    assert nr.unit_factor("Mbyte") == 1e6 and nr.unit_factor("Kbyte/block") == 1e3
    assert nr.unit_factor("Tbyte/second") == 1e12 and nr.unit_factor("Gbyte/second") == 1e9
    assert nr.unit_factor("%") == 1 and nr.unit_factor("register/thread") == 1


def _kernel(**facts) -> nr.Kernel:
    base = dict(ns=10_000.0, dram_read=None, dram_write=None, stalls={}, limiter=None)
    return nr.Kernel("k", 1, base | facts)


def test_diagnosis_names_the_limit_and_the_floor():
    mem = _kernel(dram_pct=91.0, mem_pct=92.0, sm_pct=20.0, dram_read=21e6, dram_write=0.0)
    assert nr.diagnose(mem, floor_bytes=10e6) == (
        "DRAM 91% of peak: memory-bound; bytes moved 2.1x the task's floor: cut the traffic"
    )
    comp = _kernel(sm_pct=83.0, mem_pct=30.0, dram_pct=10.0, tensor_pct=71.0)
    assert nr.diagnose(comp) == "SM 83% of peak: compute-bound, tensor pipe 71%"
    small = _kernel(sm_pct=5.0, mem_pct=20.0, grid=64.0, sms=132.0, stalls={"barrier": 3.0, "wait": 1.0})
    assert nr.diagnose(small) == (
        "latency-bound (memory 20%, SM 5% of peak); 64 blocks for 132 SMs; top stall barrier 75%"
    )
    capped = _kernel(sm_pct=30.0, mem_pct=40.0, occ=12.0, occ_theory=12.5, limiter="registers", spill_bytes=4096.0)
    assert nr.diagnose(capped) == (
        "latency-bound (memory 40%, SM 30% of peak); spills 4.1 KB to local memory; occupancy capped at 12% by registers"
    )


def test_a_candidate_that_launches_the_marker_itself_only_moves_its_own_launches():
    ks = [nr.Launch(i, n, {}, {}) for i, n in enumerate(["a", nr.MARKER, "b", nr.MARKER, "base"])]
    cand, base, marked = nr.split_at_marker(ks)
    assert [k.name for k in cand] == ["a", nr.MARKER, "b"] and [k.name for k in base] == ["base"] and marked


def test_floor_is_bound_by_bytes_or_flops_whichever_is_slower():
    ceil = {"copy_TBps": 4.0, "bf16_TFLOPs": 700.0}
    assert abs(floor_ms({"bytes": 4e9, "flops": 0}, ceil) - 1.0) < 1e-9
    assert abs(floor_ms({"bytes": 4e6, "flops": 7e12}, ceil) - 10.0) < 1e-9


def test_evaluator_command_answers_a_profile_request_in_the_result_schema():
    # The runner's `profile` tool runs the task's evaluator command with MARATHON_PROFILE=1.
    import os
    import sys

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, MARATHON_PROFILE="1", CUDA_VISIBLE_DEVICES="")  # no GPU: a clear refusal
    p = subprocess.run(
        [sys.executable, str(repo / "harness" / "__main__.py"), "eval", "--task-dir", str(repo / "tasks" / "mla")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["schema_version"] == 1 and r["score"] is None and r["correct"] is False
    assert r["profile_ok"] is False and isinstance(r["profile"], list)
    assert "not an evaluation" in r["log"] and "needs a GPU" in r["log"]


CHILD_FALLBACK = {
    "status": "ok",
    "shape": "B1 T8192 H32 D128",
    "headline": True,
    "device": "NVIDIA H100 80GB HBM3",
    "baseline": "fla_safe_gate",
    "kernel_times": {
        "candidate": [["_kda_intra", 210.0, 1], ["_kda_scan", 150.0, 1]],
        "baseline": [["chunk_kda_fwd_kernel", 600.0, 2]],
    },
    "compiled": [{"name": "_kda_intra", "regs": 168, "stack": 128, "shared": 90000, "num_warps": 4, "num_stages": 2}],
}


def _fake_launches(monkeypatch, ncu_stdout=b"", ncu_stderr=b"", ncu_runs_child=False, timeout=False, csv_on=None):
    """The profiler's launches scripted: `ncu` (which may not run the child at all, or run past its
    limit) and the plain child, which answers with torch.profiler's kernel times."""
    calls = []

    def launch(cmd, req, wd, env, timeout_s):
        calls.append(cmd)
        under_ncu = cmd[0].endswith("ncu")
        if under_ncu and timeout:
            return prof._Ran(-9, b"", b"", True), None
        out = ncu_stdout
        if under_ncu and csv_on is not None:
            out = csv_on(cmd)
        p = prof._Ran(1 if under_ncu else 0, out if under_ncu else b"", ncu_stderr, False)
        if under_ncu and not ncu_runs_child:
            return p, None
        child = dict(CHILD_FALLBACK, nonce=req["nonce"])
        return p, child

    monkeypatch.setattr(prof, "_gpu_present", lambda: True)
    monkeypatch.setattr(prof, "find_ncu", lambda: "/usr/local/cuda/bin/ncu")
    monkeypatch.setattr(prof, "_launch", launch)
    return calls


def test_an_ncu_that_cannot_run_falls_back_to_kernel_times_and_says_why(monkeypatch, kda_task):
    # CUDA's `ncu` wrapper fails like this where the nsight-compute folder is not there (a sandbox
    # that does not bind it).
    missing = b"ERROR : nsight-compute directory is not found under /usr/local/cuda/bin/../ or /opt/nvidia.\n"
    calls = _fake_launches(monkeypatch, ncu_stderr=missing)
    res = prof.profile(kda_task, kda_task.dir / "starter")
    assert len(calls) == 2 and calls[0][0] == "/usr/local/cuda/bin/ncu" and "python" in calls[1][0]
    assert res["ok"] is True and res["counters"] is False, res["log"]
    assert res["lines"][0] == (
        "Nsight Compute at /usr/local/cuda/bin/ncu gave no counters (ERROR : nsight-compute directory is not found "
        "under /usr/local/cuda/bin/../ or /opt/nvidia.): kernel times from torch.profiler only (no counters)"
    )
    text = "\n".join(res["lines"])
    assert "candidate: 360.0 us in 2 kernels" in text and "baseline fla_safe_gate: 600.0 us in 1 kernels" in text
    assert " _kda_intra: 168 regs, 128 B stack/thread (spills)" in text


def test_ncu_without_counter_permission_falls_back_too(monkeypatch, kda_task):
    denied = (
        b"==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n"
    )
    calls = _fake_launches(monkeypatch, ncu_stdout=denied, ncu_runs_child=True)
    res = prof.profile(kda_task, kda_task.dir / "starter")
    assert len(calls) == 2 and res["ok"] is True
    assert "ERR_NVGPUCTRPERM" in res["lines"][0] and res["lines"][0].endswith("torch.profiler only (no counters)")


def test_ncu_past_its_own_limit_falls_back_and_says_so(monkeypatch, kda_task):
    monkeypatch.setenv("MARATHON_NCU_TIMEOUT_S", "45")
    _fake_launches(monkeypatch, timeout=True)
    res = prof.profile(kda_task, kda_task.dir / "starter")
    assert res["ok"] is True
    assert res["lines"][0].startswith("Nsight Compute did not finish within its 45 s limit: kernel times")


def test_no_ncu_at_all_is_said(monkeypatch, kda_task):
    _fake_launches(monkeypatch)
    monkeypatch.setattr(prof, "find_ncu", lambda: None)
    res = prof.profile(kda_task, kda_task.dir / "starter")
    assert res["lines"][0].startswith(
        "no Nsight Compute (ncu) found: not on PATH, not under /opt/nvidia/nsight-compute"
    )


def test_a_counter_ncu_does_not_know_is_dropped_and_ncu_run_again(monkeypatch, kda_task):
    csv_text = next(iter(CAPTURED)).read_bytes() if CAPTURED else b""

    def answer(cmd):
        if "--metrics" in cmd:
            return b"==ERROR== Failed to find metric regex:^dram__bytes_read.sum$\n"
        return csv_text

    calls = _fake_launches(monkeypatch, ncu_runs_child=True, csv_on=answer)
    res = prof.profile(kda_task, kda_task.dir / "starter")
    assert len(calls) == 2 and "--metrics" in calls[0] and "--metrics" not in calls[1]
    assert res["ok"] is True and res["counters"] is True, res["log"]


def test_the_ncu_command_asks_for_the_sections_and_counters_and_one_range():
    cmd = prof.ncu_command("/opt/nvidia/nsight-compute/2025.3.1/ncu")
    assert cmd[:7] == [
        "/opt/nvidia/nsight-compute/2025.3.1/ncu",
        "--clock-control",
        "none",
        "--profile-from-start",
        "off",
        "--target-processes",
        "all",
    ]
    for s in nr.SECTIONS:
        assert s in cmd
    assert cmd[cmd.index("--metrics") + 1] == ",".join(nr.EXTRA_METRICS)
    assert cmd[-2:] == ["-m", "harness.child"]
