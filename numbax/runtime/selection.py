"""Adjoints of NumPy's selections: ``np.take`` and ``np.take_along_axis`` gather
elements, so their adjoints scatter a cotangent back, adding where an element was taken
more than once (``untake``, ``untake_along_axis``); ``np.sort`` is a gather along the
order ``sort_order`` finds; ``np.choose`` and ``np.select`` send each element's
cotangent to the choice it came from (``unchoose``, ``unselect``; ``select_default``
says where ``np.select`` took its default); Python's ``sum`` of a sequence sends its
cotangent to every item (``spread_like``); ``as_sequence`` gives Python's ``max`` and
``min`` of one iterable something to index.

Each adjoint is linear in its cotangent and has its own rules
(``transform/rules/selection.py``): the adjoint of a scatter is the gather again.
Cotangents come back in the dtype of the value they belong to, as ``nxrt.unbroadcast``
gives them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.reductions import inexact_dtype
from numbax.runtime.registry import helper


def _zeros(like: Any, dtype: Any) -> np.ndarray:
    return np.zeros(np.shape(like), np.result_type(inexact_dtype(np.result_type(like)), dtype))


def _wrapped(indices: Any, n: int, mode: str) -> Any:
    """Indices as ``np.take`` reads them in ``mode``: wrapped around, clipped, or as
    given (``'raise'``: NumPy has checked them)."""
    if mode == "wrap":
        return np.mod(indices, n)
    if mode == "clip":
        return np.clip(indices, 0, n - 1)
    return indices


@helper
def sort_order(a: Any, axis: Any = -1) -> np.ndarray:
    """The indices that sort ``a`` along ``axis`` (the flattened ``a`` for ``None``),
    stable: tied elements keep their order, so the derivative of ``np.sort`` follows
    the element that lands in each place, as JAX's does."""
    return np.argsort(a, axis=axis, kind="stable")


@helper
def untake(value: Any, a: Any, indices: Any, axis: Any = None, mode: str = "raise") -> Any:
    """The adjoint of ``np.take(a, indices, axis, mode=mode)``: ``value`` (the result's
    cotangent) added into zeros of ``a``'s shape at the places taken."""
    out = _zeros(a, np.result_type(value))
    if axis is None:
        flat = out.reshape(-1)
        np.add.at(flat, _wrapped(np.asarray(indices), flat.size, mode), value)
        return unbroadcast(out, a)
    axis = axis % np.ndim(a)
    index = _wrapped(np.asarray(indices), np.shape(a)[axis], mode)
    np.add.at(out, (slice(None),) * axis + (index,), value)
    return unbroadcast(out, a)


@helper
def untake_along_axis(value: Any, arr: Any, indices: Any, axis: Any) -> Any:
    """The adjoint of ``np.take_along_axis(arr, indices, axis)``: ``value`` added into
    zeros of ``arr``'s shape at the places taken (of the flattened ``arr`` for
    ``axis=None``)."""
    out = _zeros(arr, np.result_type(value))
    if axis is None:
        np.add.at(out.reshape(-1), np.asarray(indices), value)
        return unbroadcast(out, arr)
    axis = axis % np.ndim(arr)
    value = np.asarray(value)
    indices = np.broadcast_to(indices, value.shape)
    grid = np.indices(value.shape, sparse=True)
    index = tuple(indices if k == axis else grid[k] for k in range(value.ndim))
    np.add.at(out, index, value)
    return unbroadcast(out, arr)


def _chosen(index: Any, count: int, mode: str) -> Any:
    """The choice ``np.choose`` reads at each element of ``index`` in ``mode``."""
    if mode == "wrap":
        return np.mod(index, count)
    if mode == "clip":
        return np.clip(index, 0, count - 1)
    return index


@helper
def unchoose(value: Any, a: Any, choices: Any, mode: str = "raise") -> tuple:
    """The adjoint of ``np.choose(a, choices, mode=mode)``: each element's cotangent
    goes to the choice it was taken from, one cotangent per choice."""
    index = _chosen(np.asarray(a), len(choices), mode)
    return tuple(unbroadcast(np.where(index == k, value, 0), c) for k, c in enumerate(choices))


@helper
def unselect(value: Any, condlist: Any, choicelist: Any) -> tuple:
    """The adjoint of ``np.select(condlist, choicelist, default)`` in its choices: each
    element's cotangent goes to the choice of the first condition true there."""
    taken = np.zeros(np.shape(value), bool)
    out = []
    for condition, choice in zip(condlist, choicelist, strict=True):
        here = np.logical_and(condition, np.logical_not(taken))
        out.append(unbroadcast(np.where(here, value, 0), choice))
        taken = np.logical_or(taken, condition)
    return tuple(out)


@helper
def select_default(condlist: Any) -> Any:
    """Where ``np.select(condlist, ...)`` takes its default: no condition is true."""
    return np.logical_not(np.any(np.broadcast_arrays(*condlist), axis=0))


@helper
def spread_like(value: Any, items: Any) -> Any:
    """The adjoint of Python's ``sum(items)`` of a tuple or list: the cotangent to each
    item, brought back to its shape."""
    if isinstance(items, np.ndarray):  # sum over the first axis: each row gets it
        return unbroadcast(value, items)
    return tuple(unbroadcast(value, item) for item in items)


@helper
def as_sequence(items: Any) -> Any:
    """``items`` as Python's ``max(items)`` reads it: a list, tuple or array as it is
    (by index), any other iterable (a dict, a set) as the list of what it yields."""
    if isinstance(items, (list, tuple, np.ndarray)):
        return items
    return list(items)


@helper
def sorted_in_place(a: Any, axis: Any = -1, kind: Any = None, order: Any = None) -> Any:
    """What ``a.sort(axis, kind, order)`` leaves in ``a``, as a value: normalization
    writes the call ``a = nxrt.sorted_in_place(a, ...)``, a rebinding, as it writes
    ``a += v`` (so another name for the same array does not see the order). A list is
    sorted in place, as ``list.sort()`` does, and returned."""
    if isinstance(a, list):
        a.sort()
        return a
    return np.sort(a, axis=axis, kind=kind, order=order)


@helper
def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> Any:
    """``np.put_along_axis(arr, indices, values, axis)`` as a value: a copy of ``arr``
    with ``values`` put at ``indices`` (normalization writes the call, which changes
    ``arr`` in place, as ``arr = nxrt.put_along_axis(arr, ...)``). Where an index
    repeats, the last value put there stays, as in NumPy."""
    out = np.array(arr, copy=True)
    np.put_along_axis(out, indices, values, axis)
    return out
