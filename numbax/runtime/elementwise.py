"""Elementwise helpers that derivative rules emit (of powers, ``np.clip`` and ``np.sinc``),
whose Numba versions compute the same.

Both are products that must be *exactly* zero where their first factor is, even where
the other factor is infinite or undefined, as JAX's rules for ``x ** y`` are:

* ``mul_pow(c, x, p)`` is ``c * x ** p``: the slope ``y * x ** (y - 1)`` of ``x ** y``
  is ``mul_pow(y, x, y - 1)``, 0 for ``y == 0`` even at ``x == 0`` (``x ** 0`` is the
  constant 1; a naive ``0 * 0.0 ** -1`` is nan);
* ``xlogy(x, y)`` is ``x * log(y)``: the slope ``ans * log(x)`` of ``x ** y`` in ``y``
  is ``xlogy(ans, np.where(x == 0, 1, x))``, 0 where ``x ** y`` is 0 (``0.0 ** y`` for
  ``y > 0``) and, as JAX takes it, where ``x`` is (its log then counts as 0, and so do
  the log's own derivatives there).

The family is closed under differentiation (their rules are in
``transform/rules/elementwise.py``): the derivative of ``mul_pow(c, x, p)`` in ``c`` is
``mul_pow(c != 0, x, p)`` (0 with ``c``, as JAX's select of ``x ** 0``'s slope), in
``x`` ``mul_pow(c * p, x, p - 1)``, in ``p`` the ``xlogy`` above; that of
``xlogy(x, y)`` in ``y`` is ``mul_pow(x, y, -1)``. So higher derivatives of ``x ** 0``
stay 0 at ``x == 0``, and those of ``0 ** y`` in ``y`` are 0, not ``0 * log(0)``.

Dtypes follow NumPy 2 (NEP 50): a Python scalar adapts to the arrays next to it, so a
float32 array gives float32 results; their Numba versions
(``numba_backend/runtime/elementwise.py``) do the same.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax.runtime.registry import helper


def _scalar_result(result: np.ndarray) -> Any:
    """A 0-d result as a NumPy scalar (``np.where`` always gives arrays)."""
    return result[()] if result.ndim == 0 else result


@helper
def mul_pow(c: Any, x: Any, p: Any) -> Any:
    """``c * x ** p``, elementwise with broadcasting, exactly 0 where ``c == 0`` (even
    where ``x ** p`` is infinite or nan)."""
    # np.power, not **: Python's 0.0 ** -1 raises; NumPy's is inf, as in Numba.
    if np.ndim(c) == 0 and c != 0:  # the common case: x ** 2 → mul_pow(2, x, 1)
        return c * np.power(x, p)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        value = c * np.power(x, p)
    return _scalar_result(np.where(c == 0, 0, value))


@helper
def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, elementwise with broadcasting, exactly 0 where ``x == 0`` (even
    where ``log(y)`` is -inf or nan), as JAX's ``xlogy`` (SciPy's gives nan for a nan
    ``y``)."""
    dtype = np.result_type(x, y, 1.0)  # at least inexact; Python scalars adapt (NEP 50)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        value = x * np.log(np.asarray(y, dtype))
    return _scalar_result(np.where(x == 0, 0, value))


def _clip_bound(bound: Any, alias: Any) -> Any:
    """A bound of ``np.clip`` given either way (``a_min`` or NumPy 2's ``min``)."""
    return alias if bound is None else bound


@helper
def clip_share(a: Any, a_min: Any, a_max: Any, min: Any, max: Any, part: str) -> Any:  # noqa: A002
    """The share of ``np.clip(a, low, high)``'s derivative that goes to ``a``
    (``part='a'``) or to the upper bound (``part='high'``); the lower bound has the rest.

    ``clip`` is ``minimum(maximum(a, low), high)``, as in JAX, whose ``maximum`` and
    ``minimum`` split the derivative evenly between tied arguments: at ``a == low`` half
    goes to ``a`` and half to ``low``. An array of the broadcast shape (a Python float for
    scalars), of ``a``'s floating dtype."""
    low, high = _clip_bound(a_min, min), _clip_bound(a_max, max)
    dtype = np.result_type(a, 1.0)
    middle = a if low is None else np.maximum(a, low)
    through_high = 1.0 if high is None else np.where(middle == high, 0.5, middle < high)
    if part == "high":
        share = 1.0 - np.asarray(through_high, dtype)
    else:
        through_low = 1.0 if low is None else np.where(a == low, 0.5, a > low)
        share = np.asarray(through_low, dtype) * through_high
    return _scalar_result(np.asarray(share, dtype))


SINC_SERIES_BELOW = 1.5
"""Where ``|pi x|`` is below this, ``sinc_derivative`` sums sinc's Maclaurin series
(the closed form cancels there); elsewhere it takes the closed form."""
SINC_SERIES_TERMS = 30


@helper
def sinc_derivative(x: Any, k: int) -> Any:
    """The ``k``-th derivative of ``np.sinc`` at ``x``, right at ``x = 0`` too (where the
    quotient rule divides by zero: the first derivative there is 0, the second
    ``-pi**2 / 3``), as JAX computes it. Its own derivative is the ``k + 1``-th, so
    derivatives of every order are right.

    With ``u = pi x`` and ``f(u) = sin(u) / u``: ``f^(k)(u) = sum_j C(k, j)
    sin(u + (k - j) pi / 2) (-1)^j j! / u^(j + 1)`` (Leibniz), and near 0 the series
    ``sum_n (-1)^n u^(2n - k) / ((2n + 1) (2n - k)!)``; the result is ``pi^k f^(k)``."""
    dtype = np.result_type(x, 1.0)
    u = np.pi * np.asarray(x, np.float64)
    near = np.abs(u) < SINC_SERIES_BELOW
    series = np.zeros_like(u)
    for n in range((k + 1) // 2, (k + 1) // 2 + SINC_SERIES_TERMS):
        series += (-1) ** n * u ** (2 * n - k) / ((2 * n + 1) * math.factorial(2 * n - k))
    far = np.where(near, 1.0, u)
    closed = np.zeros_like(u)
    for j in range(k + 1):
        term = math.comb(k, j) * (-1) ** j * math.factorial(j)
        closed += term * np.sin(far + (k - j) * np.pi / 2) / far ** (j + 1)
    return _scalar_result(np.asarray(np.pi**k * np.where(near, series, closed), dtype))
