"""The GPU tasks' noise stated (harness/timing.py): each timed shape reports the spread of its
repetitions, and the score's interval is built from those spreads, in the result schema."""

import math

import pytest

pytest.importorskip("torch")

from harness import timing  # noqa: E402
from harness.result import EvalResult, schema  # noqa: E402


def test_quartiles_of_the_repetitions_bracket_the_median():
    q1, q3 = timing.quartiles([5.0, 1.0, 2.0, 4.0, 3.0])
    assert (q1, q3) == (2.0, 4.0)
    assert timing.quartiles([7.0]) == (7.0, 7.0)
    assert timing.quartiles([]) == (None, None)


def test_the_score_interval_is_the_geometric_mean_of_each_shapes_quartile_speedups():
    shapes = [
        {"base_q1": 9.0, "base_q3": 11.0, "cand_q1": 0.9, "cand_q3": 1.1},  # 10x, 8.2x to 12.2x
        {"base_q1": 4.0, "base_q3": 4.0, "cand_q1": 2.0, "cand_q3": 2.0},  # 2x exactly
    ]
    ci = timing.speedup_ci(shapes)
    assert ci["low"] == pytest.approx(math.sqrt(9.0 / 1.1 * 2.0))
    assert ci["high"] == pytest.approx(math.sqrt(11.0 / 0.9 * 2.0))
    assert ci["low"] < math.sqrt(10 * 2) < ci["high"]
    assert ci["level"] == 0.5 and ci["method"]


def test_a_shape_without_its_spread_gives_no_interval():
    assert timing.speedup_ci([]) is None
    assert timing.speedup_ci([{"base_q1": 1.0, "base_q3": None, "cand_q1": 1.0, "cand_q3": 1.0}]) is None
    assert timing.speedup_ci([{"base_q1": 1.0, "base_q3": 1.0, "cand_q1": 0.0, "cand_q3": 1.0}]) is None


def test_score_ci_is_in_the_result_schema_and_the_dataclass():
    props = schema()["properties"]
    assert props["score_ci"]["required"] == ["low", "high"]
    r = EvalResult(correct=True, score=2.0, score_ci={"low": 1.8, "high": 2.3}).to_dict()
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(r, schema(), cls=jsonschema.Draft202012Validator)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**r, "score_ci": {"low": 1.8}}, schema(), cls=jsonschema.Draft202012Validator)
