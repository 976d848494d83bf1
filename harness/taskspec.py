"""A kernel task as the harness sees it: task.toml (rules, timeout) and the task's reference.py.

reference.py defines, for the harness: ENTRY (the candidate's function name), OUTPUT_NAMES,
TOLERANCE (RMS-relative, per output), TIME_REFERENCE, shapes(gpu), make_inputs(shape, seed,
device), call(fn, inputs), expected_outputs(inputs), reference(inputs), baselines(trusted_import),
baseline_valid(name, inputs) and floor(shape) -> {bytes, flops}.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

# Always banned, whatever the task says: third-party kernel libraries.
DEFAULT_BANNED = (
    "fla",
    "flash_linear_attention",
    "flash_mla",
    "flashinfer",
    "flash_attn",
    "flash_attn_interface",
    "flash_kda",
    "sglang",
    "vllm",
    "xformers",
    "deep_gemm",
    "tilelang",
    "thunderkittens",
    "liger_kernel",
    "apex",
    "transformer_engine",
    "cutlass",
    "torchao",
    "triton_kernels",
)
REQUIRED = (
    "ENTRY",
    "OUTPUT_NAMES",
    "TOLERANCE",
    "shapes",
    "make_inputs",
    "call",
    "expected_outputs",
    "reference",
    "baselines",
    "floor",
)


class TaskError(Exception):
    pass


@dataclasses.dataclass
class Task:
    name: str
    dir: Path
    toml: dict
    banned: tuple[str, ...]
    timeout_s: float

    @property
    def child_timeout_s(self) -> float:
        """The child's budget: leave the parent time to report before the runner's own timeout."""
        return max(5.0, self.timeout_s * 0.9 - 5.0)


def load_task(task_dir: Path) -> Task:
    task_dir = Path(task_dir).resolve()
    toml_path = task_dir / "task.toml"
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise TaskError(f"{toml_path}: no task.toml") from e
    except tomllib.TOMLDecodeError as e:
        raise TaskError(f"{toml_path}: {e}") from e
    if not (task_dir / "reference.py").is_file():
        raise TaskError(f"{task_dir / 'reference.py'}: missing (the harness needs the task's reference)")
    rules = data.get("rules", {}) or {}
    banned = tuple(dict.fromkeys(list(DEFAULT_BANNED) + list(rules.get("banned_imports", []))))
    timeout = float((data.get("evaluator", {}) or {}).get("timeout_s", 600))
    return Task(name=str(data.get("name", task_dir.name)), dir=task_dir, toml=data, banned=banned, timeout_s=timeout)


def load_reference(task_dir: Path):
    """Import the task's reference.py without registering it in sys.modules (out of a candidate's reach)."""
    path = Path(task_dir).resolve() / "reference.py"
    name = "marathon_task_reference_" + "".join(c if c.isalnum() else "_" for c in path.parent.name)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskError(f"{path}: cannot be loaded")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    missing = [x for x in REQUIRED if not hasattr(mod, x)]
    if missing:
        raise TaskError(f"{path}: missing {', '.join(missing)}")
    return mod
