"""Numba versions of SciPy's special functions (``scipy.special``), which Numba does not
compile: each SciPy function object is overloaded with its kernel of
``math/special.py``, applied elementwise to arrays (broadcast, as the ufunc does) and
directly to numbers. They are registered on SciPy's own objects, which Numba knows
nothing of, so generated code reads ``sp.erf(x)`` as the user wrote it and
``nxrt.digamma(x)`` (``scipy.special.psi``) in derivatives.

Each kernel computes in float64; the result has the dtype SciPy's ufunc gives for the
argument dtypes (float32 stays float32, integers give float64), found by calling the
ufunc once on empty arrays of those dtypes while Numba types the call.

``logsumexp`` is a reduction: the maximum along the axes is taken out before the
exponentials (SciPy's way, and a non-finite maximum is replaced by 0), with numbax's
reductions' ``axis`` and ``keepdims``.

This module is imported when the program has imported ``scipy.special``
(``numba_backend/registered.py``), as that import costs half a second.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sp
from numba import types
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.math import special as k
from numbax.numba_backend.np import reductions
from numbax.numba_backend.np._typing import _is_none


def _element_dtype(ty: types.Type) -> np.dtype | None:
    """The NumPy dtype of a number or an array's elements; None for other types."""
    if isinstance(ty, types.Array):
        ty = ty.dtype
    if isinstance(ty, (types.Float, types.Integer, types.Boolean)):
        return as_dtype(ty)
    return None


def _result_dtype(ufunc: Any, args: tuple[types.Type, ...]) -> np.dtype | None:
    """The dtype SciPy's ``ufunc`` gives for arguments of these types (None: not real
    numbers, which these versions do not take)."""
    dtypes = [_element_dtype(a) for a in args]
    if any(d is None for d in dtypes):
        return None
    return ufunc(*(np.zeros(1, d) for d in dtypes)).dtype


def _unary(ufunc: Any, kernel: Callable) -> None:
    """Overload a one-argument ufunc with a float64 scalar kernel."""

    @overload(ufunc)
    def _numba(x):
        dtype = _result_dtype(ufunc, (x,))
        if dtype is None:
            return None
        cast = dtype.type
        if not isinstance(x, types.Array):
            return lambda x: cast(kernel(np.float64(x)))
        if x.ndim == 0:  # a number, as the ufunc gives (a 0-d array from here would go
            # through Numba's array expressions, whose 0-d results raise)
            return lambda x: cast(kernel(np.float64(x[()])))

        def each(x):
            out = np.empty(x.shape, cast)
            flat = out.reshape(-1)
            values = x.ravel()
            for i in range(flat.size):
                flat[i] = kernel(np.float64(values[i]))
            return out

        return each


def _binary(ufunc: Any, kernel: Callable) -> None:
    """Overload a two-argument ufunc with a float64 scalar kernel, broadcasting."""

    @overload(ufunc)
    def _numba(x, y):
        dtype = _result_dtype(ufunc, (x, y))
        if dtype is None:
            return None
        return _pairwise(kernel, dtype.type, x, y)


def _number_like(ty: types.Type) -> bool:
    """Whether an argument is a number or a 0-d array (one ``np.where`` of numbers
    makes)."""
    return not isinstance(ty, types.Array) or ty.ndim == 0


def _pairwise(kernel: Callable, cast: Any, x: types.Type, y: types.Type) -> Callable:
    """``kernel`` of each pair of elements of ``x`` and ``y`` broadcast, as ``cast``."""
    if not isinstance(x, types.Array) and not isinstance(y, types.Array):
        return lambda x, y: cast(kernel(np.float64(x), np.float64(y)))
    if _number_like(x) and _number_like(y):
        # a number, as the ufunc gives for 0-d arrays (Numba broadcasts no 0-d arrays)
        return lambda x, y: cast(
            kernel(np.float64(np.asarray(x).item()), np.float64(np.asarray(y).item()))
        )

    def each(x, y):
        xs, ys = np.broadcast_arrays(
            np.asarray(x).astype(np.float64), np.asarray(y).astype(np.float64)
        )
        out = np.empty(xs.shape, cast)
        flat = out.reshape(-1)
        xs = xs.ravel()
        ys = ys.ravel()
        for i in range(flat.size):
            flat[i] = kernel(xs[i], ys[i])
        return out

    return each


for _ufunc, _kernel in [
    (sp.erf, k.erf),
    (sp.erfc, k.erfc),
    (sp.erfinv, k.erfinv),
    (sp.ndtr, k.ndtr),
    (sp.ndtri, k.ndtri),
    (sp.log_ndtr, k.log_ndtr),
    (sp.expit, k.expit),
    (sp.logit, k.logit),
    (sp.gammaln, k.gammaln),
    (sp.gamma, k.gamma),
    (sp.psi, k.psi),
    (sp.entr, k.entr),
    (sp.i0, k.i0),
    (sp.i1, k.i1),
    (sp.i0e, k.i0e),
    (sp.i1e, k.i1e),
]:
    _unary(_ufunc, _kernel)

for _ufunc, _kernel in [
    (sp.xlogy, k.xlogy),
    (sp.xlog1py, k.xlog1py),
    (sp.betaln, k.betaln),
    (sp.rel_entr, k.rel_entr),
]:
    _binary(_ufunc, _kernel)


# polygamma is a Python function of SciPy's (not a ufunc): float64 results, always.
@overload(sp.polygamma)
def _polygamma_numba(n, x):
    each = register_jitable(_pairwise(k.polygamma, np.float64, n, x))
    return lambda n, x: each(n, x)


@overload(sp.logsumexp, prefer_literal=True)
def _logsumexp_numba(a, axis=None, b=None, keepdims=False, return_sign=False):
    sign = getattr(return_sign, "literal_value", return_sign)
    if sign is not False:
        raise TypeError("logsumexp(return_sign=True) does not compile: compute the sign apart")
    keep = getattr(keepdims, "literal_value", keepdims)
    if _is_none(axis) and _is_none(b) and isinstance(keep, bool):
        # the whole array: one pass for the maximum, one for the sum
        ones = (1,) * (a.ndim if isinstance(a, types.Array) else 0)

        @register_jitable
        def whole(a):
            values = np.asarray(a).ravel()
            top = -np.inf
            for v in values:
                top = max(top, v)
            top = top if np.isfinite(top) else 0.0
            total = 0.0
            for v in values:
                total += np.exp(v - top)
            return np.log(total) + top

        if keep and ones:
            return lambda a, axis=None, b=None, keepdims=False, return_sign=False: np.full(
                ones, whole(a)
            )
        return lambda a, axis=None, b=None, keepdims=False, return_sign=False: whole(a)
    if _is_none(b):

        def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
            top = _finite_max(a, axis)
            total = reductions.sum(np.exp(a - top), axis, keepdims=keepdims)
            return np.log(total) + reductions.sum(top, axis, keepdims=keepdims)

    else:

        def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
            top = _finite_max(a, axis)
            total = reductions.sum(b * np.exp(a - top), axis, keepdims=keepdims)
            return np.log(total) + reductions.sum(top, axis, keepdims=keepdims)

    return impl


@register_jitable
def _finite_max(a, axis):
    """The maximum over ``axis`` (kept as axes of length 1), 0 where it is not finite:
    what logsumexp takes out of the exponentials."""
    top = reductions.max(np.asarray(a), axis, keepdims=True)
    return np.where(np.isfinite(top), top, 0.0)
