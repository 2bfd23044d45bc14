"""Norms, traces and determinants: ``np.linalg.norm``, ``np.trace``, ``np.linalg.det``
and ``np.linalg.slogdet``, each a number of every vector or matrix, of NumPy's dtype.

Numba's ``np.linalg.norm`` has no ``axis``, no ``keepdims`` and no ``'fro'``; its
``np.trace`` takes no array of more than two dimensions; all four give float64 of
float32 input (NumPy keeps float32), and ``det``/``slogdet`` take no stack of matrices.
The rest of ``numpy.linalg`` is in ``linalg.py``.

How a call reaches them and compiles: the package's docstring (``np/__init__.py``).

``keepdims`` and an ``ord`` given as a string are made compile-time constants with
``numba.literally`` when they are not; a matrix norm's constant order compiles its own
kind of norm only (SVD takes seconds to compile).
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from numbax.numba_backend.np import reductions
from numbax.numba_backend.np._typing import (
    _accumulating,
    _axis_count,
    _axis_items,
    _dtype_arg,
    _fail,
    _family_code,
    _inexact,
    _is_none,
    _keepdims,
    _literal_int,
    _npt,
    _real,
    _scalar_type,
    _tuple,
)
from numbax.numba_backend.redirects import redirect

__all__ = ["det", "norm", "slogdet", "trace"]

AxisArg = int | tuple[int, ...] | None


@redirect(np.linalg.norm)
def norm(x: Any, ord: Any = None, axis: AxisArg = None, keepdims: bool = False) -> Any:
    """``np.linalg.norm`` with every ``ord``, ``axis`` and ``keepdims`` under jit."""
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


@redirect(np.trace)
def trace(
    a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None
) -> Any:
    """``np.trace``: NumPy's sum dtype (float32 stays float32), any ndim, under jit."""
    return np.trace(a, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype, out=out)


@redirect(np.linalg.det)
def det(a: Any) -> Any:
    """``np.linalg.det``, float32 staying float32 and stacks of matrices, under jit."""
    return np.linalg.det(a)


@redirect(np.linalg.slogdet)
def slogdet(a: Any) -> Any:
    """``np.linalg.slogdet`` as a ``(sign, logabsdet)`` tuple of the input's precision."""
    return np.linalg.slogdet(a)


@register_jitable
def _vector_norms(mag, p):
    """Norms of order ``p`` of the vectors ``mag[i, :, k]`` (magnitudes), as NumPy's
    ``norm`` computes them (``max``/``min`` propagate NaN); sums accumulate in float64."""
    pre, n, post = mag.shape
    out = np.empty((pre, post), mag.dtype)
    if n == 0 and (p == np.inf or p == -np.inf):
        raise ValueError("zero-size array to reduction operation which has no identity")
    for i in range(pre):
        for k in range(post):
            if p == np.inf or p == -np.inf:
                r = mag[i, 0, k]
                for j in range(1, n):
                    v = mag[i, j, k]
                    r = np.maximum(r, v) if p > 0 else np.minimum(r, v)
                out[i, k] = r
                continue
            s = 0.0
            for j in range(n):
                v = np.float64(mag[i, j, k])
                if p == 0:
                    s += v != 0
                elif p == 1:
                    s += v
                elif p == 2:
                    s += v * v
                else:
                    s += v ** np.float64(p)
            if p == 2:
                s = np.sqrt(s)
            elif p != 0 and p != 1:
                s = s ** (1.0 / np.float64(p))
            out[i, k] = s
    return out


@register_jitable
def _matrix_sum_norm(m, p):
    """The matrix norm of order ``p`` = +-1 (column sums) or +-inf (row sums)."""
    rows, cols = m.shape
    if p == 1 or p == -1:
        sums = np.zeros(cols, np.float64)
        for i in range(rows):
            for j in range(cols):
                sums[j] += np.abs(m[i, j])
    elif p == np.inf or p == -np.inf:
        sums = np.zeros(rows, np.float64)
        for i in range(rows):
            for j in range(cols):
                sums[i] += np.abs(m[i, j])
    else:
        raise ValueError("Invalid norm order for matrices.")
    return sums.max() if p > 0 else sums.min()


@register_jitable
def _matrix_svd_norm(m, p, nuc):
    """The matrix norm of order ``p`` = +-2, or if ``nuc`` the nuclear norm (by SVD)."""
    s = np.linalg.svd(m, full_matrices=False)[1]
    return s.sum() if nuc else (s.max() if p > 0 else s.min())


@register_jitable
def _matrix_norm(m, p):
    """The matrix norm of an order ``p`` known only at run time."""
    if p == 2 or p == -2:
        return _matrix_svd_norm(m, p, False)
    return _matrix_sum_norm(m, p)


_code = _family_code(
    _vector_norms, _matrix_norm, _matrix_sum_norm, _matrix_svd_norm, reductions=reductions
)


@functools.cache
def _norm_impl(x: Any, ord: Any, axis: Any, keep: bool) -> Any:
    dt = _scalar_type("norm", x)
    ndim = x.ndim if isinstance(x, types.Array) else 0
    real = _real(_inexact(dt))
    complex_input = isinstance(dt, types.Complex)
    code = _code("def impl(x, ord=None, axis=None, keepdims=False):", R=_npt(real))
    code("a = np.asarray(x)" if ndim == 0 else "a = x")
    if not isinstance(dt, types.Float | types.Complex):
        code("a = a.astype(R)")
    ord_none = _is_none(ord)
    ord_name = ord.literal_value if isinstance(ord, types.StringLiteral) else None
    if ord_name is not None and ord_name not in ("fro", "nuc"):
        raise _fail("norm", f"invalid norm order {ord_name!r}")
    if not (ord_none or ord_name or isinstance(ord, types.Number)):
        raise _fail("norm", f"ord must be None, a number, 'fro' or 'nuc', got {ord}")
    if _is_none(axis):
        if ord_none:
            # NumPy: sqrt(dot(x, x)) of the flattened array (BLAS for floats).
            code("v = np.ascontiguousarray(a).ravel()")
            if complex_input:
                code("re = np.ascontiguousarray(v.real)", "im = np.ascontiguousarray(v.imag)")
                code("r = np.sqrt(np.dot(re, re) + np.dot(im, im))")
            else:
                code("r = np.sqrt(np.dot(v, v)) if v.size else R(0)")
            code(f"return np.full({_tuple(['1'] * ndim)}, r, R)" if keep and ndim else "return r")
            return code.compile("norm")
        if ndim == 1:
            vector_axes: list[str] | None = ["0"]
            matrix_axes: list[str] | None = None
        elif ndim == 2:
            vector_axes, matrix_axes = None, ["0", "1"]
        else:
            raise _fail("norm", f"ord={ord} needs axis for an array of {ndim} dims")
    else:
        count = _axis_count("norm", axis)
        items = _axis_items("axis", axis)
        if count == 1:
            vector_axes, matrix_axes = items, None
        elif count == 2:
            vector_axes, matrix_axes = None, items
        else:
            raise _fail("norm", "axis must name one axis (vectors) or two (matrices)")
    if vector_axes is not None:
        if ord_name:
            raise _fail("norm", f"invalid norm order {ord_name!r} for vectors")
        (axis_expr,) = vector_axes
        if ord_none:
            # NumPy: sqrt(add.reduce(|x|**2, axis)); the reduction gets the axis as it came
            # (a constant compiles simpler loops) and checks it.
            code("sq = np.square(np.abs(a))")
            code(f"return np.sqrt(reductions.sum(sq, {axis_expr}, keepdims={keep}))")
            return code.compile("norm")
        # Other orders: the axis splits the array into (before, along, after).
        code(f"ax = _normalize({axis_expr}, {ndim})", "pre = 1", "post = 1")
        code(f"for d in range({ndim}):", "    if d < ax:", "        pre *= a.shape[d]")
        code("    elif d > ax:", "        post *= a.shape[d]")
        code("mag = np.ascontiguousarray(np.abs(a)).reshape((pre, a.shape[ax], post))")
        code("r = _vector_norms(mag, R(ord))")
        rank = ndim if keep else ndim - 1
        if rank == 0:
            code("return r[0, 0]")
            return code.compile("norm")
        code(f"shape = np.empty({rank}, np.intp)", "j = 0", f"for d in range({ndim}):")
        code("    if d != ax:", "        shape[j] = a.shape[d]", "        j += 1")
        if keep:
            code("    else:", "        shape[j] = 1", "        j += 1")
        code(f"return r.reshape(to_fixed_tuple(shape, {rank}))")
        return code.compile("norm")
    row_axis, col_axis = matrix_axes
    if ord_none or ord_name == "fro":
        both = f"({row_axis}, {col_axis})"
        code(f"return np.sqrt(reductions.sum(np.square(np.abs(a)), {both}, keepdims={keep}))")
        return code.compile("norm")
    # The others: one matrix after the other, its two axes moved to the end.
    code(f"row = _normalize({row_axis}, {ndim})", f"col = _normalize({col_axis}, {ndim})")
    code("if row == col:", "    raise ValueError('Duplicate axes given.')")
    code(f"perm = np.empty({ndim}, np.intp)", "j = 0", f"for d in range({ndim}):")
    code("    if d != row and d != col:", "        perm[j] = d", "        j += 1")
    code(f"perm[{ndim - 2}] = row", f"perm[{ndim - 1}] = col")
    code(f"m = np.ascontiguousarray(a.transpose(to_fixed_tuple(perm, {ndim})))")
    code(f"stack = m.reshape((-1, m.shape[{ndim - 2}], m.shape[{ndim - 1}]))")
    code("vals = np.empty(stack.shape[0], R)", f"p = R({'0' if ord_name else 'ord'})")
    # A constant order compiles its own kind of norm only (SVD takes seconds to compile).
    order = ord.literal_value if isinstance(ord, types.IntegerLiteral) else None
    if ord_name == "nuc":
        one = "_matrix_svd_norm(stack[t], p, True)"
    elif order in (2, -2):
        one = "_matrix_svd_norm(stack[t], p, False)"
    elif order in (1, -1):
        one = "_matrix_sum_norm(stack[t], p)"
    else:
        one = "_matrix_norm(stack[t], p)"
    code("for t in range(stack.shape[0]):", f"    vals[t] = {one}")
    rank = ndim if keep else ndim - 2
    if rank == 0:
        code("return vals[0]")
        return code.compile("norm")
    code(f"shape = np.empty({rank}, np.intp)", "j = 0", f"for d in range({ndim}):")
    code("    if d != row and d != col:", "        shape[j] = a.shape[d]", "        j += 1")
    if keep:
        code("    else:", "        shape[j] = 1", "        j += 1")
    code(f"return vals.reshape(to_fixed_tuple(shape, {rank}))")
    return code.compile("norm")


@overload(norm, prefer_literal=True)
def _norm_jit(x, ord=None, axis=None, keepdims=False):
    if isinstance(keepdims, types.Boolean) and not isinstance(keepdims, types.BooleanLiteral):
        return lambda x, ord=None, axis=None, keepdims=False: numba.literally(keepdims)
    if isinstance(ord, types.UnicodeType) and not isinstance(ord, types.StringLiteral):
        return lambda x, ord=None, axis=None, keepdims=False: numba.literally(ord)
    # Vector norms of every int order share one implementation; a matrix norm's order
    # picks its algorithm when it is a constant.
    ndim = x.ndim if isinstance(x, types.Array) else 0
    two_axes = isinstance(axis, types.BaseTuple) and len(axis.types) == 2
    matrix = two_axes or (_is_none(axis) and ndim == 2 and not _is_none(ord))
    if isinstance(ord, types.IntegerLiteral) and not matrix:
        ord = types.unliteral(ord)
    return _norm_impl(x, ord, axis, _keepdims("norm", keepdims, _fail))


@functools.cache
def _trace_impl(a: Any, axis1: Any, axis2: Any, dtype: Any) -> Any:
    if not isinstance(a, types.Array) or a.ndim < 2:
        raise _fail("trace", f"expected an array of at least 2 dims, got {a}")
    acc = _dtype_arg("trace", dtype) or _accumulating(a.dtype)
    ndim = a.ndim
    code = _code("def impl(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):", T=_npt(acc))
    if (_literal_int(axis1), _literal_int(axis2)) in ((0, 1), (0, 1 - ndim), (-ndim, 1)):
        code("t = a")
    else:
        code(f"p1 = _normalize(axis1, {ndim})", f"p2 = _normalize(axis2, {ndim})")
        code("if p1 == p2:", "    raise ValueError('axis1 and axis2 cannot be the same')")
        code(f"perm = np.empty({ndim}, np.intp)", "perm[0] = p1", "perm[1] = p2", "j = 2")
        code(f"for d in range({ndim}):", "    if d != p1 and d != p2:")
        code("        perm[j] = d", "        j += 1")
        code(f"t = a.transpose(to_fixed_tuple(perm, {ndim}))")
    code("rows = t.shape[0]", "cols = t.shape[1]")
    code("if offset >= 0:", "    n = min(rows, cols - offset)", "    r0 = 0", "    c0 = offset")
    code("else:", "    n = min(rows + offset, cols)", "    r0 = -offset", "    c0 = 0")
    if ndim == 2:
        code("s = T(0)", "for i in range(n):", "    s += T(t[r0 + i, c0 + i])", "return s")
    else:
        code("s = np.zeros(t.shape[2:], T)", "for i in range(n):", "    s += t[r0 + i, c0 + i]")
        code("return s")
    return code.compile("trace")


@overload(trace, prefer_literal=True)
def _trace_jit(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if not _is_none(out):
        raise _fail("trace", "out= is not supported under jit")
    return _trace_impl(a, axis1, axis2, dtype)


def _square_stack(name: str, a: Any) -> tuple[types.Type, Any]:
    if not isinstance(a, types.Array) or a.ndim < 2:
        raise _fail(name, f"expected an array of at least 2 dims, got {a}")
    inexact = _inexact(a.dtype)
    return inexact, _npt(inexact)


@register_jitable
def _matrices(a):
    """``a`` as a C-contiguous stack (n, m, m) of square matrices."""
    m = a.shape[-1]
    if a.shape[-2] != m:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return np.ascontiguousarray(a).reshape((-1, a.shape[-2], m))


@overload(det)
def _det_jit(a):
    dt, cast = _square_stack("det", a)
    fix = a.dtype != dt
    if a.ndim == 2:
        return lambda a: cast(np.linalg.det(a.astype(cast) if fix else a))

    def impl(a):
        stack = _matrices(a)
        out = np.empty(stack.shape[0], cast)
        for t in range(stack.shape[0]):
            m = stack[t]
            out[t] = np.linalg.det(m.astype(cast) if fix else m)
        return out.reshape(a.shape[:-2])

    return impl


@overload(slogdet)
def _slogdet_jit(a):
    dt, cast = _square_stack("slogdet", a)
    real = _npt(_real(dt))
    fix = a.dtype != dt
    if a.ndim == 2:

        def impl2(a):
            sign, logdet = np.linalg.slogdet(a.astype(cast) if fix else a)
            return cast(sign), real(logdet)

        return impl2

    def impl(a):
        stack = _matrices(a)
        signs = np.empty(stack.shape[0], cast)
        logs = np.empty(stack.shape[0], real)
        for t in range(stack.shape[0]):
            m = stack[t]
            sign, logdet = np.linalg.slogdet(m.astype(cast) if fix else m)
            signs[t] = sign
            logs[t] = logdet
        return signs.reshape(a.shape[:-2]), logs.reshape(a.shape[:-2])

    return impl
