"""Selections and Python builtins that Numba 0.68 compiles only in part, done as NumPy
and Python do (see ``redirects.py`` for how calls reach them):

* ``np.sort`` sorts 1-d arrays only: here along any ``axis``, or the flattened array
  for ``axis=None``;
* ``np.argsort`` sorts 1-d arrays only: here along any ``axis`` (a stable sort, so
  tied elements may come in another order than NumPy's default quicksort gives);
* ``np.take`` has no ``axis`` and no ``mode``: here both;
* ``abs(x)`` and ``divmod(x, y)`` of arrays do not compile: here they are
  ``np.abs`` and ``np.divmod``, as NumPy arrays define them;
* ``x[...]`` (a lone Ellipsis index) does not lower: the lowering pass writes
  ``nxrt.whole(x)``, the same view;
* indexing takes no list (``a[[2, 0]]``, ``a[idx] = v`` with ``idx = [...]``: NumPy
  indexes with the array of the list's items, a list of bools as a mask): here it does,
  as an overload of Numba's ``operator.getitem`` and ``operator.setitem`` for an array
  indexed by a list;
* ``np.choose`` is missing; ``np.select`` takes lists of arrays of one shape and a
  scalar default only: here tuples of arrays and scalars that broadcast, and any
  default; ``sum(items)`` of a tuple of arrays and scalars adds them in order.

Each function, called from plain Python, is the NumPy function (or builtin) itself.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np
from numba import types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.np._typing import _is_none
from numbax.numba_backend.redirects import lowering_helper, redirect
from numbax.numba_backend.runtime.selection import (
    _chosen_index,
    axis_permutation,
    normalized_axis,
    wrapped_index,
)
from numbax.runtime.selection import sort_order, sorted_in_place

__all__ = [
    "builtin_abs",
    "builtin_divmod",
    "argsort",
    "builtin_sum",
    "choose",
    "select",
    "sort",
    "take",
    "whole",
]


@redirect(np.sort)
def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None) -> Any:
    """``np.sort``, along any axis under jit."""
    return np.sort(a, axis=axis, kind=kind, order=order)


@redirect(np.argsort)
def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None) -> Any:
    """``np.argsort``, along any axis under jit."""
    return np.argsort(a, axis=axis, kind=kind, order=order)


@redirect(np.take)
def take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
    """``np.take``, with ``axis`` and ``mode`` under jit."""
    return np.take(a, indices, axis=axis, out=out, mode=mode)


@redirect(builtins.abs, name="builtin_abs")
def builtin_abs(x: Any) -> Any:
    """``abs(x)``: of an array, ``np.abs`` under jit too."""
    return builtins.abs(x)


@redirect(builtins.divmod, name="builtin_divmod")
def builtin_divmod(x: Any, y: Any) -> Any:
    """``divmod(x, y)``: of arrays, ``np.divmod`` under jit too."""
    return builtins.divmod(x, y)


@redirect(np.choose)
def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """``np.choose``, also under jit."""
    return np.choose(a, choices, out=out, mode=mode)


@redirect(np.select)
def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """``np.select``, of tuples and any default under jit."""
    return np.select(condlist, choicelist, default)


@redirect(builtins.sum, name="builtin_sum")
def builtin_sum(iterable: Any, start: Any = 0) -> Any:
    """``sum(iterable, start)``; of a tuple of arrays and scalars under jit too."""
    return builtins.sum(iterable, start)


def _compiled(source: str, **names: Any) -> Any:
    namespace: dict[str, Any] = {"np": np, **names}
    exec(source, namespace)  # noqa: S102
    return namespace["impl"]


def _count(ty: types.Type) -> int | None:
    """How many items a tuple type holds (None: not a tuple)."""
    return len(ty.types) if isinstance(ty, types.BaseTuple) else None


@overload(choose)
def _choose_jit(a, choices, out=None, mode="raise"):
    n = _count(choices)
    if n is None or not _is_none(out):
        raise TypeError("np.choose under jit takes a tuple of choices and no out=")
    # the last choice first: each np.where keeps it where the index names it
    steps = [
        f"    r{k} = np.where(index == {k}, choices[{k}], r{k + 1})" for k in range(n - 2, -1, -1)
    ]
    source = "\n".join(
        [
            "def impl(a, choices, out=None, mode='raise'):",
            "    index = chosen(np.asarray(a), " + str(n) + ", mode)",
            f"    r{n - 1} = np.where(index == {n - 1}, choices[{n - 1}], choices[{n - 1}])",
            *steps,
            "    return r0",
        ]
    )
    return _compiled(source, chosen=_chosen_index)


@overload(select)
def _select_jit(condlist, choicelist, default=0):
    n, m = _count(condlist), _count(choicelist)
    if n is None and m is None:  # two lists: a loop, the last condition first

        def lists(condlist, choicelist, default=0):
            last = len(condlist) - 1
            r = np.where(condlist[last], choicelist[last], default)
            for k in range(last - 1, -1, -1):
                r = np.where(condlist[k], choicelist[k], r)
            return r

        return lists
    n = n if n is not None else m
    steps = [
        f"    r{k} = np.where(condlist[{k}], choicelist[{k}], r{k + 1})"
        for k in range(n - 1, -1, -1)
    ]
    source = "\n".join(
        [
            "def impl(condlist, choicelist, default=0):",
            f"    r{n} = default",
            *steps,
            "    return r0",
        ]
    )
    return _compiled(source)


@overload(builtin_sum)
def _sum_jit(iterable, start=0):
    n = _count(iterable)
    if n is None:
        return lambda iterable, start=0: sum(iterable, start)
    total = " + ".join(["start", *(f"iterable[{k}]" for k in range(n))])
    return _compiled(f"def impl(iterable, start=0):\n    return {total}")


@lowering_helper
def whole(x: Any) -> Any:
    """``x[...]``: the whole array, a view of it (a 0-d array for a 0-d one)."""
    return x[...]


@overload(whole)
def _whole_jit(x):
    if isinstance(x, types.Array) and x.ndim > 0:
        return lambda x: x[:]
    return lambda x: x


@overload(builtin_abs)
def _abs_jit(x):
    if isinstance(x, types.Array):
        return lambda x: np.abs(x)
    return lambda x: abs(x)


@overload(builtin_divmod)
def _divmod_jit(x, y):
    if isinstance(x, types.Array) or isinstance(y, types.Array):
        return lambda x, y: np.divmod(x, y)
    return lambda x, y: divmod(x, y)


@overload(sort)
def _sort_jit(a, axis=-1, kind=None, order=None):
    if not _is_none(order):
        raise TypeError("np.sort with order= (of structured arrays) is not supported by jit")
    if not isinstance(a, types.Array) or _is_none(axis) or a.ndim == 1:
        if _is_none(axis):
            return lambda a, axis=-1, kind=None, order=None: np.sort(np.asarray(a).ravel())
        return lambda a, axis=-1, kind=None, order=None: np.sort(a)
    ndim = a.ndim

    def impl(a, axis=-1, kind=None, order=None):
        forward, inverse = axis_permutation(ndim, normalized_axis(axis, ndim))
        moved = np.ascontiguousarray(a.transpose(to_fixed_tuple(forward, ndim)))
        rows = moved.reshape(-1, moved.shape[-1])
        out = np.empty_like(rows)
        for i in range(rows.shape[0]):
            out[i] = np.sort(rows[i])
        back = out.reshape(moved.shape).transpose(to_fixed_tuple(inverse, ndim))
        return np.ascontiguousarray(back)

    return impl


@overload(sorted_in_place)
def _sorted_in_place_jit(a, axis=-1, kind=None, order=None):
    if isinstance(a, types.List):

        def lists(a, axis=-1, kind=None, order=None):
            a.sort()
            return a

        return lists
    return lambda a, axis=-1, kind=None, order=None: sort(a, axis, kind, order)


@overload(argsort)
def _argsort_jit(a, axis=-1, kind=None, order=None):
    if not _is_none(order):
        raise TypeError("np.argsort with order= (of structured arrays) is not supported by jit")
    return lambda a, axis=-1, kind=None, order=None: sort_order(a, axis)


@overload(take)
def _take_jit(a, indices, axis=None, out=None, mode="raise"):
    if not _is_none(out):
        raise TypeError("np.take with out= is not supported by jit")
    scalar_index = isinstance(indices, (types.Integer, types.Boolean))
    if _is_none(axis):

        def flat(a, indices, axis=None, out=None, mode="raise"):
            values = np.asarray(a).ravel()
            where = np.asarray(indices)
            result = np.empty(where.shape, values.dtype)
            into, src = result.reshape(-1), where.ravel()
            for k in range(src.size):
                into[k] = values[wrapped_index(src[k], values.size, mode)]
            return result

        if scalar_index:
            return lambda a, indices, axis=None, out=None, mode="raise": flat(
                a, indices, None, None, mode
            )[()]
        return flat
    ndim = a.ndim
    rank = ndim - 1 + (0 if scalar_index else indices.ndim)

    def impl(a, indices, axis=None, out=None, mode="raise"):
        ax = normalized_axis(axis, ndim)
        before, after = 1, 1
        for i in range(ax):
            before *= a.shape[i]
        for i in range(ax + 1, ndim):
            after *= a.shape[i]
        n = a.shape[ax]
        where = np.asarray(indices)
        src = where.ravel()
        k = src.size
        values = np.ascontiguousarray(a).reshape((before, n, after))
        result = np.empty((before, k, after), a.dtype)
        for j in range(k):
            at = wrapped_index(src[j], n, mode)
            for p in range(before):
                for q in range(after):
                    result[p, j, q] = values[p, at, q]
        shape = np.empty(rank, np.intp)
        for i in range(ax):
            shape[i] = a.shape[i]
        for i in range(where.ndim):
            shape[ax + i] = where.shape[i]
        for i in range(ax + 1, ndim):
            shape[i - 1 + where.ndim] = a.shape[i]
        return result.reshape(to_fixed_tuple(shape, rank))

    return impl


def _list_index(a: Any, index: Any) -> bool:
    """Whether ``a[index]`` indexes an array with a list of integers or bools, which
    NumPy reads as an array of them and Numba refuses."""
    return (
        isinstance(a, types.Array)
        and isinstance(index, types.List)
        and isinstance(index.dtype, (types.Integer, types.Boolean))
    )


@overload(operator.getitem)
def _getitem_list(a, index):
    """``a[[2, 0, 2]]``, ``a[idx]`` with ``idx = [...]``: NumPy's indexing with the
    array of the list's items (a list of bools is a mask)."""
    if _list_index(a, index):
        return lambda a, index: a[np.array(index)]
    return None


@overload(operator.setitem)
def _setitem_list(a, index, value):
    """``a[[2, 0, 2]] = v``: as ``a[np.array([2, 0, 2])] = v`` (the last write of a
    repeated index stays, as in NumPy)."""
    if not _list_index(a, index):
        return None

    def impl(a, index, value):
        a[np.array(index)] = value

    return impl
