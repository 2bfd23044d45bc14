"""The helpers of fused elementwise kernels (``numba_backend/passes/fuse.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.registry import helper
from numbax.runtime.seeds import grad_dtype_check, grad_seed


@helper
def first(value: Any, like: Any) -> Any:
    """``value``: in a fused kernel, a scalar spread over ``like``'s elements (``like``
    is an argument only so that the kernel broadcasts to its shape)."""
    return value


@helper
def cotangent_as(value: Any, like: Any) -> Any:
    """``unbroadcast(value, like)`` where ``value`` has ``like``'s shape (fused kernels:
    ``numba_backend/passes/kept_shapes.py``): only the conversion to like's cotangent dtype."""
    return unbroadcast(value, like)


@helper
def seed_of_sum(kernel: Any, *args: Any) -> Any:
    """``grad_seed(np.sum(kernel(*args)))``: where ``grad``'s output is the sum of a fused
    loop's values, the reverse pass starts from one of the sum's dtype, which compiled
    code knows from the argument types without running the loop (nor the sum); plain
    Python computes them."""
    return grad_seed(np.sum(kernel(*args)))


@helper
def seed_of_total(value: Any) -> Any:
    """``grad_seed(np.sum(value))``, where the sum is read by nothing else: compiled code
    knows its dtype from ``value``'s type without summing (the 4th derivative of
    ``tanh`` summed each order's values only to seed the next: four sums to run, and
    four compiled functions the first time); plain Python sums."""
    return grad_seed(np.sum(value))


@helper
def seed_of_mean(value: Any) -> Any:
    """``grad_seed(np.mean(value))``, where the mean is read by nothing else but the
    ``reduced_count`` of its adjoint (which needs its size only, the seed's): a loss
    ``np.mean((pred - y) ** 2)`` under ``grad`` seeds the reverse pass without taking
    the mean, a reduction compiled the first time (0.6 s) and a pass over the values;
    plain Python takes it."""
    return grad_seed(np.mean(value))


@helper
def expand_reduced(value: Any, axis: Any, keepdims: bool) -> Any:
    """``value``, the result of a reduction over ``axis``, with the reduced axes back as
    axes of length 1 (a view): what a fused loop reads to spread it over them, as
    ``broadcast_reduced`` does."""
    if keepdims or not isinstance(value, np.ndarray):
        return value
    axes = axis if isinstance(axis, tuple) else (axis,)
    return np.expand_dims(value, axes)


@helper
def gradient_stand_in(argument: Any) -> Any:
    """What ``grad(f)(argument)`` is to compiled code that reads only its shape and
    dtype (a seed, a cotangent spread over it): ``argument`` itself, which has both, with
    ``grad``'s check of its dtype. ``grad`` of ``np.sum(derivative(x))`` needs the
    inner gradient's value only for that, and computing it compiled and ran every lower
    order again (``numba_backend/passes/stand_ins.py``)."""
    grad_dtype_check(argument, 0)
    return argument


@helper
def loop_stand_in(kernel: Any, *args: Any) -> Any:
    """``kernel(*args)`` (a fused loop) where only the dtype of its values is read (by
    :func:`reduction_stand_in`): compiled code gives a zero of that dtype, known from
    the scalar kernel's types, and neither runs the loop nor compiles it; plain Python
    runs it."""
    return kernel(*args)


@helper
def shape_stand_in(operation: Any, *args: Any) -> Any:
    """``operation(*args)`` (a fused loop, or an arithmetic operator on arrays) where only
    the shape and dtype of its values are read (a seed, a reduction's count, the shape a
    cotangent is unbroadcast to): compiled code gives an array of that shape and dtype
    whose values are never set, and neither compiles the loop nor runs it
    (``numba_backend/passes/stand_ins.py``); plain Python computes it."""
    return operation(*args)


@helper
def reduction_stand_in(value: Any, reduction: str) -> Any:
    """``np.<reduction>(value)`` (``"sum"``, ``"mean"``) over all of ``value``, where only
    its type is read: compiled code gives a zero of the reduction's dtype without
    reducing (a function whose caller reads only its result's shape and dtype, as a
    Jacobian reads its function's output: ``numba_backend/passes/stand_ins.py``); plain Python
    reduces."""
    return getattr(np, reduction)(value)
