"""Adjoints of operations that only pick elements of an array (``np.pad``,
``np.delete``, ``np.insert``, ``np.maximum.accumulate``...), written once for all of
them through *positions*: ``positions(a)`` numbers a's elements 1, 2, ... in C order;
applying the operation itself to those numbers tells, for each element of its result,
which element of ``a`` it holds (0: none, a value the operation made up, such as the
padding of ``np.pad``). ``ungather`` then sums a cotangent back into a's shape (copies of
one element add up) and ``regather`` picks a tangent's elements the same way.

Each is linear in its first argument and has its own JVP and VJP rule
(``transform/rules/arrays.py``): ``regather`` and ``ungather`` are each other's adjoint.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.registry import helper


@helper
def positions(a: Any) -> np.ndarray:
    """a's elements numbered from 1 in C order, in a's shape (an int array)."""
    return np.arange(1, np.size(a) + 1).reshape(np.shape(a))


@helper
def ungather(value: Any, a: Any, index: Any) -> Any:
    """The cotangent of ``a`` in an operation whose result holds, at each place, the
    element of ``a`` that ``index`` numbers (``positions``): ``value`` summed into a's
    shape and dtype (as ``nxrt.unbroadcast`` gives it)."""
    index = np.ravel(index)
    picked = index > 0
    out = np.zeros(np.size(a), np.result_type(value))
    np.add.at(out, index[picked] - 1, np.ravel(value)[picked])
    return unbroadcast(out.reshape(np.shape(a)), a)


@helper
def regather(value: Any, index: Any) -> np.ndarray:
    """The elements of ``value`` that ``index`` numbers (``positions``), in index's shape;
    0 where ``index`` is 0: the operation ``index`` stands for, applied to ``value``."""
    flat = np.concatenate((np.zeros(1, np.result_type(value)), np.ravel(value)))
    return flat[np.asarray(index)]


@helper
def running_positions(x: Any, ans: Any, axis: int = 0) -> np.ndarray:
    """For ``ans = np.maximum.accumulate(x, axis)`` (or ``minimum``), the position
    (``positions``) of the element of ``x`` each element of ``ans`` is: where the running
    value changes, the current element; where it ties or stays, the element before."""
    x = np.asarray(x)
    where = np.moveaxis(positions(x), axis, 0)
    moved, running = np.moveaxis(x, axis, 0), np.moveaxis(np.asarray(ans), axis, 0)
    out = np.empty(where.shape, where.dtype)
    for i in range(moved.shape[0]):
        if i == 0:
            out[0] = where[0]
        else:
            new = (moved[i] == running[i]) & (running[i] != running[i - 1])
            out[i] = np.where(new, where[i], out[i - 1])
    return np.moveaxis(out, 0, axis)


@helper
def cummax(x: Any, axis: int = 0) -> np.ndarray:
    """``np.maximum.accumulate(x, axis)``: the running maximum along ``axis``."""
    return np.maximum.accumulate(x, axis)


@helper
def cummin(x: Any, axis: int = 0) -> np.ndarray:
    """``np.minimum.accumulate(x, axis)``: the running minimum along ``axis``."""
    return np.minimum.accumulate(x, axis)


GATHER_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")
"""The modes of ``np.pad`` whose padding copies elements (or a constant): their
derivatives are gathers. The others compute the padding (``mean``, ``linear_ramp``...)."""


@helper
def pad_positions(array: Any, pad_width: Any, mode: str = "constant") -> np.ndarray:
    """Where each element of ``np.pad(array, pad_width, mode)`` comes from
    (``positions``; 0 for a constant)."""
    if mode not in GATHER_PAD_MODES:
        raise ValueError(
            f"numbax differentiates np.pad in the modes {', '.join(GATHER_PAD_MODES)}, not {mode!r}"
        )
    return np.pad(positions(array), pad_width, mode)
