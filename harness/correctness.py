"""Comparing a candidate's outputs with the float32 reference, and the output-integrity checks.

- ``rel_err``: RMS-relative error ||out - ref||_2 / ||ref||_2 in float64; non-finite output is inf.
- ``check_outputs``: shape, dtype, every element written (the allocator was poisoned with NaN),
  no NaN/Inf, error within the task's tolerance.
- ``aliasing``: an output that shares memory with an input.
"""

from __future__ import annotations

import torch

from .static_check import Violation


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    o = out.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    if not bool(torch.isfinite(o).all()):
        return float("inf")
    denom = float(r.norm())
    num = float((o - r).norm())
    if denom == 0.0:
        return 0.0 if num == 0.0 else float("inf")
    return num / denom


def check_outputs(outs, refs, expected, names, tolerance) -> tuple[bool, dict, list[str]]:
    """(ok, {name: rel_err}, problems). ``expected`` holds (shape, dtype) or None per output."""
    ok, errs, problems = True, {}, []
    for name, out, ref, exp in zip(names, outs, refs, expected):
        if exp is None:
            continue
        shape, dtype = exp
        if not isinstance(out, torch.Tensor):
            ok = False
            problems.append(f"{name}: expected a tensor, got {type(out).__name__}")
            continue
        if tuple(out.shape) != tuple(shape):
            ok = False
            problems.append(f"{name}: shape {tuple(out.shape)}, expected {tuple(shape)}")
            continue
        if out.dtype != dtype:
            ok = False
            problems.append(f"{name}: dtype {out.dtype}, expected {dtype}")
            continue
        bad = ~torch.isfinite(out.detach().float())
        nbad = int(bad.sum())
        if nbad:
            ok = False
            errs[name] = float("inf")
            problems.append(
                f"{name}: {nbad} of {out.numel()} elements are NaN/Inf (not written, or overflow): "
                f"first at index {tuple(int(i) for i in bad.nonzero()[0].tolist())}"
            )
            continue
        e = rel_err(out, ref)
        errs[name] = e
        if not e <= tolerance[name]:
            ok = False
            problems.append(f"{name}: RMS-relative error {e:.3e} > tolerance {tolerance[name]:.1e}")
    return ok, errs, problems


def _span(t: torch.Tensor) -> tuple[int, int, int] | None:
    if not isinstance(t, torch.Tensor) or t.numel() == 0:
        return None
    st = t.untyped_storage()
    start = st.data_ptr()
    return (t.device.index or 0, start, start + st.nbytes())


def aliasing(outs, inputs: dict) -> list[Violation]:
    out: list[Violation] = []
    spans_in = {k: _span(v) for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    for i, o in enumerate(outs):
        so = _span(o) if isinstance(o, torch.Tensor) else None
        if so is None:
            continue
        for k, si in spans_in.items():
            if si and si[0] == so[0] and so[1] < si[2] and si[1] < so[2]:
                out.append(Violation("output_aliases_input", f"output {i} shares memory with input '{k}'"))
    for i in range(len(outs)):
        for j in range(i + 1, len(outs)):
            a, b = _span(outs[i]), _span(outs[j])
            if a and b and a[0] == b[0] and a[1] < b[2] and b[1] < a[2]:
                out.append(Violation("output_aliases_input", f"outputs {i} and {j} share memory"))
    return out


def snapshot(inputs: dict) -> dict:
    return {k: v.detach().clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)}


def modified_inputs(inputs: dict, snap: dict) -> list[str]:
    return [k for k, v in snap.items() if not torch.equal(inputs[k], v)]
