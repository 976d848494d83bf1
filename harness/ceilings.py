"""Measured ceilings of this GPU: device-to-device copy bandwidth and bf16 matmul rate.

Measured once per device and cached in a small JSON file (MARATHON_CACHE_DIR, else
~/.cache/marathon), keyed by the device's name and the torch version. The byte/FLOP floor of a
task and the "fraction of the floor" a kernel reaches are computed against these, not datasheets.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path


def cache_dir() -> Path:
    d = os.environ.get("MARATHON_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "marathon"


def _key(name: str, torch_version: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", f"{name}-{torch_version}").strip("_")


def measure(device="cuda") -> dict:
    import torch

    from .timing import _elapsed, _Event, _record, _synchronize

    def bench(fn, reps):
        for _ in range(3):
            fn()
        _synchronize()
        a, b = _Event(enable_timing=True), _Event(enable_timing=True)
        _record(a)
        for _ in range(reps):
            fn()
        _record(b)
        _synchronize()
        return _elapsed(a, b) / reps

    def copy_rate():
        n = 1 << 30
        x = torch.empty(n, dtype=torch.uint8, device=device).random_(0, 255)
        y = torch.empty_like(x)
        return 2 * n / (bench(lambda: y.copy_(x), 20) * 1e-3) / 1e12

    def matmul_rate():
        m = 8192
        a = torch.randn(m, m, device=device, dtype=torch.bfloat16)
        b = torch.randn_like(a)
        return 2 * m**3 / (bench(lambda: a @ b, 10) * 1e-3) / 1e12

    copy_tbps = copy_rate()
    tflops = matmul_rate()
    torch.cuda.empty_cache()
    return {"copy_TBps": copy_tbps, "bf16_TFLOPs": tflops}


def get(device="cuda") -> dict:
    """Cached ceilings for this device, measuring them the first time."""
    import torch

    name = torch.cuda.get_device_name(device)
    path = cache_dir() / f"ceilings-{_key(name, torch.__version__)}.json"
    try:
        data = json.loads(path.read_text())
        if data.get("device") == name and data.get("copy_TBps", 0) > 0 and data.get("bf16_TFLOPs", 0) > 0:
            data["cached"] = True
            return data
    except (OSError, ValueError):
        pass
    data = measure(device)
    data["device"] = name
    data["torch"] = torch.__version__
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(path)
    except OSError:
        pass
    data["cached"] = False
    return data


def floor_ms(floor: dict, ceil: dict) -> float:
    """The least time the work can take at the measured ceilings (bytes or FLOPs, whichever binds)."""
    t_bytes = floor.get("bytes", 0) / (ceil["copy_TBps"] * 1e12) * 1e3
    t_flops = floor.get("flops", 0) / (ceil["bf16_TFLOPs"] * 1e12) * 1e3
    return max(t_bytes, t_flops)
