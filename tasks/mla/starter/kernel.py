"""MLA decode: a simple Triton flash-decoding kernel (correct, not fast). Start here.

One program per (batch, query position, block of BLOCK_H heads) streams the whole latent cache in
blocks of BLOCK_N rows with an online softmax. Each cache row is both key (all 576 columns) and
value (the first dv columns). With Sq > 1, query i sees rows j <= Skv - Sq + i.
The faster design splits the cache across programs (split-KV) and merges the partial results by
their log-sum-exp.
"""

import torch
import triton
import triton.language as tl

BLOCK_H = 16  # marathon:knob [16, 32, 64]
BLOCK_N = 32  # marathon:knob [16, 32, 64]
NUM_WARPS = 8  # marathon:knob [4, 8]
NUM_STAGES = 2  # marathon:knob [1, 2, 3]


@triton.jit
def mla_decode_kernel(
    q,
    kv,
    o,
    scale,
    Sq,
    H,
    Skv,
    DV: tl.constexpr,
    DR: tl.constexpr,
    BLOCK_H: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_bq = tl.program_id(0)
    pid_h = tl.program_id(1)
    b = pid_bq // Sq
    sq = pid_bq % Sq
    D: tl.constexpr = DV + DR
    offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    mask_h = offs_h < H
    offs_dv = tl.arange(0, DV)
    offs_dr = tl.arange(0, DR)
    q_row = ((b * Sq + sq) * H + offs_h) * D
    q_nope = tl.load(q + q_row[:, None] + offs_dv[None, :], mask=mask_h[:, None], other=0.0)
    q_pe = tl.load(q + q_row[:, None] + DV + offs_dr[None, :], mask=mask_h[:, None], other=0.0)
    n_end = Skv - Sq + sq + 1  # causal limit (exclusive)
    m_i = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, DV], dtype=tl.float32)
    qk_scale = scale * 1.4426950408889634  # log2(e): use exp2
    for start in range(0, n_end, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < n_end
        kv_row = (b * Skv + offs_n) * D
        k_nope = tl.load(kv + kv_row[:, None] + offs_dv[None, :], mask=mask_n[:, None], other=0.0)
        k_pe = tl.load(kv + kv_row[:, None] + DV + offs_dr[None, :], mask=mask_n[:, None], other=0.0)
        s = tl.dot(q_nope, tl.trans(k_nope)) + tl.dot(q_pe, tl.trans(k_pe))
        s = tl.where(mask_n[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(k_nope.dtype), k_nope)
        m_i = m_new
    out = acc / l_i[:, None]
    o_row = ((b * Sq + sq) * H + offs_h) * DV
    tl.store(o + o_row[:, None] + offs_dv[None, :], out.to(o.dtype.element_ty), mask=mask_h[:, None])


def mla_decode(q, kv, scale, dv=512):
    """q [B, Sq, H, 576], kv [B, Skv, 576] -> o [B, Sq, H, dv]."""
    B, Sq, H, D = q.shape
    Skv = kv.shape[1]
    q, kv = q.contiguous(), kv.contiguous()
    o = torch.empty(B, Sq, H, dv, dtype=q.dtype, device=q.device)
    grid = (B * Sq, triton.cdiv(H, BLOCK_H))
    mla_decode_kernel[grid](
        q,
        kv,
        o,
        scale,
        Sq,
        H,
        Skv,
        DV=dv,
        DR=D - dv,
        BLOCK_H=BLOCK_H,
        BLOCK_N=BLOCK_N,
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    return o
