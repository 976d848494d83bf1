"""Nsight Compute's raw CSV reduced to the few lines an agent acts on (parsed without a GPU)."""

from harness.ceilings import floor_ms
from harness.profile import parse_ncu_csv, summarize

CSV = """==PROF== Connected to process 123
"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum","launch__registers_per_thread","sm__warps_active.avg.pct_of_peak_sustained_active","l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum","l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
"","","usecond","Mbyte","Kbyte","register/thread","%","byte","byte","ratio","ratio"
"0","split_kernel","2.5","9.4","16","128","45.5","0","0","3.1","0.4"
"1","merge_kernel","1,000","0.2","64","40","12.0","2048","1024","0.2","1.5"
"""

CEIL = {"copy_TBps": 4.0, "bf16_TFLOPs": 700.0}


def test_ncu_csv_rows_are_read_with_units():
    rows = parse_ncu_csv(CSV)
    assert [r["name"] for r in rows] == ["split_kernel", "merge_kernel"]
    assert rows[0]["gpu__time_duration.sum"] == 2500.0  # ns
    assert rows[0]["dram__bytes_read.sum"] == 9.4e6
    assert rows[1]["gpu__time_duration.sum"] == 1e6  # "1,000" us


def test_summary_names_bandwidth_occupancy_registers_spills_and_top_stall():
    s = summarize(parse_ncu_csv(CSV), CEIL)
    first = next(line for line in s["lines"] if line.startswith("split_kernel"))
    assert "GB/s" in first and "% of measured copy" in first
    assert "occupancy 46%" in first and "128 regs/thread" in first and "no spills" in first
    assert "top stall long_scoreboard" in first
    merge = next(k for k in s["kernels"] if k["name"] == "merge_kernel")
    assert merge["spill_bytes"] == 3072 and merge["top_stall"] == "barrier"


def test_summary_reports_flop_rate_against_the_measured_matmul():
    s = summarize(parse_ncu_csv(CSV), CEIL, flops=7e9)
    assert "TFLOP/s" in s["lines"][0] and "% of measured bf16 matmul" in s["lines"][0]


def test_empty_ncu_output_gives_no_rows():
    assert parse_ncu_csv("==PROF== No kernels were profiled.\n") == []


def test_floor_is_bound_by_bytes_or_flops_whichever_is_slower():
    assert abs(floor_ms({"bytes": 4e9, "flops": 0}, CEIL) - 1.0) < 1e-9
    assert abs(floor_ms({"bytes": 4e6, "flops": 7e12}, CEIL) - 10.0) < 1e-9


def test_evaluator_command_answers_a_profile_request_in_the_result_schema(tmp_path):
    # The runner's `profile` tool runs the task's evaluator command with MARATHON_PROFILE=1.
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

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


def _fake_launches(monkeypatch, ncu_stdout=b"", ncu_stderr=b"", ncu_runs_child=False):
    """The profiler's two launches scripted: `ncu` (which may not run the child at all) and the
    plain child, which answers with torch.profiler's kernel lines."""
    import subprocess

    import harness.profile as prof

    calls = []

    def launch(cmd, req, wd, env, timeout_s):
        calls.append(cmd[0])
        under_ncu = cmd[0].endswith("ncu")
        p = subprocess.CompletedProcess(cmd, 1 if under_ncu else 0, ncu_stdout if under_ncu else b"", ncu_stderr)
        if under_ncu and not ncu_runs_child:
            return p, None
        return p, {"nonce": req["nonce"], "status": "ok", "shape": "B1 Sq1", "kernel_lines": ["split: 2.0 us"]}

    monkeypatch.setattr(prof, "_gpu_present", lambda: True)
    monkeypatch.setattr(prof, "find_ncu", lambda: "/usr/local/cuda/bin/ncu")
    monkeypatch.setattr(prof, "_launch", launch)
    return calls


def test_an_ncu_that_cannot_run_falls_back_to_torch_profiler_and_says_why(monkeypatch, kda_task):
    # A CUDA toolkit ships an `ncu` wrapper that fails when Nsight Compute itself is not installed.
    from harness.profile import profile

    missing = b"ERROR : nsight-compute directory is not found under /usr/local/cuda/bin/../ or /opt/nvidia.\n"
    calls = _fake_launches(monkeypatch, ncu_stderr=missing)
    res = profile(kda_task, kda_task.dir / "starter")
    assert len(calls) == 2 and calls[0] == "/usr/local/cuda/bin/ncu" and "python" in calls[1]
    assert res["ok"] is True, res["log"]
    assert res["lines"][0].startswith("Nsight Compute at /usr/local/cuda/bin/ncu gave no counters (ERROR : nsight")
    assert res["lines"][0].endswith("kernel times from torch.profiler only") and res["lines"][1] == "split: 2.0 us"


def test_ncu_without_counter_permission_falls_back_too(monkeypatch, kda_task):
    from harness.profile import profile

    denied = (
        b"==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n"
    )
    calls = _fake_launches(monkeypatch, ncu_stdout=denied, ncu_runs_child=True)
    res = profile(kda_task, kda_task.dir / "starter")
    assert len(calls) == 2 and res["ok"] is True
    assert "ERR_NVGPUCTRPERM" in res["lines"][0] and "torch.profiler only" in res["lines"][0]


def test_ncu_rows_are_summarised_without_a_second_run(monkeypatch, kda_task):
    from harness.profile import profile

    calls = _fake_launches(monkeypatch, ncu_stdout=CSV.encode(), ncu_runs_child=True)
    res = profile(kda_task, kda_task.dir / "starter")
    assert len(calls) == 1 and res["ok"] is True
    assert res["log"].startswith("ncu on one call of B1 Sq1") and "split_kernel" in res["log"]
