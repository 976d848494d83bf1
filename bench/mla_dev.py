"""MLA kernels on a GPU: correctness at every task shape, then timing against the PyTorch baselines.

    python3 bench/mla_dev.py [--quick] [--decode-configs JSON] [--prefill-configs JSON]

Decode (B1 H64 Skv8192, Sq 1/2/4) is timed as CUDA-graph replay with L2 flushed before each call
(the evaluator's flush, 256 MB read between calls; events around each replay; median), plus two cross-checks:
the same with the flush and call captured together minus the flush alone (launch-free), and warm-L2
replay. Prefill (causal, S 8192) is timed eagerly (15+ ms per call: launch and L2 do not matter).
Baselines: the float32 reference (graph), bf16 PyTorch matmuls (graph), SDPA with the latent as K and
its first 512 columns as V. Several kernel configs are timed in the same process; the table is printed
last and the rows are written as JSON to $OUT/mla_dev.json when OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time
import traceback

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels" / "mla"))
sys.path.insert(1, str(ROOT))
import kernel as K  # noqa: E402
import reference as R  # noqa: E402

from harness.timing import Flusher  # noqa: E402  (the evaluator's L2 flush)

DEV = torch.device("cuda")
B, H, SKV, DV, D = 1, 64, 8192, 512, 576
SCALES = (192**-0.5, 576**-0.5)
COPY_TBPS, MATMUL_TFLOPS = 4.06, 705.0  # measured on this GPU model (docs: KERNELS.md anchors)

DECODE_CONFIGS = [
    dict(K.DECODE_CONFIG),  # the shipped default (the Gluon split kernel)
    {"gl_kslices": 4},
    {"gl_stages": 1},
    {"gl_qreg": 0},  # all of q read from shared memory (the rule's alternative)
    {"impl": "tl"},  # the tl split kernel with its default knobs
    {"impl": "tl", "fused_merge": False},  # two launches
    {"impl": "tl", "BLOCK_DV": 512, "num_warps": 8},
    {"impl": "tl", "BLOCK_N": 64, "num_stages": 2},
    {"impl": "tl", "num_splits": 32},
]
PREFILL_CONFIGS = [
    dict(K.PREFILL_CONFIG),  # the shipped default (the Gluon kernel, one split)
    {"gl_stages": 1},
    {"gl_qreg": 0},  # all of q read from shared memory
    {"impl": "tl"},  # the tl kernel with its default knobs
    {"impl": "tl", "BLOCK_N": 32, "num_stages": 3},
]

SCALING_SKV = [int(x) for x in os.environ.get("MLA_SCALING_SKV", "512,1024,2048,4096,8192,16384").split(",")]
rows_out: list[dict] = []
flush_buf = None


def log(*a):
    print(*a, flush=True)


def median_events(fn, reps, before=None):
    evs = []
    for _ in range(reps):
        if before is not None:
            before()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        evs.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in evs) * 1e3  # us


def capture(fn, n=1):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    return g


def flush():
    flush_buf()


def time_decode(fn, reps=200):
    """us per call: cold-L2 graph replay (events), launch-free cold (difference), warm graph."""
    g = capture(fn)
    cold = median_events(g.replay, reps, before=flush)
    n = 10
    both = capture(lambda: (flush(), fn()), n)
    only = capture(flush, n)
    t_both = median_events(both.replay, 30)
    t_only = median_events(only.replay, 30)
    warm = capture(fn, 20)
    t_warm = median_events(warm.replay, 30) / 20
    return cold, (t_both - t_only) / n, t_warm


def bf16_torch_decode(q, kv, scale):
    sq = q.shape[1]
    s = q.reshape(sq * H, D) @ kv[0].t()
    p = (s.float() * scale).softmax(-1).to(torch.bfloat16)
    return p @ kv[0, :, :DV]


def check_decode(cfg, sq, scale, Bc=B, Skv=SKV, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(Bc, sq, H, D, device=DEV, generator=g).to(torch.bfloat16)
    kv = torch.randn(Bc, Skv, D, device=DEV, generator=g).to(torch.bfloat16)
    out = K.decode_with_config(q, kv, scale, DV, cfg)
    torch.cuda.synchronize()
    return R.rms_rel_err(out, R.mla_reference(q, kv, scale, DV))


def decode_section(configs, quick):
    global flush_buf
    flush_buf = Flusher(DEV)
    for sq in (1, 2, 4):
        torch.manual_seed(sq)
        q = torch.randn(B, sq, H, D, device=DEV).to(torch.bfloat16)
        kv = torch.randn(B, SKV, D, device=DEV).to(torch.bfloat16)
        scale = SCALES[0]
        nbytes = kv.numel() * 2 + q.numel() * 2 + B * sq * H * DV * 2
        floor_us = nbytes / (COPY_TBPS * 1e12) * 1e6
        base = {}
        tiny = torch.zeros(1, device=DEV)
        for name, fn in (
            ("torch fp32 ref", lambda: R.mla_reference(q, kv, scale, DV)),
            ("torch bf16", lambda: bf16_torch_decode(q, kv, scale)),
            ("one tiny kernel (launch floor)", lambda: tiny.add_(1)),
        ):
            try:
                cold, lf, warm = time_decode(fn, reps=50)
                base[name] = cold
                rows_out.append(
                    dict(
                        kind="decode",
                        sq=sq,
                        name=name,
                        cold_us=cold,
                        cold_lf_us=lf,
                        warm_us=warm,
                        floor_us=floor_us,
                        err=0.0,
                    )
                )
                log(rows_out[-1])
            except Exception as e:  # a baseline failing must not stop the kernel rows
                log(f"[fail] baseline {name} sq={sq}: {e!r}")
        for cfg in configs:
            name = "ours " + json.dumps(cfg, separators=(",", ":"))
            try:
                errs = [check_decode(cfg, sq, s, seed=i) for i, s in enumerate(SCALES)]
                if sq == 2 and not quick:  # ragged cache and B > 1
                    errs.append(check_decode(cfg, sq, SCALES[1], Bc=2, Skv=1000, seed=9))
                    errs.append(check_decode(cfg, 1, SCALES[0], Bc=3, Skv=8191, seed=10))
                fn = lambda: K.decode_with_config(q, kv, scale, DV, cfg)  # noqa: E731
                cold, lf, warm = time_decode(fn)
                rows_out.append(
                    dict(
                        kind="decode",
                        sq=sq,
                        name=name,
                        cold_us=cold,
                        cold_lf_us=lf,
                        warm_us=warm,
                        floor_us=floor_us,
                        err=max(errs),
                        vs_ref=base.get("torch fp32 ref", float("nan")) / cold,
                        vs_bf16=base.get("torch bf16", float("nan")) / cold,
                    )
                )
                log(rows_out[-1])
            except Exception as e:
                log(f"[fail] decode sq={sq} {name}: {e!r}")
                traceback.print_exc()


def prefill_section(configs, quick):
    S = SKV
    torch.manual_seed(1)
    q = torch.randn(B, S, H, D, device=DEV).to(torch.bfloat16)
    kv = torch.randn(B, S, D, device=DEV).to(torch.bfloat16)
    scale = SCALES[0]
    flops = 2 * H * S * S * (D + DV) / 2
    floor_ms = flops / (MATMUL_TFLOPS * 1e12) * 1e3
    qh = q.transpose(1, 2).contiguous()
    k = kv.unsqueeze(1).expand(B, H, S, D)
    v = kv[..., :DV].unsqueeze(1).expand(B, H, S, DV)
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
        qh, k, v, is_causal=True, scale=scale
    )
    t_sdpa = median_events(sdpa, 5 if quick else 10) / 1e3
    o_sdpa = sdpa().transpose(1, 2)
    rows_out.append(
        dict(kind="prefill", name="torch SDPA", ms=t_sdpa, tflops=flops / t_sdpa / 1e9, floor_ms=floor_ms, err=0.0)
    )
    check_rows = torch.cat([torch.arange(0, 48), torch.arange(4000, 4016), torch.arange(S - 64, S)])
    ref_rows = R.mla_reference_rows(q, kv, scale, DV, check_rows.to(DEV))
    for i, cfg in enumerate(configs):
        name = "ours " + json.dumps(cfg, separators=(",", ":"))
        try:
            out = K.prefill_with_config(q, kv, scale, DV, cfg)
            torch.cuda.synchronize()
            errs = [R.rms_rel_err(out[:, check_rows.to(DEV)], ref_rows)]
            err_sdpa = R.rms_rel_err(out, o_sdpa)  # SDPA is bf16 itself: a loose cross-check
            if (i == 0 or cfg.get("impl") == "gluon") and not quick:
                for Bc, Sc in ((2, 777), (1, 1024)):
                    for sc in SCALES:
                        g = torch.Generator(device="cuda").manual_seed(Sc)
                        q2 = torch.randn(Bc, Sc, H, D, device=DEV, generator=g).to(torch.bfloat16)
                        kv2 = torch.randn(Bc, Sc, D, device=DEV, generator=g).to(torch.bfloat16)
                        o2 = K.prefill_with_config(q2, kv2, sc, DV, cfg)
                        errs.append(R.rms_rel_err(o2, R.mla_reference(q2, kv2, sc, DV)))
            t = median_events(lambda: K.prefill_with_config(q, kv, scale, DV, cfg), 5 if quick else 10)
            t /= 1e3
            rows_out.append(
                dict(
                    kind="prefill",
                    name=name,
                    ms=t,
                    tflops=flops / t / 1e9,
                    floor_ms=floor_ms,
                    err=max(errs),
                    err_vs_sdpa=err_sdpa,
                    vs_sdpa=t_sdpa / t,
                )
            )
            log(rows_out[-1])
        except Exception as e:
            log(f"[fail] prefill {name}: {e!r}")
            traceback.print_exc()


def table():
    log("\n## MLA decode, B1 H64 Skv8192 (us; cold = graph replay, L2 flushed; lf = launch-free cold)")
    log("| Sq | impl | cold us | lf us | warm us | floor us | x fp32 ref | x bf16 torch | err |")
    log("|---|---|---|---|---|---|---|---|---|")
    for r in rows_out:
        if r["kind"] == "decode":
            log(
                f"| {r['sq']} | {r['name']} | {r['cold_us']:.2f} | {r['cold_lf_us']:.2f} | "
                f"{r['warm_us']:.2f} | {r['floor_us']:.2f} | {r.get('vs_ref', float('nan')):.1f} | "
                f"{r.get('vs_bf16', float('nan')):.2f} | {r['err']:.1e} |"
            )
    log("\n## MLA prefill causal, B1 H64 S8192 (ms, eager, median)")
    log("| impl | ms | TFLOP/s | floor ms | x SDPA | err |")
    log("|---|---|---|---|---|---|")
    for r in rows_out:
        if r["kind"] == "prefill":
            log(
                f"| {r['name']} | {r['ms']:.2f} | {r['tflops']:.0f} | {r['floor_ms']:.2f} | "
                f"{r.get('vs_sdpa', 1.0):.2f} | {r['err']:.1e} |"
            )


def warm_compile(dec, pre):
    """Runs each config once at every shape class the measurement uses, filling Triton's cache."""
    for cfg in dec:
        for sq, Bc, Skv in ((1, 1, SKV), (2, 1, SKV), (2, 2, 1000), (1, 3, 8191)):
            check_decode(cfg, sq, SCALES[0], Bc=Bc, Skv=Skv)
    for cfg in pre:
        for Bc, Sc in ((1, 1024), (2, 777)):
            q = torch.randn(Bc, Sc, H, D, device=DEV).to(torch.bfloat16)
            kv = torch.randn(Bc, Sc, D, device=DEV).to(torch.bfloat16)
            K.prefill_with_config(q, kv, 0.1, DV, cfg)
    torch.cuda.synchronize()


def profile_calls(dec, pre, skip):
    """One decode call per config (Sq 1 and 4) and one prefill call per config, for ncu to read."""
    if "decode" not in skip:
        for cfg in dec:
            for sq in (1, 4):
                q = torch.randn(B, sq, H, D, device=DEV).to(torch.bfloat16)
                kv = torch.randn(B, SKV, D, device=DEV).to(torch.bfloat16)
                K.decode_with_config(q, kv, SCALES[0], DV, cfg)
    if "prefill" not in skip:
        for cfg in pre:
            q = torch.randn(B, SKV, H, D, device=DEV).to(torch.bfloat16)
            kv = torch.randn(B, SKV, D, device=DEV).to(torch.bfloat16)
            K.prefill_with_config(q, kv, SCALES[0], DV, cfg)
    torch.cuda.synchronize()


def precompile(dec, pre, skip):
    """Compiles every config in parallel processes (one each) so the timed process starts warm."""
    import subprocess

    t0 = time.time()
    jobs = []
    if "decode" not in skip:
        jobs += [["--decode-configs", json.dumps([c]), "--prefill-configs", "[]"] for c in dec]
    if "prefill" not in skip:
        jobs += [["--decode-configs", "[]", "--prefill-configs", json.dumps([c])] for c in pre]
    procs = [subprocess.Popen([sys.executable, __file__, "--warm-only", *j]) for j in jobs]
    rcs = [p.wait() for p in procs]
    log(f"precompiled {len(jobs)} configs in {time.time() - t0:.0f}s, exit codes {rcs}")


def smoke(dec):
    """Each config once (B1 Sq1 and B3 Sq1 Skv8191) against the reference; exit status 1 on a miss.
    Run under `timeout` first: a grid barrier that never opens shows up here, not in the timed run."""
    bad = 0
    for cfg in dec:
        for Bc, Skv in ((1, SKV), (3, 8191)):
            err = check_decode(cfg, 1, SCALES[0], Bc=Bc, Skv=Skv)
            log(f"smoke B{Bc} Skv{Skv} {json.dumps(cfg)}: err {err:.2e}")
            bad += not err < 1e-2
    sys.exit(1 if bad else 0)


def scaling(dec):
    """Sq 1 decode time against the cache length (each split one to eight kv tiles at the task's
    shape): the intercept is the fixed cost per call (q load, launch, barrier, merge), the slope the
    cost per kv tile."""
    global flush_buf
    flush_buf = Flusher(DEV)
    tiny = torch.zeros(1, device=DEV)
    cold, lf, warm = time_decode(lambda: tiny.add_(1), reps=50)
    log(f"scaling tiny kernel: cold {cold:.2f} lf {lf:.2f} warm {warm:.2f} us")
    log("| config | Skv | cold us | lf us | warm us | err |")
    log("|---|---|---|---|---|---|")
    for cfg in dec:
        for skv in SCALING_SKV:
            q = torch.randn(B, 1, H, D, device=DEV).to(torch.bfloat16)
            kv = torch.randn(B, skv, D, device=DEV).to(torch.bfloat16)
            err = check_decode(cfg, 1, SCALES[0], Skv=skv)
            cold, lf, warm = time_decode(lambda: K.decode_with_config(q, kv, SCALES[0], DV, cfg))
            name = json.dumps(cfg, separators=(",", ":"))
            log(f"| {name} | {skv} | {cold:.2f} | {lf:.2f} | {warm:.2f} | {err:.1e} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--decode-configs", default=None)
    ap.add_argument("--prefill-configs", default=None)
    ap.add_argument("--skip", default="", help="comma list: decode,prefill")
    ap.add_argument("--warm-only", action="store_true", help="compile one config (internal)")
    ap.add_argument("--profile", action="store_true", help="one call per config, for ncu")
    ap.add_argument("--smoke", action="store_true", help="one checked decode call per config, then exit")
    ap.add_argument("--scaling", action="store_true", help="Sq 1 decode time against the cache length")
    args = ap.parse_args()
    dec = json.loads(args.decode_configs) if args.decode_configs else DECODE_CONFIGS
    pre = json.loads(args.prefill_configs) if args.prefill_configs else PREFILL_CONFIGS
    if args.warm_only:
        warm_compile(dec, pre)
        return
    if args.smoke:
        smoke(dec)
    if args.profile:
        profile_calls(dec, pre, args.skip)
        return
    if args.scaling:
        scaling(dec)
        return
    precompile(dec, pre, args.skip)
    log(torch.cuda.get_device_name(), torch.__version__, "triton", K.triton.__version__)
    t0 = time.time()
    if "decode" not in args.skip:
        decode_section(dec, args.quick)
    log(f"decode done {time.time() - t0:.0f}s")
    if "prefill" not in args.skip:
        prefill_section(pre, args.quick)
    log(f"prefill done {time.time() - t0:.0f}s")
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "mla_dev.json"), "w") as f:
            json.dump(rows_out, f, indent=1)
    table()


if __name__ == "__main__":
    main()
