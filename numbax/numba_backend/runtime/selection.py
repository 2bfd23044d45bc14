"""Numba versions of the selection helpers (``numbax/runtime/selection.py``): the order
that sorts along an axis, the scatters that are the adjoints of ``np.take`` and
``np.take_along_axis``, and the adjoints of ``np.choose``, ``np.select`` and ``sum`` of
a tuple, one cotangent per item (written out for the tuple's length).

Work along one axis of an array of any rank is done on rows: the axis moved last
(``moved_last``), the array made a C-contiguous ``(rows, n)`` matrix, and the result moved
back. The rank is known when compiling, the axis only at run time.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.np._typing import _is_none
from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.selection import (
    as_sequence,
    put_along_axis,
    select_default,
    sort_order,
    spread_like,
    unchoose,
    unselect,
    untake,
    untake_along_axis,
)


@register_jitable
def axis_permutation(ndim, axis):
    """The axes with ``axis`` moved last, and the permutation that moves it back."""
    order = np.empty(ndim, np.intp)
    k = 0
    for i in range(ndim):
        if i != axis:
            order[k] = i
            k += 1
    order[ndim - 1] = axis
    inverse = np.empty(ndim, np.intp)
    for i in range(ndim):
        inverse[order[i]] = i
    return order, inverse


@register_jitable
def normalized_axis(axis, ndim):
    if axis < -ndim or axis >= ndim:
        raise ValueError("axis is out of bounds for the array's dimension")
    return axis % ndim


@register_jitable
def wrapped_index(i, n, mode):
    """An index as ``np.take`` reads it in ``mode`` ('raise': checked, as NumPy does)."""
    if mode == "wrap":
        return i % n
    if mode == "clip":
        return min(max(i, 0), n - 1)
    if i < -n or i >= n:
        raise IndexError("index out of bounds in np.take")
    return i % n


def inexact(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def array_dtype(ty: types.Type) -> np.dtype:
    return np.dtype(str(ty.dtype if isinstance(ty, types.Array) else ty))


@overload(sort_order)
def _sort_order_numba(a, axis=-1):
    if not isinstance(a, types.Array) or _is_none(axis):
        return lambda a, axis=-1: np.argsort(np.asarray(a).ravel(), kind="mergesort")
    ndim = a.ndim

    def impl(a, axis=-1):
        order, inverse = axis_permutation(ndim, normalized_axis(axis, ndim))
        moved = np.ascontiguousarray(a.transpose(to_fixed_tuple(order, ndim)))
        rows = moved.reshape(-1, moved.shape[-1])
        out = np.empty(rows.shape, np.intp)
        for i in range(rows.shape[0]):
            out[i] = np.argsort(rows[i], kind="mergesort")
        return out.reshape(moved.shape).transpose(to_fixed_tuple(inverse, ndim))

    return impl


@overload(untake_along_axis)
def _untake_along_axis_numba(value, arr, indices, axis):
    dtype = np.result_type(inexact(array_dtype(arr)), array_dtype(value))
    if _is_none(axis):

        def flat(value, arr, indices, axis):
            out = np.zeros(np.asarray(arr).size, dtype)
            where = np.asarray(indices).ravel()
            v = np.asarray(value).ravel()
            for k in range(where.size):
                out[where[k]] += v[k]
            return unbroadcast(out.reshape(np.shape(arr)), arr)

        return flat
    ndim = arr.ndim

    def impl(value, arr, indices, axis):
        order, inverse = axis_permutation(ndim, normalized_axis(axis, ndim))
        forward = to_fixed_tuple(order, ndim)
        v = np.ascontiguousarray(value.transpose(forward))
        where = np.ascontiguousarray(np.broadcast_to(indices, value.shape).transpose(forward))
        shape = np.empty(ndim, np.intp)
        for i in range(ndim):
            shape[i] = arr.shape[order[i]]
        out = np.zeros(to_fixed_tuple(shape, ndim), dtype)
        n, k = out.shape[-1], v.shape[-1]
        rows_out = out.reshape(-1, n)
        rows_v, rows_where = v.reshape(-1, k), where.reshape(-1, k)
        for i in range(rows_out.shape[0]):
            for j in range(k):
                rows_out[i, rows_where[i, j]] += rows_v[i, j]
        back = np.ascontiguousarray(out.transpose(to_fixed_tuple(inverse, ndim)))
        return unbroadcast(back, arr)

    return impl


@overload(untake)
def _untake_numba(value, a, indices, axis=None, mode="raise"):
    dtype = np.result_type(inexact(array_dtype(a)), array_dtype(value))
    if _is_none(axis):

        def flat(value, a, indices, axis=None, mode="raise"):
            out = np.zeros(np.asarray(a).size, dtype)
            where = np.asarray(indices).ravel()
            v = np.asarray(value).ravel()
            for k in range(where.size):
                out[wrapped_index(where[k], out.size, mode)] += v[k]
            return unbroadcast(out.reshape(np.shape(a)), a)

        return flat
    ndim = a.ndim

    def impl(value, a, indices, axis=None, mode="raise"):
        ax = normalized_axis(axis, ndim)
        before, after = 1, 1
        for i in range(ax):
            before *= a.shape[i]
        for i in range(ax + 1, ndim):
            after *= a.shape[i]
        n = a.shape[ax]
        where = np.asarray(indices).ravel()
        k = where.size
        v = np.ascontiguousarray(np.asarray(value)).reshape((before, k, after))
        out = np.zeros((before, n, after), dtype)
        for j in range(k):
            at = wrapped_index(where[j], n, mode)
            for p in range(before):
                for q in range(after):
                    out[p, at, q] += v[p, j, q]
        return unbroadcast(out.reshape(a.shape), a)

    return impl


@register_jitable
def _chosen_index(index, count, mode):
    """The choice ``np.choose`` reads at each element of ``index`` in ``mode``."""
    if mode == "wrap":
        return np.mod(index, count)
    if mode == "clip":
        return np.minimum(np.maximum(index, 0), count - 1)
    return index


def _items(ty: types.Type, what: str) -> int:
    if not isinstance(ty, types.BaseTuple):
        raise TypeError(f"{what} under jit takes a tuple")
    return len(ty.types)


def _compiled(lines: list[str], **names: object) -> object:
    namespace = {"np": np, "unbroadcast": unbroadcast, **names}
    exec("\n".join(lines), namespace)  # noqa: S102
    return namespace["impl"]


@overload(unchoose)
def _unchoose_numba(value, a, choices, mode="raise"):
    n = _items(choices, "np.choose")
    items = [f"unbroadcast(np.where(index == {k}, value, 0), choices[{k}])" for k in range(n)]
    return _compiled(
        [
            "def impl(value, a, choices, mode='raise'):",
            f"    index = chosen(np.asarray(a), {n}, mode)",
            f"    return ({''.join(item + ', ' for item in items)})",
        ],
        chosen=_chosen_index,
    )


@overload(unselect)
def _unselect_numba(value, condlist, choicelist):
    if isinstance(choicelist, types.List) and isinstance(condlist, types.List):

        def lists(value, condlist, choicelist):
            taken = np.zeros(np.shape(value), np.bool_)
            out = []
            for k in range(len(choicelist)):
                here = np.logical_and(condlist[k], np.logical_not(taken))
                out.append(unbroadcast(np.where(here, value, 0), choicelist[k]))
                taken = np.logical_or(taken, condlist[k])
            return out

        return lists
    n = _items(choicelist, "np.select")
    lines = [
        "def impl(value, condlist, choicelist):",
        "    taken = np.zeros(np.shape(value), np.bool_)",
    ]
    for k in range(n):
        lines += [
            f"    here = np.logical_and(condlist[{k}], np.logical_not(taken))",
            f"    c{k} = unbroadcast(np.where(here, value, 0), choicelist[{k}])",
            f"    taken = np.logical_or(taken, condlist[{k}])",
        ]
    lines.append(f"    return ({''.join(f'c{k}, ' for k in range(n))})")
    return _compiled(lines)


@overload(select_default)
def _select_default_numba(condlist):
    if isinstance(condlist, types.List):

        def lists(condlist):
            any_true = np.asarray(condlist[0]).copy()
            for k in range(1, len(condlist)):
                any_true = any_true | condlist[k]
            return ~any_true

        return lists
    n = _items(condlist, "np.select")
    any_true = " | ".join(f"np.asarray(condlist[{k}])" for k in range(n))
    return _compiled(["def impl(condlist):", f"    return ~({any_true})"])


@overload(spread_like)
def _spread_like_numba(value, items):
    if isinstance(items, types.Array):
        return lambda value, items: unbroadcast(value, items)
    if isinstance(items, types.List):
        return lambda value, items: [unbroadcast(value, item) for item in items]
    n = _items(items, "sum")
    parts = "".join(f"unbroadcast(value, items[{k}]), " for k in range(n))
    return _compiled(["def impl(value, items):", f"    return ({parts})"])


@overload(as_sequence)
def _as_sequence_numba(items):
    if isinstance(items, (types.Array, types.List, types.BaseTuple)):
        return lambda items: items
    return lambda items: [k for k in items]  # a dict's keys, a set's items


@overload(put_along_axis)
def _put_along_axis_numba(arr, indices, values, axis):
    if _is_none(axis):

        def flat(arr, indices, values, axis):
            out = np.ascontiguousarray(arr).copy()
            rows = out.reshape(-1)
            where = np.asarray(indices).ravel()
            v = np.broadcast_to(np.asarray(values), where.shape)
            for k in range(where.size):
                rows[wrapped_index(where[k], rows.size, "raise")] = v[k]
            return out

        return flat
    ndim = arr.ndim

    def impl(arr, indices, values, axis):
        a = normalized_axis(axis, ndim)
        order, inverse = axis_permutation(ndim, a)
        forward = to_fixed_tuple(order, ndim)
        target = np.empty(ndim, np.intp)  # arr's shape, the indices' along the axis
        for d in range(ndim):
            target[d] = indices.shape[d] if d == a else arr.shape[d]
        shape = to_fixed_tuple(target, ndim)
        out = np.ascontiguousarray(arr.transpose(forward)).copy()
        where = np.ascontiguousarray(np.broadcast_to(indices, shape).transpose(forward))
        v = np.ascontiguousarray(np.broadcast_to(np.asarray(values), shape).transpose(forward))
        n, k = arr.shape[a], target[a]
        rows_out = out.reshape(-1, n)
        rows_v, rows_where = v.reshape(-1, k), where.reshape(-1, k)
        for i in range(rows_out.shape[0]):
            for j in range(k):
                rows_out[i, wrapped_index(rows_where[i, j], n, "raise")] = rows_v[i, j]
        return np.ascontiguousarray(out.transpose(to_fixed_tuple(inverse, ndim)))

    return impl
