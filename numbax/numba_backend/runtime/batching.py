"""Numba versions of ``vmap``'s loop helpers (``numbax/runtime/batching.py``), for
arrays, numbers and tuples of them (what compiled code passes).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import literally, types
from numba.extending import overload

from numbax.numba_backend.runtime.common import (
    _define,
    _fail,
    _tuple_map,
)
from numbax.runtime.batching import (
    EMPTY_BATCH,
    batch_broadcast,
    batch_empty,
    batch_put,
    batch_repeat,
    batch_size,
    batch_sum,
    batch_take,
    mapped_axis,
)


def _needs_literal(axis: Any) -> bool:
    """An int axis that Numba has not yet given as a constant: ask for it (``literally``)."""
    return isinstance(axis, types.Integer) and not isinstance(axis, types.IntegerLiteral)


def _leaf_axis(ty: types.Type, axis: Any) -> Any:
    """A leaf's constant axis (None or an int made non-negative for its rank)."""
    if isinstance(axis, types.NoneType | types.Omitted) or axis is None:
        return None
    if not isinstance(axis, types.IntegerLiteral):
        raise _fail("axis", f"an axis must be an int or None for each argument, got {axis}")
    ndim = ty.ndim if isinstance(ty, types.Array) else 0
    return mapped_axis(axis.literal_value, ndim, "an argument")


def _index_text(ndim: int, axis: int, index: str) -> str:
    parts = [":"] * ndim
    parts[axis] = index
    return ", ".join(parts) + ("," if ndim == 1 else "")


def _rebuild(ty: types.BaseTuple, items: list[str]) -> str:
    """Source of a tuple of ``items`` of ``ty``'s kind: a NamedTuple (a dict or a
    registered class at the boundary) stays one, so the caller's structure comes back."""
    if isinstance(ty, types.BaseNamedTuple):
        return f"cls({', '.join(items)})"
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _class(ty: types.BaseTuple) -> Any:
    return getattr(ty, "instance_class", None)


@overload(batch_take)
def _batch_take_jit(x, i, axis):
    if _needs_literal(axis):
        return lambda x, i, axis: literally(axis)
    if isinstance(x, types.BaseTuple):
        items = [f"batch_take(x[{k}], i, axis)" for k in range(len(x))]
        source = f"def impl(x, i, axis):\n    return {_rebuild(x, items)}\n"
        return _define(source, "impl", {"batch_take": batch_take, "cls": _class(x)})
    a = _leaf_axis(x, axis)
    if a is None:
        return lambda x, i, axis: x
    source = (
        "def impl(x, i, axis):\n"
        f"    if x.shape[{a}] == 0:\n"
        "        raise ValueError(_EMPTY)\n"
        f"    return x[{_index_text(x.ndim, a, 'i')}]\n"
    )
    return _define(source, "impl", {"_EMPTY": EMPTY_BATCH})


@overload(batch_empty)
def _batch_empty_jit(first, size, axis):
    if _needs_literal(axis):
        return lambda first, size, axis: literally(axis)
    if isinstance(first, types.BaseTuple):
        items = [f"batch_empty(first[{k}], size, axis)" for k in range(len(first))]
        source = f"def impl(first, size, axis):\n    return {_rebuild(first, items)}\n"
        return _define(source, "impl", {"batch_empty": batch_empty, "cls": _class(first)})
    if isinstance(axis, types.NoneType):
        return lambda first, size, axis: first
    value = axis.literal_value
    if isinstance(first, types.Array):
        ndim, dtype = first.ndim, first.dtype
        a = mapped_axis(value, ndim + 1, "its output")
        dims = [f"first.shape[{k}]" for k in range(ndim)]
        dims.insert(a, "size")
        source = f"def impl(first, size, axis):\n    return np.empty(({', '.join(dims)},), dtype)\n"
        return _define(source, "impl", {"dtype": dtype})
    if isinstance(first, types.Number | types.Boolean):
        dtype = types.unliteral(first)
        return lambda first, size, axis: np.empty(size, dtype)
    raise _fail("output", f"an output must be an array, a number or a tuple, got {first}")


@overload(batch_put)
def _batch_put_jit(out, i, axis, value, name):
    if _needs_literal(axis):
        return lambda out, i, axis, value, name: literally(axis)
    if isinstance(out, types.BaseTuple):
        calls = [f"batch_put(out[{k}], i, axis, value[{k}], name)" for k in range(len(out))]
        source = "def impl(out, i, axis, value, name):\n" + "".join(f"    {c}\n" for c in calls)
        return _define(source, "impl", {"batch_put": batch_put})
    if isinstance(axis, types.NoneType):

        def unbatched(out, i, axis, value, name):
            if np.any((out != value) & ((out == out) | (value == value))):  # NaN: NaN
                raise ValueError("vmap: an output depends on the mapped axis, but out_axes is None")

        return unbatched
    a = _leaf_axis(out, axis)
    source = (
        f"def impl(out, i, axis, value, name):\n    out[{_index_text(out.ndim, a, 'i')}] = value\n"
    )
    return _define(source, "impl", {})


@overload(batch_repeat)
def _batch_repeat_jit(x, size):
    if not isinstance(x, types.Array):
        raise _fail("batch_repeat", f"expected an array, got {x}")

    def impl(x, size):
        out = np.empty((size,) + x.shape, x.dtype)
        for i in range(size):
            out[i] = x
        return out

    return impl


def _mapped_leaves(expr: str, ty: types.Type) -> list[tuple[str, types.Array]]:
    """(source, type) of each array leaf of an argument mapped by one axis."""
    if isinstance(ty, types.BaseTuple):
        return [leaf for k, t in enumerate(ty) for leaf in _mapped_leaves(f"{expr}[{k}]", t)]
    if not isinstance(ty, types.Array):
        raise _fail("arguments", f"a mapped argument must be an array under jit, got {ty}")
    return [(expr, ty)]


@overload(batch_size)
def _batch_size_jit(name, args, axes, params):
    sizes = []
    for k, (arg, axis) in enumerate(zip(args, axes, strict=True)):
        if isinstance(axis, types.NoneType):
            continue
        for expr, leaf in _mapped_leaves(f"args[{k}]", arg):  # one axis for a whole pytree
            sizes.append(f"{expr}.shape[axes[{k}] % {leaf.ndim}]")
    if not sizes:
        raise _fail("arguments", "no argument is mapped: give axis_size")
    checks = "".join(
        f"    if {size} != {sizes[0]}:\n        raise ValueError(_MESSAGE)\n" for size in sizes[1:]
    )
    source = "def impl(name, args, axes, params):\n" + checks + f"    return {sizes[0]}\n"
    message = "vmap got inconsistent sizes for the array axes to be mapped"
    return _define(source, "impl", {"_MESSAGE": message})


@overload(batch_sum)
def _batch_sum_jit(x):
    if isinstance(x, types.BaseTuple):
        return _tuple_map("batch_sum", batch_sum, (x,), ["x"])
    if isinstance(x, types.Array):
        return lambda x: np.sum(x, axis=0)
    raise _fail("batch_sum", f"expected a batched array or a tuple of them, got {x}")


@overload(batch_broadcast)
def _batch_broadcast_jit(value, like):
    if isinstance(value, types.BaseTuple):
        return _tuple_map("batch_broadcast", batch_broadcast, (value, like), ["value", "like"])
    if isinstance(value, types.Array):
        return lambda value, like: np.broadcast_to(value, like.shape).copy()
    if isinstance(value, types.Number):
        return lambda value, like: np.full(like.shape, value)
    raise _fail("batch_broadcast", f"expected an array, a number or a tuple, got {value}")


__all__ = [
    "batch_broadcast",
    "batch_empty",
    "batch_put",
    "batch_repeat",
    "batch_size",
    "batch_sum",
    "batch_take",
]
