"""The MLA decode split kernel (kernel.py's `_decode_kernel`) in Gluon, Triton's lower-level
language, for Hopper: the same split-KV flash-decoding with the layouts written out.

Program (split, row block of 64 (position, head) rows, batch), 8 warps = two warpgroups:

    s = q kv^T (K = 576)   p = 2^(s scale log2(e) - m)   acc = acc alpha + p kv[:, :DV]

What the `tl` kernel cannot say and this one does:

* the score tile is split between the warpgroups (each computes BLOCK_N / 2 of its kv rows, the
  accumulator layout `warps_per_cta=[4, 2]`), where Triton's `tl` lays a product that feeds
  another product over warps along M only, so that both warpgroups would compute the whole tile;
* p goes through one shared buffer as the A operand of `p kv`, and each warpgroup multiplies it
  by its own half of the value columns (the [4, 2] layout of the 64 x DV accumulator, 128
  registers a thread); the row sums are kept per warpgroup (each its half of the tile's columns,
  shuffles within its warps) and the two added once after the loop, and the row maximum is each
  warpgroup's own, exchanged through a 64 x 2 buffer behind one block
  barrier: with p's, the tile's only two barriers of its own (the compiler adds one before each
  TMA copy of a refill);
* q and the first STAGES kv tiles are all requested by TMA at the program's start, in KS column
  slices, each slice on its own mbarrier, so that the score product starts on the first slice to
  land while the others stream in; a stage is refilled once both warpgroups are done with it, which
  the next tile's row-maximum barrier shows (with one stage, a barrier at the end of the tile);
* where a program runs many tiles (QREG > 0), q's rope and first value columns are loaded once into
  registers as the score product's A operand: that loop is bound by shared-memory bandwidth as much
  as by the tensor cores, and each warpgroup otherwise read all of q from shared memory every tile.

Each program writes its normalised output tile (bf16) by one TMA store from q's buffer, which is
free once the loop is done: its partial when there are several splits (with the log-sum-exp, for
kernel.py's merge kernel), o itself when there is one. With one split and the queries the whole
cache the same kernel is the causal prefill (kernel.py's `mla_prefill`), the heaviest row blocks
launched first.

GPU only (Gluon has no interpreter): the tests compare it with the reference on the GPU.
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

ROWS = 64  # rows of a block: one warpgroup's MMA height
BLOCK_N = 64  # kv rows a tile: each warpgroup's share of the score tile is one 64 x 32 MMA
BM = gl.constexpr(ROWS)
SMEM_BYTES = 232448  # an H100 / H200 block's shared memory


@gluon.jit
def _load_tile(KVV, KVP, kv_v, kv_p, bars, st, row, BLOCK_N: gl.constexpr, DV: gl.constexpr, D_PE: gl.constexpr,
               KS: gl.constexpr):  # fmt: skip
    """kv rows [row, row + BLOCK_N) into stage st in KS column slices, each on its own mbarrier
    (the rope columns with the first), so that the score product can start on the first slice."""
    W: gl.constexpr = DV // KS
    for k in gl.static_range(KS):
        bar = bars.index(st * KS + k)
        mbarrier.expect(bar, 2 * BLOCK_N * (W + (D_PE if k == 0 else 0)))
        tma.async_copy_global_to_shared(KVV, [row, k * W], bar, kv_v.index(st).slice(k * W, W, 1))
        if k == 0:
            tma.async_copy_global_to_shared(KVP, [row, 0], bar, kv_p.index(st))


@gluon.jit
def _mla_decode_gl(
    QV, QP, KVV, KVP, OD, LSE,
    scale_log2, M, Skv, Sq, H, split_len, stride_lb, stride_lm,
    BLOCK_N: gl.constexpr, DV: gl.constexpr, D_PE: gl.constexpr, STAGES: gl.constexpr,
    SPLIT: gl.constexpr, KS: gl.constexpr, QREG: gl.constexpr,
):  # fmt: skip
    """Descriptors: QV / QP over q as [B, M, D] (the value columns DV / KS at a time, the rope
    columns), KVV / KVP over kv as [B * Skv, D] likewise, OD over the output as [B * S, M, DV]
    (program (s, m, b) writes rows m * 64.. of slab b * S + s: its partial, or o when S is 1).
    SPLIT: also write the log-sum-exp (base 2) to LSE[b, row, split]. KS: q and each kv tile
    arrive in KS column slices, each on its own mbarrier, and the score product takes each slice
    as it lands."""
    pid_s = gl.program_id(0)
    # the heaviest row blocks (the end of the sequence, when Sq > 1) first
    pid_m = gl.num_programs(1) - 1 - gl.program_id(1)
    b = gl.program_id(2)
    s_l: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 2], instr_shape=[16, BLOCK_N // 2, 16]
    )
    o_l: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 2], instr_shape=[16, DV // 2, 16])
    W: gl.constexpr = DV // KS
    q_v3 = gl.allocate_shared_memory(gl.bfloat16, [1, BM, DV], QV.layout)
    q_p3 = gl.allocate_shared_memory(gl.bfloat16, [1, BM, D_PE], QP.layout)
    q_v = q_v3.reshape([BM, DV])
    q_p = q_p3.reshape([BM, D_PE])
    kv_v = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, DV], KVV.layout)
    kv_p = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, D_PE], KVP.layout)
    p_s = gl.allocate_shared_memory(
        gl.bfloat16, [BM, BLOCK_N], gl.NVMMASharedLayout.get_default_for([BM, BLOCK_N], gl.bfloat16)
    )
    # [64 rows, 2 warpgroups] row maxima; x_l: both columns of a row in the registers of the threads
    # that hold that row in s_l (the accumulator's row bases: registers +8, lanes +1 +2 +4, warps +16 +32)
    mx_s = gl.allocate_shared_memory(gl.float32, [BM, 2], gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    x_l: gl.constexpr = gl.DistributedLinearLayout(
        reg_bases=[[0, 1], [8, 0]],
        lane_bases=[[0, 0], [0, 0], [1, 0], [2, 0], [4, 0]],
        warp_bases=[[16, 0], [32, 0], [0, 0]],
        block_bases=[],
        shape=[64, 2],
    )
    qbars = gl.allocate_shared_memory(gl.int64, [KS, 1], mbarrier.MBarrierLayout())
    bars = gl.allocate_shared_memory(gl.int64, [STAGES * KS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(KS):
        mbarrier.init(qbars.index(i), count=1)
    for i in gl.static_range(STAGES * KS):
        mbarrier.init(bars.index(i), count=1)

    row0 = pid_m * BM
    last_row = gl.minimum(row0 + BM, M) - 1
    start = pid_s * split_len
    # the block's last row sees the most; nothing in this split past that is needed
    end = gl.minimum(gl.minimum(start + split_len, Skv), Skv - Sq + last_row // H + 1)
    n_tiles = (end - start + BLOCK_N - 1) // BLOCK_N

    # q in KS slices (the rope columns with the first); rows past M, when M is not a multiple of
    # 64, come as zeros
    for k in gl.static_range(KS):
        mbarrier.expect(qbars.index(k), 2 * BM * (W + (D_PE if k == 0 else 0)))
        tma.async_copy_global_to_shared(QV, [b, row0, k * W], qbars.index(k), q_v3.slice(k * W, W, 2))
        if k == 0:
            tma.async_copy_global_to_shared(QP, [b, row0, 0], qbars.index(0), q_p3)
    # rows past this batch's cache are another batch's (or zeros past the tensor): masked below
    kv0 = b * Skv + start
    for i in gl.static_range(STAGES):
        if i < n_tiles:
            _load_tile(KVV, KVP, kv_v, kv_p, bars, i, kv0 + i * BLOCK_N, BLOCK_N, DV, D_PE, KS)

    rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, s_l))
    limit = Skv - Sq + rows // H  # last kv index row r may see (causal at the end of the cache)
    m_i = gl.full([BM], -1.0e30, gl.float32, gl.SliceLayout(1, s_l))
    # the row sums kept per warpgroup ([64 rows, 2]: each its own columns, shuffles within its
    # warps) and the two added once, after the loop: the row maximum is then the loop's only
    # reduction across the two warpgroups, and they take 2 registers a thread where element-wise
    # sums took 16 (room for more of q in registers)
    acc = gl.zeros([BM, DV], gl.float32, o_l)
    zs = gl.zeros([BM, BLOCK_N], gl.float32, s_l)
    l_e = gl.sum(zs.reshape([BM, 2, BLOCK_N // 2]), 2)
    if QREG > 0:
        # the rope columns of q and its first QREG - D_PE value columns (all in q's first slice)
        # held in registers as the A operand of their score products, loaded once: those products
        # then read only kv from shared memory
        gl.static_assert(QREG - D_PE <= W, "q's register columns must lie in its first slice")
        a_l: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=s_l, k_width=2)
        mbarrier.wait(qbars.index(0), 0)
        qa_p = q_p.load(a_l)
        # (in power-of-two pieces: up to 128 columns, then the rest)
        RA: gl.constexpr = min(QREG - D_PE, 128)
        RB: gl.constexpr = QREG - D_PE - RA
        if RA > 0:
            qa_v = q_v.slice(0, RA, 1).load(a_l)
        if RB > 0:
            qa_w = q_v.slice(RA, RB, 1).load(a_l)
    # (the prologue's loads and mbarrier operations are behind one barrier here, so that the compiler
    # puts none at the top of every tile)
    gl.thread_barrier()
    for t in range(n_tiles):
        st = t % STAGES
        kvs = kv_v.index(st)
        # (q's barriers complete once: waiting on them again returns at once)
        mbarrier.wait(qbars.index(0), 0)
        mbarrier.wait(bars.index(st * KS), (t // STAGES) & 1)
        if QREG > 0:
            s = warpgroup_mma(qa_p, kv_p.index(st).permute((1, 0)), zs, use_acc=False, is_async=True)
            if RA > 0:
                s = warpgroup_mma(qa_v, kvs.slice(0, RA, 1).permute((1, 0)), s, is_async=True)
            if RB > 0:
                s = warpgroup_mma(qa_w, kvs.slice(RA, RB, 1).permute((1, 0)), s, is_async=True)
            for c in gl.static_range((QREG - D_PE) // 64, W // 64):
                s = warpgroup_mma(q_v.slice(c * 64, 64, 1), kvs.slice(c * 64, 64, 1).permute((1, 0)), s, is_async=True)
        else:
            s = warpgroup_mma(q_p, kv_p.index(st).permute((1, 0)), zs, use_acc=False, is_async=True)
            s = warpgroup_mma(q_v.slice(0, W, 1), kvs.slice(0, W, 1).permute((1, 0)), s, is_async=True)
        for k in gl.static_range(1, KS):
            mbarrier.wait(qbars.index(k), 0)
            mbarrier.wait(bars.index(st * KS + k), (t // STAGES) & 1)
            s = warpgroup_mma(q_v.slice(k * W, W, 1), kvs.slice(k * W, W, 1).permute((1, 0)), s, is_async=True)
        s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
        cols = start + t * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_l))
        visible = (cols < end)[None, :] & (cols[None, :] <= limit[:, None])
        s = gl.where(visible, s * scale_log2, float("-inf"))
        # the row maximum: each warpgroup's over its half of the tile (shuffles within its warps),
        # the two exchanged through shared memory behind one block barrier
        mx_s.store(gl.max(s.reshape([BM, 2, BLOCK_N // 2]), 2))
        gl.thread_barrier()
        m_t = gl.convert_layout(gl.max(mx_s.load(x_l), 1), gl.SliceLayout(1, s_l), assert_trivial=True)
        m_new = gl.maximum(m_i, m_t)
        if STAGES > 1:
            # each warpgroup reached that barrier after waiting for its previous tile's p kv: that
            # tile's stage (and p_s) is free, and is refilled here rather than behind a barrier of
            # its own at the end of the tile
            if (t > 0) & (t - 1 + STAGES < n_tiles):
                prev = t - 1
                _load_tile(
                    KVV, KVP, kv_v, kv_p, bars, prev % STAGES, kv0 + (prev + STAGES) * BLOCK_N, BLOCK_N, DV, D_PE, KS
                )
        alpha = gl.exp2(m_i - m_new)
        p = gl.exp2(s - m_new[:, None])
        l_e = l_e * gl.convert_layout(alpha, gl.SliceLayout(1, l_e.type.layout))[:, None] + gl.sum(
            p.reshape([BM, 2, BLOCK_N // 2]), 2
        )
        m_i = m_new
        p_s.store(p.to(gl.bfloat16))
        fence_async_shared()
        gl.thread_barrier()
        acc = acc * gl.convert_layout(alpha, gl.SliceLayout(1, o_l))[:, None]
        # the same kv rows, already on chip, are the values: each warpgroup its DV / 2 columns
        acc = warpgroup_mma(p_s, kvs, acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        if STAGES == 1:
            # both warpgroups are done with the one stage and with p_s: refill it
            gl.thread_barrier()
            if t + STAGES < n_tiles:
                _load_tile(KVV, KVP, kv_v, kv_p, bars, st, kv0 + (t + STAGES) * BLOCK_N, BLOCK_N, DV, D_PE, KS)

    for i in gl.static_range(KS):
        mbarrier.invalidate(qbars.index(i))
    for i in gl.static_range(STAGES * KS):
        mbarrier.invalidate(bars.index(i))
    l_i = gl.sum(l_e, 1)
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_l))
    # a split that sees no row of the cache (possible when Sq > 1) writes zeros and lse -inf
    empty = l_o == 0.0
    l_safe = gl.where(empty, 1.0, l_o)
    out = acc * (1.0 / l_safe)[:, None]
    if SPLIT:
        orow = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, o_l))
        lse = gl.where(empty, float("-inf"), gl.convert_layout(m_i, gl.SliceLayout(1, o_l)) + gl.log2(l_safe))
        gl.store(LSE + b.to(gl.int64) * stride_lb + orow * stride_lm + pid_s, lse, mask=orow < M)
    # every product that read q is done (waited for in the loop): q's buffer takes the tile, and
    # the TMA store clips the rows past M
    q_v.store(out.to(gl.bfloat16))
    fence_async_shared()
    gl.thread_barrier()
    tma.async_copy_shared_to_global(OD, [b * gl.num_programs(0) + pid_s, row0, 0], q_v3)
    tma.store_wait(0)


def smem_bytes(dv, d_pe, stages, kslices):
    """_mla_decode_gl's shared memory: q, the kv stages, p, the row maxima, the mbarriers."""
    return (
        2 * (ROWS * (dv + d_pe) + stages * BLOCK_N * (dv + d_pe) + ROWS * BLOCK_N)
        + 4 * ROWS * 2
        + 8 * (stages + 1) * kslices
    )


def max_stages(dv, d_pe, kslices):
    """The most kv stages that fit in a block's shared memory (1 KB left to the compiler)."""
    n = 1
    while smem_bytes(dv, d_pe, n + 1, kslices) <= SMEM_BYTES - 1024:
        n += 1
    return n


def applies(q, kv, dv) -> bool:
    """Whether this kernel takes the call: a Hopper GPU, bf16, DeepSeek's latent (512 value and 64
    rope columns: the widths its shared-memory plan and its GPU tests cover), TMA-aligned tensors.
    Other calls take kernel.py's `tl` kernels."""
    return (
        q.is_cuda
        and torch.cuda.get_device_capability(q.device)[0] == 9
        and q.dtype == torch.bfloat16
        and dv == 512
        and q.shape[-1] - dv == 64
        and q.data_ptr() % 16 == 0
        and kv.data_ptr() % 16 == 0
    )


def _desc(x, block):
    return TensorDescriptor.from_tensor(x, block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))


def decode_split_gluon(q2, kv2, out, lse, scale_log2, M, Skv, Sq, H, split_len, num_splits, B, dv, *, stages, kslices,
                       qreg=0):  # fmt: skip
    """One launch of _mla_decode_gl over q2 [B * M, D] and kv2 [B * Skv, D] (contiguous). out is
    [B, S, M, dv] contiguous: the partials when num_splits S > 1 (then lse [B, M, S] float32 takes
    their log-sum-exps), else o (lse may be None)."""
    d_pe = q2.shape[1] - dv
    if smem_bytes(dv, d_pe, stages, kslices) > SMEM_BYTES - 1024:
        raise ValueError(f"mla decode (gluon): {stages} stages of {BLOCK_N} kv rows do not fit in shared memory")
    q3 = q2.view(B, M, dv + d_pe)
    qd = (_desc(q3[:, :, :dv], [1, ROWS, dv // kslices]), _desc(q3[:, :, dv:], [1, ROWS, d_pe]))
    kd = (_desc(kv2[:, :dv], [BLOCK_N, dv // kslices]), _desc(kv2[:, dv:], [BLOCK_N, d_pe]))
    od = _desc(out.view(B * num_splits, M, dv), [1, ROWS, dv])
    lse_arg, lse_strides = (out, (0, 0)) if lse is None else (lse, lse.stride()[:2])
    m_blocks = (M + ROWS - 1) // ROWS
    _mla_decode_gl[(num_splits, m_blocks, B)](
        *qd, *kd, od, lse_arg, scale_log2, M, Skv, Sq, H, split_len, *lse_strides,
        BLOCK_N=BLOCK_N, DV=dv, D_PE=d_pe, STAGES=stages, SPLIT=num_splits > 1, KS=kslices, QREG=qreg,
        num_warps=8,
    )  # fmt: skip
