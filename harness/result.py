"""The evaluator's one JSON object (docs/evaluation.md) as the harness writes it.

``EvalResult`` has exactly the properties of ``harness/result.schema.json`` (a test checks it), so a
field the harness writes is a field the contract names. Optional fields left at ``None`` are not
written; the required ones always are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent / "result.schema.json"
REQUIRED = ("schema_version", "correct", "score")


@dataclass
class EvalResult:
    schema_version: int = SCHEMA_VERSION
    correct: bool = False
    score: float | None = None
    metrics: dict = field(default_factory=dict)
    baseline_score: float | None = None
    details: list | dict = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    log: str = ""
    error_kind: str | None = None
    failure: str | None = None
    error: str | None = None
    figures: dict | None = None
    score_ci: dict | None = None
    seed: int | None = None
    task: str | None = None
    evaluator_version: str | None = None
    status: str | None = None
    violation_details: list[dict] | None = None
    device: str | None = None
    timing: str | None = None
    ceilings: dict | None = None
    profile: list[str] | None = None
    profile_ok: bool | None = None
    profile_report: str | None = None
    python: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> EvalResult:
        """The result held by ``d``; a key the contract does not name is an error (a typo)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise KeyError(f"result fields not in {SCHEMA_PATH.name}: {', '.join(unknown)}")
        return cls(**d)

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None or f.name in REQUIRED:
                out[f.name] = v
        return out


def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())
