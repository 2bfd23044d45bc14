"""Numba versions of the helpers of stores at indices that may repeat
(``runtime/stores.py``). Which positions of an index may write an element twice is known
from the index's type: only integer arrays may, so for the other indices
``last_written`` is a copy, as cheap as the store's adjoint was without it."""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from numbax.numba_backend.runtime.common import _fail
from numbax.runtime.selection import put_along_axis
from numbax.runtime.stores import add_at, last_put, last_written
from numbax.runtime.tangents import index_add, owned


def _may_repeat(index: types.Type) -> bool:
    parts = index.types if isinstance(index, types.BaseTuple) else (index,)
    return any(
        (isinstance(p, types.Array) and isinstance(p.dtype, types.Integer) and p.ndim > 0)
        or (isinstance(p, types.List) and isinstance(p.dtype, types.Integer))
        for p in parts
    )


@overload(last_written)
def _last_written_jit(value, x, index):
    if not _may_repeat(index):
        return lambda value, x, index: owned(value)
    if not isinstance(value, types.Array) or not isinstance(x, types.Array):
        raise _fail("last_written", f"expected arrays, got {value} and {x}")

    def impl(value, x, index):
        stamp = np.empty(x.shape, np.intp)  # read only where written
        picked = stamp[index]
        numbers = np.arange(picked.size).reshape(picked.shape)
        stamp[index] = numbers
        kept = (stamp[index] == numbers).ravel()
        out = value.copy()
        if kept.size == 0:
            return out
        rows = out.reshape((-1, kept.size))  # leading axes: a batch of cotangents
        for r in range(rows.shape[0]):
            for j in range(kept.size):
                if not kept[j]:
                    rows[r, j] = 0
        return out

    return impl


@overload(last_put)
def _last_put_jit(value, arr, indices, axis):
    if not isinstance(value, types.Array) or not isinstance(arr, types.Array):
        raise _fail("last_put", f"expected arrays, got {value} and {arr}")

    def impl(value, arr, indices, axis):
        stamp = np.empty(arr.shape, np.intp)  # read only where written
        taken = np.take_along_axis(stamp, indices, axis)
        numbers = np.arange(taken.size).reshape(taken.shape)
        put = put_along_axis(stamp, indices, numbers, axis)
        kept = (np.take_along_axis(put, indices, axis) == numbers).ravel()
        out = np.ascontiguousarray(value).copy()
        flat = out.reshape(-1)
        for j in range(kept.size):
            if not kept[j]:
                flat[j] = 0
        return out

    return impl


@overload(add_at)
def _add_at_jit(x, index, value):
    if not isinstance(x, types.Array):
        raise _fail("add_at", f"expected an array, got {x}")
    return lambda x, index, value: index_add(x.copy(), index, value)
