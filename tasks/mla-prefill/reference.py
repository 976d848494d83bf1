"""MLA causal prefill (absorbed form): shapes, inputs, the float32 reference and the SDPA baseline.

Read by the kernel harness (harness/taskspec.py); never copied into a workspace.

q [B, S, H, 576], kv [B, S, 576]: causal attention of every query over the latent rows up to its own
position, the latent serving as K (all 576 columns) and V (its first dv = 512 columns).
"""

import importlib.util
from pathlib import Path

import torch


def _load_inputs():
    """tasks/mla/inputs.py (the input families, shared with the decode task), by path and out of
    sys.modules like this file."""
    path = Path(__file__).resolve().parent.parent / "mla" / "inputs.py"
    spec = importlib.util.spec_from_file_location("marathon_mla_inputs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


INPUTS = _load_inputs()
ENTRY = "mla_prefill"
OUTPUT_NAMES = ("o",)
TOLERANCE = {"o": 1e-2}
SCORE_AGAINST = ("torch_sdpa",)  # the score is the speed-up over the fastest of these
TIME_REFERENCE = False  # the chunked float32 reference is slow at S = 8192: correctness only
D_QK = 576
D_V = 512


def _shape(name, B, S, H, scale, family="random", timed=False, headline=False):
    """A correctness shape; names of shapes other than the timed one start with their family."""
    if not timed:
        name = f"{family}: {name}"
    return dict(name=name, family=family, B=B, S=S, H=H, scale=scale, timed=timed, headline=headline)


def shapes(gpu: bool) -> list[dict]:
    s1, s2 = D_QK**-0.5, 192**-0.5 * 1.2
    if not gpu:
        return [
            _shape("B1 S50 H2", 1, 50, 2, s1),
            _shape("B2 S37 H1", 2, 37, 1, s2),
            _shape("B2 S1 H4", 2, 1, 4, s2, "tiny"),
            _shape("B1 S3 H2", 1, 3, 2, s1, "tiny"),
            _shape("B1 S17 H3", 1, 17, 3, s2, "tiny"),
            _shape("B1 S40 H2", 1, 40, 2, s1, "peaked"),
            _shape("B2 S23 H4", 2, 23, 4, s2, "dominant"),
        ]
    return [
        _shape("B1 S300 H16", 1, 300, 16, s2),
        _shape("B2 S1000 H8", 2, 1000, 8, s1),
        _shape("B2 S1 H64", 2, 1, 64, s1, "tiny"),
        _shape("B1 S3 H16", 1, 3, 16, s2, "tiny"),
        _shape("B1 S129 H8", 1, 129, 8, s1, "tiny"),
        _shape("B1 S1000 H16", 1, 1000, 16, s1, "peaked"),
        _shape("B1 S777 H64", 1, 777, 64, s2, "dominant"),
        _shape("B1 S8192 H64", 1, 8192, 64, s2, timed=True, headline=True),
    ]


def make_inputs(shape: dict, seed: int, device) -> dict:
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    B, S, H = shape["B"], shape["S"], shape["H"]
    q, kv = INPUTS.make_qkv(shape.get("family", "random"), B, S, H, S, D_QK, shape["scale"], gen, device)
    return dict(q=q, kv=kv, scale=shape["scale"], dv=D_V)


def call(fn, inp: dict):
    return (fn(inp["q"], inp["kv"], inp["scale"], dv=inp["dv"]),)


def expected_outputs(inp: dict) -> list:
    B, S, H, _ = inp["q"].shape
    return [((B, S, H, inp["dv"]), torch.bfloat16)]


@torch.no_grad()
def reference(inp: dict):
    q, kv, scale, dv = inp["q"], inp["kv"], inp["scale"], inp["dv"]
    B, S, H, _ = q.shape
    kvf = kv.float()
    out = torch.empty(B, S, H, dv, dtype=torch.float32, device=q.device)
    causal = torch.ones(S, S, dtype=torch.bool, device=q.device).tril()
    step = max(1, min(H, (1 << 28) // (S * S)))  # bound the float32 score block to ~1 GiB
    for b in range(B):
        for h0 in range(0, H, step):
            qh = q[b, :, h0 : h0 + step].float()  # [S, h, D]
            s = torch.einsum("qhd,kd->hqk", qh, kvf[b]) * scale
            s = s.masked_fill(~causal, float("-inf"))
            out[b, :, h0 : h0 + step] = torch.einsum("hqk,kd->qhd", s.softmax(-1), kvf[b, :, :dv])
    return (out,)


def baselines(trusted_import) -> dict:
    """PyTorch SDPA, the latent expanded over heads as K (a view) and its first dv columns as V."""

    def torch_sdpa(q, kv, scale, dv=D_V):
        B, S, H, D = q.shape
        k = kv.unsqueeze(1).expand(B, H, S, D)
        v = kv[..., :dv].unsqueeze(1).expand(B, H, S, dv)
        o = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k, v, is_causal=True, scale=scale)
        return o.transpose(1, 2)

    return {"torch_sdpa": torch_sdpa}


def baseline_valid(name: str, inp: dict) -> bool:
    return True


def floor(shape: dict) -> dict:
    B, S, H = shape["B"], shape["S"], shape["H"]
    nbytes = 2 * (B * S * D_QK + B * S * H * D_QK + B * S * H * D_V)
    flops = B * H * S * S * (D_QK + D_V)  # causal: half of 2 * S * S * (Dqk + Dv)
    return dict(bytes=nbytes, flops=flops)
