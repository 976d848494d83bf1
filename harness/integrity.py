"""Detects a candidate that patches what the harness measures with (timer tampering and the like).

Before the candidate is imported, the harness records the identity of every attribute of the
objects it relies on (torch.cuda.Event and its methods, time, torch.cuda synchronisation and
graphs, the profiler, the tensor methods the comparison uses, Triton's launch path...). After the
import and after each call it compares: any attribute that now points elsewhere is a violation.
The harness also keeps its own references to the originals, so a patch cannot change a
measurement that was already taken; this check makes the attempt visible.
"""

from __future__ import annotations

import time
import types


def _watched():
    import math
    import statistics

    import torch

    objs = {
        "time": time,
        "math": math,
        "statistics": statistics,
        "torch": torch,
        "torch.Tensor": torch.Tensor,
        "torch.cuda": torch.cuda,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.CUDAGraph": torch.cuda.CUDAGraph,
        "torch.cuda.Stream": torch.cuda.Stream,
        "torch.autograd.profiler": torch.autograd.profiler,
        "torch.profiler": torch.profiler,
        "torch.linalg": torch.linalg,
        "torch.utils.deterministic": torch.utils.deterministic,
    }
    try:
        import triton
        import triton.runtime.jit as tjit

        objs["triton.runtime.jit.JITFunction"] = tjit.JITFunction
        objs["triton.testing"] = __import__("triton.testing", fromlist=["x"])
        objs["triton"] = triton
        try:
            import triton.runtime.interpreter as tint

            objs["triton.runtime.interpreter.InterpretedFunction"] = tint.InterpretedFunction
        except Exception:  # noqa: BLE001 - the interpreter module is optional
            pass
    except ImportError:
        pass
    return objs


def _attrs(obj) -> dict[str, int]:
    out = {}
    d = getattr(obj, "__dict__", {})
    for k in list(d.keys()):
        v = d[k]
        # Functions, classes, descriptors and modules only: plain data (flags, counters) may change.
        if callable(v) or isinstance(v, (types.ModuleType, staticmethod, classmethod, property)):
            out[k] = id(v)
    return out


class Integrity:
    """Snapshot of attribute identities; ``changed()`` lists what differs now."""

    def __init__(self):
        self._objs = _watched()
        self._snap = {name: _attrs(o) for name, o in self._objs.items()}
        # Keep the original objects alive so their ids cannot be reused by a replacement.
        self._keep = {name: dict(getattr(o, "__dict__", {})) for name, o in self._objs.items()}

    def changed(self) -> list[str]:
        out = []
        for name, obj in self._objs.items():
            now = getattr(obj, "__dict__", {})
            for k, ident in self._snap[name].items():
                if k not in now:
                    out.append(f"{name}.{k} was deleted")
                elif id(now[k]) != ident:
                    out.append(f"{name}.{k} was replaced")
        return out
