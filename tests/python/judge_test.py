"""The judge against candidates that take over their own process: the evaluation child's claim is
forged from inside (ctypes reaches the child's objects past the static rules), and the judge's
own candidate process lies on its channel back (deep JSON, oversized or relabelled outputs, the
inputs echoed). Each must end with `correct: false` and a `result_unconfirmed` violation, the
judge's process unharmed; an honest kernel must still pass. Runs through Triton's interpreter."""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, needs_cuda

from harness.runner import evaluate


def run(task, d):
    return evaluate(task, d, quick=True, force_cpu=True, seed=4242)


def rules(res):
    return {v["rule"] for v in res["violation_details"]}


def test_a_claim_forged_inside_the_child_is_not_confirmed(kda_task, exploit_dir):
    res = run(kda_task, exploit_dir("forged_claim"))
    assert res["correct"] is False and res["score"] is None
    assert "result_unconfirmed" in rules(res)
    assert "RMS-relative error 1.000e+00" in res["log"]
    assert res["details"][0]["ok"] is False


@pytest.mark.parametrize(
    "mode,said",
    [
        ("deep", "malformed JSON"),
        ("oversize", "sent too much"),
        ("relabel", "do not fill shape"),
        ("copy_inputs", "RMS-relative error"),
    ],
)
def test_a_lying_candidate_process_cannot_pass_the_judge(kda_task, exploit_dir, mode, said):
    d = exploit_dir("forged_reply")
    (d / "mode.txt").write_text(mode)
    res = run(kda_task, d)
    assert res["correct"] is False
    assert "result_unconfirmed" in rules(res)
    assert said in res["log"]


def test_an_honest_kernel_is_confirmed(kda_task, tmp_path):
    import shutil

    d = tmp_path / "starter"
    shutil.copytree(REPO / "tasks" / "kda" / "starter", d)
    res = run(kda_task, d)
    assert res["correct"] is True and not res["violation_details"]


def test_the_evaluator_process_is_its_candidates_reaper_and_not_dumpable(kda_task, tmp_path):
    """Through the real command line: what a candidate's process could use to reach the process
    that writes the result (its /proc fds) is closed, and a process it leaves behind is killed."""
    d = tmp_path / "probe"
    d.mkdir()
    (d / "kernel.py").write_text(
        (REPO / "tests" / "python" / "exploits" / "forged_claim" / "kernel.py").read_text()
        + """
import os
import subprocess
import sys
from pathlib import Path

_parent = os.getppid()
_log = Path(__file__).with_name("probe.json")
try:
    with open(f"/proc/{_parent}/fd/1", "w") as _out:  # the evaluator's stdout: where results go
        _out.write("")
    _fds = "writable"
except OSError as e:
    _fds = type(e).__name__
_daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
)
_log.write_text('{"fds": "%s", "daemon": %d}' % (_fds, _daemon.pid))
"""
    )
    cmd = [sys.executable, "-m", "harness", "eval", "--task-dir", str(REPO / "tasks" / "kda"), "--candidate", str(d)]
    cmd += ["--cpu", "--quick", "--seed", "1"]
    if os.geteuid() == 0:  # as in the sandbox run as root: uid 0 without capabilities
        cmd = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", *cmd]
    out = subprocess.run(
        cmd,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["correct"] is False
    probe = json.loads((d / "probe.json").read_text())
    assert probe["fds"] == "PermissionError"
    with pytest.raises(ProcessLookupError):
        os.kill(probe["daemon"], 0)


@needs_cuda
def test_an_honest_kernel_is_confirmed_with_its_outside_time_on_a_gpu(kda_task, tmp_path):
    import shutil

    d = tmp_path / "ours"
    shutil.copytree(REPO / "kernels" / "kda", d)
    res = evaluate(kda_task, d, seed=4242)
    assert res["correct"] is True, res["log"]
    assert "timing_unconfirmed" not in rules(res), res["log"]
    timed = [x for x in res["details"] if x.get("ms") is not None]
    assert timed and all(x.get("outside_ms") is not None for x in timed)
    assert res["score"] is not None


@needs_cuda
def test_times_forged_inside_the_child_are_refused_on_a_gpu(kda_task, exploit_dir):
    res = evaluate(kda_task, exploit_dir("forged_time"), seed=4242)
    assert "timing_unconfirmed" in rules(res), res["log"]
    assert res["score"] is None
