"""The static rules: each way of reaching a banned module or the harness is reported."""

from pathlib import Path

import pytest

from harness.static_check import check_dir, check_source
from harness.taskspec import load_task

BANNED = ("fla", "flash_attn", "flashinfer")


def rules(src):
    return {v.rule for v in check_source(src, "kernel.py", BANNED)}


@pytest.mark.parametrize(
    "src",
    [
        "import fla",
        "import fla.ops.kda as k",
        "from fla.ops.kda import chunk_kda",
        "from flash_attn import flash_attn_func",
        "x = 'fla.ops.kda'",
        "getattr(sys, 'modules')['flashinfer']",
    ],
)
def test_banned_module_is_reported(src):
    assert "banned_import" in rules(src)


@pytest.mark.parametrize(
    "src",
    [
        "import importlib\nimportlib.import_module(name)",
        "__import__(''.join(['f', 'l', 'a']))",
        "import builtins",
        "x = __builtins__",
        "import sys\nm = sys.modules",
        "from importlib import import_module",
    ],
)
def test_dynamic_import_is_reported(src):
    assert "dynamic_import" in rules(src)


@pytest.mark.parametrize("src", ["exec('import fla')", "eval(s)", "compile(s, 'f', 'exec')"])
def test_code_from_strings_is_reported(src):
    assert "dynamic_code" in rules(src)


@pytest.mark.parametrize("src", ["import gc", "import inspect", "import sys\nf = sys._getframe()", "x = frame.f_back"])
def test_introspection_is_reported(src):
    assert "introspection" in rules(src)


@pytest.mark.parametrize("src", ["import harness", "from harness.timing import measure"])
def test_harness_import_is_reported(src):
    assert "banned_import" in rules(src)


def test_plain_triton_kernel_is_clean():
    src = "import torch\nimport triton\nimport triton.language as tl\nimport math, os\nBLOCK = 64  # knob\n"
    assert rules(src) == set()


def test_similar_names_are_not_banned():
    assert rules("import flat\nx = 'flash'\ny = 'flatten'") == set()


def test_syntax_error_is_reported_with_line():
    v = check_source("def f(:\n", "kernel.py", BANNED)
    assert v[0].rule == "syntax" and "kernel.py:1" in v[0].reason


@pytest.mark.parametrize("task,folder", [("kda", "kda"), ("mla", "mla"), ("mla-prefill", "mla")])
def test_our_best_known_kernels_pass_their_tasks_static_rules(task, folder):
    """kernels/kda and kernels/mla are evaluated as candidates (bench/kernels.py): every file in
    them must pass the rules a submitted candidate must pass."""
    root = Path(__file__).resolve().parents[2]
    banned = load_task(root / "tasks" / task).banned
    assert [v.as_dict() for v in check_dir(root / "kernels" / folder, banned)] == []
