"""The adjoints of broadcasting: a cotangent brought back to its operand's shape
(``unbroadcast``), a value spread to another's shape (``broadcast_like``), the
cotangent of a reduction spread back over the reduced axes (``broadcast_reduced``), and
a reshape to another value's shape (``reshape_like``).

Why not NumPy's own functions? Numba has no sum over axes known only at run time, which
is what the adjoint of broadcasting needs (axes where the operand has length 1 are only
known from the shapes); the Numba versions (``numba_backend/runtime/broadcasting.py``)
generate loops per argument types instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from numbax.runtime.registry import helper


def _cotangent_dtype(value: np.dtype, like: np.dtype) -> np.dtype:
    """The dtype of ``unbroadcast(value, like)``: like's when inexact, else value's."""
    return like if like.kind in "fc" else value


@helper
def unbroadcast(value: Any, like: Any) -> Any:
    """The cotangent ``value`` of a broadcast result, brought back to operand ``like``.

    Axes that broadcasting added or stretched (leading axes, and axes where ``like`` has
    size 1) are summed; a ``value`` smaller than ``like`` (an implicitly broadcast
    cotangent) is broadcast up to it. The result has like's shape and, when like is
    real or complex, its dtype (the real part of a complex ``value`` for a real ``like``);
    an integer or boolean ``like`` keeps value's dtype rather than truncating it. A
    scalar ``like`` gives a scalar, a list or tuple (an operand NumPy converted) an
    array of its shape. When shape and dtype already match, ``value`` itself
    is returned: this sits on the hot path of every broadcasting operation.
    """
    if isinstance(like, list | tuple):  # an operand NumPy made an array: its cotangent is one
        like = np.asarray(like)
    vdtype = np.result_type(value)
    target = _cotangent_dtype(vdtype, np.result_type(like))
    real = vdtype.kind == "c" and target.kind != "c"
    if not isinstance(like, np.ndarray):
        if not isinstance(value, np.ndarray) and vdtype == target:
            return value
        total = np.sum(value) if isinstance(value, np.ndarray) else value
        if real:
            total = total.real
        if type(like) in (float, complex) and target.kind in "fc":
            return type(like)(total)
        return target.type(total)
    shape = like.shape
    vshape = np.shape(value)
    if vshape == shape and vdtype == target and isinstance(value, np.ndarray):
        return value
    full = np.broadcast_shapes(vshape, shape)
    result = np.asarray(value)
    if full != vshape:
        result = np.broadcast_to(result, full)
    extra = len(full) - len(shape)
    axes = tuple(range(extra))
    axes += tuple(extra + i for i, n in enumerate(shape) if n == 1 and full[extra + i] != 1)
    fresh = bool(axes)
    if axes:
        result = np.sum(result, axis=axes).reshape(shape)
    if real:
        result = result.real
    if fresh:
        return np.asarray(result, dtype=target, order="C")
    return np.array(result, dtype=target, order="C")


@helper
def broadcast_like(value: Any, like: Any) -> Any:
    """``value`` broadcast to like's shape, as a fresh writeable array of value's dtype
    (``np.broadcast_to`` gives a read-only view). ``value`` itself when the shapes already
    match, and when ``like`` is a scalar."""
    if not isinstance(like, np.ndarray) or np.shape(value) == like.shape:
        return value
    return np.array(np.broadcast_to(value, like.shape), order="C")


def reduced_axes(ndim: int, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    """The axes a reduction over ``axis`` of an array of ``ndim`` dimensions reduces,
    counted from 0 and sorted."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


@helper
def broadcast_reduced(value: Any, a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The cotangent ``value`` of a reduction of ``a`` over ``axis``, spread back over
    the reduced axes: a fresh array of ``a``'s shape and ``value``'s dtype (``value``
    itself when ``a`` is a scalar)."""
    if not isinstance(a, np.ndarray):
        return value[()] if isinstance(value, np.ndarray) else value
    shape = a.shape
    if not keepdims:
        for ax in reduced_axes(len(shape), axis):
            value = np.expand_dims(value, ax)
    return np.array(np.broadcast_to(value, shape))


@helper
def reshape_like(value: Any, like: Any) -> Any:
    """``value`` reshaped to ``like``'s shape (a scalar when ``like`` is one)."""
    if not isinstance(like, np.ndarray):
        return np.reshape(value, ())[()] if isinstance(value, np.ndarray) else value
    return np.reshape(value, like.shape)
