"""What an MLA decode call cannot go below on this GPU, measured the way the task's evaluator measures.

    python3 bench/mla_floor.py

Each row is a kernel that does a part of what any decode kernel must do (B1 H64 Skv 8192, latent
576, one query position), timed with harness.timing.measure (CUDA-graph replay, median), beside the shipped decode in the
same process, with three things before each call: 256 MB read so that L2 starts cold (the harness's
flush), 256 MB written instead (L2 left dirty: every line the call brings in first writes one
back), and nothing:

* launch: a graph of one kernel that adds 1 to one float;
* stream kv: 128 programs, each reads its 1/128 of the cache (9.4 MB in all) and writes one sum;
* stream kv + q: the same, and each program also reads all of q (64 x 576, 72 KB), as a program
  that computes the scores of all heads must;
* + barrier + merge read: then a grid barrier (one program per SM, all co-resident), after which
  each program reads the 128 sums the others wrote and writes 1/128 of o (64 x 512 bf16): the round
  trips of a split-KV merge, without its arithmetic.

No arithmetic beyond a sum, so each row is a floor for a kernel of that structure.
"""

from __future__ import annotations

import pathlib
import sys

import torch
import triton
import triton.language as tl

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "kernels" / "mla"))
import kernel as K  # noqa: E402

from harness import timing  # noqa: E402

H, SKV, D, DV = 64, 8192, 576, 512
PROGRAMS = 128
QN = H * D
BLOCK = 8192


@triton.jit
def _stream(KV, Q, SUMS, O, SYNC, SLICE: tl.constexpr, QN: tl.constexpr, BLOCK: tl.constexpr,
            WITH_Q: tl.constexpr, MERGE: tl.constexpr, OUT_PER: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in tl.static_range(0, SLICE, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(KV + pid * SLICE + offs, mask=offs < SLICE, other=0.0).to(tl.float32)
    if WITH_Q:
        for i in tl.static_range(0, QN, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            acc += tl.load(Q + offs, mask=offs < QN, other=0.0).to(tl.float32)
    total = tl.sum(acc, 0)
    tl.store(SUMS + pid, total)
    if MERGE:
        K._grid_barrier(SYNC, tl.num_programs(0))
        s = tl.load(SUMS + tl.arange(0, 128), cache_modifier=".cg")
        v = tl.sum(s, 0)
        offs = pid * OUT_PER + tl.arange(0, OUT_PER)
        tl.store(O + offs, (v + offs.to(tl.float32)).to(tl.bfloat16))


def main():
    dev = torch.device("cuda")
    flusher = timing.Flusher(dev)
    g = torch.Generator(device=dev).manual_seed(0)
    kv = torch.randn(1, SKV, D, device=dev, dtype=torch.bfloat16, generator=g)
    q = torch.randn(1, 1, H, D, device=dev, dtype=torch.bfloat16, generator=g)
    sums = torch.zeros(1024, device=dev)
    o = torch.empty(H * DV, device=dev, dtype=torch.bfloat16)
    sync = torch.zeros(2, device=dev, dtype=torch.int32)
    one = torch.zeros(1, device=dev)

    def stream(with_q, merge, programs=PROGRAMS, warps=8):
        block = min(BLOCK, triton.next_power_of_2(SKV * D // programs))

        def call(_):
            _stream[(programs,)](kv, q, sums, o, sync, SKV * D // programs, QN, block, with_q, merge,
                                 H * DV // programs, num_warps=warps, launch_cooperative_grid=merge)  # fmt: skip

        return call

    class WriteFlusher:
        """L2 refilled by writing 256 MB: the lines left behind are dirty."""

        def __init__(self):
            self.buf = flusher.buf

        def __call__(self):
            self.buf.zero_()

    rows = [
        ("launch (one tiny kernel)", lambda _: one.add_(1)),
        ("stream kv (9.4 MB, 128 programs)", stream(False, False)),
        ("stream kv + q (72 KB a program)", stream(True, False)),
        ("stream kv + q + barrier + merge read", stream(True, True)),
        ("stream kv, 132 programs", stream(False, False, 132)),
        ("stream kv, 256 programs, 4 warps", stream(False, False, 256, 4)),
        ("stream kv, 1024 programs, 4 warps", stream(False, False, 1024, 4)),
        ("shipped decode (Sq 1)", lambda _: K.mla_decode(q, kv, 576**-0.5)),
    ]
    print(f"{torch.cuda.get_device_name()}; graph replay, median, us per call; L2 before each call:")
    print("| kernel | read 256 MB (the harness: clean lines) | written 256 MB (dirty lines) | warm (no flush) |")
    print("|---|---|---|---|")
    flushers = (flusher, WriteFlusher(), lambda: None)
    for name, fn in rows:
        cells = []
        for fl in flushers:
            r = timing.measure(fn, [None], fl, min_reps=100, max_reps=300, budget_s=2.0)
            cells.append(f"{r['ms'] * 1e3:.2f} (min {r['min_ms'] * 1e3:.2f})")
            assert r["mode"] == "graph", r["note"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
