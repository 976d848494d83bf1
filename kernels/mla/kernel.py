"""MLA (DeepSeek multi-head latent attention, absorbed form) in Triton: decode and causal prefill.

One latent row per token, ``kv[b, j] = [c_kv (DV values) | k_pe (D_PE values)]``, shared by all heads,
is both the key (all columns) and the value (the first ``dv`` columns):

    s = (q . kv^T) * scale        per head, float32 accumulation
    p = softmax(s)                causal at the end of the cache: query i sees kv j <= Skv - Sq + i
    o = p . kv[..., :dv]

Layouts: q [B, Sq, H, D], kv [B, Skv, D], o [B, Sq, H, dv], bf16, with D = dv + D_PE (576 = 512 + 64).

Both kernels treat the (query position, head) pairs of a batch element as the rows of one matrix
(row r = i * H + h); since every head reads the same latent, a block of rows shares each kv tile,
and the scores of a block are one tensor-core product.

* ``mla_decode``: split-KV flash-decoding. Stage 1: program (row block, split, batch) streams one
  slice of the cache once; each kv tile is loaded once and used as K (all D columns) and as V (its
  first dv columns, the same registers/shared memory); online softmax in base 2; it writes its
  normalised partial output and log-sum-exp. Stage 2 merges the splits per row.
* ``mla_prefill``: flash attention over the same row layout, causal with block skipping (a row block
  stops at the last kv tile its last row can see; only the diagonal tiles are masked), the output
  dimension optionally tiled across programs (BLOCK_DV < dv) to bound the accumulator's registers.

The knobs are plain dictionaries (``DECODE_CONFIG``, ``PREFILL_CONFIG``) so a search can vary them;
``decode_with_config`` / ``prefill_with_config`` take an explicit one.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634

# Tunable knobs. num_splits = 0 means "choose from the SM count".
DECODE_CONFIG = {
    "BLOCK_M": 64,
    "BLOCK_N": 64,
    "num_warps": 8,
    "num_stages": 2,
    "num_splits": 0,
    "swap_qk": False,
    "partial_bf16": True,
    "merge_block_dv": 64,
    "lazy_rescale": False,
}
PREFILL_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_DV": 512, "num_warps": 8, "num_stages": 2}
NUM_SMS_FALLBACK = 132

KNOBS = {
    "decode": {
        "BLOCK_M": [16, 32, 64],
        "BLOCK_N": [16, 32, 64],
        "num_warps": [4, 8],
        "num_stages": [1, 2, 3],
        "num_splits": [0, 16, 32, 64, 128],
        "swap_qk": [False, True],
        "partial_bf16": [False, True],
        "merge_block_dv": [32, 64, 128],
        "lazy_rescale": [False, True],
    },
    "prefill": {
        "BLOCK_M": [64, 128],
        "BLOCK_N": [32, 64, 128],
        "BLOCK_DV": [128, 256, 512],
        "num_warps": [4, 8],
        "num_stages": [1, 2, 3],
    },
}


@triton.jit
def _dot(a, b, acc, F32_DOT: tl.constexpr):
    """acc + a @ b. Triton 3.6's interpreter multiplies bf16 operands as raw uint16 bit patterns,
    so on the CPU path (F32_DOT) the operands are widened first; the GPU path uses them as they are."""
    if F32_DOT:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    else:
        return tl.dot(a, b, acc)


@triton.jit
def _decode_split_kernel(
    Q,
    KV,
    PO,
    LSE,
    scale_log2,
    M,
    Skv,
    Sq,
    H,
    split_len,
    stride_qb,
    stride_qm,
    stride_kb,
    stride_kn,
    stride_pb,
    stride_pm,
    stride_ps,
    stride_lb,
    stride_lm,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    DV: tl.constexpr,
    D_PE: tl.constexpr,
    SWAP_QK: tl.constexpr,
    LAZY_RESCALE: tl.constexpr,
    F32_DOT: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_s = tl.program_id(1)
    b = tl.program_id(2)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    # last kv index row r may see (causal at the end of the cache)
    limit = Skv - Sq + rows // H
    offs_v = tl.arange(0, DV)
    offs_pe = DV + tl.arange(0, D_PE)

    q_base = Q + b * stride_qb + rows[:, None] * stride_qm
    q_nope = tl.load(q_base + offs_v[None, :], mask=row_ok[:, None], other=0.0)
    q_pe = tl.load(q_base + offs_pe[None, :], mask=row_ok[:, None], other=0.0)

    start = pid_s * split_len
    # the block's last row sees the most; nothing in this split past that is needed
    last_row = tl.minimum(pid_m * BLOCK_M + BLOCK_M, M) - 1
    end = tl.minimum(tl.minimum(start + split_len, Skv), Skv - Sq + last_row // H + 1)

    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, DV], dtype=tl.float32)
    kv_base = KV + b * stride_kb
    for n0 in range(start, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < end
        k_ptr = kv_base + cols[:, None] * stride_kn
        kv_nope = tl.load(k_ptr + offs_v[None, :], mask=col_ok[:, None], other=0.0)
        kv_pe = tl.load(k_ptr + offs_pe[None, :], mask=col_ok[:, None], other=0.0)
        if SWAP_QK:
            # scores transposed, kv rows as the M side of the product: with BLOCK_N = 64 rows per
            # warpgroup no warpgroup repeats another's work and q is read once per k-step
            st = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)
            st = _dot(kv_nope, tl.trans(q_nope), st, F32_DOT)
            st = _dot(kv_pe, tl.trans(q_pe), st, F32_DOT)
            s = tl.trans(st)
        else:
            s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            s = _dot(q_nope, tl.trans(kv_nope), s, F32_DOT)
            s = _dot(q_pe, tl.trans(kv_pe), s, F32_DOT)
        s = s * scale_log2
        visible = col_ok[None, :] & (cols[None, :] <= limit[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        if LAZY_RESCALE:
            # keep a stale running max until some row's grows by more than 2^8: p stays <= 256,
            # and most tiles skip the rescale of the whole accumulator
            if tl.max(m_new - m_i, 0) > 8.0:
                alpha = tl.exp2(m_i - m_new)
                acc = acc * alpha[:, None]
                l_i = l_i * alpha
                m_i = m_new
            p = tl.exp2(s - m_i[:, None])
            l_i = l_i + tl.sum(p, 1)
        else:
            alpha = tl.exp2(m_i - m_new)
            p = tl.exp2(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            m_i = m_new
        # the same kv rows, already on chip, are the values
        acc = _dot(p.to(kv_nope.dtype), kv_nope, acc, F32_DOT)

    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    # one reciprocal per row, not a precise division per element (about 500 instructions a warp)
    out = acc * (1.0 / l_safe)[:, None]
    lse = tl.where(empty, float("-inf"), m_i + tl.log2(l_safe))
    po_ptr = PO + b * stride_pb + rows[:, None] * stride_pm + pid_s * stride_ps + offs_v[None, :]
    tl.store(po_ptr, out.to(PO.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + b * stride_lb + rows * stride_lm + pid_s, lse, mask=row_ok)


@triton.jit
def _decode_merge_kernel(
    PO,
    LSE,
    O,
    num_splits,
    stride_pb,
    stride_pm,
    stride_ps,
    stride_lb,
    stride_lm,
    stride_ob,
    stride_om,
    BLOCK_S: tl.constexpr,
    BLOCK_DV: tl.constexpr,
):
    row = tl.program_id(0)
    pid_d = tl.program_id(1)
    b = tl.program_id(2)
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = pid_d * BLOCK_DV + tl.arange(0, BLOCK_DV)
    s_ok = offs_s < num_splits
    lse = tl.load(LSE + b * stride_lb + row * stride_lm + offs_s, mask=s_ok, other=float("-inf"))
    mx = tl.max(lse, 0)  # finite: split 0 always sees kv index 0
    w = tl.exp2(lse - mx)
    w = w / tl.sum(w, 0)
    po_ptr = PO + b * stride_pb + row * stride_pm + offs_s[:, None] * stride_ps + offs_d[None, :]
    po = tl.load(po_ptr, mask=s_ok[:, None], other=0.0).to(tl.float32)
    o = tl.sum(po * w[:, None], 0)
    tl.store(O + b * stride_ob + row * stride_om + offs_d, o.to(O.dtype.element_ty))


@triton.jit
def _prefill_kernel(
    Q,
    KV,
    O,
    scale_log2,
    M,
    Skv,
    Sq,
    H,
    num_m_blocks,
    stride_qb,
    stride_qm,
    stride_kb,
    stride_kn,
    stride_ob,
    stride_om,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    DV: tl.constexpr,
    D_PE: tl.constexpr,
    F32_DOT: tl.constexpr,
):
    pid_d = tl.program_id(0)
    # heaviest row blocks (the end of the sequence) first
    pid_m = num_m_blocks - 1 - tl.program_id(1)
    b = tl.program_id(2)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    limit = Skv - Sq + rows // H
    offs_v = tl.arange(0, DV)
    offs_pe = DV + tl.arange(0, D_PE)
    offs_o = pid_d * BLOCK_DV + tl.arange(0, BLOCK_DV)

    q_base = Q + b * stride_qb + rows[:, None] * stride_qm
    q_nope = tl.load(q_base + offs_v[None, :], mask=row_ok[:, None], other=0.0)
    q_pe = tl.load(q_base + offs_pe[None, :], mask=row_ok[:, None], other=0.0)

    first_row = pid_m * BLOCK_M
    last_row = tl.minimum(first_row + BLOCK_M, M) - 1
    # kv tiles [0, full_end) are visible to every row of the block: no mask
    full_end = ((Skv - Sq + first_row // H + 1) // BLOCK_N) * BLOCK_N
    end = Skv - Sq + last_row // H + 1

    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    kv_base = KV + b * stride_kb

    for n0 in range(0, full_end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        k_ptr = kv_base + cols[:, None] * stride_kn
        kv_nope = tl.load(k_ptr + offs_v[None, :])
        kv_pe = tl.load(k_ptr + offs_pe[None, :])
        s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        s = _dot(q_nope, tl.trans(kv_nope), s, F32_DOT)
        s = _dot(q_pe, tl.trans(kv_pe), s, F32_DOT)
        s = s * scale_log2
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if BLOCK_DV == DV:
            v = kv_nope
        else:
            v = tl.load(k_ptr + offs_o[None, :])
        acc = _dot(p.to(v.dtype), v, acc, F32_DOT)
        m_i = m_new

    for n0 in range(full_end, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < end
        k_ptr = kv_base + cols[:, None] * stride_kn
        kv_nope = tl.load(k_ptr + offs_v[None, :], mask=col_ok[:, None], other=0.0)
        kv_pe = tl.load(k_ptr + offs_pe[None, :], mask=col_ok[:, None], other=0.0)
        s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        s = _dot(q_nope, tl.trans(kv_nope), s, F32_DOT)
        s = _dot(q_pe, tl.trans(kv_pe), s, F32_DOT)
        s = s * scale_log2
        s = tl.where(cols[None, :] <= limit[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if BLOCK_DV == DV:
            v = kv_nope
        else:
            v = tl.load(k_ptr + offs_o[None, :], mask=col_ok[:, None], other=0.0)
        acc = _dot(p.to(v.dtype), v, acc, F32_DOT)
        m_i = m_new

    out = acc * (1.0 / l_i)[:, None]
    o_ptr = O + b * stride_ob + rows[:, None] * stride_om + offs_o[None, :]
    tl.store(o_ptr, out.to(O.dtype.element_ty), mask=row_ok[:, None])


def _check(q: torch.Tensor, kv: torch.Tensor, dv: int, what: str) -> tuple[int, int, int, int, int]:
    if q.dim() != 4 or kv.dim() != 3:
        raise ValueError(
            f"{what}: expected q [B, Sq, H, D] and kv [B, Skv, D], got q {tuple(q.shape)}, kv {tuple(kv.shape)}"
        )
    B, Sq, H, D = q.shape
    if kv.shape[0] != B or kv.shape[2] != D:
        raise ValueError(f"{what}: q {tuple(q.shape)} and kv {tuple(kv.shape)} disagree on B or D")
    d_pe = D - dv
    if dv <= 0 or d_pe <= 0 or dv & (dv - 1) or d_pe & (d_pe - 1):
        raise ValueError(f"{what}: dv={dv} and D-dv={d_pe} must both be positive powers of two (D={D})")
    if q.dtype != kv.dtype or q.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError(f"{what}: q and kv must both be bf16 or fp16, got {q.dtype}, {kv.dtype}")
    Skv = kv.shape[1]
    if Sq > Skv:
        raise ValueError(f"{what}: Sq={Sq} queries need at least as many cache rows, Skv={Skv}")
    return B, Sq, H, Skv, d_pe


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return NUM_SMS_FALLBACK


def decode_splits(B: int, m_blocks: int, Skv: int, block_n: int, num_sms: int) -> int:
    """Splits per (batch, row block). Measured on the H200 (B1 H64 Skv8192): one program per SM at
    Sq 1 and 2 (128 and 2 x 64 programs), two waves at Sq 4 (4 x 64), each split a whole number of
    kv tiles: so the SM count is divided by at most two row blocks."""
    per = max(1, num_sms // max(1, B * min(m_blocks, 2)))
    return max(1, min(per, triton.cdiv(Skv, block_n)))


def decode_with_config(q, kv, scale: float, dv: int = 512, cfg: dict | None = None):
    cfg = {**DECODE_CONFIG, **(cfg or {})}
    B, Sq, H, Skv, d_pe = _check(q, kv, dv, "mla_decode")
    q = q.contiguous()
    kv = kv.contiguous()
    M = Sq * H
    BLOCK_M, BLOCK_N = cfg["BLOCK_M"], cfg["BLOCK_N"]
    m_blocks = triton.cdiv(M, BLOCK_M)
    S = cfg["num_splits"] or decode_splits(B, m_blocks, Skv, BLOCK_N, _num_sms(q.device))
    # every split but the last holds a whole number of kv tiles
    split_len = triton.cdiv(triton.cdiv(Skv, S), BLOCK_N) * BLOCK_N
    S = triton.cdiv(Skv, split_len)
    po_dtype = torch.bfloat16 if cfg["partial_bf16"] else torch.float32
    po = torch.empty((B, M, S, dv), device=q.device, dtype=po_dtype)
    lse = torch.empty((B, M, S), device=q.device, dtype=torch.float32)
    o = torch.empty((B, Sq, H, dv), device=q.device, dtype=q.dtype)
    q2 = q.view(B, M, dv + d_pe)
    o2 = o.view(B, M, dv)
    _decode_split_kernel[(m_blocks, S, B)](
        q2,
        kv,
        po,
        lse,
        scale * LOG2E,
        M,
        Skv,
        Sq,
        H,
        split_len,
        q2.stride(0),
        q2.stride(1),
        kv.stride(0),
        kv.stride(1),
        po.stride(0),
        po.stride(1),
        po.stride(2),
        lse.stride(0),
        lse.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        DV=dv,
        D_PE=d_pe,
        SWAP_QK=cfg["swap_qk"],
        LAZY_RESCALE=cfg["lazy_rescale"],
        F32_DOT=_interpreting(),
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )
    block_dv = min(cfg["merge_block_dv"], dv)
    _decode_merge_kernel[(M, dv // block_dv, B)](
        po,
        lse,
        o2,
        S,
        po.stride(0),
        po.stride(1),
        po.stride(2),
        lse.stride(0),
        lse.stride(1),
        o2.stride(0),
        o2.stride(1),
        BLOCK_S=max(2, triton.next_power_of_2(S)),
        BLOCK_DV=block_dv,
        num_warps=4,
    )
    return o


def prefill_with_config(q, kv, scale: float, dv: int = 512, cfg: dict | None = None):
    cfg = {**PREFILL_CONFIG, **(cfg or {})}
    B, Sq, H, Skv, d_pe = _check(q, kv, dv, "mla_prefill")
    q = q.contiguous()
    kv = kv.contiguous()
    M = Sq * H
    BLOCK_M, BLOCK_N = cfg["BLOCK_M"], cfg["BLOCK_N"]
    block_dv = min(cfg["BLOCK_DV"], dv)
    m_blocks = triton.cdiv(M, BLOCK_M)
    o = torch.empty((B, Sq, H, dv), device=q.device, dtype=q.dtype)
    q2 = q.view(B, M, dv + d_pe)
    o2 = o.view(B, M, dv)
    _prefill_kernel[(dv // block_dv, m_blocks, B)](
        q2,
        kv,
        o2,
        scale * LOG2E,
        M,
        Skv,
        Sq,
        H,
        m_blocks,
        q2.stride(0),
        q2.stride(1),
        kv.stride(0),
        kv.stride(1),
        o2.stride(0),
        o2.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_DV=block_dv,
        DV=dv,
        D_PE=d_pe,
        F32_DOT=_interpreting(),
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )
    return o


def mla_decode(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int = 512) -> torch.Tensor:
    """Decode attention of q [B, Sq, H, D] over the latent cache kv [B, Skv, D]; o [B, Sq, H, dv].

    For Sq > 1 the queries are the last Sq positions of the cache (causal, tril(Skv - Sq)).
    """
    return decode_with_config(q, kv, scale, dv)


def mla_prefill(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int = 512) -> torch.Tensor:
    """Causal attention of q [B, S, H, D] over kv [B, S, D] (query i sees kv 0..i); o [B, S, H, dv]."""
    return prefill_with_config(q, kv, scale, dv)


__all__ = ["mla_decode", "mla_prefill", "DECODE_CONFIG", "PREFILL_CONFIG", "KNOBS"]
