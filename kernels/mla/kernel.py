"""MLA (DeepSeek multi-head latent attention, absorbed form) in Triton: decode and causal prefill.

One latent row per token, ``kv[b, j] = [c_kv (DV values) | k_pe (D_PE values)]``, shared by all heads,
is both the key (all columns) and the value (the first ``dv`` columns):

    s = (q . kv^T) * scale        per head, float32 accumulation
    p = softmax(s)                causal at the end of the cache: query i sees kv j <= Skv - Sq + i
    o = p . kv[..., :dv]

Layouts: q [B, Sq, H, D], kv [B, Skv, D], o [B, Sq, H, dv], bf16 or fp16, with D = dv + D_PE
(576 = 512 + 64); dv and D_PE powers of two.

Both kernels treat the (query position, head) pairs of a batch element as the rows of one matrix
(row r = i * H + h); since every head reads the same latent, a block of rows shares each kv tile,
and the scores of a block are one tensor-core product.

Which kernel runs (``impl``, decided per call by what the machine offers):

* ``"gluon"`` (the default) on a Hopper GPU, for bf16 and the 512 + 64 latent, with a Triton that
  has Gluon: the split kernel of decode_gluon.py, one program of two warpgroups per split, which
  share each score tile and each take half of the value columns; the merge is ``_merge_kernel``
  below. The causal prefill is the same kernel with one split (a prefill is a decode whose queries
  are the whole cache).
* ``"tl"`` everywhere else (other GPUs, other dtypes and widths, Triton's interpreter):
  ``_decode_kernel``, split-KV flash-decoding where each kv tile is loaded once (by TMA on Hopper)
  and used as K (all D columns) and as V (the program's BLOCK_DV value columns of the same tile),
  with the merge in the same launch behind a grid barrier when every program is resident at once,
  else in ``_merge_kernel``; and ``_prefill_kernel``, flash attention with causal block skipping.

Online softmax in base 2 throughout (the scale folded into ``scale * log2(e)``). The knobs are
plain dictionaries (``DECODE_CONFIG``, ``PREFILL_CONFIG``: the defaults, the only place they are
set); ``decode_with_config`` / ``prefill_with_config`` take an explicit one.
"""

from __future__ import annotations

import enum
import functools
import os
import pathlib
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

LOG2E = 1.4426950408889634

# The defaults. num_splits 0: one wave of programs (see decode_splits); gl_stages 0: every tile of
# a split in flight at once, as many as fit in shared memory; gl_kslices 0: q and kv in 4 column
# slices when every tile of a split is requested at the start (the first product starts on the
# first slice to land), in 2 when stages are refilled (fewer waits per tile); gl_qreg "auto": q's
# rope and first 256 value columns held in registers where stages are refilled (see gl_qreg).
DECODE_CONFIG = {
    "impl": "gluon",
    "num_splits": 0,
    "gl_stages": 0,
    "gl_kslices": 0,
    "gl_qreg": "auto",
    "BLOCK_M": 64,
    "BLOCK_N": 32,
    "BLOCK_DV": 256,
    "num_warps": 4,
    "num_stages": 3,
    "fused_merge": True,
    "merge_block_dv": 64,
}
PREFILL_CONFIG = {
    "impl": "gluon",
    "gl_stages": 2,
    "gl_kslices": 1,
    "gl_qreg": "auto",
    "BLOCK_M": 64,
    "BLOCK_N": 64,
    "num_warps": 8,
    "num_stages": 2,
}
# The values a search may try; impl, gl_stages and gl_kslices are checked against them.
KNOBS = {
    "decode": {
        "impl": ["gluon", "tl"],
        "num_splits": [0, 16, 32, 64],
        "gl_stages": [0, 1, 2],
        "gl_kslices": [0, 1, 2, 4],
        "gl_qreg": ["auto", 0, 64, 128, 192, 256, 320],
        "BLOCK_N": [32, 64, 128],
        "BLOCK_DV": [256, 512],
        "num_warps": [4, 8],
        "num_stages": [1, 2, 3],
        "fused_merge": [False, True],
    },
    "prefill": {
        "impl": ["gluon", "tl"],
        "gl_stages": [1, 2],
        "gl_kslices": [1, 2, 4],
        "gl_qreg": ["auto", 0, 64, 128, 192, 256, 320],
        "BLOCK_M": [64, 128],
        "BLOCK_N": [32, 64],
        "num_warps": [4, 8],
        "num_stages": [1, 2, 3],
    },
}
NUM_SMS_FALLBACK = 132  # the split plan's SM count without a GPU (an H100's / H200's)
TMA_BOX_MAX = 256  # the widest box of a TMA copy


class Merge(enum.Enum):
    """How the tl decode's splits become o."""

    NONE = "one split: the program writes o"
    KERNEL = "partials and log-sum-exps, then _merge_kernel"
    FUSED = "partials, a grid barrier, and the same launch merges"


@triton.jit
def _dot(a, b, acc, INTERP: tl.constexpr):
    """acc + a @ b. Triton 3.6's interpreter multiplies bf16 operands as raw uint16 bit patterns,
    so under the interpreter (INTERP) the operands are widened first (exact); the GPU path uses
    them as they are."""
    if INTERP:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), acc)
    else:
        return tl.dot(a, b, acc)


@triton.jit
def _cast(x, dtype: tl.constexpr, INTERP: tl.constexpr):
    """float32 x cast to dtype, rounded to nearest even as the GPU rounds. Triton 3.6's interpreter
    truncates float32 to bf16, so under it the rounding is done on the bits first (carries into the
    exponent are right; fp16 casts it rounds itself)."""
    if INTERP:
        if dtype == tl.bfloat16:
            bits = x.to(tl.uint32, bitcast=True)
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            x = bits.to(tl.float32, bitcast=True)
    return x.to(dtype)


@triton.jit
def _grid_barrier(SYNC, num_programs):
    """All programs of the grid wait here until every one has arrived (they must be co-resident:
    one wave, launched cooperatively). SYNC[0] counts arrivals and is reset by the last one, which
    then bumps the generation SYNC[1] that the others spin on; so the state is clean for the next call.
    Release/acquire at GPU scope orders the partials written before it with the reads after it."""
    tl.debug_barrier()
    gen = tl.atomic_add(SYNC + 1, 0, sem="relaxed")
    arrived = tl.atomic_add(SYNC, 1, sem="acq_rel")
    if arrived == num_programs - 1:
        tl.atomic_xchg(SYNC, 0, sem="relaxed")
        tl.atomic_add(SYNC + 1, 1, sem="release")
    else:
        cur = gen
        while cur == gen:
            cur = tl.atomic_add(SYNC + 1, 0, sem="acquire")
    tl.debug_barrier()


@triton.jit
def _merge_row(
    PO, LSE, O, b, row, col0, num_splits,
    stride_pb, stride_pm, stride_ps, stride_lb, stride_lm, stride_ob, stride_om,
    BLOCK_S: tl.constexpr, BLOCK_DV: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """o[b, row, col0:col0+BLOCK_DV] = sum_s w_s po_s with w_s = 2^(lse_s - max) / sum (L1 bypassed:
    the partials were written by other programs of the same launch when the merge is fused)."""
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = col0 + tl.arange(0, BLOCK_DV)
    s_ok = offs_s < num_splits
    # both loads are issued before the weights' reductions (their barriers would hold the second
    # load back by a whole L2 round trip)
    po_ptr = PO + b * stride_pb + row * stride_pm + offs_s[:, None] * stride_ps + offs_d[None, :]
    po = tl.load(po_ptr, mask=s_ok[:, None], other=0.0, cache_modifier=".cg")
    lse = tl.load(LSE + b * stride_lb + row * stride_lm + offs_s, mask=s_ok, other=float("-inf"), cache_modifier=".cg")
    mx = tl.max(lse, 0)  # finite: split 0 always sees kv index 0
    w = tl.exp2(lse - mx)
    o = tl.sum(po.to(tl.float32) * w[:, None], 0) / tl.sum(w, 0)
    tl.store(O + b * stride_ob + row * stride_om + offs_d, _cast(o, O.dtype.element_ty, INTERP))


@triton.jit
def _decode_kernel(
    Q, KV, KD_V, KD_PE, PO, LSE, O, SYNC,
    scale_log2, M, Skv, Sq, H, split_len, num_splits, num_programs,
    stride_qb, stride_qm, stride_kb, stride_kn,
    stride_pb, stride_pm, stride_ps, stride_lb, stride_lm, stride_ob, stride_om,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_S: tl.constexpr,
    MERGE_DV: tl.constexpr, DV: tl.constexpr, D_PE: tl.constexpr,
    SPLIT: tl.constexpr, FUSED_MERGE: tl.constexpr, KV_TMA: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """Program (split * NCH + column chunk, row block, batch), NCH = DV / BLOCK_DV (1 or 2) column
    chunks a split, each recomputing the split's scores. Not SPLIT: o written directly (one
    split). SPLIT: the normalised partial to PO[b, row, split] and the log-sum-exp (base 2) to
    LSE[b, row, split]; with FUSED_MERGE then a grid barrier, after which the row block's
    programs share out its (row, MERGE_DV columns) merge items. KV_TMA: kv tiles through the
    descriptors KD_V (BLOCK_DV value columns) and KD_PE (the rope columns) over kv as
    [B * Skv, D], else by pointers."""
    NCH: tl.constexpr = DV // BLOCK_DV
    pid = tl.program_id(0)
    h = pid % NCH
    pid_s = pid // NCH
    pid_m = tl.program_id(1)
    b = tl.program_id(2)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    # last kv index row r may see (causal at the end of the cache)
    limit = Skv - Sq + rows // H
    # The program's output columns (own) are also the first slice of the score product; with two
    # chunks the other half of the value columns follows, then the rope columns. The V operand is
    # the own slice of the kv tile, already on chip.
    offs_own = h * BLOCK_DV + tl.arange(0, BLOCK_DV)
    offs_pe = DV + tl.arange(0, D_PE)
    if NCH == 2:
        other0 = (1 - h) * BLOCK_DV
        offs_other = other0 + tl.arange(0, BLOCK_DV)
    q_base = Q + b * stride_qb + rows[:, None] * stride_qm
    q_own = tl.load(q_base + offs_own[None, :], mask=row_ok[:, None], other=0.0)
    q_pe = tl.load(q_base + offs_pe[None, :], mask=row_ok[:, None], other=0.0)
    if NCH == 2:
        q_other = tl.load(q_base + offs_other[None, :], mask=row_ok[:, None], other=0.0)

    start = pid_s * split_len
    # the block's last row sees the most; nothing in this split past that is needed
    last_row = tl.minimum(pid_m * BLOCK_M + BLOCK_M, M) - 1
    end = tl.minimum(tl.minimum(start + split_len, Skv), Skv - Sq + last_row // H + 1)

    m_i = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    for n0 in range(start, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < end
        if KV_TMA:
            # rows past this batch's cache are another batch's (or zeros): finite, masked below
            kv_row = b * Skv + n0
            kv_own = KD_V.load([kv_row, h * BLOCK_DV])
            kv_pe = KD_PE.load([kv_row, DV])
            if NCH == 2:
                kv_other = KD_V.load([kv_row, other0])
        else:
            k_ptr = KV + b * stride_kb + cols[:, None] * stride_kn
            kv_own = tl.load(k_ptr + offs_own[None, :], mask=col_ok[:, None], other=0.0)
            kv_pe = tl.load(k_ptr + offs_pe[None, :], mask=col_ok[:, None], other=0.0)
            if NCH == 2:
                kv_other = tl.load(k_ptr + offs_other[None, :], mask=col_ok[:, None], other=0.0)
        s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        s = _dot(q_own, tl.trans(kv_own), s, INTERP)
        if NCH == 2:
            s = _dot(q_other, tl.trans(kv_other), s, INTERP)
        s = _dot(q_pe, tl.trans(kv_pe), s, INTERP)
        s = s * scale_log2
        visible = col_ok[None, :] & (cols[None, :] <= limit[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
        # the same kv rows, already on chip, are the values
        acc = _dot(_cast(p, kv_own.dtype, INTERP), kv_own, acc, INTERP)

    # a split that sees no row of the cache (possible when Sq > 1) writes zeros and lse -inf,
    # which the merge weighs as 0
    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    # one reciprocal per row, not a precise division per element (about 500 instructions a warp)
    out = acc * (1.0 / l_safe)[:, None]
    if SPLIT:
        lse = tl.where(empty, float("-inf"), m_i + tl.log2(l_safe))
        po_ptr = PO + b * stride_pb + rows[:, None] * stride_pm + pid_s * stride_ps + offs_own[None, :]
        tl.store(po_ptr, _cast(out, PO.dtype.element_ty, INTERP), mask=row_ok[:, None])
        # every column chunk of a split has the same log-sum-exp: one writes it
        tl.store(LSE + b * stride_lb + rows * stride_lm + pid_s, lse, mask=row_ok & (h == 0))
        if FUSED_MERGE:
            _grid_barrier(SYNC, num_programs)
            # the row block's (row, MERGE_DV columns) items, dealt out over its NCH * S programs
            NCOL: tl.constexpr = DV // MERGE_DV
            for it in range(pid, BLOCK_M * NCOL, NCH * num_splits):
                row = pid_m * BLOCK_M + it // NCOL
                if row < M:
                    _merge_row(
                        PO, LSE, O, b, row, (it % NCOL) * MERGE_DV, num_splits,
                        stride_pb, stride_pm, stride_ps, stride_lb, stride_lm, stride_ob, stride_om,
                        BLOCK_S, MERGE_DV, INTERP,
                    )  # fmt: skip
    else:
        o_ptr = O + b * stride_ob + rows[:, None] * stride_om + offs_own[None, :]
        tl.store(o_ptr, _cast(out, O.dtype.element_ty, INTERP), mask=row_ok[:, None])


@triton.jit
def _merge_kernel(
    PO, LSE, O, num_splits,
    stride_pb, stride_pm, stride_ps, stride_lb, stride_lm, stride_ob, stride_om,
    BLOCK_S: tl.constexpr, BLOCK_DV: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """Program (row, column block, batch): one _merge_row."""
    _merge_row(
        PO, LSE, O, tl.program_id(2), tl.program_id(0), tl.program_id(1) * BLOCK_DV, num_splits,
        stride_pb, stride_pm, stride_ps, stride_lb, stride_lm, stride_ob, stride_om,
        BLOCK_S, BLOCK_DV, INTERP,
    )  # fmt: skip


@triton.jit
def _prefill_kernel(
    Q, KV, O, scale_log2, M, Skv, Sq, H, num_m_blocks,
    stride_qb, stride_qm, stride_kb, stride_kn, stride_ob, stride_om,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, DV: tl.constexpr, D_PE: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """Program (row block, batch), the heaviest row blocks (the end of the sequence) first. The kv
    loop has two parts: the tiles every row of the block sees (no mask), then the diagonal tiles
    (masked); tiles past the block's last row are never loaded."""
    pid_m = num_m_blocks - 1 - tl.program_id(0)
    b = tl.program_id(1)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    limit = Skv - Sq + rows // H
    offs_v = tl.arange(0, DV)
    offs_pe = DV + tl.arange(0, D_PE)

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
    acc = tl.zeros([BLOCK_M, DV], dtype=tl.float32)
    kv_base = KV + b * stride_kb

    for n0 in range(0, full_end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        k_ptr = kv_base + cols[:, None] * stride_kn
        kv_nope = tl.load(k_ptr + offs_v[None, :])
        kv_pe = tl.load(k_ptr + offs_pe[None, :])
        s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        s = _dot(q_nope, tl.trans(kv_nope), s, INTERP)
        s = _dot(q_pe, tl.trans(kv_pe), s, INTERP)
        s = s * scale_log2
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = _dot(_cast(p, kv_nope.dtype, INTERP), kv_nope, acc, INTERP)
        m_i = m_new

    for n0 in range(full_end, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        col_ok = cols < end
        k_ptr = kv_base + cols[:, None] * stride_kn
        kv_nope = tl.load(k_ptr + offs_v[None, :], mask=col_ok[:, None], other=0.0)
        kv_pe = tl.load(k_ptr + offs_pe[None, :], mask=col_ok[:, None], other=0.0)
        s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        s = _dot(q_nope, tl.trans(kv_nope), s, INTERP)
        s = _dot(q_pe, tl.trans(kv_pe), s, INTERP)
        s = s * scale_log2
        s = tl.where(cols[None, :] <= limit[:, None], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = _dot(_cast(p, kv_nope.dtype, INTERP), kv_nope, acc, INTERP)
        m_i = m_new

    out = acc * (1.0 / l_i)[:, None]
    o_ptr = O + b * stride_ob + rows[:, None] * stride_om + offs_v[None, :]
    tl.store(o_ptr, _cast(out, O.dtype.element_ty, INTERP), mask=row_ok[:, None])


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


def _config(cfg: dict | None, kind: str, what: str) -> dict:
    """The defaults overridden by cfg; unknown knobs and impl / gl_* values outside KNOBS refused."""
    defaults = DECODE_CONFIG if kind == "decode" else PREFILL_CONFIG
    unknown = sorted(set(cfg or {}) - set(defaults))
    if unknown:
        raise ValueError(f"{what}: unknown knobs {unknown}; known: {sorted(defaults)}")
    cfg = {**defaults, **(cfg or {})}
    for knob in ("impl", "gl_stages", "gl_kslices", "gl_qreg"):
        if cfg[knob] not in KNOBS[kind][knob]:
            raise ValueError(f"{what}: {knob}={cfg[knob]!r} must be one of {KNOBS[kind][knob]}")
    return cfg


# -- capability probes ------------------------------------------------------------------------


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.cache
def _gluon_module():
    """kernels/mla/decode_gluon.py, imported from beside this file (kernel.py may be loaded by path,
    and a task's rules allow only plain import statements); None where this Triton has no Gluon
    for Hopper."""
    here = str(pathlib.Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.append(here)
    try:
        import decode_gluon
    except ImportError:
        return None
    return decode_gluon


def _gluon_for(q, kv, dv, impl):
    """decode_gluon when it takes this call (impl "gluon", a Hopper GPU and the shapes it covers,
    not the interpreter), else None: the tl kernels run."""
    if impl != "gluon" or _interpreting():
        return None
    dg = _gluon_module()
    return dg if dg is not None and dg.applies(q, kv, dv) else None


def _kv_tma(q, kv, block_dv) -> bool:
    """Whether the tl decode loads its kv tiles by TMA: a Hopper GPU (or later), boxes at most
    TMA_BOX_MAX wide, 16-byte aligned tensors."""
    return (
        q.is_cuda
        and not _interpreting()
        and torch.cuda.get_device_capability(q.device)[0] >= 9
        and block_dv <= TMA_BOX_MAX
        and q.data_ptr() % 16 == 0
        and kv.data_ptr() % 16 == 0
    )


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return NUM_SMS_FALLBACK


# -- host side ----------------------------------------------------------------------------------


def _pow2_floor(x: int) -> int:
    return 1 << (x.bit_length() - 1)


def decode_splits(per_split: int, Skv: int, block_n: int, num_sms: int) -> int:
    """Splits of the cache per (batch, row block, column chunk): one wave, one program per SM
    (per_split programs share a split); each split a whole number of kv tiles."""
    per = max(1, num_sms // max(1, per_split))
    return max(1, min(per, triton.cdiv(Skv, block_n)))


def _split_plan(requested: int, per_split: int, Skv: int, block_n: int, num_sms: int) -> tuple[int, int]:
    """(splits, split length): the requested count (0: decode_splits' choice), each split but the
    last a whole number of kv tiles, no split left empty."""
    S = requested or decode_splits(per_split, Skv, block_n, num_sms)
    split_len = triton.cdiv(triton.cdiv(Skv, S), block_n) * block_n
    return triton.cdiv(Skv, split_len), split_len


_SYNC_SLOTS = 64  # barrier-counter pairs per device: one per stream that runs the fused merge
_SYNC: dict = {}  # (device type, index) -> int32 tensor [_SYNC_SLOTS, 2], zeroed once
_SYNC_SLOT: dict = {}  # (device type, index, stream handle) -> slot


def _sync_buffer(device: torch.device, stream: int):
    """The grid barrier's two counters for calls on `stream` (a stream handle) of this device.

    Each stream gets its own pair, so fused calls overlapping on different streams never mix their
    arrivals; calls on one stream are ordered by the stream and the kernel leaves its pair clean.
    The pairs of a device are one allocation made at the first call outside a CUDA graph capture,
    so a capture on another stream later only takes a free slot (no allocation, no memset in the
    graph). None (the caller then merges in a separate launch) while a capture runs before any
    allocation, and once every slot is taken. A graph's replays use the slot of the stream it was
    captured on: replays of graphs captured on one stream must not overlap each other."""
    dev = (device.type, device.index)
    if dev not in _SYNC:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            return None
        _SYNC[dev] = torch.zeros((_SYNC_SLOTS, 2), device=device, dtype=torch.int32)
    key = (*dev, stream)
    slot = _SYNC_SLOT.get(key)
    if slot is None:
        taken = sum(1 for k in _SYNC_SLOT if k[:2] == dev)
        if taken == _SYNC_SLOTS:
            return None
        slot = _SYNC_SLOT[key] = taken
    return _SYNC[dev][slot]


def _split_strides(po, lse, o2):
    """The strides the split and merge kernels take: po [B, M, S, dv] (b, row, split), lse
    [B, M, S] (b, row), o2 [B, M, dv] (b, row); the last dimension of each is contiguous."""
    return (*po.stride()[:3], *lse.stride()[:2], *o2.stride()[:2])


def _merge(po, lse, o2, S, block_dv):
    """The split-merge kernel over partials po [B, M, S, dv] and lse [B, M, S] into o2 [B, M, dv]."""
    B, M, dv = o2.shape
    mdv = min(block_dv, dv)
    _merge_kernel[(M, dv // mdv, B)](
        po, lse, o2, S, *_split_strides(po, lse, o2),
        BLOCK_S=max(2, triton.next_power_of_2(S)), BLOCK_DV=mdv, INTERP=_interpreting(), num_warps=4,
    )  # fmt: skip


# q's columns the Gluon kernel can hold in registers beside its 64 x 512 accumulator without
# spilling (255 registers a thread), by its kv stages: a single stage keeps more live
QREG_MAX = {1: 192, 2: 320}


def gl_qreg(requested, tiles: int, stages: int, first_slice: int) -> int:
    """The columns of q (its rope columns first, then value columns) the Gluon kernel holds in
    registers as the A operand of the score product (requested "auto": chosen); they must lie in
    q's first column slice (first_slice columns: the rope's and DV / KS). A split that refills its
    stages runs many tiles, and each tile read all of q from shared memory once for each
    warpgroup; shared-memory bandwidth limits that loop, so as many columns as fit there
    (QREG_MAX, checked by tests/python/test_kernel_resources.py). Where every tile is in
    flight from the start (1 to 2 tiles) the loads dominate and the registers buy nothing
    measurable: none (bench/results/kernels-2026-12-06.md, runs 13-22)."""
    if requested == "auto":
        return min(QREG_MAX[min(stages, 2)], first_slice) if tiles > stages else 0
    if requested > first_slice:
        raise ValueError(f"mla (gluon): gl_qreg={requested} exceeds q's first column slice ({first_slice} columns)")
    return requested


def gl_kslices(requested: int, tiles: int, stages_fit: int) -> int:
    """Column slices of the Gluon decode's q and kv loads (requested 0: chosen): 4 when every tile of
    a split is requested at the program's start (stages_fit stages fit in shared memory), so the
    first product starts on the first slice to land; 2 when stages are refilled, fewer waits a tile
    (measured: bench/results/kernels-2026-12-06.md)."""
    return requested or (4 if tiles <= stages_fit else 2)


def _decode_gl(dg, q, kv, scale, dv, cfg, dims):
    """decode_with_config on the Gluon kernel: the split kernel, then the merge kernel."""
    B, Sq, H, Skv, d_pe = dims
    M = Sq * H
    m_blocks = triton.cdiv(M, dg.ROWS)
    S, split_len = _split_plan(cfg["num_splits"], B * m_blocks, Skv, dg.BLOCK_N, _num_sms(q.device))
    tiles = triton.cdiv(split_len, dg.BLOCK_N)
    kslices = gl_kslices(cfg["gl_kslices"], tiles, dg.max_stages(dv, d_pe, 4))
    stages = cfg["gl_stages"] or min(tiles, dg.max_stages(dv, d_pe, kslices))
    o = torch.empty((B, Sq, H, dv), device=q.device, dtype=q.dtype)
    o2 = o.view(B, M, dv)
    if S == 1:
        out, po, lse = o2, None, None
    else:  # each program's tile contiguous ([B, S, M, dv]) for its TMA store
        out = torch.empty((B, S, M, dv), device=q.device, dtype=torch.bfloat16)
        po, lse = out.transpose(1, 2), torch.empty((B, M, S), device=q.device, dtype=torch.float32)
    dg.decode_split_gluon(
        q.view(B * M, dv + d_pe), kv.view(B * Skv, dv + d_pe), out, lse, scale * LOG2E,
        M, Skv, Sq, H, split_len, S, B, dv, stages=stages, kslices=kslices,
        qreg=gl_qreg(cfg["gl_qreg"], tiles, stages, d_pe + dv // kslices),
    )  # fmt: skip
    if S > 1:
        _merge(po, lse, o2, S, cfg["merge_block_dv"])
    return o


def decode_with_config(q, kv, scale: float, dv: int = 512, cfg: dict | None = None):
    B, Sq, H, Skv, d_pe = _check(q, kv, dv, "mla_decode")
    cfg = _config(cfg, "decode", "mla_decode")
    q = q.contiguous()
    kv = kv.contiguous()
    dg = _gluon_for(q, kv, dv, cfg["impl"])
    if dg is not None:
        return _decode_gl(dg, q, kv, scale, dv, cfg, (B, Sq, H, Skv, d_pe))
    M = Sq * H
    BLOCK_M, BLOCK_N = cfg["BLOCK_M"], cfg["BLOCK_N"]
    block_dv = min(cfg["BLOCK_DV"], dv)
    nch = dv // block_dv
    if nch not in (1, 2):
        raise ValueError(f"mla_decode: BLOCK_DV={block_dv} must be dv or dv/2 (dv={dv})")
    m_blocks = triton.cdiv(M, BLOCK_M)
    num_sms = _num_sms(q.device)
    per_split = B * m_blocks * nch
    S, split_len = _split_plan(cfg["num_splits"], per_split, Skv, BLOCK_N, num_sms)
    num_programs = per_split * S
    o = torch.empty((B, Sq, H, dv), device=q.device, dtype=q.dtype)
    q2 = q.view(B, M, dv + d_pe)
    o2 = o.view(B, M, dv)
    # (tensors a mode does not use are passed as placeholders)
    if S == 1:
        merge, po, lse, sync = Merge.NONE, o2.view(B, M, 1, dv), o2.new_empty((B, M, 1), dtype=torch.float32), o2
    else:
        po = torch.empty((B, M, S, dv), device=q.device, dtype=torch.bfloat16)
        lse = torch.empty((B, M, S), device=q.device, dtype=torch.float32)
        # the merge runs in the same launch when every program is resident at once (one per SM)
        sync = None
        if cfg["fused_merge"] and num_programs <= num_sms and not _interpreting():
            sync = _sync_buffer(q.device, torch.cuda.current_stream(q.device).cuda_stream)
        merge = Merge.FUSED if sync is not None else Merge.KERNEL
        if sync is None:
            sync = lse
    block_s = max(2, triton.next_power_of_2(S))
    # fused merge: about one (row, columns) item per program, at most 16K partial values per item
    merge_dv = max(32, min(dv, 16384 // block_s, _pow2_floor(max(1, BLOCK_M * dv // (nch * S)))))
    extra = {"launch_cooperative_grid": True} if merge is Merge.FUSED else {}
    kv_tma = _kv_tma(q2, kv, block_dv)
    kd = (kv, kv)
    if kv_tma:
        kv2 = kv.view(B * Skv, dv + d_pe)
        kd = (
            TensorDescriptor.from_tensor(kv2, [BLOCK_N, block_dv]),
            TensorDescriptor.from_tensor(kv2, [BLOCK_N, d_pe]),
        )
    _decode_kernel[(nch * S, m_blocks, B)](
        q2, kv, *kd, po, lse, o2, sync,
        scale * LOG2E, M, Skv, Sq, H, split_len, S, num_programs,
        q2.stride(0), q2.stride(1), kv.stride(0), kv.stride(1), *_split_strides(po, lse, o2),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_DV=block_dv, BLOCK_S=block_s, MERGE_DV=merge_dv, DV=dv, D_PE=d_pe,
        SPLIT=merge is not Merge.NONE, FUSED_MERGE=merge is Merge.FUSED, KV_TMA=kv_tma, INTERP=_interpreting(),
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], **extra,
    )  # fmt: skip
    if merge is Merge.KERNEL:
        _merge(po, lse, o2, S, cfg["merge_block_dv"])
    return o


def prefill_with_config(q, kv, scale: float, dv: int = 512, cfg: dict | None = None):
    B, Sq, H, Skv, d_pe = _check(q, kv, dv, "mla_prefill")
    cfg = _config(cfg, "prefill", "mla_prefill")
    q = q.contiguous()
    kv = kv.contiguous()
    M = Sq * H
    o = torch.empty((B, Sq, H, dv), device=q.device, dtype=q.dtype)
    o2 = o.view(B, M, dv)
    dg = _gluon_for(q, kv, dv, cfg["impl"])
    if dg is not None:
        # one split whose queries are the whole cache
        dg.decode_split_gluon(
            q.view(B * M, dv + d_pe), kv.view(B * Skv, dv + d_pe), o2, None, scale * LOG2E,
            M, Skv, Sq, H, Skv, 1, B, dv, stages=cfg["gl_stages"], kslices=cfg["gl_kslices"],
            qreg=gl_qreg(cfg["gl_qreg"], triton.cdiv(Skv, dg.BLOCK_N), cfg["gl_stages"], d_pe + dv // cfg["gl_kslices"]),
        )  # fmt: skip
        return o
    BLOCK_M = cfg["BLOCK_M"]
    m_blocks = triton.cdiv(M, BLOCK_M)
    q2 = q.view(B, M, dv + d_pe)
    _prefill_kernel[(m_blocks, B)](
        q2, kv, o2, scale * LOG2E, M, Skv, Sq, H, m_blocks,
        q2.stride(0), q2.stride(1), kv.stride(0), kv.stride(1), o2.stride(0), o2.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=cfg["BLOCK_N"], DV=dv, D_PE=d_pe, INTERP=_interpreting(),
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )  # fmt: skip
    return o


def mla_decode(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int = 512) -> torch.Tensor:
    """Decode attention of q [B, Sq, H, D] over the latent cache kv [B, Skv, D]; o [B, Sq, H, dv].

    For Sq > 1 the queries are the last Sq positions of the cache (causal, tril(Skv - Sq)).
    Safe for calls overlapping on different streams: the Gluon path keeps no state between calls,
    and the tl path's fused merge takes one barrier-counter pair per stream.
    """
    return decode_with_config(q, kv, scale, dv)


def mla_prefill(q: torch.Tensor, kv: torch.Tensor, scale: float, dv: int = 512) -> torch.Tensor:
    """Causal attention of q [B, S, H, D] over kv [B, S, D] (query i sees kv 0..i); o [B, S, H, dv]."""
    return prefill_with_config(q, kv, scale, dv)


__all__ = [
    "mla_decode",
    "mla_prefill",
    "decode_with_config",
    "prefill_with_config",
    "DECODE_CONFIG",
    "PREFILL_CONFIG",
    "KNOBS",
]
