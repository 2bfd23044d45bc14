"""NumPy reductions that behave the same interpreted and in Numba's nopython mode.

numbax promises that a function which runs under NumPy runs the same once jitted. Numba's
own ``np.sum``, ``np.max``, ``np.argmax``, ``np.cumsum`` and friends fall short of that
promise: most take no ``axis`` tuple and no ``keepdims``, some take no ``axis`` at all,
``np.var``/``np.std`` take no ``ddof``, and result dtypes differ from NumPy's in places. So
numbax's code generator redirects calls that resolve to ``numpy.sum`` (and array methods
such as ``x.sum(axis=0)``) to the functions of this module when it compiles with jit.

Each public function here, called from plain Python, simply calls NumPy. A
``numba.extending.overload`` registered on that numbax function (never on ``np.sum``
itself: Numba's own functions are left alone) compiles the same call in nopython mode
with NumPy's semantics:

* ``axis`` is None, an int (negative counts from the end) or a tuple of ints; a bad
  axis raises NumPy's own ``AxisError`` when the call runs, and a repeated one raises
  ``ValueError``;
* ``keepdims`` is True or False; ``ddof`` for ``var``/``std``; ``dtype`` for all
  functions of NumPy that take one;
* any ndim, 0-d arrays and scalars included, any memory layout;
* NumPy's result dtypes (``sum`` of bool or small ints is int64, ``mean`` of ints is
  float64, ``var`` of complex is real, ``argmax`` is intp) and NaN handling (``max``
  propagates NaN, ``argmax`` returns the first NaN), and NumPy's pairwise summation for
  floats, so sums usually agree with NumPy to the last bit.

The rank of a result must be known when Numba compiles, so ``keepdims`` must be a
compile-time constant (a non-constant one is turned into one with ``numba.literally``).
An axis written as a constant compiles into loops specialised to it; an axis that is only
known at run time (a variable, or a tuple holding one) is handled by a general loop that
first moves the reduced axes to one end.

The loops are written as source for the argument types of each call
(``reduction_loops.py``) around the folds of ``reduction_folds.py``.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba.extending import overload

from numbax.numba_backend.np._typing import _wants_literal
from numbax.numba_backend.np.reduction_loops import _arg_reduction, _cumulative, _reduction
from numbax.numba_backend.redirects import redirect

AxisArg = int | tuple[int, ...] | None

# ---------------------------------------------------------------------------------------
# The public functions: plain NumPy when interpreted.
# ---------------------------------------------------------------------------------------


@redirect(np.sum)
def sum(a: Any, axis: AxisArg = None, dtype: Any = None, *, keepdims: bool = False) -> Any:
    """Sum of elements, as ``np.sum``; compiled by the overload below under jit."""
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


@redirect(np.prod)
def prod(a: Any, axis: AxisArg = None, dtype: Any = None, *, keepdims: bool = False) -> Any:
    """Product of elements, as ``np.prod``; compiled by the overload below under jit."""
    return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)


@redirect(np.mean)
def mean(a: Any, axis: AxisArg = None, dtype: Any = None, *, keepdims: bool = False) -> Any:
    """Arithmetic mean, as ``np.mean``; compiled by the overload below under jit."""
    return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)


@redirect(np.max)
def max(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Maximum, as ``np.max`` (NaN propagates); compiled by the overload below under jit."""
    return np.max(a, axis=axis, keepdims=keepdims)


@redirect(np.min)
def min(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Minimum, as ``np.min`` (NaN propagates); compiled by the overload below under jit."""
    return np.min(a, axis=axis, keepdims=keepdims)


# NumPy's amax/amin are the same functions under older names.
amax = redirect(np.amax, name="amax")(max)
amin = redirect(np.amin, name="amin")(min)


@redirect(np.var)
def var(
    a: Any, axis: AxisArg = None, dtype: Any = None, *, ddof: float = 0, keepdims: bool = False
) -> Any:
    """Variance, as ``np.var`` (two passes; real for complex input); jit via the overload."""
    return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)


@redirect(np.std)
def std(
    a: Any, axis: AxisArg = None, dtype: Any = None, *, ddof: float = 0, keepdims: bool = False
) -> Any:
    """Standard deviation, as ``np.std``; compiled by the overload below under jit."""
    return np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)


@redirect(np.argmax)
def argmax(a: Any, axis: int | None = None, *, keepdims: bool = False) -> Any:
    """Index of the first maximum (or first NaN), as ``np.argmax``; jit via the overload."""
    return np.argmax(a, axis=axis, keepdims=keepdims)


@redirect(np.argmin)
def argmin(a: Any, axis: int | None = None, *, keepdims: bool = False) -> Any:
    """Index of the first minimum (or first NaN), as ``np.argmin``; jit via the overload."""
    return np.argmin(a, axis=axis, keepdims=keepdims)


@redirect(np.all)
def all(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Whether all elements are true, as ``np.all``; compiled by the overload below."""
    return np.all(a, axis=axis, keepdims=keepdims)


@redirect(np.any)
def any(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Whether any element is true, as ``np.any``; compiled by the overload below."""
    return np.any(a, axis=axis, keepdims=keepdims)


@redirect(np.cumsum)
def cumsum(a: Any, axis: int | None = None, dtype: Any = None) -> Any:
    """Cumulative sum (axis None flattens), as ``np.cumsum``; jit via the overload."""
    return np.cumsum(a, axis=axis, dtype=dtype)


@redirect(np.cumprod)
def cumprod(a: Any, axis: int | None = None, dtype: Any = None) -> Any:
    """Cumulative product (axis None flattens), as ``np.cumprod``; jit via the overload."""
    return np.cumprod(a, axis=axis, dtype=dtype)


# ---------------------------------------------------------------------------------------
# The overloads. Parameters are positional-or-keyword here: Numba cannot bind
# keyword-only ones. A run-time keepdims is made a constant with numba.literally.
# ---------------------------------------------------------------------------------------


@overload(sum, prefer_literal=True)
def _sum_jit(a, axis=None, dtype=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, keepdims=False: numba.literally(keepdims)
    return _reduction("sum", a, axis, keepdims, dtype)


@overload(prod, prefer_literal=True)
def _prod_jit(a, axis=None, dtype=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, keepdims=False: numba.literally(keepdims)
    return _reduction("prod", a, axis, keepdims, dtype)


@overload(mean, prefer_literal=True)
def _mean_jit(a, axis=None, dtype=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, keepdims=False: numba.literally(keepdims)
    return _reduction("mean", a, axis, keepdims, dtype)


@overload(max, prefer_literal=True)
def _max_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("max", a, axis, keepdims)


@overload(min, prefer_literal=True)
def _min_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("min", a, axis, keepdims)


@overload(var, prefer_literal=True)
def _var_jit(a, axis=None, dtype=None, ddof=0, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, ddof=0, keepdims=False: numba.literally(keepdims)
    return _reduction("var", a, axis, keepdims, dtype)


@overload(std, prefer_literal=True)
def _std_jit(a, axis=None, dtype=None, ddof=0, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, ddof=0, keepdims=False: numba.literally(keepdims)
    return _reduction("std", a, axis, keepdims, dtype)


@overload(argmax, prefer_literal=True)
def _argmax_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _arg_reduction("argmax", a, axis, keepdims)


@overload(argmin, prefer_literal=True)
def _argmin_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _arg_reduction("argmin", a, axis, keepdims)


@overload(all, prefer_literal=True)
def _all_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("all", a, axis, keepdims)


@overload(any, prefer_literal=True)
def _any_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("any", a, axis, keepdims)


@overload(cumsum, prefer_literal=True)
def _cumsum_jit(a, axis=None, dtype=None):
    return _cumulative("cumsum", a, axis, dtype)


@overload(cumprod, prefer_literal=True)
def _cumprod_jit(a, axis=None, dtype=None):
    return _cumulative("cumprod", a, axis, dtype)
