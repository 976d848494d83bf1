"""KDA (Kimi Delta Attention) forward in Triton: chunked form, chunk C = 64, two kernels (the
first launched twice: its fast form for every chunk, then its STRONG form for the chunks whose gates
the fast form cannot take).

Notation per head and chunk of C = 64 steps, rows i = 0..63, G_i = sum_{s<=i} g_s (cumulated in the
chunk), Gamma_i = exp(G_i), S0 the state entering the chunk:

    A[i, j]   = beta_i  k_i . (k_j * exp(G_i - G_j))            j < i   (strictly lower)
    Aqk[i, j] = scale q_i . (k_j * exp(G_i - G_j))              j <= i
    T         = (I + A)^-1                                      (the UT / WY transform)
    w         = T (beta * k * Gamma),   u = T (beta * v)
    U         = u - w S0                                        (the delta-rule updates)
    o         = (scale q * Gamma) S0 + Aqk U
    S_next    = exp(G_63)[:, None] * S0 + (k * exp(G_63 - G))^T U

Kernel 1 (`_kda_intra`, one program per chunk and head, fully parallel) computes the cumulative
gates (in the log2 domain, as products with a constant 0/1 matrix), writes qg = scale q * Gamma,
kd = k * exp(G_63 - G) (bf16), exp(G_63) (float32) and Aqk (bf16), and accumulates A in registers.
The decay exp(G_i - G_j) is split as exp(G_i - r_I) * exp(r_I - G_j) with r_I the cumulative gate
at the first row of row i's 16-row sub-chunk I. Left of sub-chunk I both factors are <= 1: the
four sub-chunks are one batched product [4, 16, BK] @ [4, BK, 64] (sub-chunk I's rows against its
own column tile, zero from column 16 I on) with fp16 operands, exact for any gates. Within it
(the 16x16 diagonal blocks) the column factor is >= 1: a [4, 16, BK] @ [4, BK, 16] product with
tf32 operands (fp16's precision, float32's range), exact while the sub-chunk's decay stays above
2^-109 (per-step log decays above -5 on average: FLA's safe-gate range, and its test gates, about
-0.8). That is the fast form. A chunk where it overflows is done again by the same kernel compiled
with STRONG, launched second: A and Aqk with every pair's decay split where both factors are <= 1
(_pairs_by_halves), so any gates g <= 0 give finite, accurate results (gates are clamped where the
decay is 0 in float32 anyway, GMIN). Then it solves, in registers: each warp inverts its
sub-chunk's 16x16 diagonal block of A, (I + D_I)^-1; with N the rest of A,
I + A = (I + D)(I + M), M = (I + D)^-1 N, D^16 = 0 and M^4 = 0, so Z = T - I follows from four
products (_z_of), and w = kb + Z kb, u = beta v + Z (beta v) with kb = beta k Gamma (parked in w's
buffer, which w overwrites).

Kernel 2, the scan, one program per (V block, head) (and sequence, with cu_seqlens), carries S
(K x BV, float32) through the chunks in order and writes o; it is the only sequential part.
Splitting V into blocks gives B * H * V / BV programs, enough to fill the 132 SMs of an H200 at
B = 1. On a Hopper GPU with a dense batch it is one of the Gluon kernels of scan_gluon.py, else
`_kda_scan` below.

The paths are chosen by capability, not by knobs: tensor descriptors (TMA) on a GPU of compute
capability 9 or more with 16-byte aligned tensors, per-element pointers elsewhere (Triton's
interpreter included); the Gluon scans where Triton provides Gluon's Hopper API and the GPU is a
Hopper. CONFIG holds the launch parameters, in one place.
"""

import pathlib
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

CHUNK = 64

# Launch parameters (measured on an H200, see docs/kernels.md). bk: the K slice of the intra
# kernel's loop; bw: the column slice of its w and u products; intra_nreg: its register cap (3
# blocks of 4 warps per SM); bv None: the scan's V block by the number of programs (kda_scan).
CONFIG = dict(
    bk=16, bw=64, prep_warps=4, intra_nreg=168, intra_stages=3, bv=None, scan_warps=4, scan_stages=3,
)  # fmt: skip

# scan_impl: "auto" takes the Gluon scan where it applies (gluon_t at BV 64, gluon at BV 32), else
# the tl scan; the others force one (a Gluon scan that does not apply falls back to tl).
SCAN_IMPLS = ("auto", "tl", "gluon", "gluon_t")


@triton.jit
def _rows(ptr, row0, n_rows, row_stride, BR: tl.constexpr, D: tl.constexpr):
    """Load a [BR, D] tile of rows row0.. (row stride row_stride), zero past n_rows."""
    r = row0 + tl.arange(0, BR)
    d = tl.arange(0, D)
    m = (r < n_rows)[:, None]
    return tl.load(ptr + r[:, None] * row_stride + d[None, :], mask=m, other=0.0).to(tl.float32)


@triton.jit
def _vec(ptr, row0, n_rows, row_stride, BR: tl.constexpr):
    r = row0 + tl.arange(0, BR)
    return tl.load(ptr + r * row_stride, mask=r < n_rows, other=0.0).to(tl.float32)


@triton.jit
def _rtne(x, INTERP: tl.constexpr):
    """float32 x ready to be cast to bf16 with round-to-nearest-even. The GPU's cast rounds so;
    Triton 3.6's interpreter truncates, so there the rounding is done on the bits first."""
    if INTERP:
        b = x.to(tl.float32).to(tl.uint32, bitcast=True)
        b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
        x = b.to(tl.float32, bitcast=True)
    return x


@triton.jit
def _put(ptr, row0, row_stride, x, BR: tl.constexpr, D: tl.constexpr, INTERP: tl.constexpr):
    """Store a [BR, D] tile to rows row0.. of a padded buffer (no mask needed)."""
    r = row0 + tl.arange(0, BR)
    d = tl.arange(0, D)
    tl.store(
        ptr + r[:, None] * row_stride + d[None, :],
        _rtne(x, INTERP).to(ptr.dtype.element_ty),
    )


@triton.jit
def _bf(x, INTERP: tl.constexpr):
    """x rounded to bf16 as a matrix-product operand. Triton 3.6's interpreter multiplies bf16
    tensors as their raw uint16 bits, so there the rounded values are carried in float32."""
    x = _rtne(x, INTERP).to(tl.bfloat16)
    if INTERP:
        x = x.to(tl.float32)
    return x


@triton.jit
def _tf32(x, INTERP: tl.constexpr):
    """float32 x as a tf32 matrix-product operand (10 mantissa bits, float32's range), rounded to
    nearest (ties away from zero): half a tf32 unit added to the bits, the low 13 of which the
    tensor cores then ignore (they truncate; truncated, the weak-decay family's error on o rose
    from 4.48e-3 to 4.60e-3); the interpreter, which multiplies in float32, clears them. An inf
    becomes a NaN: still not finite, which is all the fast form's flag needs."""
    b = x.to(tl.uint32, bitcast=True) + 0x1000
    if INTERP:
        b = b & 0xFFFFE000
    return b.to(tl.float32, bitcast=True)


@triton.jit
def _mmx(a, b, acc, PREC: tl.constexpr, INTERP: tl.constexpr):
    """acc + a @ b with float32 accumulation, the operands rounded to PREC: "bf16" (8 bits of
    mantissa, float32's range), "fp16" (11 bits, 8x as accurate, for operands known to lie
    within fp16's range: below 65504, and far enough above 2^-14 that its denormals cost nothing
    that matters), both on the same tensor-core instruction, or "tf32" (fp16's 11 bits with
    float32's range, an instruction of half the depth: for small products)."""
    if PREC == "bf16":
        return acc + tl.dot(_bf(a, INTERP), _bf(b, INTERP))
    elif PREC == "tf32":
        return acc + tl.dot(_tf32(a, INTERP), _tf32(b, INTERP), input_precision="tf32")
    else:
        return acc + tl.dot(a.to(tl.float16), b.to(tl.float16))


@triton.jit
def _cum(L, x, INTERP: tl.constexpr):
    """L @ x for the constant 0/1 matrix L [64, 64] (bf16, exact), x split into two bf16 parts
    (16 mantissa bits together: a relative error of about 2^-17 per term), float32 accumulation."""
    if INTERP:  # the same two bf16 parts, exactly
        b1 = _rtne(x, INTERP).to(tl.bfloat16).to(tl.float32)
        x = b1 + _rtne(x - b1, INTERP).to(tl.bfloat16).to(tl.float32)
        return tl.dot(L.to(tl.float32), x, input_precision="ieee")
    else:
        b1 = x.to(tl.bfloat16)
        b2 = (x - b1.to(tl.float32)).to(tl.bfloat16)
        acc = tl.dot(L, b1)
        return tl.dot(L, b2, acc)


LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _ex2(x, INTERP: tl.constexpr):
    """2^x; on the GPU the bare ex2.approx.ftz instruction (no denormal fix-up: the results that
    matter here are far from the denormal range), which flushes a result below 2^-126 to 0: so
    does the interpreter here."""
    if INTERP:
        e = tl.exp2(x)
        return tl.where(e < 1.1754943508222875e-38, 0.0, e)
    else:
        return tl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1
        )


@triton.jit
def _live(x, live, VARLEN: tl.constexpr):
    """x with the rows past its sequence's end zeroed (variable-length batches only)."""
    if VARLEN:
        x = tl.where(live, x, 0.0)
    return x


@triton.jit
def _chunk_rows(c, ctab, T, VARLEN: tl.constexpr):
    """The input rows [t0, tend) of chunk c: c * 64 and T, or a chunk of one sequence of a
    variable-length batch (ctab [NT, 2]: its first row and its sequence's end)."""
    if VARLEN:
        t0 = tl.load(ctab + 2 * c)
        tend = tl.load(ctab + 2 * c + 1)
    else:
        t0 = c * 64
        tend = T
    return t0, tend


# Gates in the log2 domain. A per-step log2 decay below GMIN is 2^GMIN = 0 in float32 (below the
# smallest denormal, 2^-149), as is every product of decays over a span that includes it: clamping
# there changes no result and keeps the cumulative sums finite and small enough (|G| <= 64 * 150)
# for their differences to keep float32's precision.
GMIN = tl.constexpr(-150.0)
# The fast form splits each decay at the row's sub-chunk start r = G_{16 I}:
# 2^(G_i - G_j) = 2^(G_i - r) 2^(r - G_j). Left of the sub-chunk (j < 16 I) both factors are <= 1:
# the fp16 operands overflow only for |scale q| past 65504 (Aqk's sum is then not finite and the
# chunk is flagged), and one that falls among fp16's denormals (steps of 2^-24) stands for a
# product below 2^-24 |k|. In the diagonal blocks the column factor 2^(r - G_j) >= 1 grows with the
# sub-chunk's decay; their operands are tf32 (float32's range), the column side scaled by
# 2^DIAG_SHIFT (undone after the loop), so that it overflows to inf, and the chunk is flagged,
# once a factor reaches 2^(128 - DIAG_SHIFT) = 2^109. Below that, a row operand x 2^(G_i - r) that
# flushes to 0 (under 2^-126) stands for a product below 2^-126 2^109 = 2^-17, the fp16 bound of
# the form before (below bf16's rounding of a typical term). 2^-109 over the 15 steps from a
# sub-chunk's first row to its last is a log decay of -5.04 a step: gates g >= -5 (FLA's safe-gate
# range) never leave the fast form.
DIAG_SHIFT = tl.constexpr(19.0)
DIAG_UNSHIFT = tl.constexpr(2.0**-19)


@triton.jit
def _pairs_by_halves(A3, P3, Ad, Pd, kbe, qs, k64, G, BK: tl.constexpr, INTERP: tl.constexpr):
    """One K slice's share of A (beta_i k_i . k_j 2^(G_i - G_j), j < i) and Aqk (scale q_i . k_j
    2^(G_i - G_j), j <= i) for any gates, added to A3, P3 ([4, 16, 64]: sub-chunk I's rows, the
    columns left of its diagonal block) and Ad, Pd ([4, 16, 16]: the diagonal blocks). Every pair
    j < i is taken at the one level S (64, 32, ..., 2) whose aligned group of S rows holds both, j
    in its left half and i in its right half, with the decay split at the left half's last row r:
    2^(G_i - G_r) 2^(G_r - G_j), both exponents <= 0, so that no factor exceeds 1 and a factor that
    underflows stands for a product that is 0 in float32 too. The diagonal of Aqk is q_i . k_i."""
    r16 = tl.arange(0, 16)
    Pd += tl.where(
        (r16[:, None] == r16[None, :])[None, :, :], tl.reshape(tl.sum(qs * k64, axis=1), [4, 16])[:, :, None], 0.0
    )
    A3, P3, Ad, Pd = _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, 64, BK, INTERP)
    A3, P3, Ad, Pd = _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, 32, BK, INTERP)
    A3, P3, Ad, Pd = _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, 16, BK, INTERP)
    A3, P3, Ad, Pd = _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, 8, BK, INTERP)
    A3, P3, Ad, Pd = _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, 4, BK, INTERP)
    A3, P3, Ad, Pd = _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, 2, BK, INTERP)
    return A3, P3, Ad, Pd


@triton.jit
def _pairs_at_level(A3, P3, Ad, Pd, kbe, qs, k64, G, S: tl.constexpr, BK: tl.constexpr, INTERP: tl.constexpr):
    """The pairs (i, j) of _pairs_by_halves at level S: i in the right half and j in the left
    half of the same aligned group of S rows, the decay split at the left half's last row."""
    r = tl.arange(0, 64)
    G4 = tl.reshape(G, [64 // S, S, BK])
    ref = tl.sum(tl.where((tl.arange(0, S) == S // 2 - 1)[None, :, None], G4, 0.0), axis=1)
    ref = tl.reshape(tl.broadcast_to(ref[:, None, :], [64 // S, S, BK]), [64, BK])
    right = ((r % S) >= S // 2)[:, None]
    # (the exponents are <= 0 where the masks keep them; the minimum keeps the others finite)
    rf = tl.reshape(tl.where(right, _ex2(tl.minimum(G - ref, 0.0), INTERP), 0.0), [4, 16, BK])
    cf = tl.where(right, 0.0, k64 * _ex2(tl.minimum(ref - G, 0.0), INTERP))
    kr3 = tl.reshape(kbe, [4, 16, BK]) * rf
    qr3 = tl.reshape(qs, [4, 16, BK]) * rf
    if S >= 32:  # the columns of sub-chunk I's group left of sub-chunk I
        i4 = tl.arange(0, 4)
        C3 = tl.where((r[None, :, None] // S == (16 * i4[:, None, None]) // S), cf[None, :, :], 0.0)
        Ct = tl.permute(C3, (0, 2, 1))
        A3 = _mmx(kr3, Ct, A3, "bf16", INTERP)
        P3 = _mmx(qr3, Ct, P3, "bf16", INTERP)
    else:  # within the diagonal blocks
        Ct = tl.permute(tl.reshape(cf, [4, 16, BK]), (0, 2, 1))
        a = _mmx(kr3, Ct, 0.0, "bf16", INTERP)
        p = _mmx(qr3, Ct, 0.0, "bf16", INTERP)
        if S < 16:  # only pairs within one group
            r16 = tl.arange(0, 16)
            same = ((r16[:, None] // S) == (r16[None, :] // S))[None, :, :]
            a = tl.where(same, a, 0.0)
            p = tl.where(same, p, 0.0)
        Ad += a
        Pd += p
    return A3, P3, Ad, Pd


@triton.jit
def _kda_intra(
    q, k, g, beta, v, ctab,
    qg_out, kd_out, aqk_out, gc_out, w_out, u_out, flags,
    QD, KD, GD, QGD, KDD, AQD, VD, UD,
    scale, T, H, NT, TP,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BW: tl.constexpr, TMA: tl.constexpr,
    VARLEN: tl.constexpr, STRONG: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """The chunk-parallel part, one program per (chunk, head): writes qg = scale q e^G,
    kd = k e^(G_63 - G) (bf16), e^(G_63) (float32), Aqk (bf16), w and u (bf16) to the chunk's
    rows of the padded buffers. Gates in the log2 domain (g log2 e), exponentials as bare ex2.

    The fast form: each decay split at the row's sub-chunk start r_I (see DIAG_SHIFT). The four
    16-row sub-chunks are one batched product [4, 16, BK] @ [4, BK, 64] with fp16 operands,
    sub-chunk I's rows x_i 2^(G_i - r_I) against its own column tile k_j 2^(r_I - G_j), zero from
    column 16 I on; the diagonal blocks one [4, 16, BK] @ [4, BK, 16] with tf32 operands, the same
    rows against k_j 2^(r_I - G_j + DIAG_SHIFT). Each program records in flags[bh, c] whether
    Aqk's sum is not finite (a diagonal-block factor reached 2^109, or |scale q| passed fp16's
    range) and then stops; the same kernel compiled with STRONG, launched after it, redoes exactly
    those chunks (the others return at once) with A and Aqk from _pairs_by_halves, which holds for
    any gates, and writes Aqk, w and u (qg, kd and e^(G_63) are right from the first launch,
    whatever the gates). A kernel of its own, so that the fast form keeps its registers.

    TMA: q, k, g, v tiles loaded and qg, kd, Aqk, u stored through tensor descriptors (QD ... UD;
    the inputs as [B, T, H * K], rows past T zero-filled), instead of per-element pointers. kb is
    stored by pointers into w's buffer and read back by this program after a block barrier (its
    own stores), then overwritten by w."""
    c = tl.program_id(0)
    bh = tl.program_id(1)
    if STRONG:
        if tl.load(flags + bh * NT + c) == 0:
            return
    b = bh // H
    h = bh % H
    p0 = c * 64  # the chunk's rows in the padded buffers
    t0, tend = _chunk_rows(c, ctab, T, VARLEN)
    q_p = q + (b * T * H + h) * K
    k_p = k + (b * T * H + h) * K
    g_p = g + (b * T * H + h) * K
    o_row = bh.to(tl.int64) * TP
    r = tl.arange(0, 64)
    ri = r[:, None]
    rj = r[None, :]
    live = (t0 + ri) < tend  # rows of this chunk's sequence (a TMA box ends only at T)
    rk = tl.arange(0, BK)
    # G = Lc g, the inclusive cumulative sum (exact 0/1 entries in bf16)
    Lc = (rj <= ri).to(tl.float32).to(tl.bfloat16)
    be = _vec(beta + b * T * H + h, t0, tend, H, 64)
    gc_p = gc_out + (bh.to(tl.int64) * NT + c) * K

    r16 = tl.arange(0, 16)
    i4 = tl.arange(0, 4)
    A3 = tl.zeros([4, 16, 64], tl.float32)
    P3 = tl.zeros([4, 16, 64], tl.float32)
    # column j of block I's tile is used for j < 16 I (the diagonal block apart)
    cmask = r[None, :, None] < 16 * i4[:, None, None]
    Ad = tl.zeros([4, 16, 16], tl.float32)  # the diagonal blocks of A and Aqk
    Pd = tl.zeros([4, 16, 16], tl.float32)
    for ks in range(0, K, BK):
        if TMA:
            g64 = _live(tl.reshape(GD.load([b, t0, h * K + ks]), [64, BK]), live, VARLEN) * LOG2E
        else:
            g64 = _rows(g_p + ks, t0, tend, H * K, 64, BK) * LOG2E
        G = _cum(Lc, tl.maximum(g64, GMIN), INTERP)
        if TMA:
            k64 = _live(tl.reshape(KD.load([b, t0, h * K + ks]), [64, BK]).to(tl.float32), live, VARLEN)
            qs = _live(tl.reshape(QD.load([b, t0, h * K + ks]), [64, BK]).to(tl.float32), live, VARLEN) * scale
        else:
            k64 = _rows(k_p + ks, t0, tend, H * K, 64, BK)
            qs = _rows(q_p + ks, t0, tend, H * K, 64, BK) * scale
        kbe = k64 * be[:, None]
        eG = _ex2(G, INTERP)
        _put(w_out + o_row * K + ks, p0, K, kbe * eG, 64, BK, INTERP)  # kb, in w's buffer
        if STRONG:
            A3, P3, Ad, Pd = _pairs_by_halves(A3, P3, Ad, Pd, kbe, qs, k64, G, BK, INTERP)
        else:
            # e^(G_63) is row 63 of e^G (rows past T have g = 0)
            tl.store(gc_p + ks + rk[None, :] + ri * 0, eG, mask=(ri == 63) & (rk[None, :] < BK))
            if TMA:
                QGD.store([bh * TP + p0, ks], (qs * eG).to(tl.bfloat16))
            else:
                _put(qg_out + o_row * K + ks, p0, K, qs * eG, 64, BK, INTERP)
            Gd = tl.sum(tl.where(ri == 63, G, 0.0), axis=0)[None, :] - G
            kd = k64 * _ex2(Gd, INTERP)
            if TMA:
                KDD.store([bh * TP + p0, ks], kd.to(tl.bfloat16))
            else:
                _put(kd_out + o_row * K + ks, p0, K, kd, 64, BK, INTERP)
            G3 = tl.reshape(G, [4, 16, BK])
            r4 = tl.sum(tl.where((r16 == 0)[None, :, None], G3, 0.0), axis=1)  # [4, BK]: G_{16 I}
            dr3 = r4[:, None, :] - G3  # >= 0
            e3 = _ex2(-dr3, INTERP)
            kr3 = tl.reshape(kbe, [4, 16, BK]) * e3
            qr3 = tl.reshape(qs, [4, 16, BK]) * e3
            Cd = tl.permute(tl.reshape(k64, [4, 16, BK]) * _ex2(dr3 + DIAG_SHIFT, INTERP), (0, 2, 1))
            Ad = _mmx(kr3, Cd, Ad, "tf32", INTERP)
            Pd = _mmx(qr3, Cd, Pd, "tf32", INTERP)
            C3 = tl.where(cmask, k64[None, :, :] * _ex2(r4[:, None, :] - G[None, :, :], INTERP), 0.0)
            Ct = tl.permute(C3, (0, 2, 1))
            A3 = _mmx(kr3, Ct, A3, "fp16", INTERP)
            P3 = _mmx(qr3, Ct, P3, "fp16", INTERP)

    if not STRONG:  # (STRONG's diagonal blocks hold only their pairs j < i)
        Ad = tl.where(r16[None, None, :] < r16[None, :, None], Ad * DIAG_UNSHIFT, 0.0)
        Pd = tl.where(r16[None, None, :] <= r16[None, :, None], Pd * DIAG_UNSHIFT, 0.0)
    on_diag = i4[:, None, None, None] == i4[None, None, :, None]  # [4, 1, 4, 1]
    P3 += tl.reshape(tl.where(on_diag, Pd[:, :, None, :], 0.0), [4, 16, 64])
    if not STRONG:
        # a diagonal-block factor past 2^109, or |scale q| past fp16's range (the sum is then inf
        # or NaN): the STRONG kernel does this chunk
        strong = (tl.sum(tl.abs(P3)) < float("inf")) == 0
        tl.store(flags + bh * NT + c, strong.to(tl.int32))
        if strong:
            return
    P = tl.reshape(P3, [64, 64])
    if TMA:
        AQD.store([bh * TP + p0, 0], tl.where(rj <= ri, P, 0.0).to(tl.bfloat16))
    else:
        _put(aqk_out + o_row * 64, p0, 64, tl.where(rj <= ri, P, 0.0), 64, 64, INTERP)
    # each sub-chunk's own 16 x 16 block inverted where it lies (block I of A3 is the warp's);
    # fp16 holds it: |A| <= 1, so the entries of D^2, D^4, D^8 and of the partial inverses are at
    # most 14, 364, 3432 and 2^14 (the paths through a 16 x 16 strictly lower block)
    A = tl.reshape(_diag_inverse(A3, Ad, "fp16", INTERP), [64, 64])
    D = tl.where(ri // 16 == rj // 16, A, 0.0)
    Zf = _z_of(D, A - D, (ri == rj).to(tl.float32), "bf16", INTERP)
    Z = _bf(Zf, INTERP)
    # w = kb + Z kb with kb read back: this program's own stores, ordered by the barrier
    tl.debug_barrier()
    for ks in range(0, K, BW):
        x = tl.load(w_out + (o_row + p0 + ri) * K + ks + tl.arange(0, BW)[None, :])
        x = x.to(tl.float32)
        x = _mmx(Z, x, x, "bf16", INTERP)
        _put(w_out + o_row * K + ks, p0, K, x, 64, BW, INTERP)  # the same (generic) stores as kb's
    # u = beta v + Z (beta v) as beta v + (Z diag(beta)) v: v is exact in bf16, so only Z diag(beta)
    # is rounded (beta v rounded to bf16 cost more); made from the rounded Z here, after w's loop,
    # Zf is no longer live there
    Zb = _bf(Z.to(tl.float32) * be[None, :], INTERP)
    v_p = v + (b * T * H + h) * V
    for vs in range(0, V, BW):
        if TMA:
            x = _live(tl.reshape(VD.load([b, t0, h * V + vs]), [64, BW]).to(tl.float32), live, VARLEN)
        else:
            x = _rows(v_p + vs, t0, tend, H * V, 64, BW)
        x = _mmx(Zb, x, x * be[:, None], "bf16", INTERP)
        if TMA:
            UD.store([bh * TP + p0, vs], x.to(tl.bfloat16))
        else:
            _put(u_out + o_row * V + vs, p0, V, x, 64, BW, INTERP)


@triton.jit
def _diag_inverse(A3, D, SPREC: tl.constexpr, INTERP: tl.constexpr):
    """[4, 16, 64] rows of A by sub-chunk, the diagonal blocks D_I ([4, 16, 16], strictly lower)
    apart (A3 zero there and past them), to the same rows with (I + D_I)^-1 =
    (I - D)(I + D^2)(I + D^4)(I + D^8) in the diagonal blocks, as [4, 16, 16] batched products."""
    i4 = tl.arange(0, 4)
    r16 = tl.arange(0, 16)
    A4 = tl.reshape(A3, [4, 16, 4, 16])
    on_diag = i4[:, None, None, None] == i4[None, None, :, None]  # [4, 1, 4, 1]
    eye = (r16[None, :, None] == r16[None, None, :]).to(tl.float32)
    Di = _unit_lower_inverse(D, eye, SPREC, INTERP)
    return tl.reshape(tl.where(on_diag, Di[:, :, None, :], A4), [4, 16, 64])


@triton.jit
def _unit_lower_inverse(D, eye, SPREC: tl.constexpr, INTERP: tl.constexpr):
    """(I + D)^-1 for D block diagonal with strictly lower 16 x 16 blocks (D^16 = 0):
    (I - D)(I + D^2)(I + D^4)(I + D^8), each product X + X @ Y with a float32 accumulator,
    interleaved to keep few tiles live. Works on [64, 64] tiles and on [4, 16, 16] batches."""
    Di = eye - D
    D2 = _mmx(D, D, 0.0, SPREC, INTERP)
    Di = _mmx(Di, D2, Di, SPREC, INTERP)
    D4 = _mmx(D2, D2, 0.0, SPREC, INTERP)
    Di = _mmx(Di, D4, Di, SPREC, INTERP)
    D8 = _mmx(D4, D4, 0.0, SPREC, INTERP)
    return _mmx(Di, D8, Di, SPREC, INTERP)


@triton.jit
def _z_of(Di, N, eye, SPREC: tl.constexpr, INTERP: tl.constexpr):
    """Z = (I + A)^-1 - I from Di = (I + D)^-1 (D the 16 x 16 diagonal blocks of A) and N = A - D:
    I + A = (I + D)(I + M) with M = Di N, M^4 = 0, so (I + M)^-1 = (I - M)(I + M^2) and
    Z = (Di - I) + (X - I) Di with X = (I + M)^-1."""
    M = _mmx(Di, N, 0.0, SPREC, INTERP)
    M2 = _mmx(M, M, 0.0, SPREC, INTERP)
    X = eye - M
    X = _mmx(X, M2, X, SPREC, INTERP)
    return _mmx(X - eye, Di, Di - eye, SPREC, INTERP)


@triton.jit
def _scan_chunk(S, c, b, h, bh, iv, ctab, T, TP, qg, kd, w, u, aqk, gc, o, WD, QGD, KDD, AQD, UD, OD,
                H, NT, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr, TMA: tl.constexpr,
                VARLEN: tl.constexpr, INTERP: tl.constexpr):  # fmt: skip
    """One chunk of the scan: o for the chunk's rows, and the state S carried past it."""
    rc = tl.arange(0, 64)
    rk = tl.arange(0, K)
    rv = iv * BV + tl.arange(0, BV)
    base = bh.to(tl.int64) * TP
    if TMA:
        row0 = bh * TP + c * 64
        w_c = WD.load([row0, 0])
        q_c = QGD.load([row0, 0])
        k_c = KDD.load([row0, 0])
        a_c = AQD.load([row0, 0])
        u_c = UD.load([row0, iv * BV]).to(tl.float32)
    else:
        rows = base + c * 64 + rc
        w_c = _bf(tl.load(w + rows[:, None] * K + rk[None, :]), INTERP)
        q_c = _bf(tl.load(qg + rows[:, None] * K + rk[None, :]), INTERP)
        k_c = _bf(tl.load(kd + rows[:, None] * K + rk[None, :]), INTERP)
        a_c = _bf(tl.load(aqk + rows[:, None] * 64 + rc[None, :]), INTERP)
        u_c = tl.load(u + rows[:, None] * V + rv[None, :]).to(tl.float32)
    g_c = tl.load(gc + (bh.to(tl.int64) * NT + c) * K + rk)

    sb = _bf(S, INTERP)
    ub = _bf(u_c - tl.dot(w_c, sb), INTERP)
    out = tl.dot(q_c, sb)
    out = tl.dot(a_c, ub, out)
    if TMA and not VARLEN:
        OD.store([b, c * 64, h * V + iv * BV], tl.reshape(out.to(o.dtype.element_ty), [1, 64, BV]))
    else:
        t0, tend = _chunk_rows(c, ctab, T, VARLEN)
        t = t0 + rc
        op = o + ((b * T + t).to(tl.int64) * H + h)[:, None] * V + rv[None, :]
        tl.store(op, _rtne(out, INTERP).to(o.dtype.element_ty), mask=(t < tend)[:, None])
    S = S * g_c[:, None] + tl.dot(tl.trans(k_c), ub)
    return S


@triton.jit
def _kda_scan(
    qg, kd, w, u, aqk, gc, h0, o, hT, ctab, cseq,
    WD, QGD, KDD, AQD, UD, OD,
    T, H, NT, TP,
    K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr, HAS_H0: tl.constexpr, STORE_HT: tl.constexpr,
    TMA: tl.constexpr, VARLEN: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """The sequential scan, one program per (V block, head): S (K x BV) through the chunks.
    TMA: the chunk tiles loaded and o stored through tensor descriptors (WD ... OD; o as
    [B, T, H * V], rows past T clipped). VARLEN: program (V block, head, sequence) runs over its
    sequence's chunks cseq[n] .. cseq[n + 1] - 1, with its own initial and final state; o by
    pointers, masked at the sequence's end."""
    iv = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rk = tl.arange(0, K)
    rv = iv * BV + tl.arange(0, BV)
    if VARLEN:
        n = tl.program_id(2)
        c_lo = tl.load(cseq + n)
        c_hi = tl.load(cseq + n + 1)
        sidx = (n * H + h).to(tl.int64)  # the sequence's state
    else:
        c_lo = 0
        c_hi = NT
        sidx = bh.to(tl.int64)

    s_off = sidx * K * V + rk[:, None] * V + rv[None, :]
    if HAS_H0:
        S = tl.load(h0 + s_off)
    else:
        S = tl.zeros([K, BV], tl.float32)
    for c in range(c_lo, c_hi):
        S = _scan_chunk(S, c, b, h, bh, iv, ctab, T, TP, qg, kd, w, u, aqk, gc, o,
                        WD, QGD, KDD, AQD, UD, OD, H, NT, K, V, BV, TMA, VARLEN, INTERP)  # fmt: skip
    if STORE_HT:
        tl.store(hT + s_off, S)


def _scan_gluon():
    """kernels/kda/scan_gluon.py, imported from beside this file (kernel.py may be loaded by path,
    and a task's rules allow only plain import statements); None where this Triton has no Gluon
    Hopper API."""
    here = str(pathlib.Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.append(here)
    try:
        import scan_gluon
    except ImportError:
        return None
    return scan_gluon


def _desc(x, block):
    """A TMA tensor descriptor over x (contiguous, 16-byte aligned rows) with the given box."""
    return TensorDescriptor.from_tensor(x, block)


def tma_applies(*xs) -> bool:
    """Whether the tensors can be read through TMA descriptors: on a GPU of compute capability 9
    or more (not the interpreter) and 16-byte aligned (a valid input may be a view at an odd
    offset: it takes the pointers)."""
    return all(x.is_cuda and torch.cuda.get_device_capability(x.device)[0] >= 9 and x.data_ptr() % 16 == 0 for x in xs)


def kda_fwd(q, k, v, g, beta, scale, initial_state=None, output_final_state=False, cu_seqlens=None):
    """KDA forward. q, k: [B, T, H, K] bf16; v: [B, T, H, V] bf16; g: [B, T, H, K] float32 per-step
    log decay (not cumulated); beta: [B, T, H]; scale: float or None (K**-0.5); initial_state:
    [B, H, K, V] float32 or None. Returns (o [B, T, H, V] in q's dtype, final state [B, H, K, V]
    float32 or None).

    cu_seqlens (FLA's variable-length form): B = 1 and the N sequences packed along T, sequence n
    being rows cu_seqlens[n] .. cu_seqlens[n + 1] - 1 (an integer tensor [N + 1] from 0 to T);
    initial_state and the final state are then [N, H, K, V]. The chunk table is built on the
    host, so a call with cu_seqlens on the GPU synchronises once (as FLA's does)."""
    return kda_fwd_cfg(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens)


def kda_fwd_cfg(q, k, v, g, beta, scale, initial_state=None, output_final_state=False, cu_seqlens=None,
                pad_small=None, bv=None, scan_stages=None, scan_impl="auto"):  # fmt: skip
    """kda_fwd with the scan's choices made explicit (see kda_scan) and pad_small (see _padded;
    None: on the GPU only)."""
    _check_shapes(q, k, v, g, beta)
    if cu_seqlens is not None:  # to the host once: the chunk table is built there
        cu_seqlens = torch.as_tensor(cu_seqlens).detach().cpu()
    if pad_small or (pad_small is None and q.is_cuda):
        if scale is None:
            scale = q.shape[-1] ** -0.5
        padded = _padded(q, k, v, g, beta, initial_state, cu_seqlens)
        if padded is not None:
            (q2, k2, v2, g2, b2, h2, cu2), undo = padded
            o, hT = kda_fwd_cfg(q2, k2, v2, g2, b2, scale, h2, output_final_state, cu2, False, bv, scan_stages,
                                scan_impl)  # fmt: skip
            return undo(o, hT)
    if initial_state is not None:
        initial_state = initial_state.float().contiguous()
    prep = kda_prepare(q, k, v, g, beta, scale, cu_seqlens=cu_seqlens)
    return kda_scan(prep, initial_state, output_final_state, bv=bv, stages=scan_stages, impl=scan_impl)


def _check_shapes(q, k, v, g, beta):
    """A clear error for inputs of the wrong shapes (before any padding could hide them)."""
    if q.dim() != 4 or k.shape != q.shape or g.shape != q.shape or v.dim() != 4 or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"kda_fwd: shape mismatch q{tuple(q.shape)} k{tuple(k.shape)} v{tuple(v.shape)} g{tuple(g.shape)}"
        )
    if beta.shape != q.shape[:3]:
        raise ValueError(f"kda_fwd: beta must be [B, T, H], got {tuple(beta.shape)}")
    for name, d in (("K", q.shape[-1]), ("V", v.shape[-1])):
        if d < 16 or d & (d - 1):
            raise ValueError(f"kda_fwd: {name} = {d} must be a power of two >= 16")


def _padded(q, k, v, g, beta, initial_state, cu_seqlens):
    """Inputs widened to the shapes the GPU build is verified at, or None when already there.

    On the H200 (Triton 3.6) the kernels fault or go wrong for K or V below 64 and for a single
    chunk (T <= 64, or one chunk in all of cu_seqlens); the interpreter computes those shapes
    right. Zero padding is exact: keys, queries and gates of 0 on the extra K columns, values
    of 0 on the extra V columns, and extra time steps with k = beta = g = 0 (a sequence of its
    own under cu_seqlens) leave every real output and state unchanged. Returns the padded
    inputs and a function that cuts (o, final state) back."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    nchunks = triton.cdiv(T, CHUNK)
    if cu_seqlens is not None:  # checked here, before the padding could hide a bad one
        nchunks = int(chunk_table(cu_seqlens, B, T, "cpu")[1][-1])
        cu = torch.as_tensor(cu_seqlens).to("cpu", torch.int64)
    Kp, Vp, extra = max(K, 64), max(V, 64), (CHUNK if nchunks < 2 else 0)
    if (Kp, Vp, extra) == (K, V, 0):
        return None

    def pad(x, last, rows):
        return torch.nn.functional.pad(x, (0, last - x.shape[-1], *(0, 0) * (x.dim() - 3), 0, rows))

    q2, k2, g2 = (pad(x, Kp, extra) for x in (q, k, g))
    v2 = pad(v, Vp, extra)
    b2 = torch.nn.functional.pad(beta, (0, 0, 0, extra))
    h2, cu2 = initial_state, cu_seqlens
    if initial_state is not None:
        h2 = torch.nn.functional.pad(initial_state, (0, Vp - V, 0, Kp - K))
    if cu_seqlens is not None and extra:
        cu2 = torch.cat([cu, torch.tensor([T + extra])])
        if h2 is not None:  # the extra sequence starts from zero
            h2 = torch.cat([h2, h2.new_zeros(1, *h2.shape[1:])])

    def undo(o, hT):
        o = o[:, :T, :, :V]
        if hT is not None:
            hT = hT[: hT.shape[0] - (1 if cu_seqlens is not None and extra else 0), :, :K, :V]
        return o.contiguous(), None if hT is None else hT.contiguous()

    return (q2, k2, v2, g2, b2, h2, cu2), undo


def kda_prepare(q, k, v, g, beta, scale, cu_seqlens=None):
    """The chunk-parallel part (_kda_intra, then the same with STRONG for the chunks whose gates
    its fast form cannot take: a second launch whose other programs return at once). Returns the
    buffers the scan reads, as a dict, and strong: [B * H * NT] int32, 1 for each chunk the STRONG
    form did."""
    _check_shapes(q, k, v, g, beta)
    B, T, H, K = q.shape
    V = v.shape[-1]
    if scale is None:
        scale = K**-0.5
    bk = min(CONFIG["bk"], K, V)
    bw = min(CONFIG["bw"], K, V)
    interp = q.device.type == "cpu"  # Triton's interpreter (TRITON_INTERPRET=1)
    q, k, v, g, beta = (x.contiguous() for x in (q, k, v, g, beta))
    g = g.float()
    dev = q.device
    ctab, cseq = chunk_table(cu_seqlens, B, T, dev)
    varlen = cu_seqlens is not None
    NT = ctab.shape[0] if varlen else triton.cdiv(T, CHUNK)
    TP = NT * CHUNK
    BH = B * H
    qg = torch.empty(BH, TP, K, device=dev, dtype=torch.bfloat16)
    kd = torch.empty_like(qg)
    w = torch.empty_like(qg)
    u = torch.empty(BH, TP, V, device=dev, dtype=torch.bfloat16)
    aqk = torch.empty(BH, TP, CHUNK, device=dev, dtype=torch.bfloat16)
    gc = torch.empty(BH, NT, K, device=dev, dtype=torch.float32)
    use_tma = not interp and tma_applies(q, k, g, v)
    if use_tma:
        descs = (
            *(_desc(x.view(B, T, H * K), [1, 64, bk]) for x in (q, k, g)),
            *(_desc(x.view(BH * TP, K), [64, bk]) for x in (qg, kd)),
            _desc(aqk.view(BH * TP, CHUNK), [64, CHUNK]),
            _desc(v.view(B, T, H * V), [1, 64, bw]),
            _desc(u.view(BH * TP, V), [64, bw]),
        )
    else:
        descs = (q,) * 8  # unused
    flags = torch.empty(BH * NT, device=dev, dtype=torch.int32)  # written by the first kernel
    for strong in (False, True):
        _kda_intra[(NT, BH)](
            q, k, g, beta, v, ctab, qg, kd, aqk, gc, w, u, flags, *descs,
            float(scale), T, H, NT, TP,
            K=K, V=V, BK=bk, BW=bw, TMA=use_tma, VARLEN=varlen, STRONG=strong, INTERP=interp,
            num_warps=CONFIG["prep_warps"], num_stages=CONFIG["intra_stages"],
            maxnreg=CONFIG["intra_nreg"] or None,
        )  # fmt: skip
    return dict(
        qg=qg, kd=kd, w=w, u=u, aqk=aqk, gc=gc, ctab=ctab, cseq=cseq, strong=flags,
        shape=(B, T, H, K, V), dtype=q.dtype, interp=interp,
    )  # fmt: skip


def chunk_table(cu_seqlens, B, T, dev):
    """For cu_seqlens: ctab [NT, 2] int32 (each chunk's first row and its sequence's end) and
    cseq [N + 1] int32 (sequence n's chunks are cseq[n] .. cseq[n + 1] - 1). Without: two
    one-element placeholders and None."""
    if cu_seqlens is None:
        return torch.empty(2, device=dev, dtype=torch.int32), None  # never read
    cu = torch.as_tensor(cu_seqlens).detach()
    if cu.dim() != 1 or cu.numel() < 2 or cu.dtype.is_floating_point or cu.dtype == torch.bool:
        raise ValueError(f"kda_fwd: cu_seqlens must be a 1-D integer tensor [N + 1], got {cu.dtype} {tuple(cu.shape)}")
    if B != 1:
        raise ValueError(f"kda_fwd: cu_seqlens needs B = 1 (sequences packed along T), got B = {B}")
    cu = cu.to("cpu", torch.int64)
    lens = cu[1:] - cu[:-1]
    if cu[0] != 0 or cu[-1] != T or bool((lens < 0).any()):
        raise ValueError(f"kda_fwd: cu_seqlens must rise from 0 to T = {T}, got {cu.tolist()[:8]}...")
    nch = (lens + CHUNK - 1) // CHUNK
    cseq = torch.cat([torch.zeros(1, dtype=torch.int64), nch.cumsum(0)])
    seq = torch.repeat_interleave(torch.arange(lens.numel()), nch)
    t0 = cu[seq] + CHUNK * (torch.arange(seq.numel()) - cseq[seq])
    ctab = torch.stack([t0, cu[seq + 1]], dim=1).to(torch.int32)
    if ctab.shape[0] == 0:  # only empty sequences: one dummy row, never read
        ctab = torch.zeros(1, 2, dtype=torch.int32)
    return ctab.contiguous().to(dev), cseq.to(torch.int32).to(dev)


def scan_block(n_states, V):
    """The scan's V block for NS * H (sequences times heads): wide blocks while there are enough
    programs to fill the 132 SMs, narrower below (measured on an H200: 64 best from 64 on, 32 at
    32)."""
    n = n_states
    return 64 if n * (V // 64) >= 128 else (32 if n * (V // 32) >= 96 else 16)


def kda_scan(prep, initial_state=None, output_final_state=False, bv=None, stages=None, impl="auto"):
    """The sequential scan over chunks; returns (o, final state or None). bv None: scan_block;
    stages None: CONFIG's; impl: one of SCAN_IMPLS."""
    B, T, H, K, V = prep["shape"]
    NT = prep["gc"].shape[1]
    TP = NT * CHUNK
    BH = B * H
    cseq = prep["cseq"]
    varlen = cseq is not None
    NS = cseq.numel() - 1 if varlen else B  # sequences, each with its own state
    bv = min(bv or CONFIG["bv"] or scan_block(NS * H, V), V)
    stages = stages or CONFIG["scan_stages"]
    dev = prep["qg"].device
    o = torch.empty(B, T, H, V, device=dev, dtype=prep["dtype"])
    # unused pointers get their own dummy (the interpreter copies each argument back separately)
    dummy = torch.empty(1, device=dev, dtype=torch.float32)
    hT = torch.empty(NS, H, K, V, device=dev, dtype=torch.float32) if output_final_state else dummy
    h0 = initial_state.float().contiguous() if initial_state is not None else dummy
    if initial_state is not None and h0.shape != (NS, H, K, V):
        what = "[N, H, K, V] with cu_seqlens" if varlen else "[B, H, K, V]"
        raise ValueError(f"kda_fwd: initial_state must be {what} = {(NS, H, K, V)}, got {tuple(h0.shape)}")
    if impl not in SCAN_IMPLS:
        raise ValueError(f"kda_fwd: scan_impl must be one of {SCAN_IMPLS}, got {impl!r}")
    if impl == "auto":
        impl = {64: "gluon_t", 32: "gluon"}.get(bv, "tl")
    if impl != "tl" and not prep["interp"]:
        sg = _scan_gluon()
        tr = impl == "gluon_t"
        if sg is not None and sg.applies(prep, 64 if tr else bv):
            sg.kda_scan_gluon(prep, h0 if initial_state is not None else None, o,
                              hT if output_final_state else None, 64 if tr else bv, stages=stages,
                              transposed=tr)  # fmt: skip
            return o, (hT if output_final_state else None)
    p = prep
    use_tma = not p["interp"] and tma_applies(o)
    if use_tma:
        descs = (
            *(_desc(p[n].view(BH * TP, K), [64, K]) for n in ("w", "qg", "kd")),
            _desc(p["aqk"].view(BH * TP, CHUNK), [64, CHUNK]),
            _desc(p["u"].view(BH * TP, V), [64, bv]),
            _desc(o.view(B, T, H * V), [1, 64, bv]),
        )
    else:
        descs = (o,) * 6  # unused
    grid = (V // bv, BH, NS) if varlen else (V // bv, BH)
    _kda_scan[grid](
        p["qg"], p["kd"], p["w"], p["u"], p["aqk"], p["gc"], h0, o, hT, p["ctab"],
        cseq if varlen else p["ctab"], *descs, T, H, NT, TP,
        K=K, V=V, BV=bv, HAS_H0=initial_state is not None, STORE_HT=output_final_state,
        TMA=use_tma, VARLEN=varlen, INTERP=p["interp"], num_warps=CONFIG["scan_warps"], num_stages=stages,
    )  # fmt: skip
    return o, (hT if output_final_state else None)
