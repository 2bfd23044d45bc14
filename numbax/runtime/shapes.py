"""Adjoints of NumPy's shape functions: the inverse of a concatenation
(``split_like``, ``join_like``) and of a stack (``unstack_like``), the sums over the
copies ``np.tile`` and ``np.repeat`` make (``untile``, ``unrepeat``), the adjoint of
``np.diag`` (``undiag``), the inverse permutation of ``np.transpose``, the inverse of
``np.roll`` (``unrolled``, for tuple shifts too), ``np.linspace``'s weights, and the
tangent and cotangent of ``astype`` (``cast``, ``uncast``).

Each is linear in its first argument and has its own JVP and VJP rule
(``transform/rules/shapes.py``), so derivative code that calls it can be differentiated
again. Cotangents come back with the dtype of the value they belong to when that is real
or complex (a float32 array's piece of a float64 cotangent is float32), as
``nxrt.unbroadcast`` does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.registry import helper
from numbax.runtime.tangents import zeros_like


def _normalize_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _padded_shape(like: Any, ndim: int, promote: str = "leading") -> tuple[int, ...]:
    """like's shape promoted to ``ndim`` dimensions as the joining function does:
    ``"leading"`` ones in front (np.atleast_1d/2d, np.hstack, np.vstack), ``"column"``
    a 1-D array as a column (np.column_stack), ``"depth"`` as np.atleast_3d (np.dstack)."""
    shape = np.shape(like)
    if promote == "column" and len(shape) == 1:
        return (shape[0], 1)
    if promote == "depth" and len(shape) < 3:
        return {0: (1, 1, 1), 1: (1, *shape, 1), 2: (*shape, 1)}[len(shape)]
    return (1,) * (ndim - len(shape)) + shape


def _shaped_like(piece: np.ndarray, like: Any) -> Any:
    """``piece`` reshaped to ``like``'s shape, in like's dtype when that is inexact; a
    scalar when ``like`` is one."""
    return unbroadcast(np.reshape(piece, np.shape(like)), like)


def _like_container(items: list, arrays: Any) -> Any:
    """``items`` as a list when ``arrays`` is one (as under Numba), else a tuple."""
    return items if isinstance(arrays, list) else tuple(items)


@helper
def split_like(value: Any, arrays: Any, axis: int | None = 0, promote: str = "leading") -> Any:
    """The pieces of ``value`` that ``np.concatenate(arrays, axis)`` put together, each
    shaped like its array (a tuple; a list for a list): the adjoint of concatenation.
    Arrays of fewer dimensions count as ``promote`` makes them (``_padded_shape``: with
    leading ones as ``np.hstack``/``np.vstack`` promote them, as columns, or as
    ``np.atleast_3d``); ``axis=None`` splits the flattened ``value``."""
    value = np.asarray(value)
    if axis is None:
        value, ax = np.ravel(value), 0
        sizes = [np.size(a) for a in arrays]
    else:
        ax = _normalize_axis(axis, value.ndim)
        sizes = [_padded_shape(a, value.ndim, promote)[ax] for a in arrays]
    pieces = np.split(value, np.cumsum(sizes)[:-1], axis=ax)
    return _like_container(
        [_shaped_like(p, a) for p, a in zip(pieces, arrays, strict=True)], arrays
    )


@helper
def join_like(
    pieces: Any, value: Any, axis: int | None = 0, promote: str = "leading"
) -> np.ndarray:
    """The inverse of ``split_like``: ``pieces`` concatenated along ``axis`` into an
    array of value's shape (each piece promoted to value's rank as ``promote`` says)."""
    value_shape = np.shape(value)
    if axis is None:
        parts = [np.ravel(p) for p in pieces]
        return np.reshape(np.concatenate(parts), value_shape)
    ndim = len(value_shape)
    parts = [np.reshape(p, _padded_shape(p, ndim, promote)) for p in pieces]
    return np.concatenate(parts, axis=axis)


@helper
def unstack_like(value: Any, arrays: Any, axis: int = 0) -> Any:
    """The slices of ``value`` along ``axis`` that ``np.stack(arrays, axis)`` stacked,
    each shaped like its array: the adjoint of stacking."""
    value = np.asarray(value)
    moved = np.moveaxis(value, _normalize_axis(axis, value.ndim), 0)
    return _like_container([_shaped_like(moved[k], a) for k, a in enumerate(arrays)], arrays)


@helper
def is_array(x: Any) -> bool:
    """Whether ``x`` is an array (a 0-d one too) rather than a number: ``x op= v``
    changes an array in place, and rebinds a name that holds a number
    (normalize/aliases.py writes back only the former)."""
    return isinstance(x, np.ndarray)


@helper
def as_kind_of(value: Any, like: Any) -> Any:
    """``value`` as an array where ``like`` is one, a 0-d ``value`` as a number where
    ``like`` is a number: ``s = t`` written back after ``t op= v`` on a name ``t = s``
    (normalize/aliases.py), where ``t op v`` gives a number for a 0-d ``t``, as NumPy's
    operators do, and ``s`` stays a 0-d array (its adjoint: the other way round)."""
    if isinstance(like, np.ndarray):
        return np.asarray(value)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


@helper
def inverse_axes(axes: Any) -> Any:
    """The permutation that undoes ``np.transpose(x, axes)`` (None for None)."""
    if axes is None:
        return None
    n = len(axes)
    inverse = [0] * n
    for i, a in enumerate(axes):
        inverse[a % n] = i
    return tuple(inverse)


@helper
def transpose_axes(axes: tuple) -> Any:
    """The ``axes`` of ``np.transpose`` for the arguments of ``x.transpose(*axes)``:
    ``()`` and ``(None,)`` → None, ``((1, 0),)`` → ``(1, 0)``, ``(1, 0)`` as it is."""
    if len(axes) == 0 or (len(axes) == 1 and axes[0] is None):
        return None
    if len(axes) == 1 and not isinstance(axes[0], int | np.integer):
        return tuple(axes[0])
    return tuple(axes)


@helper
def unrolled(x: Any, shift: Any, axis: Any = None) -> np.ndarray:
    """``np.roll(x, -shift, axis)`` for an int or a tuple ``shift``: undoes
    ``np.roll(x, shift, axis)``, and is its adjoint."""
    return np.roll(x, np.negative(shift), axis)


@helper
def untile(value: Any, A: Any, reps: Any) -> Any:  # noqa: N803 (NumPy's name)
    """The cotangent of ``A`` in ``np.tile(A, reps)``: the copies of ``value`` summed."""
    value = np.asarray(value)
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    d = max(np.ndim(A), len(reps))
    shape = _padded_shape(A, d)
    reps = (1,) * (d - len(reps)) + reps
    interleaved = [n for pair in zip(reps, shape, strict=True) for n in pair]
    total = np.sum(value.reshape(interleaved), axis=tuple(range(0, 2 * d, 2)))
    return _shaped_like(total, A)


@helper
def unrepeat(value: Any, a: Any, repeats: Any, axis: int | None = None) -> Any:
    """The cotangent of ``a`` in ``np.repeat(a, repeats, axis)``: each element's copies
    summed."""
    value = np.asarray(value)
    if axis is None:
        n = np.size(a)
        out = np.zeros(n, value.dtype)
        np.add.at(out, np.repeat(np.arange(n), repeats), np.ravel(value))
        return _shaped_like(out, a)
    ax = _normalize_axis(axis, np.ndim(a))
    n = np.shape(a)[ax]
    out = np.zeros(np.shape(a), value.dtype)
    index = (slice(None),) * ax + (np.repeat(np.arange(n), repeats),)
    np.add.at(out, index, value)
    return _shaped_like(out, a)


@helper
def undiag(value: Any, v: Any, k: int = 0) -> np.ndarray:
    """The cotangent of ``v`` in ``np.diag(v, k)``: the k-th diagonal of ``value`` for a
    1-D ``v``; for a 2-D ``v``, an array of v's shape with ``value`` on that diagonal."""
    if np.ndim(v) == 1:
        return _shaped_like(np.diag(value, k), v)
    out = np.zeros(np.shape(v), np.result_type(value))
    i = np.arange(np.size(value))
    out[i + max(-k, 0), i + max(k, 0)] = value
    return _shaped_like(out, v)


@helper
def linspace_weights(ans: Any, endpoint: bool = True, axis: int = 0) -> np.ndarray:
    """How far along ``np.linspace(start, stop, num, endpoint, axis=axis)`` (the array
    ``ans``) each sample lies, from 0 at ``start`` towards 1 at ``stop``: float64, shaped
    to broadcast against ``ans`` (``num`` along ``axis``, ones elsewhere)."""
    ndim = np.ndim(ans)
    ax = _normalize_axis(axis, ndim)
    if ax != 0:
        raise NotImplementedError("derivatives of np.linspace with axis != 0")
    num = np.shape(ans)[ax]
    steps = max(num - 1 if endpoint else num, 1)
    return (np.arange(num) / steps).reshape((num,) + (1,) * (ndim - 1))


def _inexact(dtype: Any) -> bool:
    return np.dtype(dtype).kind in "fc"


@helper
def cast(value: Any, dtype: Any) -> Any:
    """The tangent of ``x.astype(dtype)`` for x's tangent ``value``: ``value`` cast to
    ``dtype``, or zeros of that dtype when ``dtype`` is an integer or bool type (whose
    values do not change with x)."""
    dtype = np.dtype(dtype)
    if not isinstance(value, np.ndarray):
        return dtype.type(value) if _inexact(dtype) else dtype.type(0)
    if _inexact(dtype):
        return value.astype(dtype)
    return np.zeros(value.shape, dtype)


@helper
def uncast(value: Any, x: Any, dtype: Any) -> Any:
    """The cotangent of ``x`` in ``x.astype(dtype)``: ``value`` back in x's dtype, zero
    when ``dtype`` is an integer or bool type."""
    if _inexact(dtype):
        return unbroadcast(value, x)
    return zeros_like(x)


@helper
def unarray(value: Any, obj: Any) -> Any:
    """The cotangent of ``obj`` in ``np.array(obj)``: ``value`` itself for an array
    (in its dtype), else the pieces of ``value`` along its first axis, one per element
    of the list or tuple ``obj``, each shaped like its element (nested lists are made
    arrays first, row by row, by normalization)."""
    if isinstance(obj, list | tuple):
        return unstack_like(value, obj, 0)
    return unbroadcast(value, obj)


@helper
def array_operand(x: Any) -> Any:
    """``x`` as a NumPy function takes it: a list or tuple becomes the array NumPy makes
    of it, anything else is itself. Forward mode converts the tangent of a sequence
    operand with it, so that ``np.add(t, u)`` of tuples adds tangents where ``+`` would
    join them."""
    if isinstance(x, list | tuple):
        return np.asarray(x)
    return x


@helper
def concatenated_item(item: Any, ndmin: int, trans1d: int) -> Any:
    """An item of ``np.r_[...]``/``np.c_[...]`` as NumPy's index tricks make it before
    joining: at least ``ndmin`` dimensions, the item's own axes starting at ``trans1d``
    (-1: at the end, ones in front), the other axes of length one. Moving axes of
    length one keeps the elements' order, so this is a reshape (a copy: the result is
    joined into a new array anyway)."""
    shape = np.shape(item)
    missing = ndmin - len(shape)
    if missing <= 0:
        return np.array(item)
    padded = (1,) * missing + shape
    if trans1d == -1:
        return np.reshape(np.array(item), padded)
    start = trans1d + missing + 1 if trans1d < 0 else trans1d  # NumPy's slicing, as is
    axes = list(range(ndmin))
    order = axes[:start] + axes[missing:] + axes[start:missing]
    if sorted(order) != axes:
        raise ValueError(f"np.r_: axes don't match array (ndmin {ndmin}, trans1d {trans1d})")
    return np.reshape(np.array(item), tuple(padded[k] for k in order))


@helper
def outer_operand(a: Any, b: Any) -> Any:
    """``a`` with one new trailing axis per axis of ``b``: ``ufunc.outer(a, b)`` is the
    ufunc of it and ``b`` (``np.multiply.outer(a, b)`` → ``np.multiply(it, b)``)."""
    return np.reshape(a, np.shape(a) + (1,) * np.ndim(b))
