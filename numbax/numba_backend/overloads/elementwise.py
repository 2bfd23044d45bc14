"""Numba versions of the elementwise helpers of powers (``numbax/runtime/elementwise.py``):
one scalar kernel each, broadcast by ``elementwise`` with NEP 50's weak Python scalars.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.elementwise import elementwise
from numbax.runtime.elementwise import mul_pow, xlogy


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
