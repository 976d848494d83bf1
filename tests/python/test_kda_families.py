"""kernels/kda on every input family of the task's contract (tasks/kda/reference.py FAMILIES) and on
the gates that broke it, against the recurrence in float64.

Tolerances: the task's, RMS-relative ||x - ref|| / ||ref|| <= 5e-3 on o and on the final state,
with no NaN or Inf; the float32 recurrence (the task's reference) within 1e-5 of float64 on the
same inputs, so that the bound measures the kernel and not the reference. Runs through Triton's
interpreter (TRITON_INTERPRET=1, small shapes) or on a CUDA GPU (the task's shapes, D 128).
"""

import importlib.util
import math
import os
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOL = 5e-3
REF_TOL = 1e-5

pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1" and not torch.cuda.is_available(),
    reason="needs TRITON_INTERPRET=1 (CPU) or a CUDA GPU",
)


def _load(name, rel):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


kda_kernel = _load("kda_kernel_families", "kernels/kda/kernel.py")
kda_ref = _load("kda_reference_families", "kernels/kda/reference.py")
task_ref = _load("kda_task_reference_families", "tasks/kda/reference.py")
GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
DEV = "cuda" if GPU else "cpu"


def _rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    return ((a - b).norm() / b.norm()).item()


def _check(inp, what):
    """ours and the float32 recurrence against float64; returns ours' errors (o, state)."""
    args = [inp[x] for x in ("q", "k", "v", "g", "beta")]
    h0 = inp["initial_state"]
    o, hT = kda_kernel.kda_fwd(*args, inp["scale"], initial_state=h0, output_final_state=True)
    r64 = kda_ref.kda_reference(*(x.double() for x in args), inp["scale"], None if h0 is None else h0.double(), True)
    r32 = kda_ref.kda_reference(*args, inp["scale"], h0, True)
    assert torch.isfinite(o).all() and torch.isfinite(hT).all(), f"{what}: NaN or Inf in the output"
    for name, ours, f32, f64 in (("o", o, r32[0], r64[0]), ("final state", hT, r32[1], r64[1])):
        assert _rel(f32, f64) <= REF_TOL, f"{what}: the float32 reference is off by {_rel(f32, f64):.2e} ({name})"
        assert _rel(ours, f64) <= TOL, f"{what}: {name} RMS-relative error {_rel(ours, f64):.2e} > {TOL}"
    return _rel(o, r64[0]), _rel(hT, r64[1])


def _family_shape(family, T):
    B, H, D = (1, 4, 128) if GPU else (1, 2, 32)
    return dict(B=B, T=T, H=H, K=D, V=D, init=True, final=True, family=family)


@pytest.mark.parametrize("family", list(task_ref.FAMILIES))
@pytest.mark.parametrize("seed", [0, 1])
def test_kda_is_within_tolerance_on_every_input_family(family, seed):
    T = (300 if GPU else 200) if family == "weak decay, correlated keys" else 130
    inp = task_ref.make_inputs(_family_shape(family, T), seed, DEV)
    _check(inp, f"{family}, seed {seed}")


def test_kda_single_step_sequence_is_within_tolerance():
    inp = task_ref.make_inputs(_family_shape("strong decay", 1), 3, DEV)
    _check(inp, "T = 1")


def _mild(T, seed, B=1, H=1, D=32):
    inp = task_ref.make_inputs(dict(B=B, T=T, H=H, K=D, V=D, init=True, final=True, family="mild"), seed, DEV)
    return inp


@pytest.mark.parametrize("gate", [-0.8, -5.0, -5.1, -5.85, -11.0, -12.0, -20.0, -1000.0, -math.inf])
def test_kda_constant_strong_decay_stays_finite_and_accurate(gate):
    """A per-step log decay below about -10.5 overflowed the sub-chunk midpoint split in bf16
    (-11: error 0.43; -12 and below: NaN). -5.0 and -5.1 sit on either side of the fast form's
    bound (15 steps from a sub-chunk's first row to its last: a factor of 2^108.2 or 2^110.4,
    against 2^109); at -5.85 (2^126.6) a row factor flushes to 0 while its column factor, unless
    scaled up so that it overflows first, stays finite (error 0.19 so); -0.8 is FLA's test gates'
    mean."""
    inp = _mild(130, 5)
    inp["g"] = torch.full_like(inp["g"], gate)
    _check(inp, f"g = {gate}")


def test_kda_one_extreme_gate_leaves_the_rest_of_the_sequence_intact():
    """g = -100 at one (t, k) turned that chunk, the final state and every later chunk into NaN."""
    inp = _mild(200, 7)
    inp["g"][0, 70, 0, 3] = -100.0
    _check(inp, "one entry at -100")


def _strong_flags(inp):
    args = [inp[x] for x in ("q", "k", "v", "g", "beta")]
    return kda_kernel.kda_prepare(*args, inp["scale"])["strong"]


@pytest.mark.parametrize(
    "family,expect",
    [
        ("mild", "none"),
        ("moderate decay", "none"),
        ("weak decay, correlated keys", "none"),
        ("FLA gates", "none"),
        ("beta 0/1", "none"),
        ("strong decay", "some"),
    ],
)
def test_kda_takes_the_fast_form_unless_a_sub_chunk_decays_past_2_to_the_109(family, expect):
    """Which chunks the STRONG form redoes (kda_prepare's strong flags): none for the families
    whose per-step log decays stay above -5 (FLA's test gates, about -0.8 a step, included: the
    form before took every chunk of theirs to STRONG), and, with strong decay, the chunks holding
    an extreme gate."""
    flags = _strong_flags(task_ref.make_inputs(_family_shape(family, 200), 2, DEV))
    n = int(flags.sum())
    assert (n == 0) if expect == "none" else (0 < n), (family, flags.tolist())


@pytest.mark.parametrize("gate,strong", [(-5.0, 0), (-5.1, 1), (-1000.0, 1)])
def test_kda_fast_form_bound_is_at_a_log_decay_of_5_a_step(gate, strong):
    """Constant gates over whole chunks: every chunk in the fast form at -5.0 (2^108.2 across a
    sub-chunk's 15 steps), every chunk flagged at -5.1 (2^110.4) and below."""
    inp = _mild(128, 5, D=128 if GPU else 32)  # (kda_prepare takes the shapes as given)
    inp["g"] = torch.full_like(inp["g"], gate)
    assert _strong_flags(inp).tolist() == [strong] * 2


@pytest.mark.parametrize("qmax,strong", [(6e4, 0), (6e5, 1)])
def test_kda_large_queries_stay_finite_and_accurate(qmax, strong):
    """|scale q| up to 6e4 stays within the fast form's fp16 Aqk operands (its factors are <= 1);
    up to 6e5 they overflow and the chunks go to the STRONG form (bf16 operands), not to NaN."""
    inp = _mild(130, 5, D=128 if GPU else 32)
    q = inp["q"].float()
    inp["q"] = (q * (qmax / inp["scale"] / q.abs().max())).bfloat16()
    assert _strong_flags(inp).tolist() == [strong] * 3
    _check(inp, f"|scale q| up to {qmax:g}")


def test_kda_extreme_gates_under_varlen_stay_per_sequence():
    """cu_seqlens with strong decay: each sequence as when run alone."""
    inp = _mild(150, 8, H=2)
    inp["g"][0, 10:20] = -30.0
    inp["g"][0, 90, :, 5] = -1000.0
    args = [inp[x] for x in ("q", "k", "v", "g", "beta")]
    cu = torch.tensor([0, 60, 61, 150], dtype=torch.int32)
    h0 = torch.randn(3, 2, 32, 32, generator=torch.Generator().manual_seed(1)).to(DEV) * 0.1
    o, hT = kda_kernel.kda_fwd(*args, inp["scale"], h0, True, cu_seqlens=cu.to(DEV))
    assert torch.isfinite(o).all() and torch.isfinite(hT).all()
    for n in range(3):
        a, b = int(cu[n]), int(cu[n + 1])
        part = [x[:, a:b].double() for x in args]
        ro, rh = kda_ref.kda_reference(*part, inp["scale"], h0[n : n + 1].double(), True)
        assert _rel(o[:, a:b], ro) <= TOL and _rel(hT[n : n + 1], rh) <= TOL, n


@pytest.mark.skipif(not GPU or torch.cuda.get_device_capability()[0] != 9, reason="Gluon scans: Hopper GPU only")
@pytest.mark.parametrize("impl,bv", [("gluon", 32), ("gluon_t", 64)])
@pytest.mark.parametrize("family", ["strong decay", "weak decay, correlated keys"])
def test_kda_gluon_scans_are_within_tolerance_on_hard_families(impl, bv, family):
    """The family tests above run the tl scan at their small B * H; the Gluon scans (the default at
    the task's shapes) on the same families, forced."""
    shape = dict(B=2, T=300, H=3, K=128, V=128, init=True, final=True, family=family)
    inp = task_ref.make_inputs(shape, 4, DEV)
    args = [inp[x] for x in ("q", "k", "v", "g", "beta")]
    h0 = inp["initial_state"]
    o, hT = kda_kernel.kda_fwd_cfg(*args, inp["scale"], h0, True, bv=bv, scan_impl=impl)
    r64 = kda_ref.kda_reference(*(x.double() for x in args), inp["scale"], h0.double(), True)
    assert torch.isfinite(o).all() and torch.isfinite(hT).all()
    assert _rel(o, r64[0]) <= TOL and _rel(hT, r64[1]) <= TOL, (_rel(o, r64[0]), _rel(hT, r64[1]))
