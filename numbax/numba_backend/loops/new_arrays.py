"""New C-contiguous arrays, allocated in the caller's own code.

Numba's ``np.empty(shape, dtype)`` and ``np.zeros(shape, dtype)`` are overloads: each
pair of shape and dtype types compiles an implementation of its own (``np.zeros``
compiles ``np.empty`` and a fill too), 0.03 to 0.1 s each, in every program that meets
one anew, and a ``dtype`` given as ``np.float64`` and as an array's ``.dtype`` are two
types. numbax's helpers allocate their results everywhere, so :func:`empty` and
:func:`zeros` lower the allocation in place instead, as Numba's own implementations
end up doing (``_empty_nd_impl``: the same allocator, the same checks of the shape): the
same code, nothing more to compile. The summing loops keep Numba's calls
(``fused_sums.py`` says why).
"""

from __future__ import annotations

from typing import Any

from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_new_ref
from numba.core.typing import signature
from numba.core.typing.npydecl import parse_dtype
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, _parse_shape


@intrinsic
def empty(typingctx: Any, shape: Any, dtype: Any) -> Any:
    """``np.empty(shape, dtype)``: ``shape`` an integer or a tuple of integers, ``dtype``
    what ``np.empty`` takes (a NumPy scalar type, a dtype, a constant string)."""
    return _new_array(shape, dtype, zeroed=False)


@intrinsic
def zeros(typingctx: Any, shape: Any, dtype: Any) -> Any:
    """``np.zeros(shape, dtype)``, taking what :func:`empty` takes."""
    return _new_array(shape, dtype, zeroed=True)


def _new_array(shape: Any, dtype: Any, zeroed: bool) -> Any:
    """The signature and code generator of a new array, or None (a type not taken)."""
    element = _element_type(dtype)
    if element is None or not _is_shape(shape):
        return None
    ndim = 1 if isinstance(shape, types.Integer) else len(shape)
    out_type = types.Array(element, ndim, "C")

    def codegen(context, builder, sig, args):
        sizes = _parse_shape(context, builder, shape, args[0])
        out = _empty_nd_impl(context, builder, out_type, sizes)
        if zeroed:
            cgutils.memset(builder, out.data, builder.mul(out.itemsize, out.nitems), 0)
        return impl_ret_new_ref(context, builder, out_type, out._getvalue())

    return signature(out_type, shape, dtype), codegen


def _element_type(dtype: Any) -> Any:
    """What ``np.empty`` takes as a dtype (Numba's parsing of it), or None."""
    try:
        return parse_dtype(dtype)
    except TypingError:
        return None


def _is_shape(shape: Any) -> bool:
    if isinstance(shape, types.Integer):
        return True
    return isinstance(shape, types.BaseTuple) and all(
        isinstance(size, types.Integer) for size in shape
    )
