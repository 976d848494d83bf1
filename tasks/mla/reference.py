"""MLA decode (DeepSeek multi-head latent attention, absorbed form): shapes, inputs, references.

Read by the kernel harness (harness/taskspec.py); never copied into a workspace.

q [B, Sq, H, 576], kv [B, Skv, 576] (one latent row per token, shared by all heads): scores use all
576 columns, values are the first dv = 512. With Sq > 1 the queries are the last Sq positions of
the sequence: query i sees cache rows j <= Skv - Sq + i.
"""

import importlib.util
from pathlib import Path

import torch


def _load_inputs():
    """tasks/mla/inputs.py (the input families), by path and out of sys.modules like this file."""
    spec = importlib.util.spec_from_file_location("marathon_mla_inputs", Path(__file__).resolve().parent / "inputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


INPUTS = _load_inputs()
ENTRY = "mla_decode"
OUTPUT_NAMES = ("o",)
TOLERANCE = {"o": 1e-2}
SCORE_AGAINST = ("torch_fp32",)  # the score is the speed-up over the fastest of these
TIME_REFERENCE = True
D_QK = 576
D_V = 512


def _shape(name, B, Sq, H, Skv, scale, family="random", timed=False, headline=False):
    """A correctness shape; names of shapes other than the timed ones start with their family."""
    if not timed:
        name = f"{family}: {name}"
    return dict(name=name, family=family, B=B, Sq=Sq, H=H, Skv=Skv, scale=scale, timed=timed, headline=headline)


def shapes(gpu: bool) -> list[dict]:
    s1, s2 = D_QK**-0.5, 192**-0.5 * 1.2
    if not gpu:
        return [
            _shape("B1 Sq1 H16 Skv100", 1, 1, 16, 100, s1),
            _shape("B2 Sq2 H16 Skv75", 2, 2, 16, 75, s2),
            _shape("B1 Sq4 H8 Skv33", 1, 4, 8, 33, s1),
            _shape("B2 Sq1 H16 Skv1", 2, 1, 16, 1, s2, "tiny"),
            _shape("B1 Sq4 H8 Skv4", 1, 4, 8, 4, s1, "tiny"),
            _shape("B3 Sq2 H4 Skv17", 3, 2, 4, 17, s2, "tiny"),
            _shape("B2 Sq2 H16 Skv70", 2, 2, 16, 70, s1, "peaked"),
            _shape("B1 Sq4 H8 Skv40", 1, 4, 8, 40, s2, "dominant"),
        ]
    return [
        _shape("B2 Sq1 H16 Skv1000", 2, 1, 16, 1000, s2),
        _shape("B3 Sq4 H64 Skv777", 3, 4, 64, 777, s1),
        _shape("B2 Sq1 H64 Skv1", 2, 1, 64, 1, s1, "tiny"),
        _shape("B1 Sq4 H64 Skv4", 1, 4, 64, 4, s2, "tiny"),
        _shape("B3 Sq2 H128 Skv65", 3, 2, 128, 65, s1, "tiny"),
        _shape("B2 Sq4 H64 Skv1000", 2, 4, 64, 1000, s2, "peaked"),
        _shape("B1 Sq1 H64 Skv8192", 1, 1, 64, 8192, s1, "peaked"),
        _shape("B2 Sq2 H64 Skv777", 2, 2, 64, 777, s2, "dominant"),
        _shape("B1 Sq1 H64 Skv8192", 1, 1, 64, 8192, s2, timed=True, headline=True),
        _shape("B1 Sq2 H64 Skv8192", 1, 2, 64, 8192, s1, timed=True),
        _shape("B1 Sq4 H64 Skv8192", 1, 4, 64, 8192, s2, timed=True),
    ]


def make_inputs(shape: dict, seed: int, device) -> dict:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    B, Sq, H, Skv = (shape[x] for x in ("B", "Sq", "H", "Skv"))
    q, kv = INPUTS.make_qkv(shape.get("family", "random"), B, Sq, H, Skv, D_QK, shape["scale"], gen, device)
    return dict(q=q, kv=kv, scale=shape["scale"], dv=D_V)


def call(fn, inp: dict):
    return (fn(inp["q"], inp["kv"], inp["scale"], dv=inp["dv"]),)


def expected_outputs(inp: dict) -> list:
    B, Sq, H, _ = inp["q"].shape
    return [((B, Sq, H, inp["dv"]), torch.bfloat16)]


def _mask(Sq, Skv, device):
    i = torch.arange(Sq, device=device)[:, None]
    j = torch.arange(Skv, device=device)[None, :]
    return j <= (Skv - Sq + i)


def attention_fp32(q, kv, scale, dv):
    """The float32 reference: q [B, Sq, H, Dqk], kv [B, Skv, Dqk] -> [B, Sq, H, dv] float32."""
    Sq, Skv = q.shape[1], kv.shape[1]
    s = torch.einsum("bqhd,bkd->bhqk", q.float(), kv.float()) * scale
    if Sq > 1:
        s = s.masked_fill(~_mask(Sq, Skv, q.device), float("-inf"))
    p = s.softmax(-1)
    return torch.einsum("bhqk,bkd->bqhd", p, kv[..., :dv].float())


@torch.no_grad()
def reference(inp: dict):
    return (attention_fp32(inp["q"], inp["kv"], inp["scale"], inp["dv"]),)


def baselines(trusted_import) -> dict:
    """The float32 reference (what the score is against) and the bf16 PyTorch version."""

    def torch_fp32(q, kv, scale, dv=D_V):
        return attention_fp32(q, kv, scale, dv).to(q.dtype)

    def torch_bf16(q, kv, scale, dv=D_V):
        B, Sq, H, D = q.shape
        Skv = kv.shape[1]
        s = torch.matmul(q.reshape(B, Sq * H, D), kv.transpose(1, 2)).float() * scale  # [B, Sq*H, Skv]
        if Sq > 1:
            m = _mask(Sq, Skv, q.device).repeat_interleave(H, dim=0)
            s = s.masked_fill(~m, float("-inf"))
        p = s.softmax(-1).to(q.dtype)
        return torch.matmul(p, kv[..., :dv]).reshape(B, Sq, H, dv)

    return {"torch_fp32": torch_fp32, "torch_bf16": torch_bf16}


def baseline_valid(name: str, inp: dict) -> bool:
    return True


def floor(shape: dict) -> dict:
    B, Sq, H, Skv = (shape[x] for x in ("B", "Sq", "H", "Skv"))
    nbytes = 2 * (B * Skv * D_QK + B * Sq * H * D_QK + B * Sq * H * D_V)
    flops = 2 * B * Sq * H * Skv * (D_QK + D_V)
    return dict(bytes=nbytes, flops=flops)
