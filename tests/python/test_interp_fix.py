"""The harness's interpreter fixes make CPU evaluations compute what the GPU computes."""

import os

import pytest
import torch

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from harness import interp_fix  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")


@triton.jit
def _to_bf16(x_ptr, y_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(y_ptr + i, tl.load(x_ptr + i).to(tl.bfloat16))


def test_float32_to_bfloat16_rounds_to_nearest_even_like_the_gpu():
    # Values whose dropped mantissa bits are above one half: truncation and rounding differ on each.
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1024, generator=g, dtype=torch.float32)
    bits = x.view(torch.int32)
    x = ((bits & ~0xFFFF) | 0xC000).view(torch.float32)  # low half 0xC000: round up, truncate down
    assert interp_fix.apply()
    y = torch.empty(1024, dtype=torch.bfloat16)
    _to_bf16[(1,)](x, y, N=1024)
    assert torch.equal(y, x.to(torch.bfloat16)), "the interpreter's cast must round like torch and the GPU"
