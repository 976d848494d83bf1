"""Shared fixtures for the harness tests: the repo's paths and a candidate-folder builder."""

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXPLOITS = Path(__file__).resolve().parent / "exploits"
sys.path.insert(0, str(REPO))
# The CPU path of every kernel: Triton's interpreter (the Makefile sets it too).
os.environ.setdefault("TRITON_INTERPRET", "1")

HAS_CUDA = False
try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    pass

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (runs on the GPU machine only)")


@pytest.fixture
def exploit_dir(tmp_path):
    """Copy tests/python/exploits/<name> to a fresh folder, with the KDA starter beside it as base.py."""

    def make(name: str, task: str = "kda") -> Path:
        d = tmp_path / name
        shutil.copytree(EXPLOITS / name, d)
        shutil.copy(REPO / "tasks" / task / "starter" / "kernel.py", d / "base.py")
        return d

    return make


@pytest.fixture(scope="session")
def kda_task():
    from harness.taskspec import load_task

    return load_task(REPO / "tasks" / "kda")
