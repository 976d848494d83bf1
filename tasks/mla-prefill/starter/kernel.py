"""MLA causal prefill: a simple Triton flash-attention kernel (correct, not fast). Start here.

One program per (block of BLOCK_M queries, batch * head) streams the latent rows up to its last
query with an online softmax. Each latent row is both key (all 576 columns) and value (the first dv
columns). All heads share the latent, so a faster design reuses each loaded block across heads.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 32  # marathon:knob [16, 32, 64]
BLOCK_N = 32  # marathon:knob [16, 32, 64]
NUM_WARPS = 8  # marathon:knob [4, 8]
NUM_STAGES = 2  # marathon:knob [1, 2, 3]


@triton.jit
def mla_prefill_kernel(
    q,
    kv,
    o,
    scale,
    S,
    H,
    DV: tl.constexpr,
    DR: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    b = pid_bh // H
    h = pid_bh % H
    D: tl.constexpr = DV + DR
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    mask_m = offs_m < S
    offs_dv = tl.arange(0, DV)
    offs_dr = tl.arange(0, DR)
    q_row = ((b * S + offs_m) * H + h) * D
    q_nope = tl.load(q + q_row[:, None] + offs_dv[None, :], mask=mask_m[:, None], other=0.0)
    q_pe = tl.load(q + q_row[:, None] + DV + offs_dr[None, :], mask=mask_m[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, DV], dtype=tl.float32)
    qk_scale = scale * 1.4426950408889634
    hi = tl.minimum((pid_m + 1) * BLOCK_M, S)
    for start in range(0, hi, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < S
        kv_row = (b * S + offs_n) * D
        k_nope = tl.load(kv + kv_row[:, None] + offs_dv[None, :], mask=mask_n[:, None], other=0.0)
        k_pe = tl.load(kv + kv_row[:, None] + DV + offs_dr[None, :], mask=mask_n[:, None], other=0.0)
        s = tl.dot(q_nope, tl.trans(k_nope)) + tl.dot(q_pe, tl.trans(k_pe))
        allowed = (offs_n[None, :] <= offs_m[:, None]) & mask_n[None, :]
        s = tl.where(allowed, s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k_nope.dtype), k_nope)
        m_i = m_new
    out = acc / l_i[:, None]
    o_row = ((b * S + offs_m) * H + h) * DV
    tl.store(o + o_row[:, None] + offs_dv[None, :], out.to(o.dtype.element_ty), mask=mask_m[:, None])


def mla_prefill(q, kv, scale, dv=512):
    """Causal: q [B, S, H, 576], kv [B, S, 576] -> o [B, S, H, dv]."""
    B, S, H, D = q.shape
    q, kv = q.contiguous(), kv.contiguous()
    o = torch.empty(B, S, H, dv, dtype=q.dtype, device=q.device)
    grid = (triton.cdiv(S, BLOCK_M), B * H)
    mla_prefill_kernel[grid](
        q,
        kv,
        o,
        scale,
        S,
        H,
        DV=dv,
        DR=D - dv,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return o
