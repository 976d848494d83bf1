"""Builds the public MLA kernels that bench/references.py measures, outside the repository's code.

    python bench/references_build.py flashmla --src FLASHMLA_CHECKOUT --cutlass CUTLASS_CHECKOUT --out DIR
    python bench/references_build.py flashinfer --out DIR      (flashinfer-python importable)
    python bench/references_build.py flashinfer-pack --out DIR (the same, for a GPU machine)

Measurement only: what this builds is never importable by a candidate (the tasks ban flash_mla and
flashinfer), and no code of either project is kept in this repository.

flashmla: FlashMLA's dense Hopper decode (the sm90a split-KV kernel, its scheduler and its combine
kernel) compiled with nvcc into DIR/libflashmla_dense.so together with a small C entry point
written here (GLUE below), which fills FlashMLA's parameter structs the way its PyTorch binding
does for one KV head (the MLA latent) and contiguous caches. It needs no PyTorch headers, so the
library loads into any Python through ctypes. Only the dense decode is built: FlashMLA's dense
prefill is sm100-only and its sparse kernels take top-k indices.

flashinfer: FlashInfer's fa3 (Hopper) batch MLA module for bf16, latent 512 + RoPE 64, built
ahead of time into DIR/<module>/<module>.so; copied into flashinfer/data/aot/ of an installed
flashinfer, FlashInfer loads it instead of compiling it.

flashinfer-pack: the installed flashinfer's Python files, the headers its JIT modules include and
the batch MLA sources, as DIR/flashinfer-site.tar.xz (about 16 MB: the wheel is 101 MB, more than a
device call carries). scripts/gpu-check unpacks it onto PYTHONPATH with DIR/aot beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

GLUE = r"""
// C entry points over FlashMLA's dense sm90 decode, for one KV head and contiguous tensors:
// q [b, s_q, h_q, d], kcache [num_blocks, page, 1, d], out [b, s_q, h_q, d_v] bf16.
#include <cuda_runtime_api.h>
#include "params.h"
#include "sm90/decode/dense/splitkv_mla.h"
#include "smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.h"
#include "smxx/decode/combine/combine.h"

extern "C" int fmla_meta_size() { return (int)sizeof(DecodingSchedMeta); }

// The split schedule for b requests of s_q queries over seqlens_k; 5 is the fixed overhead in
// blocks that FlashMLA's binding uses.
extern "C" int fmla_schedule(int b, int s_q, int page, int* seqlens_k, void* meta, int* num_splits,
                             int num_sm_parts, void* stream) {
    GetDecodeSchedMetaParams p = {b, s_q, page, 5, -1, -1, nullptr, nullptr, seqlens_k,
                                  (DecodingSchedMeta*)meta, num_splits, num_sm_parts,
                                  (cudaStream_t)stream};
    smxx::decode::run_get_decoding_sched_meta_kernel(p);
    return (int)cudaGetLastError();
}

extern "C" int fmla_decode(int b, int s_q, int h_q, int d, int d_v, float scale, int causal,
                           void* q, void* kcache, int num_blocks, int page, int* block_table,
                           long long block_table_stride, int* seqlens_k, void* meta, int* num_splits,
                           int num_sm_parts, void* out, float* lse, float* lse_accum, float* o_accum,
                           void* stream) {
    const int rows = s_q * h_q;  // q rows per KV head
    DenseAttnDecodeParams p{};
    p.b = b; p.s_q = s_q; p.q_seq_per_hk = rows; p.seqlens_k_ptr = seqlens_k;
    p.h_q = h_q; p.h_k = 1; p.num_blocks = num_blocks; p.q_head_per_hk = h_q;
    p.is_causal = causal && s_q > 1; p.d = d; p.d_v = d_v;
    p.scale_softmax = scale; p.scale_softmax_log2 = scale * 1.4426950408889634f;
    p.q_ptr = q; p.k_ptr = kcache; p.o_ptr = out; p.softmax_lse_ptr = lse;
    p.q_batch_stride = (long long)rows * d; p.q_row_stride = d; p.q_head_stride = d;
    p.k_batch_stride = (long long)page * d; p.k_row_stride = d; p.k_head_stride = d;
    p.o_batch_stride = (long long)rows * d_v; p.o_row_stride = d_v; p.o_head_stride = (long long)rows * d_v;
    p.block_table = block_table; p.block_table_batch_stride = block_table_stride; p.page_block_size = page;
    p.tile_scheduler_metadata_ptr = (DecodingSchedMeta*)meta; p.num_sm_parts = num_sm_parts;
    p.num_splits_ptr = num_splits; p.total_num_splits = b + num_sm_parts;
    p.softmax_lseaccum_ptr = lse_accum; p.oaccum_ptr = o_accum; p.stream = (cudaStream_t)stream;
    sm90::run_flash_splitkv_mla_kernel<cutlass::bfloat16_t>(p);
    CombineParams c = {b, s_q, h_q, d_v,
                       lse, out, rows, h_q, h_q * s_q * d_v, h_q * d_v, d_v,
                       lse_accum, o_accum, rows, h_q, h_q * s_q * d_v, h_q * d_v, d_v,
                       (DecodingSchedMeta*)meta, num_splits, num_sm_parts, nullptr, (cudaStream_t)stream};
    smxx::decode::run_flash_mla_combine_kernel<cutlass::bfloat16_t>(c);
    return (int)cudaGetLastError();
}
"""

FLASHMLA_SOURCES = (
    "csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu",
    "csrc/smxx/decode/combine/combine.cu",
    "csrc/sm90/decode/dense/instantiations/bf16.cu",
)
# FlashMLA's own nvcc flags (its setup.py), sm90a only, one thread per nvcc.
NVCC_FLAGS = [
    "-O3",
    "-std=c++20",
    "-DNDEBUG",
    "-D_USE_MATH_DEFINES",
    "-DFLASH_MLA_DISABLE_FP16",
    "-Wno-deprecated-declarations",
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "--expt-relaxed-constexpr",
    "--expt-extended-lambda",
    "--use_fast_math",
    "-gencode",
    "arch=compute_90a,code=sm_90a",
    "-Xcompiler",
    "-fPIC",
]


def build_flashmla(src: Path, cutlass: Path, out: Path, nvcc: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    glue = out / "fmla_glue.cu"
    glue.write_text(GLUE)
    inc = [
        src / "csrc",
        src / "csrc" / "kerutils" / "include",
        src / "csrc" / "sm90",
        cutlass / "include",
        cutlass / "tools" / "util" / "include",
    ]
    incf = [f"-I{p}" for p in inc]
    objs = []
    for s in [*(src / x for x in FLASHMLA_SOURCES), glue]:
        o = out / (s.stem + ".o")
        if not o.exists() or o.stat().st_mtime < s.stat().st_mtime:
            cmd = [nvcc, *NVCC_FLAGS, *incf, "-c", str(s), "-o", str(o)]
            print(" ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        objs.append(str(o))
    lib = out / "libflashmla_dense.so"
    subprocess.run([nvcc, "-shared", "-gencode", "arch=compute_90a,code=sm_90a", *objs, "-o", str(lib)], check=True)
    return lib


def build_flashinfer(out: Path) -> Path:
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", "9.0a")
    import torch
    from flashinfer.jit.attention.modules import gen_batch_mla_module

    spec = gen_batch_mla_module("fa3", torch.bfloat16, torch.bfloat16, torch.bfloat16, torch.int32, 512, 64, False)
    spec.build(verbose=True)
    dest = out / spec.name
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(spec.jit_library_path, dest / f"{spec.name}.so")
    return dest / f"{spec.name}.so"


def pack_flashinfer(out: Path) -> Path:
    import importlib.util
    import tarfile

    spec = importlib.util.find_spec("flashinfer")  # found, not imported (it needs a GPU's libraries)
    if spec is None or spec.origin is None:
        raise SystemExit("flashinfer-pack: flashinfer is not importable here (pip install flashinfer-python)")
    pkg = Path(spec.origin).resolve().parent
    keep_dirs = ("data/include", "data/cutlass/include", "data/cccl", "data/spdlog")
    out.mkdir(parents=True, exist_ok=True)
    dest = out / "flashinfer-site.tar.xz"
    with tarfile.open(dest, "w:xz") as tar:
        for f in sorted(pkg.rglob("*")):
            rel = f.relative_to(pkg).as_posix()
            if not f.is_file() or "__pycache__" in rel:
                continue
            in_data = rel.startswith("data/")
            wanted = (
                (f.suffix == ".py" and not in_data)
                or any(rel.startswith(d + "/") for d in keep_dirs)
                or (rel.startswith("data/csrc/") and ("batch_mla" in f.name or f.suffix in (".h", ".cuh")))
            )
            if wanted:
                tar.add(f, arcname=f"flashinfer/{rel}")
    return dest


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["flashmla", "flashinfer", "flashinfer-pack"])
    p.add_argument("--src", type=Path, help="a FlashMLA checkout (flashmla)")
    p.add_argument("--cutlass", type=Path, help="a CUTLASS checkout at FlashMLA's submodule commit (flashmla)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    a = p.parse_args()
    if a.what == "flashmla":
        if a.src is None or a.cutlass is None:
            p.error("flashmla needs --src and --cutlass")
        print(build_flashmla(a.src.resolve(), a.cutlass.resolve(), a.out.resolve(), a.nvcc))
    elif a.what == "flashinfer-pack":
        print(pack_flashinfer(a.out.resolve()))
    else:
        print(build_flashinfer(a.out.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
