"""KDA (Kimi Delta Attention) forward in Triton: chunked form, chunk C = 64, two kernels (three with
fuse="none").

Notation per head and chunk of C = 64 steps, rows i = 0..63, G_i = sum_{s<=i} g_s (cumulated in the
chunk), Gamma_i = exp(G_i), S0 the state entering the chunk:

    A[i, j]   = beta_i  k_i . (k_j * exp(G_i - G_j))            j < i   (strictly lower)
    Aqk[i, j] = scale q_i . (k_j * exp(G_i - G_j))              j <= i
    T         = (I + A)^-1                                      (the UT / WY transform)
    w         = T (beta * k * Gamma),   u = T (beta * v)
    U         = u - w S0                                        (the delta-rule updates)
    o         = (scale q * Gamma) S0 + Aqk U
    S_next    = exp(G_63)[:, None] * S0 + (k * exp(G_63 - G))^T U

The default prep (knob impl="split") is two fully parallel kernels, one program per chunk and head:

Kernel 1 (`_kda_intra`) computes the cumulative gates (in the log2 domain, as products with
constant 0/1 matrices), writes qg = scale q * Gamma, kd = k * exp(G_63 - G), kb = beta k Gamma
(bf16) and exp(G_63) (float32), and accumulates A (written in float32) and Aqk (bf16). The decay
exp(G_i - G_j) is split as exp(G_i - m_I) * exp(m_I - G_j) with m_I the cumulative gate at the
midpoint of row i's 16-row sub-chunk I and the column side zero past that sub-chunk, so that no
factor exceeds exp(8 * |g|max) (finite in float32 for per-step log decays down to about -10; FLA's
safe-gate path assumes g >= -5). The four sub-chunks are one batched product [4, 16, BK] @
[4, BK, 64]: sub-chunk I's rows against its own column tile. In its epilogue each warp inverts its
sub-chunk's 16x16 diagonal block of A, (I + D_I)^-1, and A is written with those inverses in place.
Its tiles come and go through TMA tensor descriptors (per-element pointers under the interpreter).

By default (knob fuse="inplace") kernel 1 goes on with the solve of kernel 2 itself, in
registers, so that A and kb never reach memory; fuse="none" writes them for `_kda_solve`.

Kernel 2 (`_kda_solve`) reads A and computes Z = T - I exactly with matrix products only: with D
the 16x16 diagonal blocks of A and N the rest, I + A = (I + D)(I + M), M = (I + D)^-1 N,
D^16 = 0 and M^4 = 0, so (I + D)^-1 = (I - D)(I + D^2)(I + D^4)(I + D^8) (done by kernel 1 by
default, knob diag_inv) and (I + M)^-1 = (I - M)(I + M^2); then w = kb + Z kb and
u = beta v + Z (beta v).

impl="dense" (`_kda_prep_dense`) and impl="blocks" (`_kda_prep`) are the earlier one-kernel preps
with the same outputs (they hold A in registers through the solve: 255 registers, slower).

With cu_seqlens (FLA's variable-length form) every kernel takes its rows from a chunk table and
the scan runs one program per (V block, head, sequence).

Kernel 3 (`_kda_scan`, one program per (V block, head)) carries S (K x BV, float32) through the
chunks in order and writes o; it is the only sequential part. Splitting V into blocks gives
B * H * V / BV programs, enough to fill the 132 SMs of an H200 at B = 1. On a Hopper GPU with a
dense batch the default (`scan_impl="auto"`) runs a Gluon version of it instead (scan_gluon.py).
"""

import pathlib
import sys

import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
from triton.tools.tensor_descriptor import TensorDescriptor

CHUNK = 64
SUB = 16


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
def _row_of(x, i: tl.constexpr, BR: tl.constexpr):
    """Row i of a [BR, D] tile as a [D] vector."""
    r = tl.arange(0, BR)
    return tl.sum(tl.where((r == i)[:, None], x, 0.0), axis=0)


@triton.jit
def _bf(x, INTERP: tl.constexpr):
    """x rounded to bf16 as a matrix-product operand. Triton 3.6's interpreter multiplies bf16
    tensors as their raw uint16 bits, so there the rounded values are carried in float32."""
    x = _rtne(x, INTERP).to(tl.bfloat16)
    if INTERP:
        x = x.to(tl.float32)
    return x


@triton.jit
def _mm(a, b, PREC: tl.constexpr):
    """a @ b in float32 accumulation; PREC "bf16" rounds the operands to bf16 first."""
    if PREC == "bf16":
        return tl.dot(a.to(tl.bfloat16), b.to(tl.bfloat16))
    else:
        return tl.dot(a, b, input_precision=PREC)


@triton.jit
def _mmx(a, b, acc, PREC: tl.constexpr, INTERP: tl.constexpr):
    """acc + a @ b, float32 accumulation; PREC "bf16" rounds the operands to bf16."""
    if PREC == "bf16":
        return acc + tl.dot(_bf(a, INTERP), _bf(b, INTERP))
    else:
        return acc + tl.dot(a, b, input_precision=PREC)


@triton.jit
def _inv_unit_lower(L, BR: tl.constexpr):
    """(I + L)^-1 for a strictly lower BR x BR block L (BR = 16), float32 products."""
    r = tl.arange(0, BR)
    eye = (r[:, None] == r[None, :]).to(tl.float32)
    L2 = tl.dot(L, L, input_precision="ieee")
    L4 = tl.dot(L2, L2, input_precision="ieee")
    L8 = tl.dot(L4, L4, input_precision="ieee")
    x = tl.dot(eye - L, eye + L2, input_precision="ieee")
    x = tl.dot(x, eye + L4, input_precision="ieee")
    return tl.dot(x, eye + L8, input_precision="ieee")


@triton.jit
def _blk(a, b, PREC: tl.constexpr):
    """a @ b^T for [16, K] x [16, K]."""
    return tl.dot(a, tl.trans(b), input_precision=PREC)


@triton.jit
def _gates(g_p, t0, T, row_stride, BK: tl.constexpr):
    """Cumulative gates of one K-slice for the four 16-row sub-chunks of a chunk: G_J [16, BK],
    the midpoints m_J (row 7 of G_J) and the chunk total GC [BK]."""
    g0 = _rows(g_p, t0, T, row_stride, 16, BK)
    g1 = _rows(g_p, t0 + 16, T, row_stride, 16, BK)
    g2 = _rows(g_p, t0 + 32, T, row_stride, 16, BK)
    g3 = _rows(g_p, t0 + 48, T, row_stride, 16, BK)
    G0 = tl.cumsum(g0, 0)
    c0 = tl.sum(g0, 0)
    G1 = tl.cumsum(g1, 0) + c0[None, :]
    c1 = c0 + tl.sum(g1, 0)
    G2 = tl.cumsum(g2, 0) + c1[None, :]
    c2 = c1 + tl.sum(g2, 0)
    G3 = tl.cumsum(g3, 0) + c2[None, :]
    GC = c2 + tl.sum(g3, 0)
    return G0, G1, G2, G3, GC


@triton.jit
def _split4(x):
    """The four [16, 16] column blocks of a [16, 64] tile."""
    y = tl.permute(tl.reshape(x, [16, 2, 2, 16]), (0, 3, 1, 2))
    lo, hi = tl.split(y)
    b0, b2 = tl.split(lo)
    b1, b3 = tl.split(hi)
    return b0, b1, b2, b3


@triton.jit
def _rowblock(A, P, k_p, q_p, g_p, bI, G64, k64, r64, t0, T, row_stride, scale,
              I: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr):  # fmt: skip
    """Add one K-slice's share to rows 16I..16I+15 of A (beta_i k_i . k_j e^(G_i - G_j), all j)
    and Aqk (scale q_i . k_j e^(G_i - G_j)), with the decay split at the block's midpoint m
    (row 16I + 7): row side e^(G_i - m), column side e^(m - G_j); columns past the block are
    zero, so neither factor exceeds e^(8 max|g|)."""
    m = tl.sum(tl.where((r64 == 16 * I + 7)[:, None], G64, 0.0), axis=0)
    gI = _rows(g_p, t0 + 16 * I, T, row_stride, 16, BK)
    # G on the block's rows = cumulative sum in the block + everything before it
    carry = tl.sum(tl.where((r64 == 16 * I - 1)[:, None], G64, 0.0), axis=0)
    GI = tl.cumsum(gI, 0) + carry[None, :]
    e = tl.exp(GI - m[None, :])
    kr = _rows(k_p, t0 + 16 * I, T, row_stride, 16, BK) * e * bI[:, None]
    qr = _rows(q_p, t0 + 16 * I, T, row_stride, 16, BK) * e * scale
    col = tl.where((r64 < 16 * I + 16)[:, None], k64 * tl.exp(m[None, :] - G64), 0.0)
    col = tl.trans(col)
    return A + _mm(kr, col, PREC), P + _mm(qr, col, PREC)


@triton.jit
def _kda_prep(
    q, k, v, g, beta,
    qg_out, kd_out, w_out, u_out, aqk_out, gc_out,
    scale, T, H, NT, TP,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr, WPREC: tl.constexpr,
    INTERP: tl.constexpr,
):  # fmt: skip
    c = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    t0 = c * 64

    # inputs: [B, T, H, D], row stride H * D; beta [B, T, H]
    q_p = q + (b * T * H + h) * K
    k_p = k + (b * T * H + h) * K
    g_p = g + (b * T * H + h) * K
    v_p = v + (b * T * H + h) * V
    be_p = beta + b * T * H + h
    # outputs: [B*H, TP, D] padded to whole chunks; gc [B*H, NT, K]
    o_row = bh.to(tl.int64) * TP
    rr = tl.arange(0, 16)
    strict = rr[:, None] > rr[None, :]

    b0 = _vec(be_p, t0, T, H, 16)
    b1 = _vec(be_p, t0 + 16, T, H, 16)
    b2 = _vec(be_p, t0 + 32, T, H, 16)
    b3 = _vec(be_p, t0 + 48, T, H, 16)

    # ---- pass 1 over K-slices: elementwise outputs, A and Aqk by 16-row blocks ----
    A0 = tl.zeros([16, 64], tl.float32)
    A1 = tl.zeros([16, 64], tl.float32)
    A2 = tl.zeros([16, 64], tl.float32)
    A3 = tl.zeros([16, 64], tl.float32)
    P0 = tl.zeros([16, 64], tl.float32)
    P1 = tl.zeros([16, 64], tl.float32)
    P2 = tl.zeros([16, 64], tl.float32)
    P3 = tl.zeros([16, 64], tl.float32)
    r64 = tl.arange(0, 64)
    for ks in range(0, K, BK):
        g64 = _rows(g_p + ks, t0, T, H * K, 64, BK)
        G64 = tl.cumsum(g64, 0)
        GC = tl.sum(g64, 0)
        k64 = _rows(k_p + ks, t0, T, H * K, 64, BK)
        q64 = _rows(q_p + ks, t0, T, H * K, 64, BK)
        tl.store(gc_out + (bh.to(tl.int64) * NT + c) * K + ks + tl.arange(0, BK), tl.exp(GC))
        _put(qg_out + o_row * K + ks, t0, K, q64 * tl.exp(G64) * scale, 64, BK, INTERP)
        _put(kd_out + o_row * K + ks, t0, K, k64 * tl.exp(GC[None, :] - G64), 64, BK, INTERP)
        A0, P0 = _rowblock(A0, P0, k_p + ks, q_p + ks, g_p + ks, b0, G64, k64, r64, t0, T,
                           H * K, scale, 0, BK, PREC)  # fmt: skip
        A1, P1 = _rowblock(A1, P1, k_p + ks, q_p + ks, g_p + ks, b1, G64, k64, r64, t0, T,
                           H * K, scale, 1, BK, PREC)  # fmt: skip
        A2, P2 = _rowblock(A2, P2, k_p + ks, q_p + ks, g_p + ks, b2, G64, k64, r64, t0, T,
                           H * K, scale, 2, BK, PREC)  # fmt: skip
        A3, P3 = _rowblock(A3, P3, k_p + ks, q_p + ks, g_p + ks, b3, G64, k64, r64, t0, T,
                           H * K, scale, 3, BK, PREC)  # fmt: skip

    # Aqk rows of each block: columns j <= i (later blocks are exact zeros already)
    ap = aqk_out + (o_row + t0) * 64
    _put(ap, 0, 64, tl.where(r64[None, :] <= rr[:, None], P0, 0.0), 16, 64, INTERP)
    _put(ap, 16, 64, tl.where(r64[None, :] <= rr[:, None] + 16, P1, 0.0), 16, 64, INTERP)
    _put(ap, 32, 64, tl.where(r64[None, :] <= rr[:, None] + 32, P2, 0.0), 16, 64, INTERP)
    _put(ap, 48, 64, tl.where(r64[None, :] <= rr[:, None] + 48, P3, 0.0), 16, 64, INTERP)
    a00, _x1, _x2, _x3 = _split4(A0)
    a10, a11, _x2, _x3 = _split4(A1)
    a20, a21, a22, _x3 = _split4(A2)
    a30, a31, a32, a33 = _split4(A3)

    # ---- T = (I + A)^-1, blocked ----
    t00 = _inv_unit_lower(tl.where(strict, a00, 0.0), 16)
    t11 = _inv_unit_lower(tl.where(strict, a11, 0.0), 16)
    t22 = _inv_unit_lower(tl.where(strict, a22, 0.0), 16)
    t33 = _inv_unit_lower(tl.where(strict, a33, 0.0), 16)
    t10 = -_mm(t11, _mm(a10, t00, "ieee"), "ieee")
    t21 = -_mm(t22, _mm(a21, t11, "ieee"), "ieee")
    t32 = -_mm(t33, _mm(a32, t22, "ieee"), "ieee")
    t20 = -_mm(t22, _mm(a20, t00, "ieee") + _mm(a21, t10, "ieee"), "ieee")
    t31 = -_mm(t33, _mm(a31, t11, "ieee") + _mm(a32, t21, "ieee"), "ieee")
    x = _mm(a30, t00, "ieee") + _mm(a31, t10, "ieee") + _mm(a32, t20, "ieee")
    t30 = -_mm(t33, x, "ieee")

    # ---- pass 2 over K-slices: w = T (beta k Gamma) ----
    for ks in range(0, K, BK):
        G0, G1, G2, G3, GC = _gates(g_p + ks, t0, T, H * K, BK)
        x0 = _rows(k_p + ks, t0, T, H * K, 16, BK) * tl.exp(G0) * b0[:, None]
        x1 = _rows(k_p + ks, t0 + 16, T, H * K, 16, BK) * tl.exp(G1) * b1[:, None]
        x2 = _rows(k_p + ks, t0 + 32, T, H * K, 16, BK) * tl.exp(G2) * b2[:, None]
        x3 = _rows(k_p + ks, t0 + 48, T, H * K, 16, BK) * tl.exp(G3) * b3[:, None]
        wo = w_out + o_row * K + ks
        _put(wo, t0, K, _mm(t00, x0, WPREC), 16, BK, INTERP)
        _put(wo, t0 + 16, K, _mm(t10, x0, WPREC) + _mm(t11, x1, WPREC), 16, BK, INTERP)
        y = _mm(t20, x0, WPREC) + _mm(t21, x1, WPREC) + _mm(t22, x2, WPREC)
        _put(wo, t0 + 32, K, y, 16, BK, INTERP)
        y = _mm(t30, x0, WPREC) + _mm(t31, x1, WPREC) + _mm(t32, x2, WPREC) + _mm(t33, x3, WPREC)
        _put(wo, t0 + 48, K, y, 16, BK, INTERP)

    # ---- u = T (beta v), over V-slices ----
    for vs in range(0, V, BK):
        x0 = _rows(v_p + vs, t0, T, H * V, 16, BK) * b0[:, None]
        x1 = _rows(v_p + vs, t0 + 16, T, H * V, 16, BK) * b1[:, None]
        x2 = _rows(v_p + vs, t0 + 32, T, H * V, 16, BK) * b2[:, None]
        x3 = _rows(v_p + vs, t0 + 48, T, H * V, 16, BK) * b3[:, None]
        uo = u_out + o_row * V + vs
        _put(uo, t0, V, _mm(t00, x0, WPREC), 16, BK, INTERP)
        _put(uo, t0 + 16, V, _mm(t10, x0, WPREC) + _mm(t11, x1, WPREC), 16, BK, INTERP)
        y = _mm(t20, x0, WPREC) + _mm(t21, x1, WPREC) + _mm(t22, x2, WPREC)
        _put(uo, t0 + 32, V, y, 16, BK, INTERP)
        y = _mm(t30, x0, WPREC) + _mm(t31, x1, WPREC) + _mm(t32, x2, WPREC) + _mm(t33, x3, WPREC)
        _put(uo, t0 + 48, V, y, 16, BK, INTERP)


@triton.jit
def _acc_block(A, P, kr, qr, k64, G, m, ri, blk_i, I: tl.constexpr, PREC: tl.constexpr):
    """Rows of row block I of A and Aqk: row side kr / qr (decay to the block's midpoint m),
    column side k_j e^(m - G_j), zero past block I."""
    col = tl.trans(tl.where(ri < 16 * I + 16, k64 * tl.exp(m[None, :] - G), 0.0))
    rows = blk_i == I
    A += _mm(tl.where(rows, kr, 0.0), col, PREC)
    P += _mm(tl.where(rows, qr, 0.0), col, PREC)
    return A, P


@triton.jit
def _kda_prep_dense(
    q, k, v, g, beta,
    qg_out, kd_out, w_out, u_out, aqk_out, gc_out,
    scale, T, H, NT, TP,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, PREC: tl.constexpr, WPREC: tl.constexpr,
    SPREC: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """Same outputs as _kda_prep, with whole [64, 64] tiles: the cumulative sum is a product with
    a constant 0/1 matrix (3xTF32, float32-accurate), A and Aqk are accumulated as [64, 64] tiles
    (one masked product per 16-row block) and the solve is dense (below). No cross-thread scans,
    no 16x16 tiles."""
    c = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    t0 = c * 64
    q_p = q + (b * T * H + h) * K
    k_p = k + (b * T * H + h) * K
    g_p = g + (b * T * H + h) * K
    v_p = v + (b * T * H + h) * V
    o_row = bh.to(tl.int64) * TP
    r = tl.arange(0, 64)
    ri = r[:, None]
    rj = r[None, :]
    blk_i = ri // 16
    # G = Lc g: the inclusive cumulative sum as a product with a constant 0/1 matrix
    Lc = (rj <= ri).to(tl.float32)
    be = _vec(beta + b * T * H + h, t0, T, H, 64)

    A = tl.zeros([64, 64], tl.float32)
    P = tl.zeros([64, 64], tl.float32)
    for ks in range(0, K, BK):
        g64 = _rows(g_p + ks, t0, T, H * K, 64, BK)
        k64 = _rows(k_p + ks, t0, T, H * K, 64, BK)
        q64 = _rows(q_p + ks, t0, T, H * K, 64, BK)
        G = tl.dot(Lc, g64, input_precision="tf32x3")
        GC = tl.sum(g64, axis=0)
        m0 = tl.sum(tl.where(ri == 7, G, 0.0), axis=0)
        m1 = tl.sum(tl.where(ri == 23, G, 0.0), axis=0)
        m2 = tl.sum(tl.where(ri == 39, G, 0.0), axis=0)
        m3 = tl.sum(tl.where(ri == 55, G, 0.0), axis=0)
        Mrow = tl.where(blk_i == 0, m0[None, :], tl.where(blk_i == 1, m1[None, :], 0.0))
        Mrow = tl.where(blk_i == 2, m2[None, :], tl.where(blk_i == 3, m3[None, :], Mrow))
        tl.store(gc_out + (bh.to(tl.int64) * NT + c) * K + ks + tl.arange(0, BK), tl.exp(GC))
        _put(qg_out + o_row * K + ks, t0, K, q64 * tl.exp(G) * scale, 64, BK, INTERP)
        _put(kd_out + o_row * K + ks, t0, K, k64 * tl.exp(GC[None, :] - G), 64, BK, INTERP)
        e = tl.exp(G - Mrow)
        kr = k64 * e * be[:, None]
        qr = q64 * e * scale
        A, P = _acc_block(A, P, kr, qr, k64, G, m0, ri, blk_i, 0, PREC)
        A, P = _acc_block(A, P, kr, qr, k64, G, m1, ri, blk_i, 1, PREC)
        A, P = _acc_block(A, P, kr, qr, k64, G, m2, ri, blk_i, 2, PREC)
        A, P = _acc_block(A, P, kr, qr, k64, G, m3, ri, blk_i, 3, PREC)

    _put(aqk_out + o_row * 64, t0, 64, tl.where(rj <= ri, P, 0.0), 64, 64, INTERP)

    # T = (I + A)^-1 with A strictly lower. D = the 16x16 diagonal blocks of A, N = the rest:
    # I + A = (I + D)(I + M), M = (I + D)^-1 N; D^16 = 0 and M^4 = 0 (M is strictly lower by
    # blocks), so (I + D)^-1 = (I - D)(I + D^2)(I + D^4)(I + D^8) and
    # (I + M)^-1 = (I - M)(I + M^2); T = (I + M)^-1 (I + D)^-1.
    A = tl.where(rj < ri, A, 0.0)
    eye = (ri == rj).to(tl.float32)
    D = tl.where(blk_i == rj // 16, A, 0.0)
    N = A - D
    # Each factor is the identity plus a small part, so the products are written as
    # X + X @ Y with a float32 accumulator: rounding the operands (bf16 or tf32) only perturbs
    # the small corrections, never the identity.
    D2 = _mmx(D, D, 0.0, SPREC, INTERP)
    D4 = _mmx(D2, D2, 0.0, SPREC, INTERP)
    D8 = _mmx(D4, D4, 0.0, SPREC, INTERP)
    Di = eye - D
    Di = _mmx(Di, D2, Di, SPREC, INTERP)
    Di = _mmx(Di, D4, Di, SPREC, INTERP)
    Di = _mmx(Di, D8, Di, SPREC, INTERP)
    M = _mmx(Di, N, 0.0, SPREC, INTERP)
    M2 = _mmx(M, M, 0.0, SPREC, INTERP)
    X = eye - M
    X = _mmx(X, M2, X, SPREC, INTERP)
    Tm = _mmx(X - eye, Di, Di, SPREC, INTERP)

    for ks in range(0, K, BK):
        g64 = _rows(g_p + ks, t0, T, H * K, 64, BK)
        G = tl.dot(Lc, g64, input_precision="tf32x3")
        xk = _rows(k_p + ks, t0, T, H * K, 64, BK) * tl.exp(G) * be[:, None]
        _put(w_out + o_row * K + ks, t0, K, _mm(Tm, xk, WPREC), 64, BK, INTERP)
    for vs in range(0, V, BK):
        xv = _rows(v_p + vs, t0, T, H * V, 64, BK) * be[:, None]
        _put(u_out + o_row * V + vs, t0, V, _mm(Tm, xv, WPREC), 64, BK, INTERP)


@triton.jit
def _cum(L, x, INTERP: tl.constexpr, PARTS: tl.constexpr = 3):
    """L @ x for a constant 0/1 (or +-1) matrix L [64, 64], float32-accurate with two tf32 products:
    x is split into its tf32 part (low 13 mantissa bits cleared, exact in tf32) and the rest.
    With L in bf16, x is split into PARTS bf16 parts instead (3: 24 mantissa bits together, as
    float32; 2: 16 bits, a relative error of about 2^-17 per term)."""
    if INTERP:
        if PARTS == 2:  # the same two bf16 parts, exactly
            b1 = _rtne(x, INTERP).to(tl.bfloat16).to(tl.float32)
            x = b1 + _rtne(x - b1, INTERP).to(tl.bfloat16).to(tl.float32)
        return tl.dot(L.to(tl.float32), x, input_precision="ieee")
    elif L.dtype == tl.bfloat16:
        b1 = x.to(tl.bfloat16)
        r1 = x - b1.to(tl.float32)
        b2 = r1.to(tl.bfloat16)
        acc = tl.dot(L, b1)
        acc = tl.dot(L, b2, acc)
        if PARTS == 3:
            acc = tl.dot(L, (r1 - b2.to(tl.float32)).to(tl.bfloat16), acc)
        return acc
    else:
        hi = (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)
        acc = tl.dot(L, hi, input_precision="tf32")
        return tl.dot(L, x - hi, acc, input_precision="tf32")


LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _ex2(x, INTERP: tl.constexpr):
    """2^x; on the GPU the bare ex2.approx.ftz instruction (no denormal fix-up: the results that
    matter here are far from the denormal range)."""
    if INTERP:
        return tl.exp2(x)
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


# The hand-off from the prep to the scan when they overlap (knob overlap): the prep's program
# for (head, chunk) sets flags[head, chunk] once its outputs are in memory, and the scan runs
# each stretch of chunks whose flags are set as one software-pipelined loop.
@triton.jit
def _publish(flag, INTERP: tl.constexpr):
    """Set flag once this program's stores are visible at GPU scope: the tensor-descriptor
    stores completed (bulk wait), ordered with the generic ones (proxy fence), every thread's
    stores fenced before the block barrier, then a release store of 1."""
    if not INTERP:
        tl.inline_asm_elementwise(
            "cp.async.bulk.wait_group 0;\n\tfence.proxy.async.global;\n\tfence.acq_rel.gpu; // $0",
            "=r", [], dtype=tl.int32, is_pure=False, pack=1,
        )  # fmt: skip
    tl.debug_barrier()
    tl.atomic_xchg(flag, 1, sem="release", scope="gpu")


@triton.jit
def _first_unpublished(flags, c, c_hi, FB: tl.constexpr):
    """The first chunk in c .. min(c + FB, c_hi) - 1 whose flag is not set, else the range's end."""
    fb = tl.arange(0, FB)
    f = tl.load(flags + c + fb, mask=c + fb < c_hi, other=1, volatile=True)
    return tl.minimum(c + tl.min(tl.where(f == 0, fb, FB)), c_hi)


@triton.jit
def _ready_end(flags, c, c_hi, FB: tl.constexpr, INTERP: tl.constexpr):
    """The end e > c of the run of published chunks c .. e - 1 (at most FB of them), waiting
    until chunk c is published; the loads of those chunks may follow (acquire and proxy fence:
    the tiles are read through tensor descriptors)."""
    e = _first_unpublished(flags, c, c_hi, FB)
    while e == c:
        if not INTERP:  # back off, leaving the issue slots to the prep's programs on this SM
            tl.inline_asm_elementwise("nanosleep.u32 256; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
        e = _first_unpublished(flags, c, c_hi, FB)
    if not INTERP:
        tl.inline_asm_elementwise(
            "fence.acq_rel.gpu;\n\tfence.proxy.async.global; // $0", "=r", [], dtype=tl.int32,
            is_pure=False, pack=1,
        )  # fmt: skip
    return e


@triton.jit
def _kda_intra(
    q, k, g, beta, v, ctab,
    qg_out, kd_out, kb_out, a_out, aqk_out, gc_out, w_out, u_out, lcu, flags,
    QD, KD, GD, QGD, KDD, KBD, AD, AQD, VD, WD, UD,
    scale, T, H, NT, TP,
    K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BW: tl.constexpr, PREC: tl.constexpr,
    BATCH: tl.constexpr, LCMEM: tl.constexpr, CUMP: tl.constexpr, G63SUB: tl.constexpr,
    TMA: tl.constexpr, DIAGINV: tl.constexpr, SPREC: tl.constexpr, WPREC: tl.constexpr,
    FUSE: tl.constexpr, VARLEN: tl.constexpr, OVERLAP: tl.constexpr, CMAJOR: tl.constexpr,
    INTERP: tl.constexpr,
):  # fmt: skip
    """Split prep, kernel 1 of 2, one program per (chunk, head): the cumulative gates, the
    elementwise outputs qg = scale q e^G, kd = k e^(G_63 - G), kb = beta k e^G (bf16) and
    e^(G_63), Aqk (bf16) and A (float32, strictly lower) for the solve kernel. Gates in the log2
    domain (g log2 e), exponentials as bare ex2. (ptxas still takes 255 registers: the A and Aqk
    accumulators alone are 64, and register caps measured slower, see docs/kernels.md.)

    BATCH: the four 16-row blocks as one batched product [4, 16, BK] @ [4, BK, 64], block I's rows
    against its own column tile k_j 2^(m_I - G_j) (zero past block I), so no row masks and no
    wasted products; else as _kda_prep_dense (masked [64, 64] products).

    G63SUB: G_63 - G as row 63 of G minus G (a column reduction) instead of the product Ur g.

    TMA: q, k, g tiles loaded and qg, kd, kb, A, Aqk stored through tensor descriptors (QD ...
    AQD; the inputs as [B, T, H * K], rows past T zero-filled), instead of per-element pointers
    (scattered 2-byte stores and 64-bit address arithmetic per element).

    DIAGINV (with BATCH): A is written with its diagonal 16 x 16 blocks already inverted,
    (I + D_I)^-1, so that the solve kernel starts from M = (I + D)^-1 N.

    FUSE (with BATCH and DIAGINV) does the solve here as well, so that A and kb never go to
    memory and back: 1 recomputes kb = beta k e^G slice by slice after Z is known (k and g read
    again, from L2), 2 stores kb by pointers and reads it back after a block barrier, 3 does the
    same with kb in w's own buffer (w written over it), so that kb never reaches memory.

    CMAJOR: the grid is (head, chunk), so that programs start in chunk order (the scan's order).
    OVERLAP (OVERLAP_MODES): 1 and 2 let the scan launch while this kernel runs (programmatic
    dependent launch); with 2 each program also publishes its chunk in flags once all its stores
    are done (_publish)."""
    c = tl.program_id(1 if CMAJOR else 0)
    bh = tl.program_id(0 if CMAJOR else 1)
    if OVERLAP > 0 and not INTERP:
        gdc_launch_dependents()
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
    blk_i = ri // 16
    rk = tl.arange(0, BK)
    # G = Lc g, the inclusive cumulative sum; G_63 - G = Ur g (exact 0/1 entries in bf16 too)
    LDT: tl.constexpr = tl.float32 if CUMP == "tf32" else tl.bfloat16
    CPARTS: tl.constexpr = 2 if CUMP == "bf16x2" else 3
    Lc = (rj <= ri).to(tl.float32).to(LDT)
    Ur = (rj > ri).to(tl.float32).to(LDT)
    be = _vec(beta + b * T * H + h, t0, tend, H, 64)
    gc_p = gc_out + (bh.to(tl.int64) * NT + c) * K

    r16 = tl.arange(0, 16)
    i4 = tl.arange(0, 4)
    if BATCH:
        A3 = tl.zeros([4, 16, 64], tl.float32)
        P3 = tl.zeros([4, 16, 64], tl.float32)
        # column j of block I's tile is used for j <= 16 I + 15
        cmask = r[None, :, None] <= 16 * i4[:, None, None] + 15
    else:
        A = tl.zeros([64, 64], tl.float32)
        P = tl.zeros([64, 64], tl.float32)
    for ks in range(0, K, BK):
        if TMA:
            g64 = _live(tl.reshape(GD.load([b, t0, h * K + ks]), [64, BK]), live, VARLEN) * LOG2E
        else:
            g64 = _rows(g_p + ks, t0, tend, H * K, 64, BK) * LOG2E
        if LCMEM:
            # the constant matrices read from memory (an L1 hit) inside the loop, so that the
            # products take them from shared memory instead of holding 64 registers
            Lc = tl.load(lcu + ri * 64 + rj).to(LDT)
            Ur = tl.load(lcu + 4096 + ri * 64 + rj).to(LDT)
        G = _cum(Lc, g64, INTERP, CPARTS)
        if TMA:
            k64 = _live(tl.reshape(KD.load([b, t0, h * K + ks]), [64, BK]).to(tl.float32), live, VARLEN)
            qs = _live(tl.reshape(QD.load([b, t0, h * K + ks]), [64, BK]).to(tl.float32), live, VARLEN) * scale
        else:
            k64 = _rows(k_p + ks, t0, tend, H * K, 64, BK)
            qs = _rows(q_p + ks, t0, tend, H * K, 64, BK) * scale
        kbe = k64 * be[:, None]
        eG = _ex2(G, INTERP)
        # e^(G_63) is row 63 of e^G (rows past T have g = 0)
        tl.store(gc_p + ks + rk[None, :] + ri * 0, eG, mask=(ri == 63) & (rk[None, :] < BK))
        if TMA:
            QGD.store([bh * TP + p0, ks], (qs * eG).to(tl.bfloat16))
        else:
            _put(qg_out + o_row * K + ks, p0, K, qs * eG, 64, BK, INTERP)
        if TMA and FUSE == 0:
            KBD.store([bh * TP + p0, ks], (kbe * eG).to(tl.bfloat16))
        elif FUSE != 1:
            _put(kb_out + o_row * K + ks, p0, K, kbe * eG, 64, BK, INTERP)
        if G63SUB:
            Gd = tl.sum(tl.where(ri == 63, G, 0.0), axis=0)[None, :] - G
        else:
            Gd = _cum(Ur, g64, INTERP, CPARTS)
        kd = k64 * _ex2(Gd, INTERP)
        if TMA:
            KDD.store([bh * TP + p0, ks], kd.to(tl.bfloat16))
        else:
            _put(kd_out + o_row * K + ks, p0, K, kd, 64, BK, INTERP)
        if BATCH:
            G3 = tl.reshape(G, [4, 16, BK])
            m4 = tl.sum(tl.where((r16 == 7)[None, :, None], G3, 0.0), axis=1)  # [4, BK]
            e3 = _ex2(G3 - m4[:, None, :], INTERP)
            kr3 = tl.reshape(kbe, [4, 16, BK]) * e3
            qr3 = tl.reshape(qs, [4, 16, BK]) * e3
            C3 = tl.where(cmask, k64[None, :, :] * _ex2(m4[:, None, :] - G[None, :, :], INTERP), 0.0)
            Ct = tl.permute(C3, (0, 2, 1))
            A3 = _mmx(kr3, Ct, A3, PREC, INTERP)
            P3 = _mmx(qr3, Ct, P3, PREC, INTERP)
        else:
            m0 = tl.sum(tl.where(ri == 7, G, 0.0), axis=0)
            m1 = tl.sum(tl.where(ri == 23, G, 0.0), axis=0)
            m2 = tl.sum(tl.where(ri == 39, G, 0.0), axis=0)
            m3 = tl.sum(tl.where(ri == 55, G, 0.0), axis=0)
            Mrow = tl.where(blk_i == 0, m0[None, :], tl.where(blk_i == 1, m1[None, :], 0.0))
            Mrow = tl.where(blk_i == 2, m2[None, :], tl.where(blk_i == 3, m3[None, :], Mrow))
            e = _ex2(G - Mrow, INTERP)
            kr = kbe * e
            qr = qs * e
            A, P = _acc_block2(A, P, kr, qr, k64, G, m0, ri, blk_i, 0, PREC, INTERP)
            A, P = _acc_block2(A, P, kr, qr, k64, G, m1, ri, blk_i, 1, PREC, INTERP)
            A, P = _acc_block2(A, P, kr, qr, k64, G, m2, ri, blk_i, 2, PREC, INTERP)
            A, P = _acc_block2(A, P, kr, qr, k64, G, m3, ri, blk_i, 3, PREC, INTERP)

    if BATCH:
        A = tl.reshape(A3, [64, 64])
        P = tl.reshape(P3, [64, 64])
    if TMA:
        AQD.store([bh * TP + p0, 0], tl.where(rj <= ri, P, 0.0).to(tl.bfloat16))
    else:
        _put(aqk_out + o_row * 64, p0, 64, tl.where(rj <= ri, P, 0.0), 64, 64, INTERP)
    if DIAGINV:
        # each sub-chunk's own 16 x 16 block inverted where it lies (block I of A3 is the warp's)
        A = tl.reshape(_diag_inverse(A3, SPREC, INTERP), [64, 64])
    else:
        A = tl.where(rj < ri, A, 0.0)
    if FUSE == 0:
        if TMA:
            AD.store([bh * TP + p0, 0], A)
        else:
            tl.store(a_out + (o_row + p0 + ri) * 64 + rj, A)
    else:
        D = tl.where(ri // 16 == rj // 16, A, 0.0)
        Z = _z_of(D, A - D, (ri == rj).to(tl.float32), SPREC, INTERP)
        if WPREC == "bf16":
            Z = _bf(Z, INTERP)
        if FUSE == 1:
            # w = kb + Z kb with kb = beta k e^G recomputed from k and g (read again, from L2)
            for ks in range(0, K, BK):
                if TMA:
                    g64 = _live(tl.reshape(GD.load([b, t0, h * K + ks]), [64, BK]), live, VARLEN) * LOG2E
                    k64 = _live(tl.reshape(KD.load([b, t0, h * K + ks]), [64, BK]).to(tl.float32), live, VARLEN)
                else:
                    g64 = _rows(g_p + ks, t0, tend, H * K, 64, BK) * LOG2E
                    k64 = _rows(k_p + ks, t0, tend, H * K, 64, BK)
                x = k64 * be[:, None] * _ex2(_cum(Lc, g64, INTERP, CPARTS), INTERP)
                x = _mmx(Z, x, x, WPREC, INTERP)
                if TMA:
                    WD.store([bh * TP + p0, ks], x.to(tl.bfloat16))
                else:
                    _put(w_out + o_row * K + ks, p0, K, x, 64, BK, INTERP)
        else:
            # w = kb + Z kb with kb read back: this program's own stores, ordered by the barrier
            tl.debug_barrier()
            for ks in range(0, K, BW):
                x = tl.load(kb_out + (o_row + p0 + ri) * K + ks + tl.arange(0, BW)[None, :])
                x = x.to(tl.float32)
                x = _mmx(Z, x, x, WPREC, INTERP)
                if TMA and FUSE == 2:
                    WD.store([bh * TP + p0, ks], x.to(tl.bfloat16))
                else:  # FUSE 3: kb_out is w_out, overwritten by the same (generic) stores
                    _put(w_out + o_row * K + ks, p0, K, x, 64, BW, INTERP)
        v_p = v + (b * T * H + h) * V
        for vs in range(0, V, BW):
            if TMA:
                x = _live(tl.reshape(VD.load([b, t0, h * V + vs]), [64, BW]).to(tl.float32), live, VARLEN)
            else:
                x = _rows(v_p + vs, t0, tend, H * V, 64, BW)
            x = x * be[:, None]
            x = _mmx(Z, x, x, WPREC, INTERP)
            if TMA:
                UD.store([bh * TP + p0, vs], x.to(tl.bfloat16))
            else:
                _put(u_out + o_row * V + vs, p0, V, x, 64, BW, INTERP)
    if OVERLAP == 2:
        _publish(flags + bh * NT + c, INTERP)


@triton.jit
def _diag_inverse(A3, SPREC: tl.constexpr, INTERP: tl.constexpr):
    """[4, 16, 64] rows of A by sub-chunk (block I's columns past 16 I + 15 are zero) to the same
    rows with each diagonal block D_I (strictly lower) replaced by (I + D_I)^-1 =
    (I - D)(I + D^2)(I + D^4)(I + D^8), as [4, 16, 16] batched products; the blocks left of the
    diagonal stay as they are."""
    i4 = tl.arange(0, 4)
    r16 = tl.arange(0, 16)
    A4 = tl.reshape(A3, [4, 16, 4, 16])
    on_diag = i4[:, None, None, None] == i4[None, None, :, None]  # [4, 1, 4, 1]
    D = tl.sum(tl.where(on_diag, A4, 0.0), axis=2)
    D = tl.where(r16[None, None, :] < r16[None, :, None], D, 0.0)
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
def _acc_block2(A, P, kr, qr, k64, G, m, ri, blk_i, I: tl.constexpr, PREC: tl.constexpr,
                INTERP: tl.constexpr):  # fmt: skip
    """_acc_block with the gates in the log2 domain."""
    col = tl.trans(tl.where(ri < 16 * I + 16, k64 * _ex2(m[None, :] - G, INTERP), 0.0))
    rows = blk_i == I
    A = _mmx(tl.where(rows, kr, 0.0), col, A, PREC, INTERP)
    P = _mmx(tl.where(rows, qr, 0.0), col, P, PREC, INTERP)
    return A, P


@triton.jit
def _kda_solve(
    v, beta, kb, a_in, w_out, u_out, ctab,
    T, H, TP,
    K: tl.constexpr, V: tl.constexpr, BW: tl.constexpr, SPREC: tl.constexpr,
    WPREC: tl.constexpr, DIAGINV: tl.constexpr, VARLEN: tl.constexpr, INTERP: tl.constexpr,
):  # fmt: skip
    """Split prep, kernel 2 of 2, one program per (chunk, head): Z = (I + A)^-1 - I by the dense
    blocked solve of _kda_prep_dense, then w = kb + Z kb and u = beta v + Z (beta v); the
    identity part is added in float32, so rounding the product operands only touches the
    correction. DIAGINV: A arrives with (I + D)^-1 in its diagonal blocks (see _kda_intra).
    (Tensor descriptors here measured more instructions and spills offline.)"""
    c = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    p0 = c * 64
    t0, tend = _chunk_rows(c, ctab, T, VARLEN)
    o_row = bh.to(tl.int64) * TP
    r = tl.arange(0, 64)
    ri = r[:, None]
    rj = r[None, :]
    A = tl.load(a_in + (o_row + p0 + ri) * 64 + rj)
    eye = (ri == rj).to(tl.float32)
    D = tl.where(ri // 16 == rj // 16, A, 0.0)
    N = A - D
    if DIAGINV:
        Di = D
    else:
        # _unit_lower_inverse written out: through the helper ptxas spills 192 B here instead of
        # 72 B (bench/sass_report.py solve '{"DIAGINV": false}')
        Di = eye - D
        D2 = _mmx(D, D, 0.0, SPREC, INTERP)
        Di = _mmx(Di, D2, Di, SPREC, INTERP)
        D4 = _mmx(D2, D2, 0.0, SPREC, INTERP)
        Di = _mmx(Di, D4, Di, SPREC, INTERP)
        D8 = _mmx(D4, D4, 0.0, SPREC, INTERP)
        Di = _mmx(Di, D8, Di, SPREC, INTERP)
    Z = _z_of(Di, N, eye, SPREC, INTERP)
    if WPREC == "bf16":
        Z = _bf(Z, INTERP)  # rounded once, outside the loops
    be = _vec(beta + b * T * H + h, t0, tend, H, 64)
    v_p = v + (b * T * H + h) * V
    for ks in range(0, K, BW):
        x = tl.load(kb + (o_row + p0 + ri) * K + ks + tl.arange(0, BW)[None, :]).to(tl.float32)
        _put(w_out + o_row * K + ks, p0, K, _mmx(Z, x, x, WPREC, INTERP), 64, BW, INTERP)
    for vs in range(0, V, BW):
        x = _rows(v_p + vs, t0, tend, H * V, 64, BW) * be[:, None]
        _put(u_out + o_row * V + vs, p0, V, _mmx(Z, x, x, WPREC, INTERP), 64, BW, INTERP)


@triton.jit
def _scan_chunk(S, c, b, h, bh, iv, ctab, T, TP, qg, kd, w, u, aqk, gc, o, WD, QGD, KDD, AQD, UD, OD,
                H, NT, K: tl.constexpr, V: tl.constexpr, BV: tl.constexpr, TMA: tl.constexpr,
                O_TMA: tl.constexpr, VARLEN: tl.constexpr, TRANS: tl.constexpr,
                INTERP: tl.constexpr):  # fmt: skip
    """One chunk of the scan: o for the chunk's rows, and the state S carried past it (S^T with
    TRANS: the products then take the state and U as their register operand, w, qg, Aqk and kd
    from shared memory, so nothing of the chain goes through shared memory)."""
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

    if TRANS:  # S held as S^T [BV, K]: the state and U are register operands, never in shared memory
        sb = _bf(S, INTERP)
        ub = _bf(tl.trans(u_c) - tl.dot(sb, tl.trans(w_c)), INTERP)
        S = S * g_c[None, :] + tl.dot(ub, k_c)
        out = tl.dot(sb, tl.trans(q_c))
        out = tl.trans(tl.dot(ub, tl.trans(a_c), out))
    else:
        sb = _bf(S, INTERP)
        ub = _bf(u_c - tl.dot(w_c, sb), INTERP)
        out = tl.dot(q_c, sb)
        out = tl.dot(a_c, ub, out)
    if TMA and O_TMA and not VARLEN:
        OD.store([b, c * 64, h * V + iv * BV], tl.reshape(out.to(o.dtype.element_ty), [1, 64, BV]))
    else:
        t0, tend = _chunk_rows(c, ctab, T, VARLEN)
        t = t0 + rc
        op = o + ((b * T + t).to(tl.int64) * H + h)[:, None] * V + rv[None, :]
        tl.store(op, _rtne(out, INTERP).to(o.dtype.element_ty), mask=(t < tend)[:, None])
    if not TRANS:
        S = S * g_c[:, None] + tl.dot(tl.trans(k_c), ub)
    return S


@triton.jit
def _kda_scan(
    qg,
    kd,
    w,
    u,
    aqk,
    gc,
    h0,
    o,
    hT,
    ctab,
    cseq,
    WD,
    QGD,
    KDD,
    AQD,
    UD,
    OD,
    flags,
    T,
    H,
    NT,
    TP,
    K: tl.constexpr,
    V: tl.constexpr,
    BV: tl.constexpr,
    HAS_H0: tl.constexpr,
    STORE_HT: tl.constexpr,
    TMA: tl.constexpr,
    O_TMA: tl.constexpr,
    VARLEN: tl.constexpr,
    OVERLAP: tl.constexpr,
    FB: tl.constexpr,
    TRANS: tl.constexpr,
    INTERP: tl.constexpr,
):
    """The sequential scan, one program per (V block, head): S (K x BV) through the chunks.
    TMA: the chunk tiles loaded and o stored through tensor descriptors (WD ... OD; o as
    [B, T, H * V], rows past T clipped); O_TMA False stores o from registers by pointers instead
    (no shared-memory staging and block barrier per chunk). VARLEN: program (V block, head,
    sequence) runs over its sequence's chunks cseq[n] .. cseq[n + 1] - 1, with its own initial
    and final state; o by pointers, masked at the sequence's end. OVERLAP (OVERLAP_MODES):
    launched while the prep still runs; 1 waits for all of it to finish (griddepcontrol.wait)
    before the first load, 2 takes the chunks in runs of at most FB published ones (_ready_end)."""
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

    if TRANS:
        s_off = sidx * K * V + rk[None, :] * V + rv[:, None]  # S^T [BV, K]
    else:
        s_off = sidx * K * V + rk[:, None] * V + rv[None, :]
    if HAS_H0:
        S = tl.load(h0 + s_off)
    elif TRANS:
        S = tl.zeros([BV, K], tl.float32)
    else:
        S = tl.zeros([K, BV], tl.float32)
    if OVERLAP == 1 and not INTERP:
        gdc_wait()

    if OVERLAP == 2:  # chunk by chunk as the prep publishes them
        c = c_lo + 0 * bh  # a tensor from the start: the while loop carries it
        while c < c_hi:
            e = _ready_end(flags + bh * NT, c, c_hi, FB, INTERP)
            for cc in range(c, e):
                S = _scan_chunk(S, cc, b, h, bh, iv, ctab, T, TP, qg, kd, w, u, aqk, gc, o,
                                WD, QGD, KDD, AQD, UD, OD, H, NT, K, V, BV, TMA, O_TMA, VARLEN, TRANS, INTERP)  # fmt: skip
            c = e
    else:
        for c in range(c_lo, c_hi):
            S = _scan_chunk(S, c, b, h, bh, iv, ctab, T, TP, qg, kd, w, u, aqk, gc, o,
                            WD, QGD, KDD, AQD, UD, OD, H, NT, K, V, BV, TMA, O_TMA, VARLEN, TRANS, INTERP)  # fmt: skip

    if STORE_HT:
        tl.store(hT + s_off, S)


# Tuning knobs (measured on an H200, see docs/kernels.md); bv None picks by the number of programs.
# impl "split" (default): _kda_intra then _kda_solve; "dense" / "blocks": one prep kernel.
CONFIG = dict(
    impl="split", prec="bf16", wprec="bf16", sprec="bf16", prep_warps=4, bk=16, batch=True,
    intra_nreg=168, intra_stages=3, lcmem=False, cump="bf16x2", solve_warps=4, solve_nreg=128, bw=64,
    g63sub=True, tma=True, diag_inv=True, fuse="inplace", bv=None, scan_warps=4, scan_stages=3,
    scan_tma=True, scan_o_tma=True, cmajor=False, overlap="none", scan_fb=128, scan_t=False,
    scan_impl="auto",
)  # fmt: skip

# fuse: the solve in the intra kernel (kb recomputed or read back) instead of its own kernel
FUSE = {"none": 0, "recompute": 1, "reload": 2, "inplace": 3}

# overlap: the scan launched before the prep ends (programmatic dependent launch), then waiting
# for all of it (launch) or for each chunk's flag (chunks)
OVERLAP_MODES = {"none": 0, "launch": 1, "chunks": 2}

# The knobs of the prep stage (kda_prepare's arguments)
PREP_KEYS = (
    "impl", "prec", "wprec", "sprec", "prep_warps", "bk", "batch", "intra_nreg", "intra_stages",
    "lcmem", "cump", "solve_warps", "solve_nreg", "bw", "g63sub", "tma", "diag_inv", "fuse",
    "cmajor", "overlap",
)  # fmt: skip

# scan_impl: tl, kernel 3 below; gluon, the same in Gluon (scan_gluon.py; dense batches on Hopper,
# else tl; its loads in a warp of their own); gluon_t, Gluon carrying S^T, BV 64; auto (default):
# gluon_t where the V blocks are 64 wide, gluon where they are 32, else tl
# (the fastest at each task shape on an H200, bench/results/kda-2026-12-04.md runs 24-30)
SCAN_IMPLS = ("auto", "tl", "gluon", "gluon_t")

# The values a search may try for each knob of CONFIG.
KNOBS = {
    "impl": ["split", "dense", "blocks"],
    "sprec": ["tf32", "bf16", "tf32x3"],
    "bv": [16, 32, 64, 128],
    "prec": ["tf32", "bf16"],
    "wprec": ["bf16", "tf32"],  # "dense" / "blocks": bf16 gave NaN with the dense prep
    "scan_warps": [4, 8],
    "scan_stages": [2, 3],
    "prep_warps": [4, 8],
    "bk": [16, 32, 64],
    "batch": [True, False],  # split: batched per-block products, or masked [64, 64] ones
    "intra_nreg": [168, 0, 128],  # register cap (0: the compiler's choice)
    "intra_stages": [2, 3],
    "lcmem": [False, True],  # the cumulative-sum matrices read from memory (shared-memory operand)
    "cump": ["tf32", "bf16x3", "bf16x2"],  # the cumulative sums as two tf32 or 3 / 2 bf16 products
    "solve_warps": [4, 8],
    "solve_nreg": [0, 168, 128],
    "bw": [32, 64, 128],
    "g63sub": [True, False],  # G_63 - G by a subtraction (default) or as a product Ur g
    "tma": [True, False],  # tiles through tensor descriptors (GPU only) or per-element pointers
    "scan_tma": [True, False],  # the same for the scan
    "scan_o_tma": [True, False],  # the scan's output stored through a descriptor or by pointers
    "diag_inv": [True, False],  # the 16 x 16 diagonal inverses in the intra kernel or the solve
    "fuse": ["none", "recompute", "reload", "inplace"],  # the solve in its own kernel or in the intra kernel
    "cmajor": [True, False],  # the prep's programs in chunk order (all heads of a chunk) or head order
    "overlap": ["none", "launch", "chunks"],  # the scan launched while the prep runs (fused prep only)
    "scan_fb": [128, 256],  # the most chunks the overlapped scan takes as one pipelined run
    "scan_t": [False, True],  # the scan carries S^T: state and U as register operands of the products
    "scan_impl": list(SCAN_IMPLS),
}


def _scan_gluon():
    """kernels/kda/scan_gluon.py, imported from beside this file (kernel.py may be loaded by path,
    and a task's rules allow only plain import statements)."""
    here = str(pathlib.Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.append(here)
    import scan_gluon

    return scan_gluon


def _desc(x, block):
    """A TMA tensor descriptor over x (contiguous, 16-byte aligned rows) with the given box."""
    return TensorDescriptor.from_tensor(x, block)


def tma_applies(*xs) -> bool:
    """Whether the inputs can be read through TMA descriptors: on the GPU (not the interpreter)
    and 16-byte aligned (a valid input may be a view at an odd offset: it takes the pointers)."""
    return all(x.is_cuda and x.data_ptr() % 16 == 0 for x in xs)


_CUM = {}


def _cum_matrices(dev):
    """[2, 64, 64] float32: the inclusive lower-triangular 0/1 matrix and the strict upper one."""
    if dev not in _CUM:
        r = torch.arange(CHUNK, device=dev)
        lc = (r[None, :] <= r[:, None]).float()
        _CUM[dev] = torch.stack([lc, 1.0 - lc]).contiguous()
    return _CUM[dev]


def kda_fwd(q, k, v, g, beta, scale, initial_state=None, output_final_state=False, cu_seqlens=None):
    """KDA forward. q, k: [B, T, H, K] bf16; v: [B, T, H, V] bf16; g: [B, T, H, K] float32 per-step
    log decay (not cumulated); beta: [B, T, H]; scale: float or None (K**-0.5); initial_state:
    [B, H, K, V] float32 or None. Returns (o [B, T, H, V] in q's dtype, final state [B, H, K, V]
    float32 or None).

    cu_seqlens (FLA's variable-length form): B = 1 and the N sequences packed along T, sequence n
    being rows cu_seqlens[n] .. cu_seqlens[n + 1] - 1 (an integer tensor [N + 1] from 0 to T);
    initial_state and the final state are then [N, H, K, V]. The chunk table is built on the
    host, so a call with cu_seqlens on the GPU synchronises once (as FLA's does)."""
    return kda_fwd_cfg(q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens, **CONFIG)


def kda_fwd_cfg(q, k, v, g, beta, scale, initial_state=None, output_final_state=False, cu_seqlens=None,
                **cfg):  # fmt: skip
    """kda_fwd with explicit tuning knobs (keys of CONFIG; pad_small: see _padded)."""
    pad = cfg.pop("pad_small", None)
    _check_shapes(q, k, v, g, beta)
    if cu_seqlens is not None:  # to the host once: the chunk table is built there
        cu_seqlens = torch.as_tensor(cu_seqlens).detach().cpu()
    if pad or (pad is None and q.is_cuda):
        if scale is None:
            scale = q.shape[-1] ** -0.5
        padded = _padded(q, k, v, g, beta, initial_state, cu_seqlens)
        if padded is not None:
            (q2, k2, v2, g2, b2, h2, cu2), undo = padded
            o, hT = kda_fwd_cfg(q2, k2, v2, g2, b2, scale, h2, output_final_state, cu2, pad_small=False, **cfg)
            return undo(o, hT)
    c = dict(CONFIG, **cfg)
    if initial_state is not None:  # converted before the prep: an overlapped scan starts early
        initial_state = initial_state.float().contiguous()
    prep = kda_prepare(q, k, v, g, beta, scale, cu_seqlens=cu_seqlens, **{n: c[n] for n in PREP_KEYS})
    return kda_scan(
        prep,
        initial_state,
        output_final_state,
        bv=c["bv"],
        scan_warps=c["scan_warps"],
        scan_stages=c["scan_stages"],
        scan_tma=c["scan_tma"],
        scan_o_tma=c["scan_o_tma"],
        scan_fb=c["scan_fb"],
        scan_t=c["scan_t"],
        scan_impl=c["scan_impl"],
    )


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


def kda_prepare(
    q, k, v, g, beta, scale, prec="bf16", wprec="bf16", prep_warps=4, bk=16, impl="split",
    sprec="bf16", batch=True, intra_nreg=0, intra_stages=3, lcmem=False, cump="bf16x3",
    solve_warps=4, solve_nreg=128, bw=64, g63sub=True, tma=True, diag_inv=True, fuse="none",
    cmajor=False, overlap="none", cu_seqlens=None, only=None,
):  # fmt: skip
    """The chunk-parallel part (one or two kernels). Returns the buffers the scan reads, as a
    dict. only="intra" runs the first of the two split kernels alone (for timing it). overlap
    (OVERLAP_MODES; with a fused solve, one prep kernel) lets kda_scan launch before the prep
    ends; with "chunks" the prep's programs publish their chunks in a zeroed flag per (head,
    chunk)."""
    _check_shapes(q, k, v, g, beta)
    B, T, H, K = q.shape
    V = v.shape[-1]
    if scale is None:
        scale = K**-0.5
    bk = min(bk, K, V)
    bw = min(bw, K, V)
    interp = q.device.type == "cpu"  # Triton's interpreter (TRITON_INTERPRET=1)
    if interp:
        # the interpreter computes float32 dots exactly; bf16 rounding is emulated exactly
        prec = "bf16" if prec == "bf16" else "ieee"
        wprec = "bf16" if wprec == "bf16" else "ieee"
        sprec = "bf16" if sprec == "bf16" else "ieee"
        if impl != "split":
            prec = wprec = "ieee"
    q, k, v, g, beta = (x.contiguous() for x in (q, k, v, g, beta))
    g = g.float()
    dev = q.device
    ctab, cseq = chunk_table(cu_seqlens, B, T, dev)
    varlen = cu_seqlens is not None
    if varlen and impl != "split":
        raise ValueError(f"kda_fwd: cu_seqlens needs impl='split', not {impl!r}")
    NT = ctab.shape[0] if varlen else triton.cdiv(T, CHUNK)
    TP = NT * CHUNK
    BH = B * H
    qg = torch.empty(BH, TP, K, device=dev, dtype=torch.bfloat16)
    kd = torch.empty_like(qg)
    w = torch.empty_like(qg)
    u = torch.empty(BH, TP, V, device=dev, dtype=torch.bfloat16)
    aqk = torch.empty(BH, TP, CHUNK, device=dev, dtype=torch.bfloat16)
    gc = torch.empty(BH, NT, K, device=dev, dtype=torch.float32)
    if impl == "split":
        diag_inv = diag_inv and batch
        if fuse not in FUSE:
            raise ValueError(f"kda_fwd: fuse must be one of {sorted(FUSE)}, got {fuse!r}")
        fz = FUSE[fuse] if diag_inv else 0  # the fused solve starts from the diagonal inverses
        unused = torch.empty(1, device=dev, dtype=torch.float32)  # a pointer the kernel never touches
        if fz == 3:
            kb = w  # parked in w's buffer, which w then overwrites
        else:
            kb = unused if fz == 1 else torch.empty_like(qg)
        a32 = torch.empty(BH, TP, CHUNK, device=dev, dtype=torch.float32) if fz == 0 else unused
        if overlap not in OVERLAP_MODES:
            raise ValueError(f"kda_fwd: overlap must be one of {sorted(OVERLAP_MODES)}, got {overlap!r}")
        ov = OVERLAP_MODES[overlap] if fz and only is None else 0
        flags = torch.zeros(BH * NT, device=dev, dtype=torch.int32) if ov == 2 else unused
        use_tma = tma and not interp and batch and tma_applies(q, k, g, v)
        if use_tma:
            bws = bk if fz == 1 else bw  # the fused solve's w slices
            descs = (
                *(_desc(x.view(B, T, H * K), [1, 64, bk]) for x in (q, k, g)),
                # (without A or kb buffers their descriptor slots are filled, never used)
                *(_desc(x.view(BH * TP, K), [64, bk]) for x in (qg, kd, qg if fz == 1 else kb)),
                *(_desc(x.view(BH * TP, CHUNK), [64, CHUNK]) for x in ((a32 if fz == 0 else aqk), aqk)),
                _desc(v.view(B, T, H * V), [1, 64, bw]),
                _desc(w.view(BH * TP, K), [64, bws]),
                _desc(u.view(BH * TP, V), [64, bw]),
            )
        else:
            descs = (q,) * 11  # unused
        _kda_intra[(BH, NT) if cmajor else (NT, BH)](
            q, k, g, beta, v, ctab, qg, kd, kb, a32, aqk, gc, w, u, _cum_matrices(dev), flags, *descs,
            float(scale), T, H, NT, TP,
            K=K, V=V, BK=bk, BW=bw, PREC=prec, BATCH=batch, LCMEM=lcmem, CUMP=cump,
            G63SUB=g63sub, TMA=use_tma, DIAGINV=diag_inv, SPREC=sprec, WPREC=wprec, FUSE=fz,
            VARLEN=varlen, OVERLAP=ov, CMAJOR=cmajor, INTERP=interp, num_warps=prep_warps,
            num_stages=intra_stages, maxnreg=intra_nreg or None,
        )  # fmt: skip
        if only == "intra" or fz:
            if only == "intra":
                return None
            return _prep_out(qg, kd, w, u, aqk, gc, q, interp, ctab, cseq, ov, flags)
        _kda_solve[(NT, BH)](
            v, beta, kb, a32, w, u, ctab, T, H, TP,
            K=K, V=V, BW=bw, SPREC=sprec, WPREC=wprec, DIAGINV=diag_inv, VARLEN=varlen, INTERP=interp,
            num_warps=solve_warps,
            maxnreg=solve_nreg or None,
        )  # fmt: skip
    elif impl == "dense":
        _kda_prep_dense[(NT, BH)](
            q, k, v, g, beta, qg, kd, w, u, aqk, gc, float(scale), T, H, NT, TP,
            K=K, V=V, BK=bk, PREC=prec, WPREC=wprec, SPREC=sprec, INTERP=interp,
            num_warps=prep_warps,
        )  # fmt: skip
    else:
        _kda_prep[(NT, BH)](
            q, k, v, g, beta, qg, kd, w, u, aqk, gc, float(scale), T, H, NT, TP,
            K=K, V=V, BK=bk, PREC=prec, WPREC=wprec, INTERP=interp, num_warps=prep_warps,
        )  # fmt: skip
    return _prep_out(qg, kd, w, u, aqk, gc, q, interp, ctab, cseq)


def _prep_out(qg, kd, w, u, aqk, gc, q, interp, ctab, cseq, overlap=0, flags=None):
    """The buffers the scan reads, with the shape facts it needs (cseq None: no cu_seqlens;
    overlap 0: the prep has finished when the scan starts, else OVERLAP_MODES' number)."""
    B, T, H, K = q.shape
    return dict(
        qg=qg, kd=kd, w=w, u=u, aqk=aqk, gc=gc, ctab=ctab, cseq=cseq, overlap=overlap, flags=flags,
        shape=(B, T, H, K, u.shape[-1]), dtype=q.dtype, interp=interp,
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


def kda_scan(prep, initial_state=None, output_final_state=False, bv=None, scan_warps=4,
             scan_stages=2, scan_tma=False, scan_o_tma=True, scan_fb=128, scan_t=False, scan_impl="auto"):  # fmt: skip
    """Kernel 3: the sequential scan over chunks; returns (o, final state or None). After a prep
    with overlap, the scan is a programmatic dependent launch: it may start while the prep's last
    programs run, and waits for the whole prep or for each chunk's flag (prep["flags"])."""
    B, T, H, K, V = prep["shape"]
    NT = prep["gc"].shape[1]
    TP = NT * CHUNK
    BH = B * H
    cseq = prep["cseq"]
    varlen = cseq is not None
    NS = cseq.numel() - 1 if varlen else B  # sequences, each with its own state
    if bv is None:
        # wide V blocks while there are enough programs to fill the 132 SMs, narrower below
        # (measured on an H200: 64 best from B*H = 64 on, 32 at B*H = 32)
        n = NS * H
        bv = 64 if n * (V // 64) >= 128 else (32 if n * (V // 32) >= 96 else 16)
    bv = min(bv, V)
    dev = prep["qg"].device
    o = torch.empty(B, T, H, V, device=dev, dtype=prep["dtype"])
    # unused pointers get their own dummy (the interpreter copies each argument back separately)
    dummy = torch.empty(1, device=dev, dtype=torch.float32)
    hT = torch.empty(NS, H, K, V, device=dev, dtype=torch.float32) if output_final_state else dummy
    h0 = initial_state.float().contiguous() if initial_state is not None else dummy
    if initial_state is not None and h0.shape != (NS, H, K, V):
        what = "[N, H, K, V] with cu_seqlens" if varlen else "[B, H, K, V]"
        raise ValueError(f"kda_fwd: initial_state must be {what} = {(NS, H, K, V)}, got {tuple(h0.shape)}")
    if scan_impl not in SCAN_IMPLS:
        raise ValueError(f"kda_fwd: scan_impl must be one of {SCAN_IMPLS}, got {scan_impl!r}")
    if scan_impl == "auto":
        scan_impl = {64: "gluon_t", 32: "gluon"}.get(bv, "tl")
    if scan_impl != "tl":
        sg = _scan_gluon()
        tr = scan_impl == "gluon_t"
        if sg.applies(prep, 64 if tr else bv):
            sg.kda_scan_gluon(prep, h0 if initial_state is not None else None, o,
                              hT if output_final_state else None, 64 if tr else bv, stages=scan_stages,
                              transposed=tr, o_tma=scan_o_tma)  # fmt: skip
            return o, (hT if output_final_state else None)
    p = prep
    use_tma = scan_tma and not p["interp"]
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
    ov = p.get("overlap", 0)
    if ov == 2 and (scan_fb < 1 or scan_fb & (scan_fb - 1)):
        raise ValueError(f"kda_fwd: scan_fb must be a power of two, got {scan_fb}")
    # (the interpreter runs the prep to its end first; on the GPU the launch may overlap it)
    pdl = {"launch_pdl": True} if ov and not p["interp"] else {}
    _kda_scan[grid](
        p["qg"], p["kd"], p["w"], p["u"], p["aqk"], p["gc"], h0, o, hT, p["ctab"],
        cseq if varlen else p["ctab"], *descs, p["flags"] if ov == 2 else dummy, T, H, NT, TP,
        K=K, V=V, BV=bv, HAS_H0=initial_state is not None, STORE_HT=output_final_state,
        TMA=use_tma, O_TMA=scan_o_tma, VARLEN=varlen, OVERLAP=ov, FB=scan_fb,
        TRANS=scan_t, INTERP=p["interp"], num_warps=scan_warps, num_stages=scan_stages, **pdl,
    )  # fmt: skip
    return o, (hT if output_final_state else None)
