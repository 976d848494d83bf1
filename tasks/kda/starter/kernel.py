"""KDA forward: a simple recurrent Triton kernel (correct, not fast). Start here.

One program per (batch * head, block of BV value columns) keeps its slice of the state S [K, BV]
in registers and walks the sequence one step at a time:
    S = S * exp(g_t)[:, None];  u = v_t - k_t^T S;  S += beta_t * k_t u^T;  o_t = (scale * q_t)^T S
The faster design is chunked (see the task description): a chunk-parallel part on tensor cores and
a sequential scan over chunks.
"""

import torch
import triton
import triton.language as tl

BV = 32  # marathon:knob [16, 32, 64, 128]
NUM_WARPS = 4  # marathon:knob [1, 2, 4, 8]


@triton.jit
def kda_recurrent_fwd_kernel(
    q,
    k,
    v,
    g,
    beta,
    o,
    h0,
    ht,
    scale,
    T,
    H: tl.constexpr,
    K: tl.constexpr,
    V: tl.constexpr,
    BV: tl.constexpr,
    HAS_INIT: tl.constexpr,
    STORE_FINAL: tl.constexpr,
):
    i_v = tl.program_id(0)
    i_bh = tl.program_id(1)
    i_b = i_bh // H
    i_h = i_bh % H
    offs_k = tl.arange(0, K)
    offs_v = i_v * BV + tl.arange(0, BV)
    mask_v = offs_v < V
    state_ptrs = i_bh * K * V + offs_k[:, None] * V + offs_v[None, :]
    S = tl.zeros([K, BV], dtype=tl.float32)
    if HAS_INIT:
        S += tl.load(h0 + state_ptrs, mask=mask_v[None, :], other=0.0).to(tl.float32)
    base_qk = (i_b * T * H + i_h) * K
    base_v = (i_b * T * H + i_h) * V
    for t in range(0, T):
        p_qk = base_qk + t * H * K
        p_v = base_v + t * H * V
        b_q = tl.load(q + p_qk + offs_k).to(tl.float32) * scale
        b_k = tl.load(k + p_qk + offs_k).to(tl.float32)
        b_g = tl.load(g + p_qk + offs_k).to(tl.float32)
        b_v = tl.load(v + p_v + offs_v, mask=mask_v, other=0.0).to(tl.float32)
        b_beta = tl.load(beta + (i_b * T + t) * H + i_h).to(tl.float32)
        S = S * tl.exp(b_g)[:, None]
        u = b_v - tl.sum(b_k[:, None] * S, axis=0)
        S = S + (b_beta * b_k)[:, None] * u[None, :]
        b_o = tl.sum(b_q[:, None] * S, axis=0)
        tl.store(o + p_v + offs_v, b_o.to(o.dtype.element_ty), mask=mask_v)
    if STORE_FINAL:
        tl.store(ht + state_ptrs, S, mask=mask_v[None, :])


def kda_fwd(q, k, v, g, beta, scale, initial_state=None, output_final_state=False):
    """q, k, g: [B, T, H, K]; v: [B, T, H, V]; beta: [B, T, H] -> (o [B, T, H, V], final state or None)."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    q, k, v, g, beta = (x.contiguous() for x in (q, k, v, g, beta))
    o = torch.empty_like(v)
    ht = torch.empty(B, H, K, V, dtype=torch.float32, device=q.device) if output_final_state else None
    h0 = initial_state.contiguous() if initial_state is not None else None
    grid = (triton.cdiv(V, BV), B * H)
    kda_recurrent_fwd_kernel[grid](
        q,
        k,
        v,
        g,
        beta,
        o,
        h0 if h0 is not None else o,
        ht if ht is not None else o,
        scale,
        T,
        H=H,
        K=K,
        V=V,
        BV=BV,
        HAS_INIT=h0 is not None,
        STORE_FINAL=ht is not None,
        num_warps=NUM_WARPS,
    )
    return o, ht
