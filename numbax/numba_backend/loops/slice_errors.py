"""The error of a slice assignment of the wrong size, without Numba's string formatting.

Numba's CPU implementation of that error formats both shapes (``str`` of each length in
f-strings), so the first array stored into a slice that a process compiles also
compiles that much of Numba's unicode support: 2.3 s for a one-line function here, 0.4 s
without. numbax's generated code stores arrays into slices (``jacfwd``'s columns,
``ravel``), so every cold start paid it. The CPU's implementation is given the message
that Numba's generic target gives, NumPy's words without the shapes; the error is
raised where it was, and names the same line.
"""

from __future__ import annotations

from numba.core import types
from numba.core.typing.templates import builtin_registry
from numba.np import arrayobj

MESSAGE = "cannot assign slice from input of different size"


def _raise_without_shapes(src_shapes, index_shape):  # noqa: ANN001, ANN202 (Numba typing)
    if isinstance(src_shapes, types.UniTuple) and isinstance(index_shape, types.UniTuple):

        def impl(src_shapes, index_shape):  # noqa: ANN001, ANN202
            raise ValueError(MESSAGE)

        return impl
    return None


def install() -> bool:
    """Give Numba's CPU overload of ``raise_with_shape_context`` the fixed message; False
    where this Numba has none (then nothing changes)."""
    installed = False
    for function, function_type in builtin_registry.globals:
        if function is not getattr(arrayobj, "raise_with_shape_context", None):
            continue
        for template in function_type.templates:
            if getattr(template, "metadata", {}).get("target") == "CPU":
                template._overload_func = staticmethod(_raise_without_shapes)
                installed = True
    return installed
