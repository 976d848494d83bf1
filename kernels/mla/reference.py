"""Float32 PyTorch reference for MLA (absorbed form): the definition the kernels are checked against."""

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
