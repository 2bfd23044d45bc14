"""Adjoints that rules emit for reductions, reshapes and matrix products, the same
interpreted and in Numba (see ad_runtime.py for the pattern).

Each is linear in its cotangent argument, and has its own JVP and VJP rule
(``transform/rules/runtime.py``), so derivative code that calls it can be
differentiated again.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _reduced_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def broadcast_reduced(value: Any, a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The cotangent ``value`` of a reduction of ``a`` over ``axis``, spread back over
    the reduced axes: an array of ``a``'s shape and ``value``'s dtype."""
    shape = np.shape(a)
    if not keepdims:
        for ax in _reduced_axes(len(shape), axis):
            value = np.expand_dims(value, ax)
    return np.array(np.broadcast_to(value, shape))


def reshape_like(value: Any, like: Any) -> Any:
    """``value`` reshaped to ``like``'s shape (a scalar when ``like`` is one)."""
    if np.ndim(like) == 0 and not isinstance(like, np.ndarray):
        return np.reshape(value, ())[()]
    return np.reshape(value, np.shape(like))


def _swap_last(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def matmul_vjp_x(ct: Any, x: Any, y: Any) -> Any:
    """The cotangent of ``x`` in ``x @ y`` given the output's cotangent ``ct``."""
    x_nd, y_nd = np.ndim(x), np.ndim(y)
    if y_nd == 1:
        result = np.multiply.outer(ct, y) if x_nd > 1 else ct * y
    elif x_nd == 1:
        result = np.matmul(y, ct[..., None])[..., 0] if np.ndim(ct) > 1 else np.matmul(y, ct)
    else:
        result = np.matmul(ct, _swap_last(y))
    return _sum_to(result, np.shape(x))


def matmul_vjp_y(ct: Any, x: Any, y: Any) -> Any:
    """The cotangent of ``y`` in ``x @ y`` given the output's cotangent ``ct``."""
    x_nd, y_nd = np.ndim(x), np.ndim(y)
    if x_nd == 1:
        result = np.multiply.outer(x, ct) if y_nd > 1 else x * ct
    elif y_nd == 1:
        result = (
            np.matmul(_swap_last(x), ct[..., None])[..., 0]
            if np.ndim(ct) > 1
            else np.matmul(x.T, ct)
        )
    else:
        result = np.matmul(_swap_last(x), ct)
    return _sum_to(result, np.shape(y))


def _sum_to(value: Any, shape: tuple[int, ...]) -> Any:
    extra = np.ndim(value) - len(shape)
    if extra > 0:
        value = np.sum(value, axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and np.shape(value)[i] != 1)
    if axes:
        value = np.sum(value, axis=axes, keepdims=True)
    return value
