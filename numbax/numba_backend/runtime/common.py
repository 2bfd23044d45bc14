"""What the Numba versions of the runtime helpers share: the type tests and errors of
typing time (most of them ``np/_typing.py``'s, which NumPy under Numba shares), small
compiled functions that generated implementations call (broadcast dimensions, index
wrapping), and the scope those implementations are defined in.

The names keep a leading underscore: generated source calls them by these names
(``_bdim(...)``, ``if _always(): raise ...``), and they are private to the overloads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numba import types
from numba.extending import register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.generated import Code, define
from numbax.numba_backend.loops import new_arrays
from numbax.numba_backend.loops.broadcast_dims import broadcast_dim
from numbax.numba_backend.np._typing import (  # noqa: F401  (the runtime's overloads import them from here)
    _failing,
    _is_none,
    _is_scalar,
    _normalize,
    _scalar_type,
    _tuple,
)
from numbax.runtime.reductions import inexact_dtype


@register_jitable
def _always() -> bool:
    """True, opaque to Numba's dead-branch pruning: keeps code after a raise typed."""
    return True


_bdim = broadcast_dim  # the name generated source calls it by


@register_jitable
def _index_bdim(a, b):
    """The broadcast of two index-array lengths, or NumPy's IndexError."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise IndexError("shape mismatch: indexing arrays could not be broadcast together")


@register_jitable
def _wrap(i, n):
    """Index ``i`` into a dimension of length ``n`` (negative counts from the end)."""
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("index out of bounds")
    return j


@register_jitable
def _slice_len(start, stop, step):
    """The number of elements of ``range(start, stop, step)``."""
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // (-step))


_axis_index = _normalize  # the name generated source calls it by


SCOPE = {
    "np": np,
    "new_arrays": new_arrays,
    "_always": _always,
    "_axis_index": _axis_index,
    "_bdim": _bdim,
    "_index_bdim": _index_bdim,
    "_wrap": _wrap,
    "_slice_len": _slice_len,
}
"""What every generated implementation may call."""


def _define(source: str, name: str, namespace: Mapping[str, Any]) -> Callable:
    """Exec generated ``source`` and return its function ``name`` (for Numba to compile),
    in :data:`SCOPE` with ``namespace`` added."""
    return define(source, {**SCOPE, **namespace}, f"nxrt {name}", name)


def _code(header: str, scope: Mapping[str, Any], **names: Any) -> Code:
    """An implementation built line by line in :data:`SCOPE`, ``scope`` and ``names``."""
    return Code(header, {**SCOPE, **scope}, "nxrt", **names)


_fail = _failing("numbax nxrt.")
"""A typing error naming the helper, reported by Numba at the user's call."""


def _dtype_of(name: str, ty: Any) -> types.Type:
    """The Numba dtype of an array or scalar argument (an error naming the helper)."""
    return _scalar_type(name, ty, _fail)


def _constant(dtype: types.Type, value: int) -> Any:
    """A Python constant for generated code: ``value`` as a scalar of ``dtype``."""
    return as_dtype(dtype).type(value)


def _tuple_map(name: str, func: Any, tys: tuple[types.Type, ...], params: list[str]) -> Any:
    """An implementation that applies ``func`` to the elements of the tuple argument(s)
    named ``params`` (of the first one's tuple class: a NamedTuple stays one)."""
    first = tys[0]
    for other in tys[1:]:
        if not isinstance(other, types.BaseTuple) or len(other) != len(first):
            raise _fail(name, f"tuples of different structure: {first} and {other}")
    items = [f"func({', '.join(f'{p}[{i}]' for p in params)})" for i in range(len(first))]
    if isinstance(first, types.BaseNamedTuple):
        result = f"cls({', '.join(items)})"
    else:
        result = f"({', '.join(items)}{',' if len(items) == 1 else ''})"
    source = f"def impl({', '.join(params)}):\n    return {result}\n"
    cls = getattr(first, "instance_class", None)
    return _define(source, "impl", {"func": func, "cls": cls})


def _subscript(items: list[str]) -> str:
    """Source of a subscript with these items (``()`` for none, a 1-tuple for one)."""
    if not items:
        return "()"
    return ", ".join(items) + ("," if len(items) == 1 else "")


def _list_map(func: Any) -> Any:
    """An implementation that applies ``func`` to each element of a list (the
    cotangent of a Python list the function builds is a list of the same length)."""

    def impl(x):
        return [func(e) for e in x]

    return impl


def _array(name: str, ty: Any) -> types.Array:
    """``ty``, checked to be an array type."""
    if not isinstance(ty, types.Array):
        raise _fail(name, f"expected an array, got {ty}")
    return ty


def _np(ty: types.Type) -> np.dtype:
    return np.dtype(as_dtype(ty))


def _promote(*tys: types.Type) -> np.dtype:
    return np.result_type(*(_np(t) for t in tys))


def _inexact_np(ty: types.Type) -> np.dtype:
    return inexact_dtype(_np(ty))


def _axis_items(name: str, axis: Any, ndim: int) -> list[str] | None:
    """Source expressions of the axes an ``axis`` argument names (None: all)."""
    if _is_none(axis):
        return None
    if isinstance(axis, types.Integer) and not isinstance(axis, types.Boolean):
        return ["axis"]
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer) for t in axis.types):
        return [f"axis[{j}]" for j in range(len(axis.types))]
    raise _fail(name, f"axis must be None, an int or a tuple of ints, got {axis}")


def _emit_flags(code: Code, items: list[str] | None, ndim: int) -> None:
    """Emit ``red``: which of ``ndim`` axes the axis items name (all when None)."""
    if items is None:
        code(f"red = np.ones({max(ndim, 1)}, np.bool_)")
        return
    code(f"red = np.zeros({max(ndim, 1)}, np.bool_)")
    for item in items:
        code(f"k = _axis_index({item}, {ndim})")
        code("if red[k]:", "    raise ValueError(\"duplicate value in 'axis'\")")
        code("red[k] = True")
