"""The correctness inputs of both MLA tasks (decode and causal prefill), by family.

Loaded by path by tasks/mla/reference.py and tasks/mla-prefill/reference.py. Every family is bf16
q [B, Sq, H, D] and kv [B, Skv, D]; query i sees the cache rows j <= Skv - Sq + i. Scores are
s = scale * q . kv_j, in natural-log units.

- random: q and kv entries N(0, 1); |s| stays below about 6.
- tiny: the same values, with caches of 1 to a few rows and lengths that are no multiple of any
  block (a cache of one row; Sq = Skv, where the first query sees one row). The family is in the
  shapes; its values are random's.
- peaked: kv random; each query made so that one or two visible rows score 90 to 130 and
  everything else scores about N(0, (top / 17)^2): a softmax that is one key, or two keys whose
  weights differ by e^0 to e^4. The top key is the row's last visible row (the causal boundary)
  for one row in three, the cache's first row for one in three, a random visible row otherwise.
  A softmax without its running maximum overflows float32 here (e^90 > 2^128), and scores
  rounded to bf16 (a spacing of 0.5 at 100) move the weights by up to 28%.
- dominant: random, but in each batch element one (position, head) row of q is 64 times larger:
  its scores are N(0, (64 * 24 * scale)^2), up to several hundred, while the rows around it stay
  mild. A maximum shared by the rows of a block (not per row) underflows every other row of it.
"""

from __future__ import annotations

import torch

FAMILIES = ("random", "tiny", "peaked", "dominant")
PEAK_LOW, PEAK_HIGH = 90.0, 130.0  # the top score of a peaked row
PEAK_GAP = 4.0  # the second key scores up to this much below the top one
DOMINANT_FACTOR = 64.0  # a power of two: the dominant row is the random row, exactly scaled


def make_qkv(family: str, B: int, Sq: int, H: int, Skv: int, D: int, scale: float, gen, device):
    """(q, kv) bf16 of the family, drawn from the generator gen (on device)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown MLA input family {family!r}; known: {FAMILIES}")
    q = torch.randn(B, Sq, H, D, generator=gen, device=device)
    kv = torch.randn(B, Skv, D, generator=gen, device=device).to(torch.bfloat16)
    if family == "peaked":
        q = _peaked_queries(kv, Sq, H, scale, gen)
    elif family == "dominant":
        b = torch.arange(B, device=device)
        i = torch.randint(0, Sq, (B,), generator=gen, device=device)
        h = torch.randint(0, H, (B,), generator=gen, device=device)
        q[b, i, h] *= DOMINANT_FACTOR
    return q.to(torch.bfloat16), kv


def _peaked_queries(kv: torch.Tensor, Sq: int, H: int, scale: float, gen) -> torch.Tensor:
    """q [B, Sq, H, D] float32 whose scores against kv rows j1 and j2 (both visible) are the
    targets t1 in [PEAK_LOW, PEAK_HIGH] and t2 = t1 - U(0, PEAK_GAP): the minimum-norm solution
    of the two equations, which leaves the other rows' scores small and random."""
    B, Skv, D = kv.shape
    dev = kv.device
    last = (Skv - Sq + torch.arange(Sq, device=dev)).view(1, Sq, 1).expand(B, Sq, H)  # last visible
    r = torch.arange(Sq * H, device=dev).view(1, Sq, H).expand(B, Sq, H)
    rand_row = (torch.rand(B, Sq, H, generator=gen, device=dev) * (last + 1)).long().clamp(max=last)
    j1 = torch.where(r % 3 == 0, last, torch.where(r % 3 == 1, torch.zeros_like(last), rand_row))
    # j2: a random visible row other than j1 (none when only one row is visible)
    off = 1 + (torch.rand(B, Sq, H, generator=gen, device=dev) * last.clamp(min=1)).long().clamp(
        max=last.clamp(min=1) - 1
    )
    j2 = (j1 + off) % (last + 1)
    two = last > 0
    t1 = PEAK_LOW + (PEAK_HIGH - PEAK_LOW) * torch.rand(B, Sq, H, generator=gen, device=dev, dtype=torch.float64)
    t2 = t1 - PEAK_GAP * torch.rand(B, Sq, H, generator=gen, device=dev, dtype=torch.float64)
    t1, t2 = t1 / scale, t2 / scale  # q . kv, before the scale
    kvd = kv.double()
    bi = torch.arange(B, device=dev).view(B, 1, 1)
    k1, k2 = kvd[bi, j1], kvd[bi, j2]  # [B, Sq, H, D]
    g11, g12, g22 = (k1 * k1).sum(-1), (k1 * k2).sum(-1), (k2 * k2).sum(-1)
    det = g11 * g22 - g12 * g12
    a1 = torch.where(two, (g22 * t1 - g12 * t2) / det, t1 / g11)
    a2 = torch.where(two, (g11 * t2 - g12 * t1) / det, torch.zeros_like(t1))
    return (a1[..., None] * k1 + a2[..., None] * k2).float()
