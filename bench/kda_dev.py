"""KDA kernel development check and benchmark on a CUDA GPU (H200).

For every task shape: correctness of kernels/kda against the float32 recurrence (RMS-relative error
of o and of the final state), then the time of several tuning configurations under CUDA-graph
replay with the L2 flushed before every replay (median of many), the time of each of the two
kernels alone, and the fraction of the byte floor. FLA's chunk_kda (safe-gate path) is timed in the
same process where it is importable and asked for (--fla), as the baseline only.

    python3 bench/kda_dev.py [--shapes all|headline] [--fla headline|all|none] [--json FILE]
    python3 bench/kda_dev.py --varlen      # cu_seqlens against each sequence alone
    python3 bench/kda_dev.py --overlap     # whole calls with the scan overlapped or not
    python3 bench/kda_dev.py --whole '{"bk32": {"bk": 32}}'   # whole calls, CONFIG with knobs set
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
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    _FLUSH.zero_()


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


def prep_keys(kk):
    return kk.PREP_KEYS


def compile_one(kk, cfg):
    """Run one configuration once on a small shape with the task shapes' integer specialisation
    (T, H and T/64 multiples of 16), so that Triton's on-disk cache holds its binaries."""
    q, k, v, g, beta = inputs(1, 1024, 16, 128, seed=0)
    h0 = torch.zeros(1, 16, 128, 128, device="cuda")
    pc = {n: cfg[n] for n in prep_keys(kk) if n in cfg}
    prep = kk.kda_prepare(q, k, v, g, beta, 0.1, **pc)
    sc = scan_args(cfg)
    kk.kda_scan(prep, None, False, **sc)
    if cfg.get("states"):
        kk.kda_scan(prep, h0, True, **sc)
    torch.cuda.synchronize()


def scan_args(cfg):
    """kda_scan's keyword arguments from a configuration's scan knobs."""
    return dict(
        bv=cfg["bv"],
        scan_warps=cfg["scan_warps"],
        scan_stages=cfg["scan_stages"],
        scan_tma=cfg.get("scan_tma", False),
        scan_o_tma=cfg.get("scan_o_tma", True),
        scan_fb=cfg.get("scan_fb", 128),
        scan_t=cfg.get("scan_t", False),
        scan_impl=cfg.get("scan_impl", "tl"),
    )


def precompile(cfgs):
    """Compile all configurations in parallel processes (the GPU machine has 16 cores)."""
    import subprocess
    import sys

    t0 = time.time()
    procs = [subprocess.Popen([sys.executable, __file__, "--compile-one", json.dumps(c)]) for c in cfgs]
    bad = sum(p.wait() != 0 for p in procs)
    print(f"precompiled {len(cfgs)} configs in {time.time() - t0:.0f}s ({bad} failed)", flush=True)


def fla_headline(kk, args):
    """Ours (default config) and FLA's safe-gate chunk_kda in one process at the first shape.
    FLA autotunes on its first call (minutes); run this last, under a time limit."""
    from fla.ops.kda.chunk import chunk_kda

    B, T, H, D = SHAPES[0]
    q, k, v, g, beta = inputs(B, T, H, D, seed=0)
    scale = D**-0.5
    row = dict(B=B, T=T, H=H, D=D, floor_ms=floor_ms(B, T, H, D))
    row["ours_ms"] = time_graph(lambda: kk.kda_fwd(q, k, v, g, beta, scale))

    def fla():
        return chunk_kda(q, k, v, g, beta, scale=scale, safe_gate=True, lower_bound=-5.0)

    t0 = time.time()
    of, _ = fla()
    torch.cuda.synchronize()
    row["fla_first_call_s"] = time.time() - t0
    print(json.dumps(row), flush=True)
    o, _ = kk.kda_fwd(q, k, v, g, beta, scale)
    row["ours_vs_fla_rel"] = rel(o, of)
    row["fla_safe_ms"] = time_graph(fla)
    row["ours_ms_again"] = time_graph(lambda: kk.kda_fwd(q, k, v, g, beta, scale))
    row["speedup_vs_fla"] = row["fla_safe_ms"] / min(row["ours_ms"], row["ours_ms_again"])
    print("FLA " + json.dumps(row), flush=True)
    json.dump(row, open(args.json.replace(".json", "_fla.json"), "w"), indent=1)


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
    ms = eager_ms(lambda: kk.kda_fwd(q, k, v, g, beta, D**-0.5, cu_seqlens=cu)) if q.is_cuda else None
    print(json.dumps(dict(varlen_lens=lens, H=H, D=D, worst_rel_o_vs_alone=worst_o,
                          worst_rel_state_vs_alone=worst_s, finite=bool(torch.isfinite(o).all()),
                          eager_ms_median=ms)))  # fmt: skip


def compare_whole(kk, ref, shapes, variants):
    """Whole calls (prep and scan together, as the evaluator times them) of CONFIG with each
    variant's knobs: the error against the recurrence with an initial and a final state, then
    the graph-replay time, cold L2. For knobs whose effect only shows in a whole call (overlap)."""
    rows = []
    for si, (B, T, H, D) in enumerate(shapes):
        q, k, v, g, beta = inputs(B, T, H, D, seed=si)
        scale = D**-0.5
        h0 = torch.randn(B, H, D, D, device="cuda") * 0.1
        ro, rh = ref.kda_reference(q, k, v, g, beta, scale, h0, True)
        for name, var in variants:
            cfg = dict(kk.CONFIG, **var)
            o, hT = kk.kda_fwd_cfg(q, k, v, g, beta, scale, h0, True, **cfg)
            err_o, err_s = rel(o, ro), rel(hT, rh)
            ms = time_graph(lambda cfg=cfg: kk.kda_fwd_cfg(q, k, v, g, beta, scale, **cfg), reps=50)
            row = dict(B=B, T=T, H=H, variant=name, ms=ms, err_o=err_o, err_state=err_s,
                       speedup_vs_recorded=FLA_SAFE_MS[(B, T, H)] / ms)  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("| B | T | H | variant | ms | err o | err state | FLA safe ms (rec) | speed-up |")
    print("|" + "---|" * 9)
    for r in rows:
        print(f"| {r['B']} | {r['T']} | {r['H']} | {r['variant']} | {r['ms']:.4f} | {r['err_o']:.2e} "
              f"| {r['err_state']:.2e} | {FLA_SAFE_MS[(r['B'], r['T'], r['H'])]:.3f} "
              f"| {r['speedup_vs_recorded']:.2f}x |")  # fmt: skip
    return rows


OVERLAP_VARIANTS = [
    ("serial, head order", dict(overlap="none", cmajor=False)),
    ("launch, head order", dict(overlap="launch", cmajor=False)),
    ("launch, chunk order", dict(overlap="launch", cmajor=True)),
    ("chunks, chunk order", dict(overlap="chunks", cmajor=True)),
    ("chunks, chunk order, scan 2 stages", dict(overlap="chunks", cmajor=True, scan_stages=2)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-one", default=None)
    ap.add_argument("--no-precompile", action="store_true")
    ap.add_argument("--fla-only", action="store_true", help="ours vs FLA at the first shape")
    ap.add_argument("--profile-once", action="store_true", help="one call, for ncu")
    ap.add_argument("--varlen", action="store_true", help="cu_seqlens against each sequence alone")
    ap.add_argument("--overlap", action="store_true", help="whole calls: the scan overlapped or not")
    ap.add_argument("--whole", default=None, help='whole calls of CONFIG with each knob set: JSON {"name": {...}}')
    ap.add_argument("--shapes", default="all")
    ap.add_argument("--fla", default="none")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "/tmp"), "kda.json"))
    ap.add_argument(
        "--configs", default="split", help="split | scan | tma | diag | fuse | order | sweep | quick | default"
    )
    ap.add_argument("--budget-s", type=float, default=420.0, help="skip FLA after this")
    args = ap.parse_args()
    t_start = time.time()
    kk = load("kda_kernel", "kernels/kda/kernel.py")
    if args.compile_one:
        compile_one(kk, json.loads(args.compile_one))
        return
    if args.fla_only:
        fla_headline(kk, args)
        return
    if args.varlen:
        check_varlen(kk)
        return
    if args.profile_once:
        # one call at the first shape, for a profiler: ncu -k regex:_kda python3 ... --profile-once
        B, T, H, D = SHAPES[0]
        q, k, v, g, beta = inputs(B, T, H, D, seed=0)
        kk.kda_fwd(q, k, v, g, beta, D**-0.5)
        torch.cuda.synchronize()
        return
    ref = load("kda_reference", "kernels/kda/reference.py")
    if args.overlap or args.whole:
        variants = list(json.loads(args.whole).items()) if args.whole else OVERLAP_VARIANTS
        rows = compare_whole(kk, ref, SHAPES if args.shapes == "all" else SHAPES[:1], variants)
        json.dump(rows, open(args.json, "w"), indent=1)
        return
    print(f"GPU {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    import triton

    print(f"triton {triton.__version__}", flush=True)

    PREP_KEYS = prep_keys(kk)
    base = {n: kk.CONFIG[n] for n in PREP_KEYS}
    if args.configs == "split":
        # the split prep (two kernels) and its knobs, one at a time, and the old one-kernel prep
        base = dict(base, impl="split", bk=16, batch=True, intra_nreg=0, intra_stages=3,
                    lcmem=False, cump="tf32", solve_warps=4, solve_nreg=128, bw=64, prec="bf16",
                    wprec="bf16", sprec="bf16")  # fmt: skip
        bf3 = dict(base, cump="bf16x3")
        prep_cfgs = [
            base,
            dict(base, solve_nreg=0),
            dict(base, solve_nreg=168),
            bf3,
            dict(bf3, intra_nreg=168),
            dict(bf3, lcmem=True, intra_stages=2),
            dict(bf3, lcmem=True, intra_stages=2, intra_nreg=168),
            dict(base, lcmem=True, intra_stages=2, intra_nreg=168),
            dict(base, impl="dense", bk=32, wprec="tf32"),
        ]
        scan_cfgs = [dict(bv=bv, scan_warps=4, scan_stages=3) for bv in (32, 64)]
    elif args.configs == "scan":
        # G_63 - G by a subtraction, with the register caps and depths it may now afford; the
        # scan's V block (scan_stages 1 faulted with an illegal address on the H200)
        g63 = dict(base, g63sub=True)
        prep_cfgs = [
            dict(base, g63sub=False),
            g63,
            dict(g63, intra_nreg=168),
            dict(g63, intra_stages=2),
            dict(g63, solve_nreg=96),
        ]
        scan_cfgs = [dict(bv=bv, scan_warps=4, scan_stages=3) for bv in (32, 64)]
    elif args.configs == "tma":
        # the intra kernel's tiles through tensor descriptors, with the register caps it may now
        # afford (3 blocks per SM at 168), against per-element pointers
        prep_cfgs = [
            dict(base, tma=True, intra_nreg=0),
            dict(base, tma=True, intra_nreg=168),
            dict(base, tma=True, intra_nreg=168, intra_stages=2),
            dict(base, tma=True, intra_nreg=128, intra_stages=2),
            dict(base, tma=False, intra_nreg=0),
        ]
        scan_cfgs = [
            dict(bv=bv, scan_warps=4, scan_stages=st, scan_tma=tma)
            for bv, st, tma in (
                (32, 3, False),
                (64, 3, False),
                (32, 3, True),
                (64, 3, True),
                (32, 2, True),
                (64, 2, True),
            )
        ]
    elif args.configs == "diag":
        # the 16 x 16 diagonal inverses in the intra kernel's epilogue (default) or in the solve,
        # and the solve's register cap now that its chain is shorter
        prep_cfgs = [
            dict(base, diag_inv=True),
            dict(base, diag_inv=False),
            dict(base, diag_inv=True, solve_nreg=168),
            dict(base, diag_inv=True, solve_nreg=0),
        ]
        scan_cfgs = [dict(bv=bv, scan_warps=4, scan_stages=3, scan_tma=True) for bv in (32, 64)]
    elif args.configs == "fuse":
        # the solve inside the intra kernel (A and kb never written and read back), kb recomputed
        # or read back, with the register caps it may need, against the two-kernel prep
        prep_cfgs = [
            dict(base, fuse="none"),
            dict(base, fuse="recompute"),
            dict(base, fuse="reload"),
            dict(base, fuse="inplace"),
            dict(base, fuse="reload", bw=32),
            dict(base, fuse="inplace", bw=32),
            dict(base, fuse="reload", bw=128),
            dict(base, fuse="reload", prep_warps=8, intra_nreg=0),
        ]
        scan_cfgs = [
            dict(bv=bv, scan_warps=w, scan_stages=3, scan_tma=True) for bv, w in ((32, 4), (64, 4), (64, 8), (16, 4))
        ]
    elif args.configs == "order":
        # the cumulative gates from two bf16 parts instead of three; wider fused-solve slices; the
        # scan's output stored by pointers
        prep_cfgs = [base, dict(base, cump="bf16x3"), dict(base, bw=128), dict(base, intra_stages=2)]
        scan_cfgs = [
            dict(bv=bv, scan_warps=4, scan_stages=3, scan_tma=True, scan_o_tma=ot)
            for bv, ot in ((32, True), (32, False), (64, True), (64, False))
        ]
    elif args.configs == "quick":
        prep_cfgs = [base, dict(base, sprec="tf32"), dict(base, prec="tf32")]
        scan_cfgs = [dict(bv=bv, scan_warps=4, scan_stages=s) for bv, s in ((32, 3), (64, 3))]
    elif args.configs == "sweep":
        d = dict(base, impl="dense", prec="bf16", wprec="tf32", sprec="tf32", prep_warps=4, bk=32)
        prep_cfgs = [
            d,
            dict(d, bk=16),
            dict(d, prec="tf32"),
            dict(d, sprec="tf32x3"),
            dict(d, impl="blocks", wprec="bf16"),
        ]
        scan_cfgs = [
            dict(bv=bv, scan_warps=w, scan_stages=s) for bv, w, s in itertools.product((16, 32, 64), (4, 8), (2, 3))
        ]
    else:
        prep_cfgs = [base]
        scan_cfgs = [
            dict(bv=kk.CONFIG["bv"], scan_warps=kk.CONFIG["scan_warps"],
                 scan_stages=kk.CONFIG["scan_stages"])
        ]  # fmt: skip
    if args.configs == "default":
        scan_cfgs = [dict(bv=bv, scan_warps=4, scan_stages=3) for bv in (32, 64)]
    shapes = SHAPES if args.shapes == "all" else SHAPES[:1]
    if not args.no_precompile:
        cfgs = [dict(pc, **scan_cfgs[0], states=True) for pc in prep_cfgs]
        cfgs += [dict(prep_cfgs[0], **sc) for sc in scan_cfgs[1:]]
        default = dict(kk.CONFIG, states=True)
        if default["bv"] is None:
            default["bv"] = 64
        cfgs.append(dict(default, bv=32))
        cfgs.append(default)
        precompile(cfgs)
    rows = []
    for si, (B, T, H, D) in enumerate(shapes):
        q, k, v, g, beta = inputs(B, T, H, D, seed=si)
        scale = D**-0.5
        row = dict(B=B, T=T, H=H, D=D, floor_ms=floor_ms(B, T, H, D))
        t0 = time.time()
        h0 = torch.randn(B, H, D, D, device="cuda") * 0.1
        ro, rh = ref.kda_reference(q, k, v, g, beta, scale, h0, True)
        row["ref_s"] = time.time() - t0
        # correctness of the default config, with initial and final state
        o, hT = kk.kda_fwd(q, k, v, g, beta, scale, initial_state=h0, output_final_state=True)
        torch.cuda.synchronize()
        row["err_o"] = rel(o, ro)
        row["err_state"] = rel(hT, rh)
        row["finite"] = bool(torch.isfinite(o).all())
        # time each prep config (and its error with the default scan, no initial state), then
        # each scan config on the best accurate prep's buffers
        ro0, _ = ref.kda_reference(q, k, v, g, beta, scale)
        del ro, rh
        best = None
        for pc in prep_cfgs:
            name = "prep_" + ("_".join(f"{n}{pc[n]}" for n in PREP_KEYS if pc[n] != base[n]) or "base")
            try:
                t = time_graph(lambda pc=pc: kk.kda_prepare(q, k, v, g, beta, scale, **pc))
                o_pc, _ = kk.kda_scan(kk.kda_prepare(q, k, v, g, beta, scale, **pc))
            except Exception as e:  # a config that does not compile
                print(f"  {name} failed: {e!r}"[:300], flush=True)
                continue
            row[name + "_ms"] = t
            row[name + "_err"] = e = rel(o_pc, ro0)
            if e <= 0.9 * 5e-3 and (best is None or t < best[0]):
                best = (t, pc)
        del ro0
        if best is None:  # none accurate enough: report the first, flagged by its error
            best = (row["prep_base_ms"], prep_cfgs[0])
        row["prep_ms"], best_prep = best
        if best_prep["impl"] == "split":
            row["intra_ms"] = time_graph(
                lambda: kk.kda_prepare(q, k, v, g, beta, scale, **dict(best_prep, only="intra"))
            )
        prep = kk.kda_prepare(q, k, v, g, beta, scale, **best_prep)
        o_ref_cfg = None
        sbest = None
        for sc in scan_cfgs:
            try:
                t = time_graph(lambda sc=sc: kk.kda_scan(prep, None, False, **scan_args(sc)))
                o_sc, _ = kk.kda_scan(prep, None, False, **scan_args(sc))
                if o_ref_cfg is None:
                    o_ref_cfg = o_sc
                dev_ = rel(o_sc, o_ref_cfg)
            except Exception as e:  # a config that does not compile (e.g. out of shared memory)
                print(f"  scan {sc} failed: {e!r}"[:300], flush=True)
                continue
            key = f"scan_bv{sc['bv']}_w{sc['scan_warps']}_s{sc['scan_stages']}" + ("_tma" if sc.get("scan_tma") else "")
            key += "" if sc.get("scan_o_tma", True) else "_optr"
            row[key + "_ms"] = t
            row[key + "_dev"] = dev_
            if sbest is None or t < sbest[0]:
                sbest = (t, sc)
        row["scan_ms"], best_scan = sbest
        cfg = dict(best_prep, **best_scan)
        row["best_cfg"] = cfg
        row["ours_ms"] = time_graph(lambda: kk.kda_fwd_cfg(q, k, v, g, beta, scale, **cfg))
        row["default_ms"] = time_graph(lambda: kk.kda_fwd(q, k, v, g, beta, scale))
        row["fla_safe_ms_recorded"] = FLA_SAFE_MS[(B, T, H)]
        row["speedup_vs_recorded"] = FLA_SAFE_MS[(B, T, H)] / row["ours_ms"]
        row["floor_frac"] = row["floor_ms"] / row["ours_ms"]
        want_fla = args.fla == "all" or (args.fla == "headline" and si == 0)
        if want_fla and time.time() - t_start < args.budget_s:
            try:
                from fla.ops.kda.chunk import chunk_kda

                def fla():
                    return chunk_kda(q, k, v, g, beta, scale=scale, safe_gate=True,
                                     lower_bound=-5.0)  # fmt: skip

                t0 = time.time()
                of, _ = fla()
                torch.cuda.synchronize()
                row["fla_first_call_s"] = time.time() - t0
                o0, _ = kk.kda_fwd(q, k, v, g, beta, scale)
                row["ours_vs_fla_rel"] = rel(o0, of)
                row["fla_safe_ms"] = time_graph(fla)
                row["speedup_vs_fla"] = row["fla_safe_ms"] / row["ours_ms"]
            except Exception as e:
                row["fla_error"] = repr(e)[:300]
        print(json.dumps(row), flush=True)
        rows.append(row)
        json.dump(rows, open(args.json, "w"), indent=1)
    print()
    print("| B | T | H | err o | err state | prep ms | scan ms | ours ms | FLA safe ms | speed-up "
          "| floor ms | floor frac | config |")  # fmt: skip
    print("|" + "---|" * 13)
    for r in rows:
        fla_ms = r.get("fla_safe_ms", r["fla_safe_ms_recorded"])
        tag = "" if "fla_safe_ms" in r else " (rec)"
        print(
            f"| {r['B']} | {r['T']} | {r['H']} | {r['err_o']:.2e} | {r['err_state']:.2e} "
            f"| {r['prep_ms']:.3f} | {r['scan_ms']:.3f} | {r['ours_ms']:.3f} "
            f"| {fla_ms:.3f}{tag} | {fla_ms / r['ours_ms']:.2f}x | {r['floor_ms']:.3f} "
            f"| {r['floor_frac']:.2f} | {r['best_cfg']} |"
        )
    print(f"total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
