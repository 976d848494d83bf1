"""KDA (Kimi Delta Attention) forward in Triton: chunked form, chunk C = 64, two kernels.

Notation per head and chunk of C = 64 steps, rows i = 0..63, G_i = sum_{s<=i} g_s (cumulated in the
chunk), Gamma_i = exp(G_i), S0 the state entering the chunk:

    A[i, j]   = beta_i  k_i . (k_j * exp(G_i - G_j))            j < i   (strictly lower)
    Aqk[i, j] = scale q_i . (k_j * exp(G_i - G_j))              j <= i
    T         = (I + A)^-1                                      (the UT / WY transform)
    w         = T (beta * k * Gamma),   u = T (beta * v)
    U         = u - w S0                                        (the delta-rule updates)
    o         = (scale q * Gamma) S0 + Aqk U
    S_next    = exp(G_63)[:, None] * S0 + (k * exp(G_63 - G))^T U

Kernel 1 (`_kda_prep`, one program per chunk and head, fully parallel) computes the cumulative gates,
A and Aqk, the triangular solve and w, u, and writes qg = scale q * Gamma, kd = k * exp(G_63 - G),
w, u, Aqk (bf16) and exp(G_63) (float32). A and Aqk are built from 16-row sub-chunks: the decay
exp(G_i - G_j) is split as exp(G_i - m) * exp(m - G_j) with m the cumulative gate at the
midpoint of a sub-chunk, so that no factor exceeds exp(8 * |g|max) (finite in float32 for per-step
log decays down to about -10; FLA's safe-gate path assumes g >= -5). Blocks between two sub-chunks
use each sub-chunk's own midpoint and a factor exp(m_I - m_J) <= 1 between them.

The 64x64 solve is blocked: each 16x16 diagonal block (I + L) is inverted as
(I - L)(I + L^2)(I + L^4)(I + L^8) (L is nilpotent, L^16 = 0), the off-diagonal blocks by block
forward substitution, all with matrix products (no per-row loop).

Kernel 2 (`_kda_scan`, one program per (V block, head)) carries S (K x BV, float32) through the
chunks in order and writes o; it is the only sequential part. Splitting V into blocks gives
B * H * V / BV programs, enough to fill the 132 SMs of an H200 at B = 1.
"""

import torch
import triton
import triton.language as tl

CHUNK = 64
SUB = 16


@triton.jit
def _rows(ptr, row0, n_rows, row_stride, BR: tl.constexpr, D: tl.constexpr):
    """Load a [BR, D] tile of rows row0.. (row stride row_stride), zero past n_rows."""
    r = row0 + tl.arange(0, BR)
    d = tl.arange(0, D)
    m = (r < n_rows)[:, None]
    return tl.load(ptr + r[:, None] * row_stride + d[None, :], mask=m, other=0.0).to(
        tl.float32
    )


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
def _put(
    ptr, row0, row_stride, x, BR: tl.constexpr, D: tl.constexpr, INTERP: tl.constexpr
):
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
    return tl.dot(a, b, input_precision=PREC)


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
def _kda_prep(
    q,
    k,
    v,
    g,
    beta,
    qg_out,
    kd_out,
    w_out,
    u_out,
    aqk_out,
    gc_out,
    scale,
    T,
    H,
    NT,
    TP,
    K: tl.constexpr,
    V: tl.constexpr,
    PREC: tl.constexpr,
    INTERP: tl.constexpr,
):
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
    kk_ = tl.arange(0, K)

    # cumulative gates per 16-row sub-chunk, midpoints m_J (row 7) and chunk total
    g0 = _rows(g_p, t0, T, H * K, 16, K)
    g1 = _rows(g_p, t0 + 16, T, H * K, 16, K)
    g2 = _rows(g_p, t0 + 32, T, H * K, 16, K)
    g3 = _rows(g_p, t0 + 48, T, H * K, 16, K)
    G0 = tl.cumsum(g0, 0)
    c0 = tl.sum(g0, 0)
    G1 = tl.cumsum(g1, 0) + c0[None, :]
    c1 = c0 + tl.sum(g1, 0)
    G2 = tl.cumsum(g2, 0) + c1[None, :]
    c2 = c1 + tl.sum(g2, 0)
    G3 = tl.cumsum(g3, 0) + c2[None, :]
    GC = c2 + tl.sum(g3, 0)
    m0 = _row_of(G0, 7, 16)
    m1 = _row_of(G1, 7, 16)
    m2 = _row_of(G2, 7, 16)
    m3 = _row_of(G3, 7, 16)
    tl.store(gc_out + (bh.to(tl.int64) * NT + c) * K + kk_, tl.exp(GC))

    b0 = _vec(be_p, t0, T, H, 16)
    b1 = _vec(be_p, t0 + 16, T, H, 16)
    b2 = _vec(be_p, t0 + 32, T, H, 16)
    b3 = _vec(be_p, t0 + 48, T, H, 16)

    # per sub-chunk: row side (exp(G - m)) and column side (exp(m - G)) factors
    k0 = _rows(k_p, t0, T, H * K, 16, K)
    k1 = _rows(k_p, t0 + 16, T, H * K, 16, K)
    k2 = _rows(k_p, t0 + 32, T, H * K, 16, K)
    k3 = _rows(k_p, t0 + 48, T, H * K, 16, K)
    q0 = _rows(q_p, t0, T, H * K, 16, K)
    q1 = _rows(q_p, t0 + 16, T, H * K, 16, K)
    q2 = _rows(q_p, t0 + 32, T, H * K, 16, K)
    q3 = _rows(q_p, t0 + 48, T, H * K, 16, K)

    e0 = tl.exp(G0 - m0[None, :])
    e1 = tl.exp(G1 - m1[None, :])
    e2 = tl.exp(G2 - m2[None, :])
    e3 = tl.exp(G3 - m3[None, :])
    # column side k_j * exp(m_J - G_j)
    kc0 = k0 / e0
    kc1 = k1 / e1
    kc2 = k2 / e2
    kc3 = k3 / e3
    # row sides
    kr0 = k0 * e0 * b0[:, None]
    kr1 = k1 * e1 * b1[:, None]
    kr2 = k2 * e2 * b2[:, None]
    kr3 = k3 * e3 * b3[:, None]
    qr0 = q0 * e0 * scale
    qr1 = q1 * e1 * scale
    qr2 = q2 * e2 * scale
    qr3 = q3 * e3 * scale

    # outputs that are elementwise in the inputs
    _put(qg_out + o_row * K, t0, K, q0 * tl.exp(G0) * scale, 16, K, INTERP)
    _put(qg_out + o_row * K, t0 + 16, K, q1 * tl.exp(G1) * scale, 16, K, INTERP)
    _put(qg_out + o_row * K, t0 + 32, K, q2 * tl.exp(G2) * scale, 16, K, INTERP)
    _put(qg_out + o_row * K, t0 + 48, K, q3 * tl.exp(G3) * scale, 16, K, INTERP)
    _put(kd_out + o_row * K, t0, K, k0 * tl.exp(GC[None, :] - G0), 16, K, INTERP)
    _put(kd_out + o_row * K, t0 + 16, K, k1 * tl.exp(GC[None, :] - G1), 16, K, INTERP)
    _put(kd_out + o_row * K, t0 + 32, K, k2 * tl.exp(GC[None, :] - G2), 16, K, INTERP)
    _put(kd_out + o_row * K, t0 + 48, K, k3 * tl.exp(GC[None, :] - G3), 16, K, INTERP)

    # column-side factors moved to the row block's midpoint: exp(m_I - m_J) <= 1 for J < I
    kc0_1 = kc0 * tl.exp(m1 - m0)[None, :]
    kc0_2 = kc0 * tl.exp(m2 - m0)[None, :]
    kc0_3 = kc0 * tl.exp(m3 - m0)[None, :]
    kc1_2 = kc1 * tl.exp(m2 - m1)[None, :]
    kc1_3 = kc1 * tl.exp(m3 - m1)[None, :]
    kc2_3 = kc2 * tl.exp(m3 - m2)[None, :]

    strict = rr[:, None] > rr[None, :]
    incl = rr[:, None] >= rr[None, :]

    # A (beta folded into rows), 16x16 blocks
    a00 = tl.where(strict, _blk(kr0, kc0, PREC), 0.0)
    a11 = tl.where(strict, _blk(kr1, kc1, PREC), 0.0)
    a22 = tl.where(strict, _blk(kr2, kc2, PREC), 0.0)
    a33 = tl.where(strict, _blk(kr3, kc3, PREC), 0.0)
    a10 = _blk(kr1, kc0_1, PREC)
    a20 = _blk(kr2, kc0_2, PREC)
    a21 = _blk(kr2, kc1_2, PREC)
    a30 = _blk(kr3, kc0_3, PREC)
    a31 = _blk(kr3, kc1_3, PREC)
    a32 = _blk(kr3, kc2_3, PREC)

    # T = (I + A)^-1, blocked
    t00 = _inv_unit_lower(a00, 16)
    t11 = _inv_unit_lower(a11, 16)
    t22 = _inv_unit_lower(a22, 16)
    t33 = _inv_unit_lower(a33, 16)
    t10 = -_mm(t11, _mm(a10, t00, "ieee"), "ieee")
    t21 = -_mm(t22, _mm(a21, t11, "ieee"), "ieee")
    t32 = -_mm(t33, _mm(a32, t22, "ieee"), "ieee")
    t20 = -_mm(t22, _mm(a20, t00, "ieee") + _mm(a21, t10, "ieee"), "ieee")
    t31 = -_mm(t33, _mm(a31, t11, "ieee") + _mm(a32, t21, "ieee"), "ieee")
    t30 = -_mm(
        t33,
        _mm(a30, t00, "ieee") + _mm(a31, t10, "ieee") + _mm(a32, t20, "ieee"),
        "ieee",
    )

    # w = T (beta k Gamma), u = T (beta v)
    xk0 = k0 * tl.exp(G0) * b0[:, None]
    xk1 = k1 * tl.exp(G1) * b1[:, None]
    xk2 = k2 * tl.exp(G2) * b2[:, None]
    xk3 = k3 * tl.exp(G3) * b3[:, None]
    w0 = _mm(t00, xk0, PREC)
    w1 = _mm(t10, xk0, PREC) + _mm(t11, xk1, PREC)
    w2 = _mm(t20, xk0, PREC) + _mm(t21, xk1, PREC) + _mm(t22, xk2, PREC)
    w3 = (
        _mm(t30, xk0, PREC)
        + _mm(t31, xk1, PREC)
        + _mm(t32, xk2, PREC)
        + _mm(t33, xk3, PREC)
    )
    _put(w_out + o_row * K, t0, K, w0, 16, K, INTERP)
    _put(w_out + o_row * K, t0 + 16, K, w1, 16, K, INTERP)
    _put(w_out + o_row * K, t0 + 32, K, w2, 16, K, INTERP)
    _put(w_out + o_row * K, t0 + 48, K, w3, 16, K, INTERP)

    v0 = _rows(v_p, t0, T, H * V, 16, V) * b0[:, None]
    v1 = _rows(v_p, t0 + 16, T, H * V, 16, V) * b1[:, None]
    v2 = _rows(v_p, t0 + 32, T, H * V, 16, V) * b2[:, None]
    v3 = _rows(v_p, t0 + 48, T, H * V, 16, V) * b3[:, None]
    u0 = _mm(t00, v0, PREC)
    u1 = _mm(t10, v0, PREC) + _mm(t11, v1, PREC)
    u2 = _mm(t20, v0, PREC) + _mm(t21, v1, PREC) + _mm(t22, v2, PREC)
    u3 = (
        _mm(t30, v0, PREC)
        + _mm(t31, v1, PREC)
        + _mm(t32, v2, PREC)
        + _mm(t33, v3, PREC)
    )
    _put(u_out + o_row * V, t0, V, u0, 16, V, INTERP)
    _put(u_out + o_row * V, t0 + 16, V, u1, 16, V, INTERP)
    _put(u_out + o_row * V, t0 + 32, V, u2, 16, V, INTERP)
    _put(u_out + o_row * V, t0 + 48, V, u3, 16, V, INTERP)

    # Aqk, 16x16 blocks of the [64, 64] tile (upper blocks written as zeros)
    z = tl.zeros([16, 16], tl.float32)
    ap = aqk_out + o_row * 64 + t0 * 64
    _put(ap, 0, 64, tl.where(incl, _blk(qr0, kc0, PREC), 0.0), 16, 16, INTERP)
    _put(ap + 16, 0, 64, z, 16, 16, INTERP)
    _put(ap + 32, 0, 64, z, 16, 16, INTERP)
    _put(ap + 48, 0, 64, z, 16, 16, INTERP)
    _put(ap, 16, 64, _blk(qr1, kc0_1, PREC), 16, 16, INTERP)
    _put(ap + 16, 16, 64, tl.where(incl, _blk(qr1, kc1, PREC), 0.0), 16, 16, INTERP)
    _put(ap + 32, 16, 64, z, 16, 16, INTERP)
    _put(ap + 48, 16, 64, z, 16, 16, INTERP)
    _put(ap, 32, 64, _blk(qr2, kc0_2, PREC), 16, 16, INTERP)
    _put(ap + 16, 32, 64, _blk(qr2, kc1_2, PREC), 16, 16, INTERP)
    _put(ap + 32, 32, 64, tl.where(incl, _blk(qr2, kc2, PREC), 0.0), 16, 16, INTERP)
    _put(ap + 48, 32, 64, z, 16, 16, INTERP)
    _put(ap, 48, 64, _blk(qr3, kc0_3, PREC), 16, 16, INTERP)
    _put(ap + 16, 48, 64, _blk(qr3, kc1_3, PREC), 16, 16, INTERP)
    _put(ap + 32, 48, 64, _blk(qr3, kc2_3, PREC), 16, 16, INTERP)
    _put(ap + 48, 48, 64, tl.where(incl, _blk(qr3, kc3, PREC), 0.0), 16, 16, INTERP)


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
    T,
    H,
    NT,
    TP,
    K: tl.constexpr,
    V: tl.constexpr,
    BV: tl.constexpr,
    HAS_H0: tl.constexpr,
    STORE_HT: tl.constexpr,
    INTERP: tl.constexpr,
):
    iv = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rc = tl.arange(0, 64)
    rk = tl.arange(0, K)
    rv = iv * BV + tl.arange(0, BV)
    base = bh.to(tl.int64) * TP

    if HAS_H0:
        S = tl.load(h0 + bh.to(tl.int64) * K * V + rk[:, None] * V + rv[None, :])
    else:
        S = tl.zeros([K, BV], tl.float32)

    for c in range(NT):
        rows = base + c * 64 + rc
        w_c = _bf(tl.load(w + rows[:, None] * K + rk[None, :]), INTERP)
        q_c = _bf(tl.load(qg + rows[:, None] * K + rk[None, :]), INTERP)
        k_c = _bf(tl.load(kd + rows[:, None] * K + rk[None, :]), INTERP)
        a_c = _bf(tl.load(aqk + rows[:, None] * 64 + rc[None, :]), INTERP)
        u_c = tl.load(u + rows[:, None] * V + rv[None, :]).to(tl.float32)
        g_c = tl.load(gc + (bh.to(tl.int64) * NT + c) * K + rk)

        sb = _bf(S, INTERP)
        U = u_c - tl.dot(w_c, sb)
        ub = _bf(U, INTERP)
        out = tl.dot(q_c, sb)
        out = tl.dot(a_c, ub, out)
        t = c * 64 + rc
        op = o + ((b * T + t).to(tl.int64) * H + h)[:, None] * V + rv[None, :]
        tl.store(op, _rtne(out, INTERP).to(o.dtype.element_ty), mask=(t < T)[:, None])
        S = S * g_c[:, None] + tl.dot(tl.trans(k_c), ub)

    if STORE_HT:
        tl.store(hT + bh.to(tl.int64) * K * V + rk[:, None] * V + rv[None, :], S)


def kda_fwd(
    q,
    k,
    v,
    g,
    beta,
    scale=None,
    initial_state=None,
    output_final_state=False,
    bv=None,
    prec="tf32",
    scan_warps=4,
    scan_stages=2,
    prep_warps=4,
    _debug=None,
):
    """KDA forward. q, k: [B, T, H, K] bf16; v: [B, T, H, V] bf16; g: [B, T, H, K] float32 per-step
    log decay (not cumulated); beta: [B, T, H]; initial_state: [B, H, K, V] float32 or None.
    Returns (o [B, T, H, V] in q's dtype, final state [B, H, K, V] float32 or None)."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    if k.shape != q.shape or g.shape != q.shape or v.shape[:3] != q.shape[:3]:
        raise ValueError(
            f"kda_fwd: shape mismatch q{tuple(q.shape)} k{tuple(k.shape)} "
            f"v{tuple(v.shape)} g{tuple(g.shape)}"
        )
    if beta.shape != q.shape[:3]:
        raise ValueError(f"kda_fwd: beta must be [B, T, H], got {tuple(beta.shape)}")
    for name, d in (("K", K), ("V", V)):
        if d < 16 or d & (d - 1):
            raise ValueError(f"kda_fwd: {name} = {d} must be a power of two >= 16")
    if scale is None:
        scale = K**-0.5
    if bv is None:
        # enough programs to fill the GPU at small B*H
        bv = 32 if B * H * (V // 32) >= 96 else 16
    bv = min(bv, V)
    interp = q.device.type == "cpu"  # Triton's interpreter (TRITON_INTERPRET=1)
    if interp:
        prec = "ieee"  # the interpreter computes float32 dots exactly anyway
    q, k, v, g, beta = (x.contiguous() for x in (q, k, v, g, beta))
    g = g.float()
    dev = q.device
    NT = triton.cdiv(T, CHUNK)
    TP = NT * CHUNK
    BH = B * H
    qg = torch.empty(BH, TP, K, device=dev, dtype=torch.bfloat16)
    kd = torch.empty_like(qg)
    w = torch.empty_like(qg)
    u = torch.empty(BH, TP, V, device=dev, dtype=torch.bfloat16)
    aqk = torch.empty(BH, TP, CHUNK, device=dev, dtype=torch.bfloat16)
    gc = torch.empty(BH, NT, K, device=dev, dtype=torch.float32)
    _kda_prep[(NT, BH)](
        q,
        k,
        v,
        g,
        beta,
        qg,
        kd,
        w,
        u,
        aqk,
        gc,
        float(scale),
        T,
        H,
        NT,
        TP,
        K=K,
        V=V,
        PREC=prec,
        INTERP=interp,
        num_warps=prep_warps,
    )
    if _debug is not None:
        _debug.update(qg=qg, kd=kd, w=w, u=u, aqk=aqk, gc=gc)
    o = torch.empty(B, T, H, V, device=dev, dtype=q.dtype)
    # unused pointers get their own dummy (the interpreter copies each argument back separately)
    dummy = torch.empty(1, device=dev, dtype=torch.float32)
    hT = (
        torch.empty(B, H, K, V, device=dev, dtype=torch.float32)
        if output_final_state
        else dummy
    )
    h0 = initial_state.float().contiguous() if initial_state is not None else dummy
    _kda_scan[(V // bv, BH)](
        qg,
        kd,
        w,
        u,
        aqk,
        gc,
        h0,
        o,
        hT,
        T,
        H,
        NT,
        TP,
        K=K,
        V=V,
        BV=bv,
        HAS_H0=initial_state is not None,
        STORE_HT=output_final_state,
        INTERP=interp,
        num_warps=scan_warps,
        num_stages=scan_stages,
    )
    return o, (hT if output_final_state else None)
