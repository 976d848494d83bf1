"""Each task's reference against its starter kernel, through the real evaluator on the CPU."""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

from harness.runner import evaluate
from harness.taskspec import load_task


@pytest.mark.parametrize("task", ["kda", "mla", "mla-prefill"])
def test_starter_is_correct_on_every_small_shape(task):
    t = load_task(REPO / "tasks" / task)
    res = evaluate(t, REPO / "tasks" / task / "starter", seed=1234, force_cpu=True)
    assert res["status"] == "ok", res["log"]
    assert res["correct"] is True, res["log"]
    assert res["violations"] == []
    assert len(res["details"]) >= 2 and all(d["ok"] for d in res["details"])
    assert res["score"] is None  # no GPU: no timing
    assert "needs a GPU" in res["log"]


def test_evaluator_command_prints_one_json_object_and_exits_zero(tmp_path):
    # As the runner starts it: in the task folder, candidate and seed from the environment.
    task_dir = REPO / "tasks" / "mla"
    env = dict(os.environ, MARATHON_CANDIDATE_DIR=str(task_dir / "starter"), MARATHON_TASK_DIR=str(task_dir))
    env["MARATHON_EVAL_SEED"] = "77"
    p = subprocess.run(
        [sys.executable, str(REPO / "harness" / "__main__.py"), "eval", "--cpu", "--quick"],
        cwd=task_dir,
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    res = json.loads(p.stdout.decode().strip().splitlines()[-1])
    assert res["schema_version"] == 1 and res["correct"] is True and res["seed"] == 77
    for key in ("score", "metrics", "details", "violations", "log"):
        assert key in res


def test_bad_task_folder_is_an_evaluator_error(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "harness", "eval", "--task-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 2 and b"task.toml" in p.stderr


def test_starter_declares_knobs():
    for task in ("kda", "mla", "mla-prefill"):
        src = (REPO / "tasks" / task / "starter" / "kernel.py").read_text()
        assert src.count("# marathon:knob [") >= 2, task
