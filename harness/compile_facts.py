"""What the compiler made of a candidate's Triton/Gluon kernels, read from the compiled kernels
themselves (no hardware counter): registers per thread, stack bytes per thread (local memory, where
spills go), shared memory per program, warps and pipeline stages.

The registers and stack come from ``cuobjdump -res-usage`` on the kernel's cubin (Triton's own
cuobjdump, the numbers the GPU loads), else from what the driver reported when Triton loaded it
(``n_regs``, ``n_spills``).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

_RES = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)")


def _cuobjdump() -> str | None:
    try:
        import triton

        p = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
        return str(p) if p.is_file() else None
    except Exception:  # noqa: BLE001 - no Triton, no facts
        return None


def res_usage(cubin: bytes, tool: str | None = None) -> dict | None:
    """REG and STACK (bytes/thread) and static SHARED of a cubin, by cuobjdump -res-usage."""
    tool = tool or _cuobjdump()
    if not tool or not cubin:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        try:
            p = subprocess.run([tool, "-res-usage", f.name], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
    m = _RES.search(p.stdout)
    return dict(regs=int(m.group(1)), stack=int(m.group(2)), shared_static=int(m.group(3))) if m else None


def facts(compiled: list) -> list[dict]:
    """One entry per distinct compiled kernel (by name and metadata), in launch order."""
    out, seen = [], set()
    for ck in compiled:
        md = getattr(ck, "metadata", None)
        name = getattr(md, "name", None) or getattr(ck, "name", "?")
        key = (name, getattr(md, "hash", None) or id(ck))
        if key in seen:
            continue
        seen.add(key)
        d = {"name": name}
        for k in ("num_warps", "num_stages", "num_ctas", "shared"):
            v = getattr(md, k, None)
            if isinstance(v, int):
                d[k] = v
        asm = getattr(ck, "asm", None) or {}
        ru = res_usage(asm.get("cubin", b"")) if isinstance(asm, dict) else None
        if ru:
            d["regs"], d["stack"] = ru["regs"], ru["stack"]
        else:
            for k, to in (("n_regs", "regs"), ("n_spills", "spills")):
                v = getattr(ck, k, None)
                if isinstance(v, int):
                    d[to] = v
        out.append(d)
    return out
