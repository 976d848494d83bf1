"""kernels/kda through Triton's interpreter (TRITON_INTERPRET=1) on small shapes, against the float32
recurrence. Error measure as in FLA's tests: RMS-relative ||o - ref|| / ||ref|| <= 5e-3."""

import importlib.util
import os
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOL = 5e-3

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
    reason="needs TRITON_INTERPRET=1 (CPU) or a CUDA GPU",
)


def _load(name, rel):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


kda_kernel = _load("kda_kernel", "kernels/kda/kernel.py")
kda_ref = _load("kda_reference", "kernels/kda/reference.py")
DEV = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"


def _inputs(B, T, H, K, V, seed, g_scale=0.1):
    """The task's distribution: unit-norm keys, g = -g_scale * softplus(N(0, 1))."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen).bfloat16()
    k = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1).bfloat16()
    v = torch.randn(B, T, H, V, generator=gen).bfloat16()
    g = -torch.nn.functional.softplus(torch.randn(B, T, H, K, generator=gen)) * g_scale
    beta = torch.rand(B, T, H, generator=gen).sigmoid().bfloat16()
    return [x.to(DEV) for x in (q, k, v, g, beta)]


def _rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    return ((a - b).norm() / b.norm()).item()


def _reference(q, k, v, g, beta, scale, h0):
    cpu = [x.cpu().double() for x in (q, k, v, g, beta)]
    return kda_ref.kda_reference(
        *cpu,
        scale=scale,
        initial_state=None if h0 is None else h0.cpu().double(),
        output_final_state=True,
    )


@pytest.mark.parametrize(
    "B,T,H,K,V,with_h0",
    [
        (1, 64, 1, 32, 32, False),  # exactly one chunk
        (1, 100, 2, 32, 32, True),  # ragged last chunk, initial state
        (2, 37, 1, 16, 32, True),  # shorter than one chunk, B > 1
        (1, 130, 1, 64, 64, False),  # three chunks, the last with 2 rows
    ],
)
def test_kda_matches_recurrence_within_tolerance(B, T, H, K, V, with_h0):
    q, k, v, g, beta = _inputs(B, T, H, K, V, seed=T * 7 + H)
    scale = K**-0.5
    h0 = torch.randn(B, H, K, V).to(DEV) if with_h0 else None
    o, hT = kda_kernel.kda_fwd(q, k, v, g, beta, scale, initial_state=h0, output_final_state=True)
    ro, rh = _reference(q, k, v, g, beta, scale, h0)
    assert o.shape == (B, T, H, V) and o.dtype == torch.bfloat16
    assert hT.shape == (B, H, K, V) and hT.dtype == torch.float32
    assert torch.isfinite(o).all() and torch.isfinite(hT).all()
    assert _rel(o, ro) <= TOL, f"output RMS-relative error {_rel(o, ro):.2e}"
    assert _rel(hT, rh) <= TOL, f"final-state RMS-relative error {_rel(hT, rh):.2e}"


@pytest.mark.parametrize(
    "cfg",
    [
        dict(scan_impl="tl"),  # (the default takes a Gluon scan on a Hopper GPU)
        dict(scan_impl="tl", bv=16),
        dict(scan_impl="tl", scan_stages=2),
    ],
)
def test_kda_scan_choices_match_recurrence(cfg):
    """Every scan kda_fwd_cfg can be asked for computes the same function."""
    q, k, v, g, beta = _inputs(1, 70, 1, 16, 32, seed=17)
    h0 = torch.randn(1, 1, 16, 32, generator=torch.Generator().manual_seed(2)).to(DEV)
    o, hT = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, 0.25, h0, True, **cfg)
    ro, rh = _reference(q, k, v, g, beta, 0.25, h0)
    assert _rel(o, ro) <= TOL, f"{cfg}: output RMS-relative error {_rel(o, ro):.2e}"
    assert _rel(hT, rh) <= TOL, f"{cfg}: final-state RMS-relative error {_rel(hT, rh):.2e}"


def test_kda_without_final_state_returns_none_and_same_output():
    q, k, v, g, beta = _inputs(1, 70, 1, 16, 16, seed=3)
    o1, h1 = kda_kernel.kda_fwd(q, k, v, g, beta, 0.25)
    o2, h2 = kda_kernel.kda_fwd(q, k, v, g, beta, 0.25, output_final_state=True)
    assert h1 is None and h2 is not None
    assert torch.equal(o1, o2)


def test_kda_scale_argument_is_used():
    q, k, v, g, beta = _inputs(1, 40, 1, 16, 16, seed=5)
    o, _ = kda_kernel.kda_fwd(q, k, v, g, beta, 0.5)
    ro, _ = _reference(q, k, v, g, beta, 0.5, None)
    assert _rel(o, ro) <= TOL
    o_default, _ = kda_kernel.kda_fwd(q, k, v, g, beta, None)  # scale None means K**-0.5
    ro_default, _ = _reference(q, k, v, g, beta, 16**-0.5, None)
    assert _rel(o_default, ro_default) <= TOL


def test_kda_strong_decay_stays_finite_and_accurate():
    """g down to about -5 per step (FLA's safe-gate bound): exp(-G) over a chunk would overflow
    float32 without the sub-chunk re-centring."""
    q, k, v, g, beta = _inputs(1, 128, 1, 32, 32, seed=11, g_scale=2.0)
    g = g.clamp(min=-5.0)
    o, hT = kda_kernel.kda_fwd(q, k, v, g, beta, 32**-0.5, output_final_state=True)
    ro, rh = _reference(q, k, v, g, beta, 32**-0.5, None)
    assert torch.isfinite(o).all()
    assert _rel(o, ro) <= TOL
    assert _rel(hT, rh) <= TOL


def test_kda_chained_calls_equal_one_long_call():
    """Splitting a sequence at a chunk boundary and passing the final state on gives the same
    output as one call (the state hand-over is exact up to rounding)."""
    q, k, v, g, beta = _inputs(1, 128, 1, 16, 16, seed=13)
    o, hT = kda_kernel.kda_fwd(q, k, v, g, beta, 0.25, output_final_state=True)
    first = [x[:, :64] for x in (q, k, v, g, beta)]
    second = [x[:, 64:] for x in (q, k, v, g, beta)]
    o1, h1 = kda_kernel.kda_fwd(*first, 0.25, output_final_state=True)
    o2, h2 = kda_kernel.kda_fwd(*second, 0.25, initial_state=h1, output_final_state=True)
    assert _rel(torch.cat([o1, o2], dim=1), o) <= 1e-2 * TOL
    assert _rel(h2, hT) <= 1e-2 * TOL


def test_kda_rejects_bad_shapes_with_a_clear_error():
    q, k, v, g, beta = _inputs(1, 16, 1, 16, 16, seed=1)
    with pytest.raises(ValueError, match="beta"):
        kda_kernel.kda_fwd(q, k, v, g, beta[..., None], 0.25)
    with pytest.raises(ValueError, match="power of two"):
        kda_kernel.kda_fwd(q[..., :12], k[..., :12], v, g[..., :12], beta, 0.25)


def test_tma_is_used_only_on_aligned_gpu_tensors():
    """A valid input at an offset that is not 16-byte aligned takes the pointer path instead of
    failing in the descriptor (TMA needs 16-byte aligned bases); CPU tensors never take TMA."""
    buf = torch.zeros(1 + 4 * 128, dtype=torch.bfloat16, device=DEV)
    assert not kda_kernel.tma_applies(buf[1:].view(1, 4, 1, 128))  # 2 bytes past an aligned base
    assert kda_kernel.tma_applies(buf[:512].view(1, 4, 1, 128)) == (DEV == "cuda")
    q, k, v, g, beta = _inputs(1, 70, 1, 16, 32, seed=5)
    qs = torch.empty(q.numel() + 1, dtype=q.dtype, device=q.device)[1:].view_as(q)
    qs.copy_(q)
    o, _ = kda_kernel.kda_fwd(qs, k, v, g, beta, 0.25)
    ro, _ = _reference(q, k, v, g, beta, 0.25, None)
    assert _rel(o, ro) <= TOL


@pytest.mark.parametrize(
    "lens,cfg",
    [
        ([37, 64, 100, 1], dict()),  # ragged, one exactly a chunk, one of a single row
        ([70, 0, 130], dict()),  # an empty sequence
        ([130, 5], dict(bv=16)),
        ([100, 3, 200], dict(bv=32)),
    ],
)
def test_kda_varlen_equals_each_sequence_alone(lens, cfg):
    """cu_seqlens (FLA's packed form): each sequence gets exactly what a call on it alone gives,
    with its own initial and final state, and nothing leaks across a boundary."""
    T, H, K, V = sum(lens), 2, 16, 32
    q, k, v, g, beta = _inputs(1, T, H, K, V, seed=len(lens) + T)
    N = len(lens)
    h0 = torch.randn(N, H, K, V, generator=torch.Generator().manual_seed(4)).to(DEV)
    cu = torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32)
    o, hT = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, 0.25, h0, True, cu.to(DEV), **cfg)
    assert o.shape == (1, T, H, V) and hT.shape == (N, H, K, V)
    for n in range(N):
        a, b = int(cu[n]), int(cu[n + 1])
        if a == b:
            assert torch.equal(hT[n], h0[n]), "an empty sequence keeps its state"
            continue
        part = [x[:, a:b] for x in (q, k, v, g, beta)]
        ro, rh = _reference(*part, 0.25, h0[n : n + 1])
        assert _rel(o[:, a:b], ro) <= TOL, f"sequence {n}: output error {_rel(o[:, a:b], ro):.2e}"
        assert _rel(hT[n : n + 1], rh) <= TOL, f"sequence {n}: state error {_rel(hT[n : n + 1], rh):.2e}"


def test_kda_varlen_rejects_bad_cu_seqlens():
    q, k, v, g, beta = _inputs(1, 40, 1, 16, 16, seed=2)
    for cu, msg in (
        (torch.tensor([0, 20, 30]), "rise from 0 to T"),
        (torch.tensor([0, 30, 20, 40]), "rise from 0 to T"),
        (torch.tensor([0.0, 40.0]), "integer"),
    ):
        with pytest.raises(ValueError, match=msg):
            kda_kernel.kda_fwd(q, k, v, g, beta, 0.25, cu_seqlens=cu.to(DEV))
    q2, k2, v2, g2, beta2 = _inputs(2, 20, 1, 16, 16, seed=2)
    with pytest.raises(ValueError, match="B = 1"):
        kda_kernel.kda_fwd(q2, k2, v2, g2, beta2, 0.25, cu_seqlens=torch.tensor([0, 20]))
    with pytest.raises(ValueError, match=r"\[N, H, K, V\]"):
        kda_kernel.kda_fwd(q, k, v, g, beta, 0.25, torch.zeros(1, 1, 16, 16), cu_seqlens=torch.tensor([0, 10, 40]))


@pytest.mark.parametrize(
    "B,T,H,K,V,lens",
    [(2, 37, 1, 16, 32, None), (1, 100, 2, 32, 16, None), (1, 50, 1, 16, 16, [20, 0, 30])],
)
def test_kda_padding_to_the_verified_gpu_shapes_is_exact(B, T, H, K, V, lens):
    """The GPU path widens K, V below 64 and a single chunk with zeros (_padded); the same
    padding, forced here, gives the reference's answer and the unpadded shapes back."""
    q, k, v, g, beta = _inputs(B, T, H, K, V, seed=B + T)
    N = len(lens) if lens else B
    h0 = torch.randn(N, H, K, V, generator=torch.Generator().manual_seed(6)).to(DEV)
    cu = None if lens is None else torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()]).to(DEV)
    o, hT = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, None, h0, True, cu, pad_small=True)
    assert o.shape == (B, T, H, V) and hT.shape == (N, H, K, V)
    bounds = [(b, 0, T) for b in range(B)] if lens is None else [(0, int(cu[n]), int(cu[n + 1])) for n in range(N)]
    for n, (b, lo, hi) in enumerate(bounds):
        if lo == hi:
            assert torch.equal(hT[n], h0[n])
            continue
        part = [x[b : b + 1, lo:hi] for x in (q, k, v, g, beta)]
        ro, rh = _reference(*part, K**-0.5, h0[n : n + 1])
        assert _rel(o[b : b + 1, lo:hi], ro) <= TOL and _rel(hT[n : n + 1], rh) <= TOL


def test_gluon_scan_falls_back_where_it_does_not_apply():
    """scan_impl="gluon" off a Hopper GPU (the interpreter, cu_seqlens) takes the tl scan: same
    result as the default, not an error."""
    q, k, v, g, beta = _inputs(1, 70, 1, 16, 32, seed=21)
    o2, h2 = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, 0.25, None, True, scan_impl="tl")
    for impl in kda_kernel.SCAN_IMPLS:
        o1, h1 = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, 0.25, None, True, scan_impl=impl)
        if DEV == "cpu":
            assert torch.equal(o1, o2) and torch.equal(h1, h2), impl
    with pytest.raises(ValueError, match="scan_impl"):
        kda_kernel.kda_fwd_cfg(q, k, v, g, beta, 0.25, scan_impl="cuda")


@pytest.mark.skipif(DEV != "cuda" or torch.cuda.get_device_capability()[0] != 9, reason="Gluon scan: Hopper GPU only")
@pytest.mark.parametrize(
    "impl,bv,stages",
    [
        ("gluon", 32, 3),
        ("gluon", 64, 3),
        ("gluon", 16, 2),
        ("gluon_t", 64, 3),
        ("auto", 32, 3),
        ("auto", 64, 3),
    ],
)
def test_gluon_scan_matches_the_tl_scan_and_the_recurrence(impl, bv, stages):
    """The Gluon scan on the prep's buffers against the tl scan on the same buffers (identical
    arithmetic: agreement to rounding order) and against the float32 recurrence, with an initial
    and a final state and a ragged end (T not a multiple of the chunk)."""
    q, k, v, g, beta = _inputs(2, 300, 3, 128, 128, seed=bv)
    h0 = torch.randn(2, 3, 128, 128, generator=torch.Generator().manual_seed(4)).to(DEV) * 0.1
    cfg = dict(bv=bv, scan_stages=stages)
    og, hg = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, None, h0, True, scan_impl=impl, **cfg)
    ot, ht = kda_kernel.kda_fwd_cfg(q, k, v, g, beta, None, h0, True, scan_impl="tl", **cfg)
    ro, rh = _reference(q, k, v, g, beta, 128**-0.5, h0)
    assert _rel(og, ot) <= 1e-3 and _rel(hg, ht) <= 1e-3, (_rel(og, ot), _rel(hg, ht))
    assert _rel(og, ro) <= TOL and _rel(hg, rh) <= TOL, (_rel(og, ro), _rel(hg, rh))


@pytest.mark.skipif(DEV != "cuda", reason="two streams at once need a GPU")
def test_kda_on_two_streams_at_once_matches_the_reference():
    """Two calls issued together on two streams, many times over, as a serving engine would: the
    kernels keep no state between calls (every buffer is the call's own), so each output matches
    the reference of its own inputs."""
    ins = [_inputs(1, 1000, 8, 128, 128, seed=s) for s in (31, 32)]
    scale = 128**-0.5
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    kda_kernel.kda_fwd(*ins[0], scale, output_final_state=True)  # compile outside the race
    torch.cuda.synchronize()
    outs = []
    for _ in range(20):
        pair = []
        for st, x in zip(streams, ins):
            with torch.cuda.stream(st):
                pair.append(kda_kernel.kda_fwd(*x, scale, output_final_state=True))
        outs.append(pair)
    torch.cuda.synchronize()
    refs = [_reference(*x, scale, None) for x in ins]
    for pair in outs[::5] + outs[-1:]:
        for (o, hT), (ro, rh) in zip(pair, refs):
            assert _rel(o, ro) <= TOL and _rel(hT, rh) <= TOL, (_rel(o, ro), _rel(hT, rh))
