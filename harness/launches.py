"""Records which Triton kernels are launched (name and defining file) while recording is on.

Installed in the evaluation child before the candidate is imported: it wraps the launch path of
compiled kernels (JITFunction.run) and of the CPU interpreter (InterpretedFunction.run). The
kernel rules use it to tell the candidate's own kernels from anyone else's.
"""

from __future__ import annotations

from .kernel_rules import TritonLaunch


class LaunchRecorder:
    def __init__(self):
        self.active = False
        self.launches: list[TritonLaunch] = []
        self.keep_compiled = False  # profile mode: keep each launch's compiled kernel too
        self.compiled: list = []

    def start(self):
        self.launches = []
        self.active = True

    def stop(self) -> list[TritonLaunch]:
        self.active = False
        return list(self.launches)

    def _wrap(self, cls):
        orig = cls.run
        if getattr(orig, "_marathon_recorder", False):
            return
        rec = self

        def run(self_, *args, **kwargs):
            if rec.active and not kwargs.get("warmup", False):
                fn = getattr(self_, "fn", None)
                code = getattr(fn, "__code__", None)
                rec.launches.append(
                    TritonLaunch(getattr(fn, "__name__", "?"), getattr(code, "co_filename", "?") if code else "?")
                )
            out = orig(self_, *args, **kwargs)
            if rec.keep_compiled and out is not None and hasattr(out, "metadata"):
                rec.compiled.append(out)  # a CompiledKernel: its metadata gives the compile facts
            return out

        run._marathon_recorder = True
        cls.run = run

    def install(self):
        import triton.runtime.jit as tjit

        self._wrap(tjit.JITFunction)
        try:
            import triton.runtime.interpreter as tint

            self._wrap(tint.InterpretedFunction)
        except Exception:  # noqa: BLE001 - no interpreter in this Triton build
            pass


def record_ops(f):
    """Run f and list the PyTorch operators it dispatched ('aten::mm', ...): cheap, no profiler."""
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: list[str] = []

    class _Rec(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            try:
                ops.append(func._schema.name)
            except AttributeError:
                ops.append(str(func))
            return func(*args, **(kwargs or {}))

    with _Rec():
        out = f()
    return out, ops
