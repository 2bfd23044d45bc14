"""Numba versions of the elementwise helpers (``numbax/runtime/elementwise.py``): one
scalar kernel each, broadcast by ``elementwise`` with NEP 50's weak Python scalars.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.loops.elementwise import elementwise
from numbax.numba_backend.np._typing import _is_none
from numbax.runtime.elementwise import (
    SINC_SERIES_BELOW,
    SINC_SERIES_TERMS,
    clip_share,
    mul_pow,
    sinc_derivative,
    xlogy,
)


def _mul_pow_kernel(c, x, p):
    if c == 0:
        return c  # a zero: Numba unifies its type with the product's
    return c * x**p


def _xlogy_kernel(x, y):
    if x == 0:
        return x
    return x * np.log(y)


_mul_pow_elementwise = elementwise(_mul_pow_kernel, weak=("c", "x", "p"))
_xlogy_elementwise = elementwise(_xlogy_kernel, weak=("x", "y"))


@overload(mul_pow)
def _mul_pow_numba(c, x, p):
    return lambda c, x, p: _mul_pow_elementwise(c, x, p)


def _dtype(ty: types.Type) -> np.dtype:
    return as_dtype(ty.dtype if isinstance(ty, types.Array) else ty)


@overload(xlogy)
def _xlogy_numba(x, y):
    if _dtype(x).kind == "c" and _dtype(y).kind != "c":
        # The principal log of a negative real, as NumPy takes it once y is promoted.
        one = np.result_type(_dtype(x), _dtype(y)).type(1)
        return lambda x, y: _xlogy_elementwise(x, y * one)
    return lambda x, y: _xlogy_elementwise(x, y)


@overload(clip_share)
def _clip_share_numba(a, a_min, a_max, min, max, part):  # noqa: A002
    # A missing bound is an infinite one: maximum(a, -inf) is a, and never a tie.
    low = "a_min" if not _is_none(a_min) else "min" if not _is_none(min) else "-np.inf"
    high = "a_max" if not _is_none(a_max) else "max" if not _is_none(max) else "np.inf"
    array = any(isinstance(t, types.Array) for t in (a, a_min, a_max, min, max))
    dtype = np.result_type(_dtype(a), 1.0)
    if array:  # np.where broadcasts a and the bounds
        tie, below, above = "np.where({} == {}, 0.5, np.where({} {} {}, 1.0, 0.0))", "<", ">"
    else:
        tie, below, above = "(0.5 if {} == {} else (1.0 if {} {} {} else 0.0))", "<", ">"
    through_low = tie.format("a", low, "a", above, low)
    through_high = tie.format("middle", high, "middle", below, high)
    cast = "np.asarray({}).astype(dtype)" if array else "dtype({})"
    source = "\n".join(
        [
            "def impl(a, a_min, a_max, min, max, part):",
            f"    middle = np.maximum(a, {low})",
            "    if part == 'high':",
            f"        return {cast.format(f'1.0 - {through_high}')}",
            f"    return {cast.format(f'{through_low} * {through_high}')}",
        ]
    )
    namespace = {"np": np, "dtype": dtype.type}
    exec(source, namespace)  # noqa: S102
    return namespace["impl"]


def _sinc_derivative_kernel(x, k):
    u = np.pi * x
    total = 0.0
    if abs(u) < SINC_SERIES_BELOW:  # the Maclaurin series
        first = (k + 1) // 2
        for n in range(first, first + SINC_SERIES_TERMS):
            m = 2 * n - k
            factorial = 1.0
            for i in range(2, m + 1):
                factorial *= i
            total += (-1.0) ** n * u**m / ((2 * n + 1) * factorial)
    else:  # Leibniz's rule on sin(u) * (1 / u)
        factorial, binomial = 1.0, 1.0
        for j in range(k + 1):
            if j > 0:
                factorial *= j
                binomial = binomial * (k - j + 1) / j
            total += (
                binomial * (-1.0) ** j * factorial * np.sin(u + (k - j) * np.pi / 2) / u ** (j + 1)
            )
    return np.pi**k * total


_sinc_derivative = elementwise(_sinc_derivative_kernel)


@overload(sinc_derivative)
def _sinc_derivative_numba(x, k):
    dtype = np.result_type(_dtype(x), 1.0).type
    if isinstance(x, types.Array):
        return lambda x, k: _sinc_derivative(x, k).astype(dtype)
    return lambda x, k: dtype(_sinc_derivative(x, k))
