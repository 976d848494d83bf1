"""What ran during the candidate's call, and whether the task's rules allow it.

Inputs are plain data (kernel records from the profiler's trace, the Triton launches the harness
saw, CPU-side operator names), so every rule is tested without a GPU.

Rules:
- ``library_kernel``: a GPU kernel from a vendor or third-party library did work (cuBLAS/cuBLASLt
  GEMMs, CUTLASS, cuDNN, flash/fused attention kernels);
- ``library_compute``: a PyTorch operator that does the task's compute for the candidate
  (matmul family, einsum, SDPA, triangular solves);
- ``foreign_kernel``: a Triton kernel defined outside the candidate folder (torch.compile's, a
  library's);
- ``baseline_kernel``: a kernel the baseline itself launches;
- ``no_own_kernel``: no kernel of the candidate's own ran at all;
- ``compute_not_own``: most of the GPU time went to kernels that are not the candidate's;
- ``other_stream``: kernels ran on a stream other than the caller's (work the caller's timer does
  not see).
"""

from __future__ import annotations

import dataclasses
import re

from .static_check import Violation

VENDOR_KERNEL = re.compile(
    r"gemm|cublas|cutlass|nvjet|xmma|cudnn|flash|fmha|sdpa|attention|_sm90_|sm80_|cusparse|"
    r"magma|cusolver|trsm|getrf|potrf|^triton_(poi|red|per|tem|mm|bmm|for)_",
    re.IGNORECASE,
)
ATEN_KERNEL = re.compile(
    r"at::|elementwise_kernel|reduce_kernel|Memset|Memcpy|memcpy|memset|CatArrayBatched|"
    r"index_elementwise|gatherTopK|radixSort|sort_|scan_",
    re.IGNORECASE,
)
ATEN_COMPUTE_OPS = re.compile(
    r"^aten::(mm|bmm|addmm|addbmm|baddbmm|matmul|einsum|linear|dot|vdot|mv|addmv|tensordot|"
    r"_scaled_mm|_int_mm|conv\w*|_convolution|cudnn\w*|scaled_dot_product\w*|_scaled_dot_product\w*|"
    r"_flash_attention\w*|_efficient_attention\w*|_cudnn_attention\w*|linalg_\w*|triangular_solve|"
    r"cholesky\w*|lu\w*|_linalg\w*|chain_matmul|kron|outer|ger)$"
)
# The fraction of the call's GPU time that must be in the candidate's own kernels.
MIN_OWN_FRACTION = 0.5


@dataclasses.dataclass(frozen=True)
class Kernel:
    name: str
    stream: int
    dur_us: float
    ts: float = 0.0


@dataclasses.dataclass(frozen=True)
class TritonLaunch:
    name: str
    file: str


def parse_chrome_trace(trace: dict) -> tuple[list[Kernel], list[str]]:
    """Kernels (with stream and duration) and CPU operator names from torch.profiler's trace."""
    kernels, ops = [], []
    for ev in trace.get("traceEvents", []):
        cat = str(ev.get("cat", "")).lower()
        if ev.get("ph") != "X":
            continue
        if cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            args = ev.get("args", {}) or {}
            kernels.append(
                Kernel(
                    str(ev.get("name", "")),
                    int(args.get("stream", -1)),
                    float(ev.get("dur", 0.0)),
                    float(ev.get("ts", 0.0)),
                )
            )
        elif cat == "cpu_op":
            ops.append(str(ev.get("name", "")))
    kernels.sort(key=lambda k: k.ts)
    return kernels, ops


def classify(name: str, own_names: set[str]) -> str:
    """'own' (the candidate's Triton or CUDA kernel), 'vendor', or 'aten' (PyTorch's glue)."""
    if name in own_names:
        return "own"
    if VENDOR_KERNEL.search(name):
        return "vendor"
    if ATEN_KERNEL.search(name):
        return "aten"
    return "own"


def check(
    kernels: list[Kernel],
    cpu_ops: list[str],
    triton_launches: list[TritonLaunch],
    candidate_dir: str,
    main_stream: int | None,
    baseline_kernels: set[str] | None = None,
    marker_names: tuple[str, ...] = (),
) -> list[Violation]:
    out: list[Violation] = []
    own_triton = {t.name for t in triton_launches if t.file.startswith(candidate_dir)}
    foreign = sorted({f"{t.name} ({t.file})" for t in triton_launches if not t.file.startswith(candidate_dir)})
    if foreign:
        out.append(
            Violation("foreign_kernel", "Triton kernels not defined in the candidate ran: " + ", ".join(foreign[:5]))
        )
    compute_ops = sorted({op for op in cpu_ops if ATEN_COMPUTE_OPS.match(op)})
    if compute_ops:
        out.append(
            Violation(
                "library_compute",
                "PyTorch operators did the compute: " + ", ".join(compute_ops[:8]) + " (write your own kernels)",
            )
        )
    kernels = [k for k in kernels if k.name not in marker_names]
    vendor = sorted({k.name for k in kernels if classify(k.name, own_triton) == "vendor"})
    if vendor:
        out.append(Violation("library_kernel", "library kernels ran: " + ", ".join(n[:80] for n in vendor[:5])))
    if baseline_kernels:
        dup = sorted({k.name for k in kernels if k.name in baseline_kernels and classify(k.name, set()) == "own"})
        if dup:
            out.append(Violation("baseline_kernel", "the baseline's own kernels ran: " + ", ".join(dup[:5])))
    if main_stream is not None:
        others = sorted({k.stream for k in kernels if k.stream != main_stream})
        if others:
            out.append(
                Violation(
                    "other_stream",
                    f"kernels ran on stream(s) {others}, not the caller's stream {main_stream}: "
                    "the caller's timer would not see that work",
                )
            )
    has_own = bool(own_triton) or any(classify(k.name, own_triton) == "own" for k in kernels)
    if not has_own:
        out.append(Violation("no_own_kernel", "no kernel of the candidate's own (Triton or CUDA) ran during the call"))
    total = sum(k.dur_us for k in kernels)
    if kernels and total > 0:
        own_t = sum(k.dur_us for k in kernels if classify(k.name, own_triton) == "own")
        if own_t / total < MIN_OWN_FRACTION and has_own:
            out.append(
                Violation(
                    "compute_not_own",
                    f"only {100 * own_t / total:.0f}% of the call's GPU time was in the candidate's own kernels "
                    f"(at least {100 * MIN_OWN_FRACTION:.0f}% required)",
                )
            )
    return out


def check_floor(ms: float, floor_ms: float, slack: float = 1.25) -> list[Violation]:
    """A time below the byte/FLOP floor (with slack for measurement noise) is not a win."""
    if floor_ms > 0 and ms > 0 and ms * slack < floor_ms:
        return [
            Violation(
                "faster_than_floor",
                f"measured {ms * 1e3:.2f} us but the byte/FLOP floor is {floor_ms * 1e3:.2f} us at the measured "
                "ceilings: the timed call cannot have done the work (cached result, skipped work, or "
                "work outside the timed stream)",
            )
        ]
    return []
