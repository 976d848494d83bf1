"""KDA kernel development check and benchmark on a CUDA GPU (H200).

For every task shape: the error of kernels/kda against the float32 recurrence (RMS-relative, o and
the final state, with an initial state), then the time of the whole call, of the prep
(`kda_prepare`) and of the scan alone under CUDA-graph replay with the L2 flushed before every
replay (median), and the fraction of the byte floor. FLA's chunk_kda (safe-gate path) is timed in
the same process where it is importable and asked for (--fla), as the baseline only.

    python3 bench/kda_dev.py [--shapes all|headline] [--fla headline|all|none] [--json FILE]
    python3 bench/kda_dev.py --varlen      # cu_seqlens against each sequence alone
"""

import argparse
import importlib.util
import itertools
import json
import os
import pathlib
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
COPY_TBPS = 4.06  # measured device-to-device copy on the H200 (docs: KERNELS.md)
SHAPES = [  # B, T, H, D
    (1, 8192, 32, 128),
    (4, 4096, 32, 128),
    (8, 2048, 16, 128),
    (1, 32768, 32, 128),
    (1, 8192, 64, 128),
]
# FLA safe-gate, CUDA-graph replay, measured 2026-12-02 on an H200 (KERNELS.md)
FLA_SAFE_MS = {
    (1, 8192, 32): 0.895,
    (4, 4096, 32): 1.732,
    (8, 2048, 16): 0.788,
    (1, 32768, 32): 3.495,
    (1, 8192, 64): 1.627,
}


def load(name, rel):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def inputs(B, T, H, D, seed):
    torch.manual_seed(seed)
    dev = "cuda"
    q = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16)
    k = torch.nn.functional.normalize(torch.randn(B, T, H, D, device=dev), dim=-1).bfloat16()
    v = torch.randn(B, T, H, D, device=dev, dtype=torch.bfloat16)
    g = -torch.nn.functional.softplus(torch.randn(B, T, H, D, device=dev)) * 0.1
    beta = torch.rand(B, T, H, device=dev, dtype=torch.bfloat16).sigmoid()
    return q, k, v, g, beta


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


_FLUSH = None


def flush_l2():
    """The evaluator's L2 flush (harness/timing.py)."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = load("harness_timing", "harness/timing.py").Flusher("cuda")
    _FLUSH()


def time_graph(fn, reps=30, warm=3):
    """Median ms of one replay of fn captured in a CUDA graph, L2 flushed before each replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(warm):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    ts = []
    for _ in range(reps):
        flush_l2()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def floor_ms(B, T, H, D):
    nbytes = 4 * B * T * H * D * 2 + B * T * H * D * 4 + B * T * H * 2  # q k v o, g, beta
    return nbytes / (COPY_TBPS * 1e12) * 1e3


def fla_ms(q, k, v, g, beta, scale, row):
    """FLA's safe-gate chunk_kda at these inputs (autotunes on its first call: minutes)."""
    from fla.ops.kda.chunk import chunk_kda

    def fla():
        return chunk_kda(q, k, v, g, beta, scale=scale, safe_gate=True, lower_bound=-5.0)

    t0 = time.time()
    fla()
    torch.cuda.synchronize()
    row["fla_first_call_s"] = time.time() - t0
    row["fla_safe_ms"] = time_graph(fla)


def eager_ms(fn, reps=20):
    """Median ms of eager calls (no graph: a cu_seqlens call synchronises to build its table)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(reps):
        flush_l2()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        ts.append(start.elapsed_time(end))
    return sorted(ts)[reps // 2]


def check_varlen(kk, lens=(1000, 1, 64, 3000, 37, 2048, 1107, 100), H=32, D=128):
    """cu_seqlens on the GPU: ragged sequences (a single row, one chunk exactly, ragged ends)
    packed along T, each against a call on it alone, and the packed call's eager time."""
    lens = list(lens)
    T = sum(lens)
    q, k, v, g, beta = inputs(1, T, H, D, seed=7)
    cu = torch.tensor([0, *itertools.accumulate(lens)], device=q.device, dtype=torch.int32)
    h0 = torch.randn(len(lens), H, D, D, device=q.device) * 0.1
    o, hT = kk.kda_fwd(q, k, v, g, beta, D**-0.5, h0, True, cu_seqlens=cu)
    worst_o = worst_s = 0.0
    for n in range(len(lens)):
        a, b = int(cu[n]), int(cu[n + 1])
        part = [x[:, a:b] for x in (q, k, v, g, beta)]
        o1, h1 = kk.kda_fwd(*part, D**-0.5, h0[n : n + 1], True)
        worst_o = max(worst_o, rel(o[:, a:b], o1))
        worst_s = max(worst_s, rel(hT[n : n + 1], h1))
    ms = eager_ms(lambda: kk.kda_fwd(q, k, v, g, beta, D**-0.5, cu_seqlens=cu))
    print(json.dumps(dict(varlen_lens=lens, H=H, D=D, worst_rel_o_vs_alone=worst_o,
                          worst_rel_state_vs_alone=worst_s, finite=bool(torch.isfinite(o).all()),
                          eager_ms_median=ms)))  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--varlen", action="store_true", help="cu_seqlens against each sequence alone")
    ap.add_argument("--shapes", default="all")
    ap.add_argument("--fla", default="none", help="headline | all | none")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "/tmp"), "kda.json"))
    ap.add_argument("--budget-s", type=float, default=420.0, help="skip FLA after this")
    args = ap.parse_args()
    t_start = time.time()
    kk = load("kda_kernel", "kernels/kda/kernel.py")
    if args.varlen:
        check_varlen(kk)
        return
    ref = load("kda_reference", "kernels/kda/reference.py")
    import triton

    print(f"GPU {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {triton.__version__}", flush=True)
    rows = []
    for si, (B, T, H, D) in enumerate(SHAPES if args.shapes == "all" else SHAPES[:1]):
        q, k, v, g, beta = inputs(B, T, H, D, seed=si)
        scale = D**-0.5
        row = dict(B=B, T=T, H=H, D=D, floor_ms=floor_ms(B, T, H, D))
        h0 = torch.randn(B, H, D, D, device="cuda") * 0.1
        ro, rh = ref.kda_reference(q, k, v, g, beta, scale, h0, True)
        o, hT = kk.kda_fwd(q, k, v, g, beta, scale, initial_state=h0, output_final_state=True)
        row["err_o"], row["err_state"] = rel(o, ro), rel(hT, rh)
        row["finite"] = bool(torch.isfinite(o).all() and torch.isfinite(hT).all())
        del ro, rh
        row["ours_ms"] = time_graph(lambda: kk.kda_fwd(q, k, v, g, beta, scale))
        row["prep_ms"] = time_graph(lambda: kk.kda_prepare(q, k, v, g, beta, scale))
        prep = kk.kda_prepare(q, k, v, g, beta, scale)
        row["scan_ms"] = time_graph(lambda: kk.kda_scan(prep))
        row["fla_safe_ms_recorded"] = FLA_SAFE_MS[(B, T, H)]
        row["floor_frac"] = row["floor_ms"] / row["ours_ms"]
        if (args.fla == "all" or (args.fla == "headline" and si == 0)) and time.time() - t_start < args.budget_s:
            try:
                fla_ms(q, k, v, g, beta, scale, row)
            except Exception as e:  # FLA not importable here, or failing
                row["fla_error"] = repr(e)[:300]
        print(json.dumps(row), flush=True)
        rows.append(row)
        json.dump(rows, open(args.json, "w"), indent=1)
    print()
    print("| B | T | H | err o | err state | prep ms | scan ms | ours ms | FLA safe ms | speed-up | floor frac |")
    print("|" + "---|" * 11)
    for r in rows:
        fla = r.get("fla_safe_ms", r["fla_safe_ms_recorded"])
        tag = "" if "fla_safe_ms" in r else " (rec)"
        print(
            f"| {r['B']} | {r['T']} | {r['H']} | {r['err_o']:.2e} | {r['err_state']:.2e} | {r['prep_ms']:.4f} "
            f"| {r['scan_ms']:.4f} | {r['ours_ms']:.4f} | {fla:.3f}{tag} | {fla / r['ours_ms']:.2f}x "
            f"| {r['floor_frac']:.2f} |"
        )
    print(f"total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
