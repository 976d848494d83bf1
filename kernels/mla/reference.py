"""PyTorch references for MLA (absorbed form): the float32 definition the tasks check against, and
the float64 attention with the tolerances our kernels are tested to."""

from __future__ import annotations

import torch


def mla_reference(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int = 512) -> torch.Tensor:
    """o[b, i, h] = softmax_j(scale * q[b, i, h] . kv[b, j]) . kv[b, j, :dv], float32 throughout.

    q [B, Sq, H, D], kv [B, Skv, D]. For Sq > 1 the queries are the last Sq positions of the cache:
    query i sees kv j <= Skv - Sq + i (tril with diagonal Skv - Sq); Sq == Skv is causal prefill.
    Returns float32 [B, Sq, H, dv].
    """
    qf, kvf = q.float(), kv.float()
    s = torch.einsum("bqhd,bkd->bhqk", qf, kvf) * scale
    Sq, Skv = q.shape[1], kv.shape[1]
    if Sq > 1:
        visible = torch.ones(Sq, Skv, dtype=torch.bool, device=q.device).tril(diagonal=Skv - Sq)
        s = s.masked_fill(~visible, float("-inf"))
    p = s.softmax(-1)
    return torch.einsum("bhqk,bkd->bqhd", p, kvf[..., :dv])


def mla_reference_rows(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int, rows: torch.Tensor) -> torch.Tensor:
    """The reference for the query positions `rows` only (for long prefill checks); float32."""
    Sq, Skv = q.shape[1], kv.shape[1]
    qf = q[:, rows].float()
    kvf = kv.float()
    s = torch.einsum("bqhd,bkd->bhqk", qf, kvf) * scale
    limit = (Skv - Sq + rows.to(q.device))[:, None]
    visible = torch.arange(Skv, device=q.device)[None, :] <= limit
    s = s.masked_fill(~visible, float("-inf"))
    return torch.einsum("bhqk,bkd->bqhd", s.softmax(-1), kvf[..., :dv])


def rms_rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref||_2 / ||ref||_2 in float32; NaN/Inf in out give inf."""
    out = out.float()
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out - ref.float()).norm() / ref.float().norm()).item()


# The tolerances of our kernels (tests/python/test_kernels_mla.py, test_mla_families.py), the same
# on the GPU and in Triton's interpreter, against the float64 attention of the same bf16 inputs.
# Our kernels round to bf16, to nearest, at most three times on the way to an element of o: the
# softmax weights p before `p . V`, the split partials (decode) and o itself. Each rounding moves a
# value by at most U = 2^-8 of it, so |o - ref| <= U (|ref| + 2 A) elementwise, A = sum_j P_j |v_j|
# (the weights applied to |V|); float32 arithmetic adds far less (ATOL covers it). The RMS-relative
# and cosine limits sit above what those roundings give (1.2e-3 to 2.7e-3 and at most 3.6e-6 in
# the interpreter) and below what truncating instead of rounding gives (up to 7.9e-3 and 3.1e-5).
# The tasks' own check is looser (RMS-relative 1e-2): it is a contract for any candidate.
U = 2.0**-8
ATOL = 1e-5
RMS_TOL = 4e-3
COS_TOL = 1e-5


def mla_reference_f64(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int = 512):
    """(o, A) in float64: the attention of mla_reference, and A = softmax weights . |kv[..., :dv]|
    (the bound's scale: what an element of o is a weighted sum of)."""
    qd, kvd = q.double(), kv.double()
    s = torch.einsum("bqhd,bkd->bhqk", qd, kvd) * scale
    Sq, Skv = q.shape[1], kv.shape[1]
    visible = torch.ones(Sq, Skv, dtype=torch.bool, device=q.device).tril(diagonal=Skv - Sq)
    p = s.masked_fill(~visible, float("-inf")).softmax(-1)
    v = kvd[..., :dv]
    return torch.einsum("bhqk,bkd->bqhd", p, v), torch.einsum("bhqk,bkd->bqhd", p, v.abs())


def errors(out: torch.Tensor, ref: torch.Tensor, weight: torch.Tensor) -> dict:
    """out against the float64 reference (ref, weight) of mla_reference_f64: RMS-relative error,
    cosine difference 1 - 2 <o, r> / (|o|^2 + |r|^2), and the largest |o - r| as a fraction of the
    rounding bound U (|r| + 2 A) + ATOL (at most 1 passes). Non-finite out gives inf for all three."""
    o, r = out.double().to(ref.device), ref
    if not bool(torch.isfinite(o).all()):
        return {"rms": float("inf"), "cos": float("inf"), "bound": float("inf")}
    d = o - r
    denom = float((o * o + r * r).sum())
    return {
        "rms": float(d.norm() / r.norm()) if float(r.norm()) > 0 else float(d.norm()),
        "cos": 1.0 - 2.0 * float((o * r).sum()) / denom if denom > 0 else 0.0,
        "bound": float((d.abs() / (U * (r.abs() + 2 * weight) + ATOL)).max()),
    }


def within_tolerances(e: dict) -> bool:
    return e["rms"] <= RMS_TOL and e["cos"] <= COS_TOL and e["bound"] <= 1.0
