"""The evaluator contract in one place: harness/result.schema.json.

The harness's dataclass names exactly the schema's properties; what the harness and the CPU task's
evaluator print validates against the schema; the baseline is at the top level (where the runtime
reads it), never only inside `metrics`; the runtime's GPU-style fixture is what the harness writes.
"""

import dataclasses
import importlib.util
import json

import jsonschema
import pytest
from conftest import REPO

from harness import runner
from harness.cli import profile_as_result
from harness.result import REQUIRED, EvalResult, schema
from harness.taskspec import load_task

GPU_FIXTURE = REPO / "tests/fixtures/harness_result_gpu.json"


def validate(result: dict) -> None:
    jsonschema.validate(result, schema(), cls=jsonschema.Draft202012Validator)


def test_dataclass_fields_are_the_schema_properties():
    names = [f.name for f in dataclasses.fields(EvalResult)]
    assert sorted(names) == sorted(schema()["properties"])
    assert sorted(schema()["required"]) == sorted(REQUIRED)


def test_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_a_result_missing_a_required_field_does_not_validate():
    bad = EvalResult(correct=True, score=2.0).to_dict()
    del bad["correct"]
    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_a_field_the_contract_does_not_name_is_refused_by_the_dataclass():
    with pytest.raises(KeyError, match="baseline_scor"):
        EvalResult.from_dict({"correct": True, "score": 1.0, "baseline_scor": 1.0})


def _fake_child(*_args, **_kwargs):
    """What the child of a correct GPU evaluation reports (harness/child.py), without a GPU."""
    child = {
        "status": "ok",
        "correct": True,
        "device": "NVIDIA H200",
        "headline": "b4-s4096",
        "speedup_geomean": 1.8,
        "timing": "CUDA events over CUDA-graph replay, L2 flushed, inputs rotated, median",
        "details": [
            {
                "shape": "b4-s4096",
                "ok": True,
                "rel_err": {"o": 1e-3},
                "ms": 0.05,
                "baseline_ms": 0.09,
                "speedup": 1.8,
                "floor_ms": 0.02,
                "floor_fraction": 0.4,
            }
        ],
        "violations": [],
        "log": [],
    }
    return child, "exited", ""


def gpu_style_result(monkeypatch, tmp_path) -> dict:
    monkeypatch.setattr(runner, "run_child", _fake_child)
    task = load_task(REPO / "tasks/mla")
    return runner.evaluate(task, REPO / "tasks/mla/starter", seed=7)


def test_harness_gpu_result_validates_and_puts_the_baseline_at_the_top(monkeypatch, tmp_path):
    res = gpu_style_result(monkeypatch, tmp_path)
    validate(res)
    assert res["correct"] is True and res["score"] == pytest.approx(1.8)
    assert res["baseline_score"] == 1.0
    assert "baseline_score" not in res["metrics"], "the baseline belongs at the top level"


def test_runtime_gpu_fixture_has_the_shape_the_harness_writes(monkeypatch, tmp_path):
    res = gpu_style_result(monkeypatch, tmp_path)
    fixture = json.loads(GPU_FIXTURE.read_text())
    validate(fixture)
    assert sorted(fixture) == sorted(res)
    assert sorted(fixture["metrics"]) == sorted(res["metrics"])
    assert fixture["baseline_score"] == res["baseline_score"]


def test_harness_results_that_end_early_validate(tmp_path):
    task = load_task(REPO / "tasks/mla")
    missing = runner.evaluate(task, tmp_path / "no-such-candidate", seed=1)
    validate(missing)
    assert missing["status"] == "candidate_error" and missing["correct"] is False
    validate(profile_as_result({"task": "mla", "lines": ["k: 1.0 us"], "ok": True, "log": ""}))


def test_cpu_matmul_result_validates_with_its_baseline_at_the_top():
    spec = importlib.util.spec_from_file_location("cpu_eval", REPO / "tasks/cpu-matmul/evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ok = mod.result(True, score=3.2, metrics={"candidate_ms": 1.0}, log="ok", baseline_score=1.0)
    ok["seed"] = 5
    validate(ok)
    assert ok["baseline_score"] == 1.0
    validate(mod.result(False, log="wrong result"))


def test_cpu_matmul_evaluator_writes_only_contract_fields():
    spec = importlib.util.spec_from_file_location("cpu_eval2", REPO / "tasks/cpu-matmul/evaluate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert set(mod.result(True, score=1.0, baseline_score=1.0)) <= set(schema()["properties"])


def test_repo_eval_results_validate_with_their_baseline_at_the_top():
    """The generic evaluator of repository tasks is standalone (it is copied into the tasks
    `marathon init` writes) and spells the result itself: what it prints must be the contract."""
    spec = importlib.util.spec_from_file_location("repo_eval", REPO / "harness/repo_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ok = mod.result(True, score=2.5, metrics={"runs": 3}, log="ok", baseline_score=4.0)
    ok["python"] = "/usr/bin/python3"  # what main() adds
    validate(ok)
    assert ok["baseline_score"] == 4.0 and "baseline_score" not in ok["metrics"]
    assert set(ok) <= set(schema()["properties"])
    assert EvalResult.from_dict(ok).to_dict()["baseline_score"] == 4.0
    failed = mod.result(False, log="the check failed")
    validate(failed)
    assert set(failed) <= set(schema()["properties"])
