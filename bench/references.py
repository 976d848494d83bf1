"""Our kernels against the best public ones on this GPU, under two timing protocols (measurement only).

    python bench/references.py --parts mla,mla-prefill,kda [--root DIR] [--json FILE] [--flashmla LIB]
    python bench/references.py --merge A.json B.json ... --out FILE.md

What is measured (the references are imported here only: no candidate can import them, and the
tasks' scores keep their own baselines):
  kda          ours (kernels/kda) and FLA's chunk_kda (fla-core), its default path and its safe-gate
               path (lower_bound -5, valid because every log decay of the inputs is >= -5), at the
               task's timed shapes. Each implementation is called once before any timing, so FLA's
               Triton autotuning is done when the clock starts.
  mla          ours (kernels/mla; also with q and kv in 4 column slices at every split length), the
               task's baseline (its float32 reference) and FlashMLA's dense Hopper decode (a library built by
               bench/references_build.py, loaded through ctypes) and FlashInfer's batch MLA
               (BatchMLAPagedAttentionWrapper, backend fa3), at the task's timed shapes and at
               serving batches. The latent cache is passed as 64-row pages over the same memory
               (no copy); both libraries' schedules (FlashMLA's split metadata, FlashInfer's plan)
               are made once per shape outside the timed call, as a server does once per step.
  mla-prefill  ours and FlashInfer's fa3 MLA with every query of the sequence (causal).

Protocols, both on the same input sets:
  cold    the tasks' protocol, harness.timing.measure: one call replayed from a CUDA graph, the L2
          flushed before each replay, inputs rotated, median.
  steady  one CUDA graph holding many calls over rotated input sets that together exceed twice the
          L2, its replay time divided by the number of calls (median of replays).
Floors: each case's bytes or FLOPs (its task's `floor(shape)`) at this GPU's measured copy and bf16
matmul rates (harness.ceilings), as the evaluator takes them; the table gives ours as a fraction.
Correctness: every MLA output against the task's float32 reference (RMS-relative error, the task's
tolerance). KDA's float32 reference is a Python loop over time steps, too slow at the timed shapes:
there FLA's outputs are compared with our kernel's (which the evaluator checks), and --kda-check
adds the float32 reference at the task's untimed GPU shapes.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SERVING = [(32, 1), (32, 4), (64, 1), (64, 4)]  # MLA decode at serving batches: (B, Sq), H64 Skv8192
PAGE = 64


# -- loading -----------------------------------------------------------------------------------
def load_module(path: Path, name: str):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Results:
    """Rows of (part, case, impl) with both timings, errors and notes; rewritten after each row."""

    def __init__(self, path: Path | None):
        self.path, self.rows, self.meta = path, [], {}

    def add(self, **row):
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        self.save()

    def save(self):
        if self.path:
            self.path.write_text(json.dumps({"meta": self.meta, "rows": self.rows}, indent=1))


# -- timing ------------------------------------------------------------------------------------
def steady_ms(torch, fn, sets, calls: int, reps: int = 5) -> tuple[float, str]:
    """Per-call ms of `calls` calls over the rotated sets, captured in one CUDA graph."""
    for s in sets:
        fn(s)
    torch.cuda.synchronize()
    note = ""
    g = torch.cuda.CUDAGraph()
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for s in sets:
                fn(s)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        with torch.cuda.graph(g):
            for i in range(calls):
                fn(sets[i % len(sets)])
        run = g.replay
    except Exception as e:  # noqa: BLE001 - reported, timed eagerly instead
        torch.cuda.synchronize()
        note = f"steady: graph capture failed ({str(e).splitlines()[0][:120]}); timed eagerly"
        g = None

        def run():
            for i in range(calls):
                fn(sets[i % len(sets)])

    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / calls)
    del g
    return statistics.median(times), note


def set_bytes(torch, inp: dict) -> int:
    return sum(v.numel() * v.element_size() for v in inp.values() if isinstance(v, torch.Tensor))


class Bench:
    def __init__(self, args, res: Results):
        import torch

        from harness import ceilings, timing
        from harness.correctness import rel_err

        self.torch, self.timing, self.rel_err, self.args, self.res = torch, timing, rel_err, args, res
        self.flusher = timing.Flusher("cuda")
        self.ceilings = ceilings.get()  # the measured copy and matmul rates the floors are taken at
        self.floor_ms = lambda floor: ceilings.floor_ms(floor, self.ceilings)
        self.l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.deadline = time.monotonic() + args.deadline_s

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def inputs(self, make, n_cold: int, min_calls: int):
        """(cold sets, steady sets, calls): steady sets exceed twice the L2 together."""
        first = make(0)
        n = max(2, math.ceil(2 * self.l2 / max(set_bytes(self.torch, first), 1)))
        n = min(n, 64)
        sets = [first] + [make(i) for i in range(1, max(n, n_cold))]
        calls = len(sets[:n]) * max(1, math.ceil(min_calls / n))
        return sets[:n_cold], sets[:n], calls

    def run(self, part, case, impls: dict, make, check, n_cold=3, min_calls=16, floor: dict | None = None):
        """Time every implementation of one case under both protocols, after a checked first call.
        floor: the task's byte and FLOP floor of the case (its reference's `floor(shape)`)."""
        torch = self.torch
        if floor is not None:
            self.res.add(part=part, case=case, impl="floor", floor_ms=self.floor_ms(floor), **floor)
        try:
            cold_sets, steady_sets, calls = self.inputs(make, n_cold, min_calls)
        except Exception as e:  # noqa: BLE001
            self.res.add(part=part, case=case, impl="inputs", error=f"{type(e).__name__}: {str(e)[:300]}")
            return
        for name, fn in impls.items():
            if self.out_of_time():
                self.res.add(part=part, case=case, impl=name, error="skipped: the run's deadline had passed")
                continue
            row = dict(part=part, case=case, impl=name)
            try:
                t0 = time.perf_counter()
                out = fn(cold_sets[0])  # compiles / autotunes
                torch.cuda.synchronize()
                row["first_call_s"] = round(time.perf_counter() - t0, 2)
                row.update(check(cold_sets[0], out))
                del out
                cold = self.timing.measure(fn, cold_sets, self.flusher)
                row["cold_ms"], row["cold_mode"] = cold["ms"], cold["mode"]
                if cold["note"]:
                    row["note"] = cold["note"]
                ms, note = steady_ms(torch, fn, steady_sets, calls)
                row["steady_ms"], row["steady_calls"], row["steady_sets"] = ms, calls, len(steady_sets)
                if note:
                    row["note"] = (row.get("note", "") + "; " + note).strip("; ")
            except Exception as e:  # noqa: BLE001 - a reference that fails is a result
                torch.cuda.synchronize()
                row["error"] = f"{type(e).__name__}: {str(e)[:600]}"
                row["traceback"] = traceback.format_exc(limit=6)[-1500:]
            self.res.add(**row)
            torch.cuda.empty_cache()


# -- the references ----------------------------------------------------------------------------
class FlashMLA:
    """FlashMLA's dense sm90 decode through the C entry points of bench/references_build.py."""

    def __init__(self, lib: Path):
        import torch

        self.torch = torch
        self.lib = ctypes.CDLL(str(lib))
        kinds = {"i": ctypes.c_int, "f": ctypes.c_float, "p": ctypes.c_void_p, "l": ctypes.c_longlong}
        self.lib.fmla_schedule.argtypes = [kinds[c] for c in "iiipppip"]  # as in GLUE, argument by argument
        self.lib.fmla_decode.argtypes = [kinds[c] for c in "iiiiifippiiplpppippppp"]
        self.meta_ints = self.lib.fmla_meta_size() // 4
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count

    def prepare(self, B, Sq, H, Skv, scale):
        torch, lib = self.torch, self.lib
        if Skv % PAGE:
            raise ValueError(f"FlashMLA takes pages of {PAGE} rows; Skv {Skv} is no multiple")
        npg, rows, dev = Skv // PAGE, Sq * H, "cuda"
        parts = max(self.sms // math.ceil(rows / 64), 1)  # FlashMLA's binding, one KV head
        seqlens = torch.full((B,), Skv, dtype=torch.int32, device=dev)
        table = torch.arange(B * npg, dtype=torch.int32, device=dev).view(B, npg)
        meta = torch.empty(parts, self.meta_ints, dtype=torch.int32, device=dev)
        splits = torch.empty(B + 1, dtype=torch.int32, device=dev)
        stream = torch.cuda.current_stream().cuda_stream
        rc = lib.fmla_schedule(B, Sq, PAGE, seqlens.data_ptr(), meta.data_ptr(), splits.data_ptr(), parts, stream)
        if rc:
            raise RuntimeError(f"FlashMLA schedule: CUDA error {rc}")

        def fn(inp):
            q, kv = inp["q"], inp["kv"]
            if not (q.is_contiguous() and kv.is_contiguous()):
                raise ValueError("FlashMLA glue takes contiguous q and kv")
            out = torch.empty(B, Sq, H, 512, dtype=q.dtype, device=dev)
            lse = torch.empty(B, rows, dtype=torch.float32, device=dev)
            lse_acc = torch.empty(B + parts, rows, dtype=torch.float32, device=dev)
            o_acc = torch.empty(B + parts, rows, 512, dtype=torch.float32, device=dev)
            rc = lib.fmla_decode(
                B,
                Sq,
                H,
                576,
                512,
                float(inp["scale"]),
                1,
                q.data_ptr(),
                kv.data_ptr(),
                B * npg,
                PAGE,
                table.data_ptr(),
                npg,
                seqlens.data_ptr(),
                meta.data_ptr(),
                splits.data_ptr(),
                parts,
                out.data_ptr(),
                lse.data_ptr(),
                lse_acc.data_ptr(),
                o_acc.data_ptr(),
                torch.cuda.current_stream().cuda_stream,
            )
            if rc:
                raise RuntimeError(f"FlashMLA decode: CUDA error {rc}")
            return out

        return fn


def flashinfer_mla(torch, B, Sq, H, Skv, scale, causal):
    """FlashInfer's BatchMLAPagedAttentionWrapper (fa3), planned once for the shape."""
    from flashinfer.mla import BatchMLAPagedAttentionWrapper, MLAPlanMetadata

    if Skv % PAGE:
        raise ValueError(f"pages of {PAGE} rows; Skv {Skv} is no multiple")
    dev, npg = "cuda", Skv // PAGE
    i32 = dict(dtype=torch.int32, device=dev)
    ws = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    w = BatchMLAPagedAttentionWrapper(ws, backend="fa3")
    meta = MLAPlanMetadata.csr(
        torch.arange(B + 1, **i32) * Sq,
        torch.arange(B + 1, **i32) * npg,
        torch.arange(B * npg, **i32),
        torch.full((B,), Skv, **i32),
    )
    w.plan(
        metadata=meta,
        num_heads=H,
        head_dim_ckv=512,
        head_dim_kpe=64,
        page_size=PAGE,
        causal=causal,
        sm_scale=scale,
        q_data_type=torch.bfloat16,
        kv_data_type=torch.bfloat16,
        query_layout="packed",
        kv_cache_layout="packed",
    )

    def fn(inp):
        q, kv = inp["q"], inp["kv"]
        o = w.run(query=q.reshape(B * Sq, H, 576), kv_cache=kv.view(B * npg, PAGE, 576))
        return o.view(B, Sq, H, 512)

    fn.workspace = ws  # kept alive with the closure
    return fn


# -- the parts ---------------------------------------------------------------------------------
def part_mla(b: Bench, root: Path, flashmla: Path | None):
    torch = b.torch
    from harness.taskspec import load_reference

    ref = load_reference(root / "tasks" / "mla")
    ours = load_module(root / "kernels" / "mla" / "kernel.py", "marathon_bench_ours_mla")
    fm, fm_err = None, None
    if flashmla:
        try:
            fm = FlashMLA(flashmla)
        except Exception as e:  # noqa: BLE001
            fm_err = f"{type(e).__name__}: {str(e)[:400]}"
    else:
        fm_err = "not built (no --flashmla library)"
    cases = [(s["name"], s) for s in ref.shapes(True) if s.get("timed")]
    for B, Sq in SERVING:
        cases.append(
            (
                f"B{B} Sq{Sq} H64 Skv8192",
                dict(name="serving", family="random", B=B, Sq=Sq, H=64, Skv=8192, scale=ref.D_QK**-0.5),
            )
        )
    for name, shape in cases:
        B, Sq, H, Skv, scale = (shape[x] for x in ("B", "Sq", "H", "Skv", "scale"))
        impls = {
            "ours": lambda inp: ours.mla_decode(inp["q"], inp["kv"], inp["scale"], dv=inp["dv"]),
            # the alternative to the default's rule for q's columns in registers: all of q read
            # from shared memory at every split length
            "ours_q_in_smem": lambda inp: ours.decode_with_config(
                inp["q"], inp["kv"], inp["scale"], inp["dv"], {"gl_qreg": 0}
            ),
            "torch_fp32 (task baseline)": lambda inp: ref.baselines(None)["torch_fp32"](
                inp["q"], inp["kv"], inp["scale"], inp["dv"]
            ),
        }
        try:
            impls["flashinfer_fa3"] = flashinfer_mla(torch, B, Sq, H, Skv, scale, causal=Sq > 1)
        except Exception as e:  # noqa: BLE001
            b.res.add(
                part="mla",
                case=name,
                impl="flashinfer_fa3",
                error=f"{type(e).__name__}: {str(e)[:600]}",
                traceback=traceback.format_exc(limit=6)[-1500:],
            )
        if fm is not None:
            try:
                impls["flashmla"] = fm.prepare(B, Sq, H, Skv, scale)
            except Exception as e:  # noqa: BLE001
                b.res.add(part="mla", case=name, impl="flashmla", error=f"{type(e).__name__}: {str(e)[:600]}")
        elif name == cases[0][0]:
            b.res.add(part="mla", case=name, impl="flashmla", error=fm_err)

        def check(inp, out):
            r = ref.attention_fp32(inp["q"], inp["kv"], inp["scale"], inp["dv"])
            e = b.rel_err(out, r)
            return {"rel_err": e, "ok": e <= ref.TOLERANCE["o"]}

        b.run(
            "mla",
            name,
            impls,
            lambda i, s=shape: ref.make_inputs(s, 2026 + 31 * i, "cuda"),
            check,
            floor=ref.floor(shape),
        )


def part_mla_prefill(b: Bench, root: Path):
    torch = b.torch
    from harness.taskspec import load_reference

    ref = load_reference(root / "tasks" / "mla-prefill")
    ours = load_module(root / "kernels" / "mla" / "kernel.py", "marathon_bench_ours_mla_p")
    for shape in [s for s in ref.shapes(True) if s.get("timed")]:
        B, S, H, scale = (shape[x] for x in ("B", "S", "H", "scale"))
        impls = {
            "ours": lambda inp: ours.mla_prefill(inp["q"], inp["kv"], inp["scale"], dv=inp["dv"]),
            "ours_q_in_smem": lambda inp: ours.prefill_with_config(
                inp["q"], inp["kv"], inp["scale"], inp["dv"], {"gl_qreg": 0}
            ),
            "torch_sdpa (task baseline)": lambda inp: ref.call(ref.baselines(None)["torch_sdpa"], inp)[0],
        }
        try:
            impls["flashinfer_fa3"] = flashinfer_mla(torch, B, S, H, S, scale, causal=True)
        except Exception as e:  # noqa: BLE001
            b.res.add(
                part="mla-prefill",
                case=shape["name"],
                impl="flashinfer_fa3",
                error=f"{type(e).__name__}: {str(e)[:600]}",
                traceback=traceback.format_exc(limit=6)[-1500:],
            )

        def check(inp, out):
            e = b.rel_err(out, ref.reference(inp)[0])
            return {"rel_err": e, "ok": e <= ref.TOLERANCE["o"]}

        b.run(
            "mla-prefill",
            shape["name"],
            impls,
            lambda i, s=shape: ref.make_inputs(s, 2026 + 31 * i, "cuda"),
            check,
            n_cold=2,
            min_calls=4,
            floor=ref.floor(shape),
        )


def part_kda(b: Bench, root: Path):
    from harness.taskspec import load_reference

    ref = load_reference(root / "tasks" / "kda")
    ours = load_module(root / "kernels" / "kda" / "kernel.py", "marathon_bench_ours_kda")
    base = ref.baselines(importlib.import_module)
    fla = {"fla_safe_gate": base["fla_safe_gate"], "fla": base["fla"]}  # the score's baseline first
    impls = {"ours": lambda inp: ref.call(ours.kda_fwd, inp)}
    for n, f in fla.items():
        impls[n] = lambda inp, f=f: ref.call(f, inp)
    # Correctness against the float32 reference on the task's untimed GPU shapes (--kda-check: FLA
    # autotunes again for each of them).
    for shape in [s for s in ref.shapes(True) if not s.get("timed") and b.args.kda_check]:
        inp = ref.make_inputs(shape, 2026, "cuda")
        r = ref.reference(inp)
        for n, fn in impls.items():
            row = dict(part="kda-check", case=shape["name"], impl=n)
            try:
                out = fn(inp)
                errs = {k: b.rel_err(o, rr) for k, o, rr in zip(ref.OUTPUT_NAMES, out, r) if rr is not None}
                row.update(rel_err=max(errs.values()), ok=all(e <= ref.TOLERANCE[k] for k, e in errs.items()))
            except Exception as e:  # noqa: BLE001
                row["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            b.res.add(**row)
    only = set(b.args.kda_shapes.split(",")) if b.args.kda_shapes else None
    for shape in [s for s in ref.shapes(True) if s.get("timed")]:
        if only and shape["name"] not in only:
            continue
        probe = ref.make_inputs(shape, 2026, "cuda")
        valid = {n: f for n, f in impls.items() if n != "fla_safe_gate" or ref.baseline_valid(n, probe)}
        del probe

        cache = {}  # our outputs for the input set last checked

        def check(inp, out, cache=cache):
            if cache.get("inp") is not inp:
                cache.update(inp=inp, outs=[o.float() if o is not None else None for o in ref.call(ours.kda_fwd, inp)])
            mine = cache["outs"]
            errs = [b.rel_err(o, m) for o, m in zip(out, mine) if m is not None]
            return {"rel_err_vs_ours": max(errs)}

        b.run(
            "kda",
            shape["name"],
            valid,
            lambda i, s=shape: ref.make_inputs(s, 2026 + 31 * i, "cuda"),
            check,
            n_cold=2,
            min_calls=8,
            floor=ref.floor(shape),
        )


# -- report ------------------------------------------------------------------------------------
def versions() -> dict:
    out = {"date": datetime.date.today().isoformat()}
    try:
        import torch
        import triton

        out.update(torch=torch.__version__, triton=triton.__version__, gpu=torch.cuda.get_device_name(0))
    except Exception:  # noqa: BLE001
        pass
    from importlib import metadata

    for dist in ("fla-core", "flashinfer-python", "apache-tvm-ffi"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    try:
        out["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
        out["nvcc"] = (
            subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=20)
            .stdout.strip()
            .splitlines()[-1]
        )
    except Exception:  # noqa: BLE001
        pass
    return out


def fmt(ms, decode: bool) -> str:
    if ms is None:
        return "-"
    return f"{1000 * ms:.1f} us" if decode else f"{ms:.3f} ms"


def markdown(rows: list[dict]) -> str:
    lines = []
    for part in ("mla", "mla-prefill", "kda"):
        prow = [r for r in rows if r["part"] == part]
        if not prow:
            continue
        impls = list(dict.fromkeys(r["impl"] for r in prow if r["impl"] not in ("inputs", "floor")))
        decode = part == "mla"
        lines += [
            f"### {part}",
            "",
            "| case | " + " | ".join(f"{i} cold | {i} steady" for i in impls) + " | floor | ours: fraction of floor |",
            "|---|" + "---|---|" * len(impls) + "---|---|",
        ]
        for case in dict.fromkeys(r["case"] for r in prow):
            cells = []
            fl = next((x.get("floor_ms") for x in prow if x["case"] == case and x["impl"] == "floor"), None)
            mine = next((x for x in prow if x["case"] == case and x["impl"] == "ours" and "error" not in x), None)
            for i in impls:
                r = next((x for x in prow if x["case"] == case and x["impl"] == i), None)
                if r is None:
                    cells += ["-", "-"]
                elif "error" in r:
                    cells += ["failed (below)", "-"]
                else:
                    bad = "" if r.get("ok", True) else " (WRONG)"
                    cells += [fmt(r.get("cold_ms"), decode) + bad, fmt(r.get("steady_ms"), decode)]
            frac = "-"
            if fl and mine and mine.get("cold_ms") and mine.get("steady_ms"):
                frac = f"{fl / mine['cold_ms']:.1%} cold, {fl / mine['steady_ms']:.1%} steady"
            cells += [fmt(fl, decode), frac]
            lines.append(f"| {case} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="mla,mla-prefill,kda")
    p.add_argument("--root", type=Path, default=REPO, help="where kernels/ and tasks/ are read (a snapshot)")
    p.add_argument("--json", type=Path)
    p.add_argument("--flashmla", type=Path, help="libflashmla_dense.so from bench/references_build.py")
    p.add_argument("--kda-shapes", default="", help="comma-separated timed KDA shape names (default: all)")
    p.add_argument(
        "--kda-check",
        action="store_true",
        help="also check every KDA implementation against the float32 reference at the task's untimed GPU shapes",
    )
    p.add_argument("--deadline-s", type=float, default=1e9, help="skip what is left after this many seconds")
    p.add_argument("--merge", nargs="*", type=Path, help="JSON files of earlier runs: print their markdown")
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    if a.merge:
        rows, meta = [], {}
        for f in a.merge:
            d = json.loads(f.read_text())
            rows += d["rows"]
            meta.update(d["meta"])
        text = "```\n" + json.dumps(meta, indent=1) + "\n```\n\n" + markdown(rows)
        if a.out:
            a.out.write_text(text)
        print(text)
        return 0
    res = Results(a.json)
    res.meta = versions()
    res.meta["commit"] = os.environ.get("MARATHON_COMMIT", "unknown")
    b = Bench(a, res)
    res.meta["ceilings"] = {k: b.ceilings[k] for k in ("copy_TBps", "bf16_TFLOPs")}
    for part in a.parts.split(","):
        try:
            if part == "mla":
                part_mla(b, a.root, a.flashmla)
            elif part == "mla-prefill":
                part_mla_prefill(b, a.root)
            elif part == "kda":
                part_kda(b, a.root)
            else:
                raise SystemExit(f"unknown part {part!r} (mla, mla-prefill, kda)")
        except Exception as e:  # noqa: BLE001
            res.add(
                part=part,
                case="-",
                impl="-",
                error=f"{type(e).__name__}: {str(e)[:600]}",
                traceback=traceback.format_exc(limit=8)[-2000:],
            )
    print(markdown(res.rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
