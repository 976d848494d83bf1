"""The KDA scan (kernel.py's `_kda_scan`, kernel 3) in Gluon, Triton's lower-level language, for
Hopper: the same arithmetic with the synchronisation written out.

Per chunk, with S (K x BV, float32) in registers:

    U = u - w S        o = qg S + Aqk U        S = e^(G_63) S + kd^T U

What `tl` cannot say and these kernels do:

* one mbarrier per pipeline stage for the six tiles of a chunk (w, qg, kd, Aqk, u and the row
  e^(G_63)), loaded by TMA; Triton's `tl` lowering puts a block barrier in front of each load;
* the products that do not depend on each other in flight together: `w S` and `qg S` are issued
  back to back and only `w S` is waited for before U is formed; `Aqk U` (accumulated onto `qg S`)
  and `kd^T U` likewise. `tl` waits for each product before it issues the next;
* o written into one of two shared buffers and stored by TMA. Stored by pointers straight from
  the accumulator, the next chunk's first product had to wait until the stores had read those
  registers (ncu: 19-25% of the scan's stall samples on that wait).

Two kernels, one program per (V block, head):

* `_kda_scan_gl`: one computing warpgroup, and the loads in a warp of their own (warp
  specialisation, an "empty" mbarrier a stage). Issued from the computing warps, each TMA copy
  cost a block barrier before it and a wait for the copy engine to take it (ncu: 11% of the
  samples on that wait, 14% at block barriers; the producer warp took 6.6% off the whole call at
  B1 T8192 H32). The default at BV 32 (B1 H32);
* `_kda_scan_glt` carries the transposed state S^T (BV = 64 rows, a warpgroup's), so that S^T and
  U^T are the register A operands of all four products and the tiles their shared-memory B
  operands: no shared-memory round trip and no block barrier in the state's chain, and each tile
  is read once for 64 value columns. The default where B H V / 64 programs fill the SMs (B4 T4096
  H32, B8 T2048 H16, B1 T8192 H64); at B1 H32 it leaves half of them idle. With its loads in a
  warp of their own it measured the same (not kept).

Dense batches only (no cu_seqlens): `kernel.kda_scan` falls back to the `tl` scan otherwise. GPU only: Gluon has no interpreter, so the tests compare these kernels
with the `tl` scan on the GPU.
"""

from __future__ import annotations

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

ROWS = 64  # the chunk, as a host integer
CHUNK = gl.constexpr(ROWS)


@gluon.jit
def _issue(WD, QD, KD, AD, UD, GD, w_s, q_s, k_s, a_s, u_s, g_s, bars, stage, row0, col_u, grow,
           nbytes: gl.constexpr):  # fmt: skip
    """The five tiles of one chunk and its row of e^(G_63) (row grow of gc) into one stage,
    signalled on the stage's barrier."""
    bar = bars.index(stage)
    mbarrier.expect(bar, nbytes)
    tma.async_copy_global_to_shared(WD, [row0, 0], bar, w_s.index(stage))
    tma.async_copy_global_to_shared(QD, [row0, 0], bar, q_s.index(stage))
    tma.async_copy_global_to_shared(KD, [row0, 0], bar, k_s.index(stage))
    tma.async_copy_global_to_shared(AD, [row0, 0], bar, a_s.index(stage))
    tma.async_copy_global_to_shared(UD, [row0, col_u], bar, u_s.index(stage))
    tma.async_copy_global_to_shared(GD, [grow, 0], bar, g_s.index(stage))


@gluon.jit
def _stages(WD, QD, KD, AD, UD, GD, K: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr):
    """The pipeline's shared buffers (STAGES chunks of the five tiles and of e^(G_63)) and one
    initialised mbarrier a stage."""
    w_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, K], WD.layout)
    q_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, K], QD.layout)
    k_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, K], KD.layout)
    a_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, CHUNK], AD.layout)
    u_s = gl.allocate_shared_memory(gl.bfloat16, [STAGES, CHUNK, BV], UD.layout)
    g_s = gl.allocate_shared_memory(gl.float32, [STAGES, 1, K], GD.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    return w_s, q_s, k_s, a_s, u_s, g_s, bars


@gluon.jit
def _ws_producer(WD, QD, KD, AD, UD, GD, w_s, q_s, k_s, a_s, u_s, g_s, ready, empty, bh, col_u, NT, TP,
                 STAGES: gl.constexpr, NBYTES: gl.constexpr):  # fmt: skip
    """The loading warp: each chunk's tiles into its stage once the consumers have released it."""
    for c in range(NT):
        st = c % STAGES
        if c >= STAGES:
            mbarrier.wait(empty.index(st), ((c // STAGES) - 1) & 1)
        _issue(WD, QD, KD, AD, UD, GD, w_s, q_s, k_s, a_s, u_s, g_s, ready, st, bh * TP + c * CHUNK, col_u,
               bh * NT + c, NBYTES)  # fmt: skip


@gluon.jit
def _ws_consumer(OD, h0, o, hT, w_s, q_s, k_s, a_s, u_s, g_s, ready, empty, sb_s, ub_s, o_s, b, h, bh, col_u,
                 T, H, NT, K: gl.constexpr, V: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
                 HAS_H0: gl.constexpr, STORE_HT: gl.constexpr, O_TMA: gl.constexpr):  # fmt: skip
    """The computing warpgroup of _kda_scan_gl: per chunk the four products, S and U through shared
    memory as the B operands, o by TMA (or, without O_TMA, by pointers), the stage released."""
    acc_l: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BV, 16])
    row_l: gl.constexpr = gl.SliceLayout(1, acc_l)
    col_l: gl.constexpr = gl.SliceLayout(0, acc_l)
    rk = gl.arange(0, K, layout=row_l)
    rv = col_u + gl.arange(0, BV, layout=col_l)
    rc = gl.arange(0, CHUNK, layout=row_l)
    s_off = bh.to(gl.int64) * K * V + rk[:, None] * V + rv[None, :]
    if HAS_H0:
        S = gl.load(h0 + s_off)
    else:
        S = gl.zeros([K, BV], gl.float32, acc_l)
    zc = gl.zeros([CHUNK, BV], gl.float32, acc_l)
    zk = gl.zeros([K, BV], gl.float32, acc_l)
    for c in range(NT):
        st = c % STAGES
        sb_s.store(S.to(gl.bfloat16))
        fence_async_shared()
        gl.thread_barrier()
        mbarrier.wait(ready.index(st), (c // STAGES) & 1)
        ws = warpgroup_mma(w_s.index(st), sb_s, zc, use_acc=False, is_async=True)
        qs = warpgroup_mma(q_s.index(st), sb_s, zc, use_acc=False, is_async=True)
        u = u_s.index(st).load(acc_l).to(gl.float32)
        g_c = g_s.index(st).reshape([K]).load(row_l)
        ws = warpgroup_mma_wait(num_outstanding=1, deps=(ws,))
        ub_s.store((u - ws).to(gl.bfloat16))
        fence_async_shared()
        gl.thread_barrier()
        out = warpgroup_mma(a_s.index(st), ub_s, qs, is_async=True)
        kdu = warpgroup_mma(k_s.index(st).permute((1, 0)), ub_s, zk, use_acc=False, is_async=True)
        out = warpgroup_mma_wait(num_outstanding=1, deps=(out,))
        if O_TMA:
            ob = o_s.index(c % 2)
            ob.reshape([CHUNK, BV]).store(out.to(gl.bfloat16))
            fence_async_shared()
            # (the store of two chunks ago, waited for by the thread that issued it before the
            # barrier below, so that its buffer, written next chunk, is free for every thread)
            tma.store_wait(0)
        else:
            t = c * CHUNK + rc
            optr = o + ((b * T + t).to(gl.int64) * H + h)[:, None] * V + rv[None, :]
            gl.store(optr, out.to(o.dtype.element_ty), mask=(t < T)[:, None])
        kdu = warpgroup_mma_wait(num_outstanding=0, deps=(kdu,))
        S = S * g_c[:, None] + kdu
        # every warp is done with this stage and has written its part of o
        gl.thread_barrier()
        mbarrier.arrive(empty.index(st))
        if O_TMA:
            tma.async_copy_shared_to_global(OD, [b, c * CHUNK, h * V + col_u], ob)
    if O_TMA:
        tma.store_wait(0)
    if STORE_HT:
        gl.store(hT + s_off, S)


@gluon.jit
def _kda_scan_gl(
    WD, QD, KD, AD, UD, GD, OD, h0, o, hT,
    T, H, NT, TP,
    K: gl.constexpr, V: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
    HAS_H0: gl.constexpr, STORE_HT: gl.constexpr, O_TMA: gl.constexpr,
):  # fmt: skip
    """The scan carrying S (K x BV): one computing warpgroup (_ws_consumer) and one warp that issues
    the loads (_ws_producer; warp specialisation): the computing warps never wait at a block
    barrier before a TMA copy or for the copy engine to take it, and a stage is refilled as soon as
    it is released (an "empty" mbarrier a stage). O_TMA: o through two shared buffers and TMA (OD,
    o as [B, T, H V]), else by pointers."""
    iv = gl.program_id(0)
    bh = gl.program_id(1)
    w_s, q_s, k_s, a_s, u_s, g_s, ready = _stages(WD, QD, KD, AD, UD, GD, K, BV, STAGES)
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(empty.index(i), count=1)
    sb_s = gl.allocate_shared_memory(gl.bfloat16, [K, BV], gl.NVMMASharedLayout.get_default_for([K, BV], gl.bfloat16))
    ub_s = gl.allocate_shared_memory(
        gl.bfloat16, [CHUNK, BV], gl.NVMMASharedLayout.get_default_for([CHUNK, BV], gl.bfloat16)
    )
    if O_TMA:
        o_s = gl.allocate_shared_memory(gl.bfloat16, [2, 1, CHUNK, BV], OD.layout)
    else:
        o_s = ub_s  # (never used)
    NBYTES: gl.constexpr = 2 * (3 * CHUNK * K + CHUNK * CHUNK + CHUNK * BV) + 4 * K
    col_u = iv * BV
    gl.warp_specialize(
        [
            (_ws_consumer, (OD, h0, o, hT, w_s, q_s, k_s, a_s, u_s, g_s, ready, empty, sb_s, ub_s, o_s, bh // H,
                            bh % H, bh, col_u, T, H, NT, K, V, BV, STAGES, HAS_H0, STORE_HT, O_TMA)),
            (_ws_producer, (WD, QD, KD, AD, UD, GD, w_s, q_s, k_s, a_s, u_s, g_s, ready, empty, bh, col_u, NT, TP,
                            STAGES, NBYTES)),
        ],
        [1],
        [24],
    )  # fmt: skip
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))
        mbarrier.invalidate(empty.index(i))


@gluon.jit
def _kda_scan_glt(
    WD, QD, KD, AD, UD, GD, OD, h0, o, hT,
    T, H, NT, TP,
    K: gl.constexpr, V: gl.constexpr, BV: gl.constexpr, STAGES: gl.constexpr,
    HAS_H0: gl.constexpr, STORE_HT: gl.constexpr, O_TMA: gl.constexpr,
):  # fmt: skip
    """The scan carrying S^T (BV x K) in registers, BV = 64 (a warpgroup's rows):

        U^T = u^T - S^T w^T     o^T = S^T qg^T + U^T Aqk^T     S^T = S^T e^(G_63) + U^T kd

    S^T and U^T are the register A operands of the products, so nothing of the state's chain goes
    through shared memory and no block barrier stands in it; the tiles are the B operands, read
    once for 64 value columns (the BV 32 scan reads them once for 32). O_TMA: o^T written
    transposed into one of two shared buffers and stored by TMA (OD, o as [B, T, H V]), else
    moved to a coalesced layout and stored by pointers."""
    iv = gl.program_id(0)
    bh = gl.program_id(1)
    b = bh // H
    h = bh % H

    acc_c: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, CHUNK, 16])
    acc_k: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, K, 16])
    a_c: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_c, k_width=2)
    a_k: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_k, k_width=2)
    # o^T stored with the value columns along the lanes (o's contiguous dimension)
    st_l: gl.constexpr = gl.BlockedLayout([8, 1], [8, 4], [1, 4], [0, 1])

    w_s, q_s, k_s, a_s, u_s, g_s, bars = _stages(WD, QD, KD, AD, UD, GD, K, BV, STAGES)
    NBYTES: gl.constexpr = 2 * (3 * CHUNK * K + CHUNK * CHUNK + CHUNK * BV) + 4 * K
    if O_TMA:
        o_s = gl.allocate_shared_memory(gl.bfloat16, [2, 1, CHUNK, BV], OD.layout)

    base = bh * TP
    col_u = iv * BV
    for i in gl.static_range(STAGES):
        if i < NT:
            _issue(WD, QD, KD, AD, UD, GD, w_s, q_s, k_s, a_s, u_s, g_s, bars, i, base + i * CHUNK, col_u,
                   bh * NT + i, NBYTES)  # fmt: skip

    rv = col_u + gl.arange(0, BV, layout=gl.SliceLayout(1, acc_k))
    rk = gl.arange(0, K, layout=gl.SliceLayout(0, acc_k))
    s_off = bh.to(gl.int64) * K * V + rk[None, :] * V + rv[:, None]
    if HAS_H0:
        S = gl.load(h0 + s_off)
    else:
        S = gl.zeros([BV, K], gl.float32, acc_k)
    zc = gl.zeros([BV, CHUNK], gl.float32, acc_c)
    sv = col_u + gl.arange(0, BV, layout=gl.SliceLayout(1, st_l))
    sc = gl.arange(0, CHUNK, layout=gl.SliceLayout(0, st_l))

    for c in range(NT):
        st = c % STAGES
        mbarrier.wait(bars.index(st), (c // STAGES) & 1)
        g_c = g_s.index(st).reshape([K]).load(gl.SliceLayout(0, acc_k))
        Sa = gl.convert_layout(S.to(gl.bfloat16), a_c)
        # (before the products: ptxas waits for every product in flight before S's registers,
        # which a product defined, are touched)
        S = S * g_c[None, :]
        ws = warpgroup_mma(Sa, w_s.index(st).permute((1, 0)), zc, use_acc=False, is_async=True)
        qs = warpgroup_mma(Sa, q_s.index(st).permute((1, 0)), zc, use_acc=False, is_async=True)
        ut = u_s.index(st).permute((1, 0)).load(acc_c).to(gl.float32)
        ws = warpgroup_mma_wait(num_outstanding=1, deps=(ws,))
        Ub = (ut - ws).to(gl.bfloat16)
        Uk = gl.convert_layout(Ub, a_k)
        Uc = gl.convert_layout(Ub, a_c)
        S = warpgroup_mma(Uk, k_s.index(st), S, is_async=True)
        out = warpgroup_mma(Uc, a_s.index(st).permute((1, 0)), qs, is_async=True)
        S, Uk = warpgroup_mma_wait(num_outstanding=1, deps=(S, Uk))
        out, Uc, Sa = warpgroup_mma_wait(num_outstanding=0, deps=(out, Uc, Sa))
        if O_TMA:
            ob = o_s.index(c % 2)
            ob.reshape([CHUNK, BV]).permute((1, 0)).store(out.to(gl.bfloat16))
            fence_async_shared()
            # the store of two chunks ago waited for by its issuing thread before the barrier, so
            # that its buffer, written next chunk, is free for every thread after it
            tma.store_wait(0)
            # every warp is done with this stage (its products waited for, u read) and has
            # written its part of o^T
            gl.thread_barrier()
            tma.async_copy_shared_to_global(OD, [b, c * CHUNK, h * V + col_u], ob)
        else:
            t = c * CHUNK + sc
            optr = o + ((b * T + t).to(gl.int64) * H + h)[None, :] * V + sv[:, None]
            gl.store(optr, gl.convert_layout(out.to(o.dtype.element_ty), st_l), mask=(t < T)[None, :])
            # every warp is done with this stage (its products waited for, u read): refill it
            gl.thread_barrier()
        if c + STAGES < NT:
            _issue(WD, QD, KD, AD, UD, GD, w_s, q_s, k_s, a_s, u_s, g_s, bars, st, base + (c + STAGES) * CHUNK,
                   col_u, bh * NT + c + STAGES, NBYTES)  # fmt: skip

    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))
    if O_TMA:
        tma.store_wait(0)
    if STORE_HT:
        gl.store(hT + s_off, S)


SMEM_BYTES = 232448  # an H100 / H200 block's shared memory


def _smem_gl(K, bv, stages, o_tma):
    """_kda_scan_gl's shared memory in bytes: the stages and their two mbarriers, S and U as
    operands, o's two buffers."""
    stage = 2 * (3 * ROWS * K + ROWS * ROWS + ROWS * bv) + 4 * K
    return stages * (stage + 16) + 2 * (K * bv + ROWS * bv) + (4 * ROWS * bv if o_tma else 0)


def _desc(x2d, block):
    return TensorDescriptor.from_tensor(x2d, block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))


def applies(prep, bv) -> bool:
    """Whether the Gluon scan takes this call: a dense batch on a Hopper GPU, K 128 or 64."""
    B, T, H, K, V = prep["shape"]
    return (
        not prep["interp"]
        and prep["cseq"] is None
        and prep["qg"].is_cuda
        and torch.cuda.get_device_capability(prep["qg"].device)[0] == 9
        and K in (64, 128)
        and bv in (16, 32, 64)
        and V % bv == 0
    )


def kda_scan_gluon(prep, h0, o, hT, bv, stages=3, transposed=False, o_tma=True):
    """The scan of kernel.kda_scan on prep's buffers, writing o and (when hT is not None) the final
    state; h0 is the float32 initial state or None. transposed: _kda_scan_glt (bv must be 64),
    storing o by TMA where o is bf16 and o_tma is set."""
    if transposed and bv != 64:
        raise ValueError(f"kda_scan_gluon: the transposed scan takes BV 64, got {bv}")
    B, T, H, K, V = prep["shape"]
    NT = prep["gc"].shape[1]
    TP = NT * ROWS
    BH = B * H
    dummy = prep["gc"]  # never read or written (HAS_H0 / STORE_HT False)
    descs = (
        *(_desc(prep[n].view(BH * TP, K), [ROWS, K]) for n in ("w", "qg", "kd")),
        _desc(prep["aqk"].view(BH * TP, ROWS), [ROWS, ROWS]),
        _desc(prep["u"].view(BH * TP, V), [ROWS, bv]),
        # e^(G_63), a row of K float32 a chunk (unswizzled: one row)
        TensorDescriptor.from_tensor(prep["gc"].view(BH * NT, K), [1, K], gl.NVMMASharedLayout(0, 32)),
    )
    states = (dummy if h0 is None else h0, o, dummy if hT is None else hT, T, H, NT, TP)
    flags = dict(K=K, V=V, BV=bv, STAGES=stages, HAS_H0=h0 is not None, STORE_HT=hT is not None, num_warps=4)
    o_tma = o.dtype == torch.bfloat16 and o_tma
    if not transposed and _smem_gl(K, bv, stages, True) > SMEM_BYTES - 1024:  # (1 KB for alignment)
        o_tma = False  # (BV 64 with 3 stages: no room for o's two buffers)
    od = _desc(o.view(B, T, H * V), [1, ROWS, bv]) if o_tma else descs[0]
    kernel = _kda_scan_glt if transposed else _kda_scan_gl
    kernel[(V // bv, BH)](*descs, od, *states, O_TMA=o_tma, **flags)
