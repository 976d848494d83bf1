"""Compile the kernels for an H100/H200 (sm_90a) on any machine, no GPU needed, and report what the
compiler made of them: registers, stack (spills), shared memory, SASS instructions, the instructions
in each loop's body, the most common opcodes. Kernels: the KDA intra kernel (intra, and
intra_strong: its STRONG form, for the gates its fast form cannot take) and scan kernel, the KDA
scans in Gluon (scan_gl, scan_glt), the MLA `tl` prefill (prefill) and the Gluon MLA kernel as the
decode (decode_gl) and as the prefill (prefill_gl). Triton's own ptxas and cuobjdump do the
work, so the numbers match what the GPU loads.

    python3 bench/sass_report.py                       # every kernel at its default knobs
    git show REV:kernels/kda/kernel.py > /tmp/kda_rev.py
    python3 bench/sass_report.py --kda /tmp/kda_rev.py intra   # the KDA kernels of another file
    python3 bench/sass_report.py intra '{"maxnreg": 0}' scan '{"BV": 64}'
    python3 bench/sass_report.py --dump intra /tmp/intra.sass
    python3 bench/sass_report.py --dump scan '{"BV": 64}' /tmp/scan64.sass
    python3 bench/sass_report.py --dump prefill /tmp/prefill.sass
    python3 bench/sass_report.py --json scan           # one JSON object a kernel

Each kernel name may be followed by a JSON object of overrides: constexpr arguments by name (BK,
BV, TMA, ...) and the launch options num_warps, num_stages, maxnreg. Integer arguments and
pointers are compiled as 16-divisible, as they are at the task shapes. Run it with
TRITON_INTERPRET unset: a Triton imported for its interpreter cannot compile for the GPU.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
TARGET = GPUTarget("cuda", 90, 32)


def _load(name: str, rel: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kda_specs(kk) -> dict:
    """name -> (jit function, argument types, constexpr defaults, launch options)."""
    c = kk.CONFIG
    bk, bw, bv = c["bk"], c["bw"], c["bv"] or 32
    bf, f32 = "*bf16", "*fp32"
    return {
        "intra": (
            kk._kda_intra,
            lambda a: {
                **dict.fromkeys(("q", "k", "beta", "v", "qg_out", "kd_out", "aqk_out", "w_out", "u_out"), bf),
                **dict.fromkeys(("ctab", "flags"), "*i32"),
                **dict.fromkeys(("g", "gc_out"), f32),
                "scale": "fp32",
                **{n: f"tensordesc<bf16[1,64,{a['BK']}]>" for n in ("QD", "KD")},
                "GD": f"tensordesc<fp32[1,64,{a['BK']}]>",
                **{n: f"tensordesc<bf16[64,{a['BK']}]>" for n in ("QGD", "KDD")},
                "AQD": "tensordesc<bf16[64,64]>",
                "VD": f"tensordesc<bf16[1,64,{a['BW']}]>",
                "UD": f"tensordesc<bf16[64,{a['BW']}]>",
            },
            dict(K=128, V=128, BK=bk, BW=bw, TMA=True, VARLEN=False, STRONG=False, INTERP=False),
            dict(num_warps=c["prep_warps"], num_stages=c["intra_stages"], maxnreg=c["intra_nreg"]),
        ),
        "scan": (
            kk._kda_scan,
            lambda a: {
                **dict.fromkeys(("qg", "kd", "w", "u", "aqk", "o"), bf),
                **dict.fromkeys(("gc", "h0", "hT"), f32),
                **dict.fromkeys(("ctab", "cseq"), "*i32"),
                **{n: "tensordesc<bf16[64,128]>" for n in ("WD", "QGD", "KDD")},
                "AQD": "tensordesc<bf16[64,64]>",
                "UD": f"tensordesc<bf16[64,{a['BV']}]>",
                "OD": f"tensordesc<bf16[1,64,{a['BV']}]>",
            },
            dict(K=128, V=128, BV=bv, HAS_H0=False, STORE_HT=False, TMA=True, VARLEN=False, INTERP=False),
            dict(num_warps=c["scan_warps"], num_stages=c["scan_stages"], maxnreg=0),
        ),
    }


def _gluon_desc(shape, dtype="bf16", layout=None) -> str:
    """The signature type of a Gluon tensor descriptor (bf16 with the default shared layout unless
    told otherwise)."""
    from triton.experimental.gluon import language as gl

    layout = layout or gl.NVMMASharedLayout.get_default_for(shape, gl.bfloat16)
    return f"tensordesc<{dtype}[{','.join(map(str, shape))}],{layout!r}>"


def _kda_gluon_specs(sg, c) -> dict:
    """The Gluon scans (kernels/kda/scan_gluon.py) at the task shape and 3 stages: S (BV 32) and
    S^T (BV 64)."""

    from triton.experimental.gluon import language as gl

    def types(a):
        return {
            **{n: _gluon_desc([64, 128]) for n in ("WD", "QD", "KD")},
            "AD": _gluon_desc([64, 64]),
            "UD": _gluon_desc([64, a["BV"]]),
            "GD": _gluon_desc([1, 128], "fp32", gl.NVMMASharedLayout(0, 32)),
            **dict.fromkeys(("h0", "hT"), "*fp32"),
            "o": "*bf16",
        }

    consts = dict(K=128, V=128, STAGES=c["scan_stages"], HAS_H0=False, STORE_HT=False)
    return {
        "scan_gl": (
            sg._kda_scan_gl,
            lambda a: {**types(a), "OD": _gluon_desc([1, 64, a["BV"]])},
            dict(consts, BV=c["bv"] or 32, O_TMA=True),
            dict(num_warps=4, maxnreg=0),
        ),
        "scan_glt": (
            sg._kda_scan_glt,
            lambda a: {**types(a), "OD": _gluon_desc([1, 64, 64])},
            dict(consts, BV=64, O_TMA=True),
            dict(num_warps=4, maxnreg=0),
        ),
    }


def _mla_specs(mk) -> dict:
    """The MLA prefill kernel at the task's shape (D 576 = 512 + 64) and its default knobs."""
    c = mk.PREFILL_CONFIG
    return {
        "prefill": (
            mk._prefill_kernel,
            lambda a: {"Q": "*bf16", "KV": "*bf16", "O": "*bf16", "scale_log2": "fp32"},
            dict(
                BLOCK_M=c["BLOCK_M"],
                BLOCK_N=c["BLOCK_N"],
                DV=512,
                D_PE=64,
                INTERP=False,
            ),  # fmt: skip
            dict(num_warps=c["num_warps"], num_stages=c["num_stages"], maxnreg=0),
        ),
    }


def _mla_gluon_specs(dg, mk) -> dict:
    """The Gluon MLA kernel (kernels/mla/decode_gluon.py) at the tasks' shapes: the decode at Sq 1
    (BLOCK_N 64, 1 stage, 4 slices, q in shared memory), and the prefill at its default knobs (one
    split over S 8192: 128 tiles, q's first columns in registers)."""

    def types(a):
        return {
            "QV": _gluon_desc([1, 64, 512 // a["KS"]]),
            "QP": _gluon_desc([1, 64, 64]),
            "OD": _gluon_desc([1, 64, 512]),
            "KVV": _gluon_desc([a["BLOCK_N"], 512 // a["KS"]]),
            "KVP": _gluon_desc([a["BLOCK_N"], 64]),
            "LSE": "*fp32",
            "scale_log2": "fp32",
        }

    c = mk.PREFILL_CONFIG
    return {
        "decode_gl": (
            dg._mla_decode_gl,
            types,
            dict(BLOCK_N=64, DV=512, D_PE=64, STAGES=1, SPLIT=True, KS=4, QREG=0),
            dict(num_warps=8, maxnreg=0),
        ),
        "prefill_gl": (
            dg._mla_decode_gl,
            types,
            dict(
                BLOCK_N=64,
                DV=512,
                D_PE=64,
                STAGES=c["gl_stages"],
                SPLIT=False,
                KS=c["gl_kslices"],
                QREG=mk.gl_qreg(c["gl_qreg"], 8192 // 64, c["gl_stages"], 64 + 512 // c["gl_kslices"]),
            ),  # fmt: skip
            dict(num_warps=8, maxnreg=0),
        ),
    }


def specs(kda: str = "kernels/kda/kernel.py") -> dict:
    kk = _load("kda_kernel", kda)
    kda_specs = _kda_specs(kk)
    fn, types, consts, opts = kda_specs["intra"]
    kda_specs["intra_strong"] = (fn, types, dict(consts, STRONG=True), opts)
    mk = _load("mla_kernel", "kernels/mla/kernel.py")
    return {
        **kda_specs,
        **_kda_gluon_specs(_load("kda_scan_gluon", "kernels/kda/scan_gluon.py"), kk.CONFIG),
        **_mla_specs(mk),
        **_mla_gluon_specs(_load("mla_decode_gluon", "kernels/mla/decode_gluon.py"), mk),
    }


def compile_kernel(name: str, overrides: dict | None = None, kda: str = "kernels/kda/kernel.py"):
    """Compile one kernel for sm_90a (the KDA kernels from the file kda); returns Triton's compiled
    kernel (asm["cubin"], metadata)."""
    fn, types, consts, opts = specs(kda)[name]
    ov = dict(overrides or {})
    opts = {k: ov.pop(k, v) for k, v in opts.items()}
    unknown = set(ov) - set(consts)
    if unknown:
        raise SystemExit(f"sass_report: {name} has no constexpr {sorted(unknown)}; it has {sorted(consts)}")
    consts = {**consts, **ov}
    ptr = types(consts)
    sig = {n: "constexpr" if n in consts else ptr.get(n, "i32") for n in fn.arg_names}
    attrs = {
        (i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names) if sig[n].startswith("*") or sig[n] == "i32"
    }
    if fn.is_gluon():
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        Source = ASTSource
    src = Source(fn=fn, signature=sig, constexprs={n: consts[n] for n in fn.arg_names if n in consts}, attrs=attrs)
    if not opts.get("maxnreg"):
        opts.pop("maxnreg", None)
    return triton.compile(src, target=TARGET, options=opts)


def _cuobjdump(ck, flag: str) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(ck.asm["cubin"])
        f.flush()
        return subprocess.run([str(BIN / "cuobjdump"), flag, f.name], capture_output=True, text=True, check=True).stdout


def resources(ck) -> dict:
    """Registers, stack bytes (spills), shared memory bytes, SASS instruction count, top opcodes,
    and the instructions in the body of each loop (a backward branch before the last EXIT; the
    blocks after it are out-of-line paths and traps), in code order."""
    ru = re.search(r"REG:(\d+) STACK:(\d+)", _cuobjdump(ck, "-res-usage"))
    sass = _cuobjdump(ck, "-sass")
    ins = [
        (int(m.group(1), 16), m.group(2), m.group(3))
        for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", sass)
    ]
    ops = collections.Counter(op.split(".")[0] for _, op, _ in ins)
    last_exit = max(a for a, op, _ in ins if op == "EXIT")
    loops = []
    for a, op, rest in ins:
        t = re.match(r"\s*(0x[0-9a-f]+)", rest) if op == "BRA" and a < last_exit else None
        if t and int(t.group(1), 16) < a:
            loops.append(sum(1 for x, _, _ in ins if int(t.group(1), 16) <= x <= a))
    return dict(
        registers=int(ru.group(1)),
        stack=int(ru.group(2)),
        shared=ck.metadata.shared,
        instructions=len(ins),
        loops=loops,
        top=ops.most_common(10),
    )


def main(argv: list[str]) -> int:
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise SystemExit("sass_report: compiles for the GPU; run it with TRITON_INTERPRET unset")
    as_json = argv[:1] == ["--json"]
    if as_json:
        argv = argv[1:]
    kda = "kernels/kda/kernel.py"
    if argv[:1] == ["--kda"]:
        if len(argv) < 2:
            raise SystemExit("usage: sass_report.py [--json] [--kda FILE] ...")
        kda, argv = argv[1], argv[2:]
    if argv[:1] == ["--dump"]:
        if len(argv) not in (3, 4):
            raise SystemExit("usage: sass_report.py --dump KERNEL [OVERRIDES] FILE")
        ov = json.loads(argv[2]) if len(argv) == 4 else {}
        pathlib.Path(argv[-1]).write_text(_cuobjdump(compile_kernel(argv[1], ov, kda), "-sass"))
        return 0
    jobs, i = [], 0
    names = list(specs(kda))
    while i < len(argv):
        if argv[i] not in names:
            raise SystemExit(f"sass_report: unknown kernel {argv[i]!r}; known: {', '.join(names)}")
        ov = json.loads(argv[i + 1]) if i + 1 < len(argv) and argv[i + 1].startswith("{") else {}
        jobs.append((argv[i], ov))
        i += 2 if ov or (i + 1 < len(argv) and argv[i + 1].startswith("{")) else 1
    for name, ov in jobs or [(n, {}) for n in names]:
        ck = compile_kernel(name, ov, kda)
        r = resources(ck)
        if as_json:
            print(json.dumps(dict(kernel=name, overrides=ov, num_warps=ck.metadata.num_warps, **r)))
            continue
        top = ", ".join(f"{k} {v}" for k, v in r["top"])
        print(
            f"{name} {json.dumps(ov) if ov else '(defaults)'}: {r['registers']} registers, {r['stack']} B stack, "
            f"{r['shared']} B shared, {r['instructions']} instructions, loop bodies "
            f"{', '.join(map(str, r['loops'])) or 'none'} ({top})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
