"""Temporary: time kernels/kda against variants (whole calls, graph replay, cold L2), and the errors
per input family of the task on the GPU. Not committed."""
import importlib.util, json, os, pathlib, subprocess, sys, time
import torch
ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import kda_dev  # noqa: E402

VARIANTS = {"before": "bench/kda_variants/a", "after": "kernels/kda", "p_bf16": "bench/kda_variants/pbf", "p_fp16": "bench/kda_variants/p16"}


def load(name, d):
    spec = importlib.util.spec_from_file_location("kda_" + name, ROOT / d / "kernel.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m


def precompile(name):
    kk = load(name, VARIANTS[name])
    for B, H in ((2, 16), (4, 16)):
        q, k, v, g, beta = kda_dev.inputs(B, 1024, H, 128, 0)
        kk.kda_fwd(q, k, v, g, beta, 128**-0.5)
        kk.kda_fwd(q, k, v, g, beta, 128**-0.5, torch.zeros(B, H, 128, 128, device="cuda"), True)
    torch.cuda.synchronize()


def main():
    if sys.argv[1] == "--precompile-one":
        precompile(sys.argv[2]); return
    if sys.argv[1] == "--precompile":
        t0 = time.time()
        ps = [subprocess.Popen([sys.executable, __file__, "--precompile-one", n]) for n in VARIANTS]
        print("precompile rcs", [p.wait() for p in ps], f"{time.time() - t0:.0f}s", flush=True); return
    mods = {n: load(n, d) for n, d in VARIANTS.items()}
    ref = kda_dev.load("kda_reference", "kernels/kda/reference.py")
    task = kda_dev.load("kda_task_ref", "tasks/kda/reference.py")
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    # errors per family at the task's GPU correctness shapes (two seeds), against float64
    for shape in task.shapes(True):
        if shape["timed"]:
            continue
        for seed in (11, 12):
            inp = task.make_inputs(shape, seed, "cuda")
            args = [inp[x] for x in ("q", "k", "v", "g", "beta")]
            h0 = inp["initial_state"]
            r64 = ref.kda_reference(*(x.double() for x in args), inp["scale"], None if h0 is None else h0.double(), True)
            r32 = ref.kda_reference(*args, inp["scale"], h0, True)
            row = dict(shape=shape["name"], seed=seed, ref32_o=kda_dev.rel(r32[0].double(), r64[0]), ref32_s=kda_dev.rel(r32[1].double(), r64[1]))
            for n in ("before", "after", "p_bf16"):
                o, s = mods[n].kda_fwd(*args, inp["scale"], h0, True)
                row[n + "_o"] = kda_dev.rel(o.double(), r64[0]); row[n + "_s"] = kda_dev.rel(s.double(), r64[1])
            print("ERR " + json.dumps(row), flush=True)
    # timing, interleaved rounds
    for B, T, H, D in kda_dev.SHAPES:
        q, k, v, g, beta = kda_dev.inputs(B, T, H, D, 0)
        res = {n: [] for n in mods}
        for rnd in range(3):
            for n, kk in mods.items():
                res[n].append(kda_dev.time_graph(lambda kk=kk: kk.kda_fwd(q, k, v, g, beta, D**-0.5), reps=30))
        row = dict(B=B, T=T, H=H, **{n: min(x) for n, x in res.items()})
        row["prep_before"] = kda_dev.time_graph(lambda: mods["before"].kda_prepare(q, k, v, g, beta, D**-0.5))
        row["prep_after"] = kda_dev.time_graph(lambda: mods["after"].kda_prepare(q, k, v, g, beta, D**-0.5))
        print("TIME " + json.dumps(row), flush=True)
    # a strong-decay input at the headline shape: the fallback's cost
    B, T, H, D = kda_dev.SHAPES[0]
    q, k, v, g, beta = kda_dev.inputs(B, T, H, D, 0)
    for name, gg in (("g=-2", torch.full_like(g, -2.0)), ("1% at -100", torch.where(torch.rand_like(g) < 0.01, -100.0, g))):
        t = kda_dev.time_graph(lambda: mods["after"].kda_fwd(q, k, v, gg, beta, D**-0.5))
        o, _ = mods["after"].kda_fwd(q, k, v, gg, beta, D**-0.5)
        print("FALLBACK " + json.dumps(dict(case=name, ms=t, finite=bool(torch.isfinite(o).all()))), flush=True)


main()
