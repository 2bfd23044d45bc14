"""Stores at indices that may repeat: NumPy's buffered ``x[index] = v`` and
``np.add.at``.

``x[index] = v`` with an index that names one element twice (``idx = [0, 0, 1]``,
``[0, -3]`` on three elements, ``M[rows, cols]`` with a repeated pair) writes that
element twice, and NumPy keeps the last write. ``x[index] += v`` is ``x[index] =
x[index] + v``: each element once, from its last write. So only the last write of an
element reaches the result, and only its value gets a cotangent: ``last_written``
zeroes the others (the store's adjoint, ``transform/ad/reverse_statements.py``;
``last_put`` does the same for ``np.put_along_axis``). The tangent needs nothing:
``dx[index] = dv`` keeps the last write as the value does.

``np.add.at(x, index, v)`` is the unbuffered form, a scatter-add (JAX's
``x.at[index].add(v)``): normalization writes it ``x[...] = nxrt.add_at(x, index, v)``,
so that it changes ``x`` in place as NumPy does and has a derivative.

Each helper is linear in its array arguments and has its rules
(``transform/rules/runtime.py``); ``numba_backend/runtime/stores.py`` compiles them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime.registry import helper
from numbax.runtime.selection import put_along_axis
from numbax.runtime.tangents import index_add, owned


def may_repeat(index: Any) -> bool:
    """Whether ``index`` holds an integer array or list (which may name an element
    twice); ints, slices, None, Ellipsis and boolean masks never do."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if isinstance(part, (list, np.ndarray)):
            if np.asarray(part).dtype != np.bool_ and np.ndim(part) > 0:
                return True
    return False


@helper
def last_written(value: Any, x: Any, index: Any) -> Any:
    """The cotangent of what ``x[index] = v`` wrote, from ``value``, the cotangent at
    ``x[index]`` (in its shape, after any leading batch axes): zero where the index
    writes an element of ``x`` that a later position of the index writes again (NumPy
    keeps the last write). A new array, never a view of ``value``.

    Where the index may repeat, each position of ``x[index]`` is numbered in C order
    and the numbers are stored as NumPy stores values (``stamp[index] = numbers``): a
    position kept its number exactly when its write was the last."""
    if not may_repeat(index):
        return owned(value)
    stamp = np.empty(np.shape(x), np.intp)  # read only where written
    numbers = np.arange(np.size(stamp[index])).reshape(np.shape(stamp[index]))
    stamp[index] = numbers
    return np.where(stamp[index] == numbers, value, np.zeros((), np.result_type(value)))


@helper
def last_put(value: Any, arr: Any, indices: Any, axis: Any) -> Any:
    """``last_written`` for ``np.put_along_axis(arr, indices, values, axis)``: ``value``
    (the cotangent at ``np.take_along_axis(arr, indices, axis)``) with zeros where a
    later value is put at the same place."""
    stamp = np.empty(np.shape(arr), np.intp)  # read only where written
    shape = np.shape(np.take_along_axis(stamp, indices, axis))
    numbers = np.arange(int(np.prod(shape))).reshape(shape)
    kept = np.take_along_axis(put_along_axis(stamp, indices, numbers, axis), indices, axis)
    return np.where(kept == numbers, value, np.zeros((), np.result_type(value)))


@helper
def add_at(x: Any, index: Any, value: Any) -> np.ndarray:
    """``np.add.at(x, index, value)`` as a value: a copy of ``x`` with ``value``
    (broadcast to ``x[index]``'s shape) added at ``index``, repeated elements once per
    repetition."""
    return index_add(np.array(x, copy=True), index, value)
