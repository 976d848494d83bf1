"""MLA decode/prefill kernels (kernels/mla) against the float64 attention of the same bf16 inputs,
through Triton's interpreter on the CPU (TRITON_INTERPRET=1: the `tl` kernels) or on a GPU when one
is present (on a Hopper GPU also the Gluon kernel of decode_gluon.py, which has no interpreter).
The tolerances are the same on both (kernels/mla/reference.py: RMS-relative <= 4e-3, cosine
difference <= 1e-5, every element within the bound of three roundings to bf16); the interpreter
rounds to nearest like the GPU (kernel.py's _cast).

Small shapes: the latent stays 512 + 64 wide (the kernels' real width) while heads and lengths shrink;
lengths are chosen not to be multiples of the kv block so the tail masks are exercised.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEVICE = "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" else "cpu"
if DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("no GPU: run with TRITON_INTERPRET=1 for the CPU path", allow_module_level=True)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"mla_{name}", ROOT / "kernels" / "mla" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


K = _load("kernel")
R = _load("reference")
# the split kernels: tl everywhere; the Gluon one (decode_gluon.py) on a Hopper GPU only
IMPLS = ["tl"]
if DEVICE == "cuda" and torch.cuda.get_device_capability()[0] == 9:
    IMPLS.append("gluon")
D, DV = 576, 512
SCALES = (576**-0.5, 0.3)


def _inputs(B, Sq, H, Skv, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Sq, H, D, generator=g).to(torch.bfloat16).to(DEVICE)
    kv = torch.randn(B, Skv, D, generator=g).to(torch.bfloat16).to(DEVICE)
    return q, kv


def _check(out, q, kv, scale, what):
    ref, weight = R.mla_reference_f64(q.cpu(), kv.cpu(), scale, DV)
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    assert out.dtype == torch.bfloat16, f"{what}: dtype {out.dtype}"
    e = R.errors(out.cpu(), ref, weight)
    assert R.within_tolerances(e), f"{what}: {e} (limits rms {R.RMS_TOL}, cos {R.COS_TOL}, bound 1)"


# (B, Sq, H, Skv, config): Skv never a multiple of BLOCK_N; several splits, a last split shorter than
# Sq (fully masked rows in a split), row blocks that straddle query positions, B > 1; the output
# columns whole (BLOCK_DV 512) and in halves (each program recomputing the scores from its own
# half first, then the other); one split (o written directly, no merge).
DECODE_CASES = [
    (1, 1, 4, 37, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 512, "num_splits": 3}),
    (2, 1, 8, 45, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 256, "num_splits": 2}),
    (2, 2, 4, 50, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 256, "num_splits": 4}),
    (1, 4, 4, 70, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 256, "num_splits": 5}),
    (1, 4, 8, 49, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 512, "num_splits": 3}),
    (2, 4, 2, 19, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 512, "num_splits": 2}),
    (2, 2, 4, 40, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 256, "num_splits": 1}),
]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("B,Sq,H,Skv,cfg", DECODE_CASES)
def test_decode_matches_float32_reference(B, Sq, H, Skv, cfg, scale):
    q, kv = _inputs(B, Sq, H, Skv, seed=B * 1000 + Sq * 100 + Skv)
    out = K.decode_with_config(q, kv, scale, DV, {**cfg, "impl": "tl"})
    _check(out, q, kv, scale, f"decode B{B} Sq{Sq} H{H} Skv{Skv}")


# The Gluon kernel's own cases (GPU): caches long enough for several 64-row tiles a split, ragged
# ends, row blocks of several positions and partial row blocks (H * Sq not a multiple of 64),
# splits that see nothing (Sq 4, a short last split), each stage count and slicing, one stage
# refilled.
GLUON_CASES = [
    (1, 1, 64, 1000, {"num_splits": 5}),
    (2, 2, 16, 333, {"num_splits": 3}),
    (1, 4, 8, 700, {"num_splits": 4, "gl_stages": 1}),
    (3, 1, 64, 8191, {}),
    (1, 4, 64, 300, {"num_splits": 2, "gl_kslices": 2}),
    (1, 2, 64, 129, {"num_splits": 2, "gl_stages": 1, "gl_kslices": 1}),
    (2, 1, 4, 50, {}),
    (1, 4, 64, 1000, {"num_splits": 2, "gl_qreg": 320}),
]


@pytest.mark.skipif("gluon" not in IMPLS, reason="the Gluon kernel needs a Hopper GPU")
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("B,Sq,H,Skv,cfg", GLUON_CASES)
def test_gluon_decode_matches_float32_reference(B, Sq, H, Skv, cfg, scale):
    q, kv = _inputs(B, Sq, H, Skv, seed=B * 1000 + Sq * 100 + Skv)
    out = K.decode_with_config(q, kv, scale, DV, {**cfg, "impl": "gluon"})
    _check(out, q, kv, scale, f"gluon decode B{B} Sq{Sq} H{H} Skv{Skv} {cfg}")


def test_gluon_slices_follow_the_split_length_unless_a_config_names_them():
    # Sq 1 and 2 at the task shape: 1 or 2 tiles a split, all in flight at once; Sq 4: 4 tiles in 2 stages
    assert [K.gl_kslices(0, t, 2) for t in (1, 2, 3, 4, 128)] == [4, 4, 2, 2, 2]
    assert [K.gl_kslices(k, 4, 2) for k in (1, 2, 4)] == [1, 2, 4]


def test_gluon_q_columns_in_registers_where_stages_are_refilled_unless_a_config_names_them():
    # Sq 1 and 2 (1 or 2 tiles, all in flight): none; Sq 4 (4 tiles in 2 stages), serving batches
    # and the prefill (one split over the whole cache): as many as fit, within q's first slice
    first = {1: 576, 2: 320, 4: 192}  # columns of q's first slice at 1, 2, 4 slices
    assert [K.gl_qreg("auto", t, s, first[2]) for t, s in ((1, 1), (2, 2), (4, 2), (128, 2))] == [0, 0, 320, 320]
    assert K.gl_qreg("auto", 128, 2, first[1]) == K.QREG_MAX[2] == 320
    assert K.gl_qreg("auto", 128, 1, first[1]) == K.QREG_MAX[1] == 192
    assert K.gl_qreg("auto", 128, 2, first[4]) == 192
    assert [K.gl_qreg(c, 128, 2, first[1]) for c in (0, 64, 128, 192, 256, 320)] == [0, 64, 128, 192, 256, 320]
    with pytest.raises(ValueError, match="gl_qreg=256 exceeds q's first column slice"):
        K.gl_qreg(256, 128, 2, first[4])


def test_decode_public_entry_point_uses_its_own_split_choice():
    q, kv = _inputs(1, 2, 4, 33, seed=7)
    out = K.mla_decode(q, kv, 0.1)
    _check(out, q, kv, 0.1, "mla_decode default config")


@pytest.mark.parametrize("impl", IMPLS)
def test_decode_is_not_the_uncausal_answer(impl):
    # with Sq > 1 the early queries must not see the last cache rows: make those rows dominate
    q, kv = _inputs(1, 4, 2, 24, seed=11)
    kv[:, -3:] = (q[0, -1, 0] * 4).to(kv.dtype)
    out = K.decode_with_config(q, kv, 0.2, DV, {"BLOCK_M": 16, "BLOCK_N": 16, "num_splits": 2, "impl": impl})
    _check(out, q, kv, 0.2, "decode causal")
    full = torch.einsum("bqhd,bkd->bhqk", q.cpu().float(), kv.cpu().float()).mul(0.2).softmax(-1)
    uncausal = torch.einsum("bhqk,bkd->bqhd", full, kv.cpu().float()[..., :DV])
    assert R.rms_rel_err(out.cpu(), uncausal) > 0.1, "decode ignored the causal mask"


@pytest.mark.parametrize("block_dv,impl,skv", [(512, "tl", 61), (256, "tl", 61), (512, "gluon", 200)])
def test_decode_survives_a_growing_maximum(block_dv, impl, skv):
    # later cache rows score far higher than early ones: the running maximum must be refreshed
    # (Skv 200 for the Gluon kernel: its 64-row tiles see the growth from one tile to the next)
    if impl not in IMPLS:
        pytest.skip("the Gluon kernel needs a Hopper GPU")
    q, kv = _inputs(2, 2, 4, skv, seed=21)
    kv[:, skv // 2 : skv // 2 + 10] *= 4
    kv[:, skv - 11 :] *= 8
    cfg = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": block_dv, "num_splits": 2, "impl": impl, "gl_stages": 1}
    out = K.decode_with_config(q, kv, 0.3, DV, cfg)
    _check(out, q, kv, 0.3, f"decode growing maximum {cfg}")


def test_decode_refuses_a_column_tiling_it_cannot_do():
    q, kv = _inputs(1, 1, 2, 8, seed=1)
    with pytest.raises(ValueError, match="BLOCK_DV"):
        K.decode_with_config(q, kv, 0.1, DV, {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_DV": 128, "impl": "tl"})


def test_unknown_knobs_are_refused_not_ignored():
    q, kv = _inputs(1, 1, 2, 8, seed=1)
    with pytest.raises(ValueError, match=r"mla_decode: unknown knobs \['trace'\]"):
        K.decode_with_config(q, kv, 0.1, DV, {"impl": "tl", "trace": True})
    with pytest.raises(ValueError, match=r"mla_prefill: unknown knobs \['BLOCK_DV'\]"):
        K.prefill_with_config(q, kv, 0.1, DV, {"BLOCK_DV": 256})


@pytest.mark.parametrize("knob,bad", [("impl", "cuda"), ("gl_kslices", 3), ("gl_stages", 5)])
def test_decode_refuses_unknown_implementations_and_gluon_knobs(knob, bad):
    q, kv = _inputs(1, 1, 2, 8, seed=1)
    with pytest.raises(ValueError, match=f"mla_decode: {knob}="):
        K.decode_with_config(q, kv, 0.1, DV, {knob: bad})
    with pytest.raises(ValueError, match="mla_prefill: impl="):
        K.prefill_with_config(q, kv, 0.1, DV, {"impl": "cuda"})


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize(
    "B,S,H,cfg",
    [
        (1, 37, 2, {"BLOCK_M": 16, "BLOCK_N": 16, "impl": "tl"}),
        (2, 21, 4, {"BLOCK_M": 16, "BLOCK_N": 16, "impl": "tl"}),
        (1, 19, 3, {"BLOCK_M": 32, "BLOCK_N": 16, "impl": "tl"}),
        (1, 200, 3, {"impl": "gluon"}),
        (2, 150, 8, {"impl": "gluon", "gl_stages": 1}),
        (1, 200, 3, {"impl": "gluon", "gl_qreg": 64}),
        (2, 150, 8, {"impl": "gluon", "gl_qreg": 128}),
        (1, 333, 4, {"impl": "gluon", "gl_qreg": 192, "gl_stages": 1}),
        (2, 150, 8, {"impl": "gluon", "gl_qreg": 256}),
        (1, 200, 3, {"impl": "gluon", "gl_qreg": 320}),
    ],
)
def test_prefill_matches_float32_reference(B, S, H, cfg, scale):
    if cfg["impl"] not in IMPLS:
        pytest.skip("the Gluon kernel needs a Hopper GPU")
    q, kv = _inputs(B, S, H, S, seed=B * 100 + S)
    out = K.prefill_with_config(q, kv, scale, DV, cfg)
    _check(out, q, kv, scale, f"prefill B{B} S{S} H{H} {cfg}")


def test_prefill_public_entry_point():
    q, kv = _inputs(1, 9, 2, 9, seed=3)
    _check(K.mla_prefill(q, kv, 0.05), q, kv, 0.05, "mla_prefill")


def test_reference_rows_agree_with_full_reference():
    q, kv = _inputs(1, 12, 2, 12, seed=5)
    rows = torch.tensor([0, 5, 11])
    full = R.mla_reference(q, kv, 0.1, DV)
    part = R.mla_reference_rows(q, kv, 0.1, DV, rows)
    assert torch.allclose(full[:, rows], part, atol=1e-5)


@pytest.mark.parametrize(
    "q_shape,kv_shape,dv",
    [
        ((1, 1, 2, 576), (1, 8, 512), 512),  # D disagrees
        ((1, 1, 2, 576), (2, 8, 576), 512),  # B disagrees
        ((1, 1, 2, 576), (1, 8, 576), 500),  # dv not a power of two
        ((1, 9, 2, 576), (1, 8, 576), 512),  # more queries than cache rows
    ],
)
def test_bad_shapes_raise_a_clear_error(q_shape, kv_shape, dv):
    q = torch.zeros(q_shape, dtype=torch.bfloat16, device=DEVICE)
    kv = torch.zeros(kv_shape, dtype=torch.bfloat16, device=DEVICE)
    with pytest.raises(ValueError, match="mla_decode"):
        K.mla_decode(q, kv, 0.1, dv)


def test_fused_merge_counters_are_one_pair_per_stream():
    """Calls on different streams get different barrier-counter pairs (overlapping fused merges would
    otherwise mix their arrivals); one stream keeps its pair; with every slot taken the caller is told
    to merge separately (None) instead of sharing a pair."""
    dev = torch.device("cpu")
    K._SYNC.clear()
    K._SYNC_SLOT.clear()
    try:
        a, b = K._sync_buffer(dev, 1001), K._sync_buffer(dev, 1002)
        assert a.data_ptr() != b.data_ptr()
        assert K._sync_buffer(dev, 1001).data_ptr() == a.data_ptr()
        assert a.shape == (2,) and int(a.abs().sum()) == 0
        for s in range(K._SYNC_SLOTS - 2):
            assert K._sync_buffer(dev, 2000 + s) is not None
        assert K._sync_buffer(dev, 9999) is None
        assert K._sync_buffer(dev, 1002).data_ptr() == b.data_ptr()
    finally:
        K._SYNC.clear()
        K._SYNC_SLOT.clear()


@pytest.mark.skipif(DEVICE != "cuda", reason="two streams at once need a GPU")
def test_decode_on_two_streams_at_once_matches_the_reference():
    """Two fused decode calls issued together on two streams, many times over, as a serving engine
    would: each output matches the float64 reference of its own inputs."""
    B, Sq, H, Skv = 1, 1, 64, 8192
    cfg = {"impl": "tl", "fused_merge": True}
    (q1, kv1), (q2, kv2) = _inputs(B, Sq, H, Skv, 11), _inputs(B, Sq, H, Skv, 12)
    scale = 576**-0.5
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    K.decode_with_config(q1, kv1, scale, DV, cfg)  # compile outside the race
    torch.cuda.synchronize()
    outs = []
    for _ in range(50):
        with torch.cuda.stream(streams[0]):
            o1 = K.decode_with_config(q1, kv1, scale, DV, cfg)
        with torch.cuda.stream(streams[1]):
            o2 = K.decode_with_config(q2, kv2, scale, DV, cfg)
        outs.append((o1, o2))
    torch.cuda.synchronize()
    for o1, o2 in outs[::10] + outs[-1:]:
        _check(o1, q1, kv1, scale, "stream 1")
        _check(o2, q2, kv2, scale, "stream 2")


@pytest.mark.skipif(DEVICE != "cuda", reason="two streams at once need a GPU")
def test_prefill_on_two_streams_at_once_matches_the_reference():
    """The prefill keeps no state between calls either: two calls issued together on two streams,
    many times over, each match the reference of their own inputs."""
    B, S, H = 1, 700, 16
    (q1, kv1), (q2, kv2) = _inputs(B, S, H, S, 13), _inputs(B, S, H, S, 14)
    scale = 576**-0.5
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    K.mla_prefill(q1, kv1, scale)  # compile outside the race
    torch.cuda.synchronize()
    outs = []
    for _ in range(30):
        with torch.cuda.stream(streams[0]):
            o1 = K.mla_prefill(q1, kv1, scale)
        with torch.cuda.stream(streams[1]):
            o2 = K.mla_prefill(q2, kv2, scale)
        outs.append((o1, o2))
    torch.cuda.synchronize()
    for o1, o2 in outs[::10] + outs[-1:]:
        _check(o1, q1, kv1, scale, "prefill stream 1")
        _check(o2, q2, kv2, scale, "prefill stream 2")
