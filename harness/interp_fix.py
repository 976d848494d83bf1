"""Two fixes for Triton's CPU interpreter (Triton 3.6).

1. ``tl.dot`` on bfloat16 operands: the interpreter stores bfloat16 values as raw uint16 and its
   ``create_dot`` multiplies those integers (results off by ~1e10), so any bf16 kernel using
   ``tl.dot`` is wrong under ``TRITON_INTERPRET=1``. Operands are converted to float32 first
   (exact, and what the GPU does: bf16 products accumulate in float32).
2. Loops with a runtime bound: the interpreter turns a scalar tensor into an int with
   ``int(array)`` on a one-element array, which NumPy >= 2.4 refuses ("only 0-dimensional arrays
   can be converted to Python scalars"). The scalar is read with ``.item()`` instead.

``apply()`` is applied by the harness whenever it runs the interpreter; idempotent; a no-op when
the interpreter is not importable.
"""

from __future__ import annotations


def apply() -> bool:
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter as interp
    except Exception:  # noqa: BLE001 - no interpreter, nothing to fix
        return False
    builder = interp.InterpreterBuilder
    if getattr(builder.create_dot, "_marathon_bf16_fix", False):
        return True
    orig = builder.create_dot

    def _to_f32(h):
        if h.dtype.scalar != tl.bfloat16:
            return h
        data = interp._convert_float(h.data, tl.bfloat16, tl.float32, None).view(np.float32)
        return interp.TensorHandle(data.reshape(h.data.shape), tl.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return orig(self, _to_f32(a), _to_f32(b), d, input_precision, max_num_imprecise_acc)

    create_dot._marathon_bf16_fix = True
    builder.create_dot = create_dot
    _fix_scalar_index(interp)
    return True


def _fix_scalar_index(interp) -> None:
    orig = interp._patch_lang_tensor
    if getattr(orig, "_marathon_index_fix", False):
        return

    def patch_lang_tensor(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0].item()))

    patch_lang_tensor._marathon_index_fix = True
    interp._patch_lang_tensor = patch_lang_tensor
