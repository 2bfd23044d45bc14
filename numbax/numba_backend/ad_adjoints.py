"""Adjoints that rules emit for reductions, products and matrix functions, the same
interpreted and in Numba (see ad_runtime.py for the pattern: a public function that does
it with NumPy, and a ``numba.extending.overload`` on it that compiles the same thing).

Each is linear in its cotangent (or tangent) argument, and has its own JVP and VJP rule
(``transform/rules/runtime.py``), so derivative code that calls it can be differentiated
again. The families:

* reductions: ``broadcast_reduced`` (the adjoint of a sum over ``axis``),
  ``reduced_count`` (the divisor of mean, var and std), ``tie_weights`` (how max/min
  split a derivative among tied elements), ``prod_others`` (each element's product of
  the other elements of its reduction: ``prod``'s derivative without dividing by zero)
  and its derivative ``prod_others_jvp``, ``cumsum_reverse``, ``cumprod_jvp``/
  ``cumprod_vjp``, ``norm_weights``/``norm_exponent`` (the derivatives of
  ``np.linalg.norm``), ``trace_vjp``;
* products: ``matmul_vjp_x``/``matmul_vjp_y``, ``dot_vjp_a``/``dot_vjp_b``,
  ``tensordot_vjp_a``/``tensordot_vjp_b`` and ``einsum_general``, an einsum whose subscripts
  may name the VJP of one operand of another einsum, so that the VJP of an einsum is an
  einsum again;
* matrices: ``matrix_transpose``, ``tril_half_diag``, ``tril_symmetric``, ``tril_fold``
  (the masks of the Cholesky factorization's derivative), ``reshape_like``.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import math
import string
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend import numpy_extra, reductions
from numbax.numba_backend.ad_runtime import _dtype_of as _dtype
from numbax.numba_backend.ad_runtime import _is_none, _is_scalar, unbroadcast
from numbax.numba_backend.reductions import _keepdims, _wants_literal

# ---------------------------------------------------------------------------------------
# Interpreted helpers: reductions.
# ---------------------------------------------------------------------------------------


def _reduced_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple | list) else (axis,)
    return tuple(sorted(a % ndim for a in axes))


def _inexact(dtype: Any) -> np.dtype:
    dtype = np.result_type(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def broadcast_reduced(value: Any, a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The cotangent ``value`` of a reduction of ``a`` over ``axis``, spread back over
    the reduced axes: a fresh array of ``a``'s shape and ``value``'s dtype (``value``
    itself when ``a`` is a scalar)."""
    if not isinstance(a, np.ndarray):
        return value[()] if isinstance(value, np.ndarray) else value
    shape = a.shape
    if not keepdims:
        for ax in _reduced_axes(len(shape), axis):
            value = np.expand_dims(value, ax)
    return np.array(np.broadcast_to(value, shape))


def reshape_like(value: Any, like: Any) -> Any:
    """``value`` reshaped to ``like``'s shape (a scalar when ``like`` is one)."""
    if not isinstance(like, np.ndarray):
        return np.reshape(value, ())[()] if isinstance(value, np.ndarray) else value
    return np.reshape(value, like.shape)


def reduced_count(a: Any, ans: Any, ddof: Any = 0) -> Any:
    """How many elements of ``a`` each element of its reduction ``ans`` reduces, less
    ``ddof``: the divisor of ``mean``, ``var`` and ``std``, as a scalar of a's floating
    dtype (so a float32 derivative stays float32 under Numba too)."""
    return _inexact(np.result_type(a)).type(np.size(a) / np.size(ans) - ddof)


def tie_weights(a: Any, ans: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Where ``a`` attains ``ans``, its max or min over ``axis``: ``1/count`` at each of
    the ``count`` tied elements of a reduction, 0 elsewhere. The derivative of a max is
    the derivative of its maxima shared equally, as in JAX. An array of ``a``'s shape and
    floating dtype."""
    if not isinstance(a, np.ndarray):
        return float(1)
    mask = a == broadcast_reduced(ans, a, axis, keepdims)
    counts = np.sum(mask, axis=axis, keepdims=True)
    none = np.where(counts == 0, np.nan, 1.0)  # a nan extremum: JAX's 0 / 0
    return (mask / np.maximum(counts, 1) * none).astype(_inexact(a.dtype))


def _rows(a: np.ndarray, axis: Any) -> tuple[np.ndarray, Any]:
    """``a`` with the axes of ``axis`` moved last and merged: (..., N), and the inverse."""
    axes = _reduced_axes(a.ndim, axis)
    kept = a.ndim - len(axes)
    moved = np.moveaxis(a, axes, tuple(range(kept, a.ndim)))
    rows = moved.reshape(moved.shape[:kept] + (-1,))

    def back(r: np.ndarray) -> np.ndarray:
        out = np.moveaxis(r.reshape(moved.shape), tuple(range(kept, a.ndim)), axes)
        return np.ascontiguousarray(out)

    return rows, back


def prod_others(a: Any, axis: Any = None) -> Any:
    """For each element of ``a``, the product of the other elements of its reduction
    over ``axis``: the derivative of ``np.prod(a, axis)``. Computed as products of the
    elements before and after, never as ``prod / a``, so it is exact with zeros."""
    if not isinstance(a, np.ndarray):
        return type(a)(1)
    rows, back = _rows(a, axis)
    left = np.ones_like(rows)
    right = np.ones_like(rows)
    left[..., 1:] = np.cumprod(rows[..., :-1], axis=-1)
    right[..., :-1] = np.cumprod(rows[..., :0:-1], axis=-1)[..., ::-1]
    return back(left * right)


def prod_others_jvp(a: Any, t: Any, axis: Any = None) -> Any:
    """The derivative of ``prod_others(a, axis)`` along ``t``: for each element, the sum
    over the other elements ``j`` of its reduction of ``t[j]`` times the product of the
    rest. The product rule carried along both scans of ``prod_others``, so it is exact
    with zeros; the map ``t -> prod_others_jvp(a, t)`` is symmetric (its own adjoint)."""
    if not isinstance(a, np.ndarray):
        return type(a)(0) * t
    rows, back = _rows(a, axis)
    trows, _ = _rows(np.broadcast_to(t, a.shape), axis)
    dtype = np.result_type(a, t)
    n = rows.shape[-1]
    left = np.empty(rows.shape, dtype)
    dleft = np.empty(rows.shape, dtype)
    c, d = np.ones(rows.shape[:-1], dtype), np.zeros(rows.shape[:-1], dtype)
    for i in range(n):
        left[..., i], dleft[..., i] = c, d
        c, d = c * rows[..., i], d * rows[..., i] + c * trows[..., i]
    out = np.empty(rows.shape, dtype)
    c, d = np.ones(rows.shape[:-1], dtype), np.zeros(rows.shape[:-1], dtype)
    for i in range(n - 1, -1, -1):
        out[..., i] = dleft[..., i] * c + left[..., i] * d
        c, d = c * rows[..., i], d * rows[..., i] + c * trows[..., i]
    return back(out)


def cumsum_reverse(value: Any, a: Any, axis: Any = None) -> Any:
    """The adjoint of ``np.cumsum(a, axis)``: sums of ``value`` from each position to
    the end along ``axis``, of ``a``'s shape (``value`` is flat when ``axis`` is None)."""
    value = np.asarray(value)
    if axis is None:
        flat = np.ravel(value)[::-1]
        return reshape_like(np.cumsum(flat)[::-1], a)
    return np.ascontiguousarray(np.flip(np.cumsum(np.flip(value, axis), axis=axis), axis))


def _along(x: Any, axis: Any) -> tuple[np.ndarray, int]:
    x = np.asarray(x)
    return (np.ravel(x), 0) if axis is None else (x, axis)


def cumprod_jvp(a: Any, t: Any, axis: Any = None) -> Any:
    """The derivative of ``np.cumprod(a, axis)`` along ``t``: the product rule carried
    along the scan (``c[i] = c[i-1] a[i]``, ``dc[i] = dc[i-1] a[i] + c[i-1] t[i]``), so
    it is exact with zeros."""
    a, ax = _along(a, axis)
    t, _ = _along(t, axis)
    am, tm = np.moveaxis(a, ax, 0), np.moveaxis(t, ax, 0)
    out = np.empty(am.shape, np.result_type(a, t))
    c = np.ones(am.shape[1:], a.dtype)
    d = np.zeros(am.shape[1:], out.dtype)
    for i in range(am.shape[0]):
        d = d * am[i] + c * tm[i]
        c = c * am[i]
        out[i] = d
    return np.ascontiguousarray(np.moveaxis(out, 0, ax))


def cumprod_vjp(ct: Any, a: Any, axis: Any = None) -> Any:
    """The adjoint of ``cumprod_jvp(a, ., axis)``: ``ct`` (``np.cumprod``'s output shape)
    sent back to ``a``'s shape, by a reverse scan (``s[j] = ct[j] + a[j+1] s[j+1]``, times
    the product of the elements before ``j``): exact with zeros."""
    am, ax = _along(a, axis)
    ctm, _ = _along(ct, axis)
    am, ctm = np.moveaxis(am, ax, 0), np.moveaxis(ctm, ax, 0)
    n = am.shape[0]
    out = np.empty(am.shape, np.result_type(a, ct))
    s = np.zeros(am.shape[1:], out.dtype)
    for j in range(n - 1, -1, -1):
        s = ctm[j] + (am[j + 1] * s if j + 1 < n else s)
        out[j] = s
    left = np.ones(am.shape[1:], am.dtype)
    for j in range(n):
        out[j] = out[j] * left
        left = left * am[j]
    out = np.moveaxis(out, 0, ax)
    return reshape_like(out, a) if axis is None else np.ascontiguousarray(out)


def _vector_power(ord: Any, ndim: int, axis: Any) -> float:
    """The ``p`` of the vector norm ``np.linalg.norm(x, ord, axis)`` computes; 2 for the
    Frobenius norm. Matrix norms other than Frobenius have no rule."""
    matrix = (axis is None and ndim == 2) or (isinstance(axis, tuple) and len(axis) == 2)
    if ord is None or ord == "fro":
        return 2.0
    if isinstance(ord, str) or matrix:
        raise NotImplementedError(
            f"numbax: no derivative rule for the matrix norm ord={ord!r} "
            "(vector norms and the Frobenius norm have one)"
        )
    return float(ord)


def norm_exponent(ord: Any = None) -> float:
    """``1 - p`` for the p-norm named by ``ord`` (2 for None and 'fro'), 0 for the max
    norms: how the derivatives ``norm_weights`` of a norm scale with the norm."""
    p = 2.0 if ord is None or isinstance(ord, str) else float(ord)
    return 0.0 if math.isinf(p) else 1.0 - p


def norm_weights(
    x: Any, norm: Any, ord: Any = None, axis: Any = None, keepdims: bool = False, k: int = 0
) -> Any:
    """The ``k+1``-th derivative of the vector p-norm ``norm`` of ``x`` over ``axis``
    with respect to each element of ``x`` (holding ``norm`` fixed beyond the first):
    ``(p-1)...(p-k) sign(x)^(k+1) |x|^(p-1-k) norm^(1-p)``, of ``x``'s shape. ``k=0`` is
    the gradient (``x / norm`` for the 2-norm, ``sign(x)`` for the 1-norm, the sign at
    the tied maxima for the max norm); its derivatives are ``k=1, 2, ...``."""
    x = np.asarray(x)
    dtype = _inexact(x.dtype)
    p = _vector_power(ord, x.ndim, axis)
    big = broadcast_reduced(np.asarray(norm, dtype), x, axis, keepdims)
    if math.isinf(p):
        if k:
            return np.zeros(x.shape, dtype)
        return (tie_weights(np.abs(x), norm, axis, keepdims) * np.sign(x)).astype(dtype)
    coefficient = math.prod(p - j for j in range(1, k + 1))
    if coefficient == 0 or p == 0:
        return np.zeros(x.shape, dtype)
    if p == 2.0:
        return (x / big if k == 0 else 1 / big).astype(dtype)
    if p == 1.0:
        return np.sign(x).astype(dtype)
    sign = np.sign(x) ** (k + 1)
    return (coefficient * sign * np.abs(x) ** (p - 1 - k) * big ** (1 - p)).astype(dtype)


def trace_vjp(ct: Any, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The adjoint of ``np.trace(a, offset, axis1, axis2)``: ``ct`` on that diagonal of
    an array of ``a``'s shape, zeros elsewhere."""
    ct = np.asarray(ct)
    out = np.zeros(np.shape(a), _inexact(ct.dtype))
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    n1, n2 = view.shape[-2:]
    rows = np.arange(max(0, -offset), max(max(0, -offset), min(n1, n2 - offset)))
    view[..., rows, rows + offset] = ct[..., None]
    return out


# ---------------------------------------------------------------------------------------
# Interpreted helpers: products and matrices.
# ---------------------------------------------------------------------------------------


def _swap_last(a: Any) -> Any:
    return np.swapaxes(a, -1, -2)


def matrix_transpose(x: Any) -> Any:
    """``x`` with its last two axes swapped (each matrix of a stack transposed)."""
    return np.swapaxes(x, -1, -2)


def matmul_vjp_x(ct: Any, x: Any, y: Any) -> Any:
    """The cotangent of ``x`` in ``x @ y`` given the output's cotangent ``ct``; stacks
    broadcast, so the stack axes ``x`` was broadcast along are summed."""
    x_nd, y_nd = np.ndim(x), np.ndim(y)
    if y_nd == 1:
        result = np.multiply.outer(ct, y) if x_nd > 1 else ct * y
    elif x_nd == 1:
        result = np.matmul(y, np.asarray(ct)[..., None])[..., 0]
    else:
        result = np.matmul(ct, _swap_last(y))
    return unbroadcast(result, x)


def matmul_vjp_y(ct: Any, x: Any, y: Any) -> Any:
    """The cotangent of ``y`` in ``x @ y`` given the output's cotangent ``ct``."""
    x_nd, y_nd = np.ndim(x), np.ndim(y)
    if x_nd == 1:
        result = np.multiply.outer(x, ct) if y_nd > 1 else x * ct
        if y_nd > 2:  # x (k,) times ct (..., n): the stack axes go first
            result = np.moveaxis(result, 0, -2)
    elif y_nd == 1:
        result = np.matmul(_swap_last(x), np.asarray(ct)[..., None])[..., 0]
    else:
        result = np.matmul(_swap_last(x), ct)
    return unbroadcast(result, y)


def _tensordot_axes(a_nd: int, b_nd: int, axes: Any) -> tuple[list[int], list[int]]:
    """``np.tensordot``'s ``axes`` as two lists of contracted axes, counted from 0."""
    if isinstance(axes, int | np.integer):
        n = int(axes)
        return list(range(a_nd - n, a_nd)), list(range(n))
    ia, ib = axes
    ia = list(ia) if isinstance(ia, tuple | list) else [ia]
    ib = list(ib) if isinstance(ib, tuple | list) else [ib]
    return [int(i) % max(a_nd, 1) for i in ia], [int(i) % max(b_nd, 1) for i in ib]


def _tensordot_plan(a_nd: int, b_nd: int, axes: Any) -> tuple:
    """What the two VJPs of ``tensordot(a, b, axes)`` contract, and how they transpose
    the result back: ((ct axes, b axes), perm of a), ((a axes, ct axes), perm of b)."""
    ia, ib = _tensordot_axes(a_nd, b_nd, axes)
    a_free = [i for i in range(a_nd) if i not in ia]
    b_free = [i for i in range(b_nd) if i not in ib]
    ct_nd = len(a_free) + len(b_free)
    to_a = a_free + [ia[ib.index(j)] for j in sorted(ib)]
    to_b = [ib[ia.index(i)] for i in sorted(ia)] + b_free
    vjp_a = (tuple(range(len(a_free), ct_nd)), tuple(b_free)), tuple(np.argsort(to_a).tolist())
    vjp_b = (tuple(a_free), tuple(range(len(a_free)))), tuple(np.argsort(to_b).tolist())
    return vjp_a, vjp_b


def tensordot_vjp_a(ct: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """The cotangent of ``a`` in ``np.tensordot(a, b, axes)`` given the output's ``ct``."""
    (contract, perm), _ = _tensordot_plan(np.ndim(a), np.ndim(b), axes)
    return np.transpose(np.tensordot(ct, b, contract), perm)


def tensordot_vjp_b(ct: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """The cotangent of ``b`` in ``np.tensordot(a, b, axes)`` given the output's ``ct``."""
    _, (contract, perm) = _tensordot_plan(np.ndim(a), np.ndim(b), axes)
    return np.transpose(np.tensordot(a, ct, contract), perm)


def _dot_axes(a_nd: int, b_nd: int) -> tuple[tuple[int], tuple[int]]:
    """``np.dot`` as a tensordot: a's last axis with b's second-to-last (or only) one."""
    return (a_nd - 1,), (b_nd - 2 if b_nd >= 2 else 0,)


def dot_vjp_a(ct: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``a`` in ``np.dot(a, b)`` given the output's cotangent ``ct``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(ct * np.conj(b) if np.iscomplexobj(b) else ct * b, a)
    return tensordot_vjp_a(ct, a, b, _dot_axes(np.ndim(a), np.ndim(b)))


def dot_vjp_b(ct: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``b`` in ``np.dot(a, b)`` given the output's cotangent ``ct``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(a * ct, b)
    return tensordot_vjp_b(ct, a, b, _dot_axes(np.ndim(a), np.ndim(b)))


def tril_half_diag(x: Any) -> Any:
    """The lower triangle of (each matrix of) ``x``, its diagonal halved."""
    out = np.tril(x)
    n = min(out.shape[-2:])
    i = np.arange(n)
    out[..., i, i] *= 0.5
    return out


def tril_symmetric(x: Any) -> Any:
    """The symmetric matrix whose lower triangle is x's, which is what
    ``np.linalg.cholesky(x)`` reads of ``x``."""
    return np.tril(x) + matrix_transpose(np.tril(x, -1))


def tril_fold(x: Any) -> Any:
    """The adjoint of ``tril_symmetric``: the strict upper triangle of ``x`` added onto
    the lower one (transposed), upper triangle zero."""
    return np.tril(x) + np.tril(matrix_transpose(x), -1)


# ---------------------------------------------------------------------------------------
# einsum, closed under VJPs.
# ---------------------------------------------------------------------------------------

_LETTERS = string.ascii_letters


def _einsum_terms(subscripts: str, ndims: tuple[int, ...], out_ndim: int | None) -> tuple:
    """(input terms, output term) of ``subscripts`` for operands of ``ndims``: letters
    only, ``...`` spelled out with fresh letters, the implicit output made explicit."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum {subscripts!r}: {len(terms)} terms for {len(ndims)} operands")
    if not arrow:
        counts = {c: inputs.count(c) for c in inputs if c.isalpha()}
        output = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c, n in counts.items() if n == 1)
        )
    lengths = [nd - len(t.replace("...", "")) for t, nd in zip(terms, ndims, strict=True)]
    lengths = [n for n, t in zip(lengths, terms, strict=True) if "..." in t]
    if out_ndim is not None and "..." in output:
        lengths.append(out_ndim - len(output.replace("...", "")))
    width = max(lengths, default=0)
    fresh = [c for c in _LETTERS if c not in text][:width]

    def spell(term: str, nd: int) -> str:
        if "..." not in term:
            return term
        n = nd - len(term.replace("...", ""))
        return term.replace("...", "".join(fresh[width - n :]))

    terms = [spell(t, nd) for t, nd in zip(terms, ndims, strict=True)]
    output = spell(output, out_ndim if out_ndim is not None else width + len(output) - 3)
    return terms, output


@functools.cache
def _einsum_plan(spec: Any, ndims: tuple[int, ...], out_ndim: int | None) -> tuple:
    """(input terms, output term) of an einsum ``spec``: subscripts, or ``(spec, j)``, the
    VJP of operand ``j`` of einsum ``spec``: its output's term trades places with the
    term of operand ``j``, whose place the cotangent takes."""
    if isinstance(spec, str):
        return _einsum_terms(spec, ndims, out_ndim)
    inner, j = spec
    inner_ndims = list(ndims)
    inner_ndims[j] = out_ndim if out_ndim is not None else ndims[j]
    terms, output = _einsum_plan(inner, tuple(inner_ndims), ndims[j])
    terms = list(terms)
    terms[j], output = output, terms[j]
    return terms, output


def einsum_general(
    subscripts: Any,
    x0: Any,
    x1: Any = None,
    x2: Any = None,
    x3: Any = None,
    x4: Any = None,
    x5: Any = None,
    like: Any = None,
) -> Any:
    """``np.einsum(subscripts, x0, x1, ...)`` (up to six operands; trailing Nones are
    absent ones), extended so that the VJP of an einsum is one:

    * ``subscripts`` may be ``(spec, j)``: the VJP of operand ``j`` of einsum ``spec``,
      the cotangent in operand ``j``'s place;
    * ``like`` gives the output's shape and dtype: a letter of the output that no operand
      has takes its length from ``like``; a letter repeated in the output writes a
      diagonal (zeros elsewhere); a length 1 in ``like`` where the operands have more
      sums that axis (the adjoint of einsum's broadcasting).
    """
    ops = [x0, x1, x2, x3, x4, x5]
    while ops[-1] is None:
        ops.pop()
    out_ndim = None if like is None else np.ndim(like)
    terms, output = _einsum_plan(subscripts, tuple(np.ndim(x) for x in ops), out_ndim)
    unique = "".join(dict.fromkeys(output))
    present = "".join(c for c in unique if any(c in t for t in terms))
    result = np.einsum(",".join(terms) + "->" + present, *ops)
    if like is None:
        return result
    shape = np.shape(like)
    size = {c: shape[output.index(c)] for c in unique}
    summed = tuple(i for i, c in enumerate(present) if size[c] == 1 and result.shape[i] != 1)
    if summed:
        result = np.sum(result, axis=summed, keepdims=True)
    missing = tuple(i for i, c in enumerate(unique) if c not in present)
    if missing:
        result = np.expand_dims(result, missing)
    result = np.broadcast_to(result, tuple(size[c] for c in unique))
    dtype = np.result_type(like) if np.result_type(like).kind in "fc" else result.dtype
    if unique == output:
        out = np.array(result, dtype=dtype)
    else:
        out = np.zeros(shape, dtype)
        np.einsum(f"{output}->{unique}", out)[...] = result
    return out if np.ndim(like) or isinstance(like, np.ndarray) else out[()]


# ---------------------------------------------------------------------------------------
# Numba: typing-time helpers and generated code.
# ---------------------------------------------------------------------------------------


def _fail(name: str, message: str) -> errors.NumbaTypeError:
    """A typing error naming the function, reported by Numba at the user's call."""
    return errors.NumbaTypeError(f"numbax ad_adjoints.{name}: {message}")


def _np(ty: types.Type) -> np.dtype:
    return np.dtype(as_dtype(ty))


def _promote(*tys: types.Type) -> np.dtype:
    return np.result_type(*(_np(t) for t in tys))


def _inexact_np(ty: types.Type) -> np.dtype:
    return _inexact(_np(ty))


@register_jitable
def _always() -> bool:
    """True, opaque to Numba's dead-branch pruning: keeps code after a raise typed."""
    return True


@register_jitable
def _axis_index(axis, ndim):
    """``axis`` counted from the front, or NumPy's AxisError."""
    if axis < -ndim or axis >= ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis + ndim if axis < 0 else axis


@register_jitable
def _bdim(a, b):
    """The broadcast of two dimension lengths, or NumPy's ValueError."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise ValueError("operands could not be broadcast together")


_GENERATED = itertools.count()


class _Code:
    """Source of one implementation, built line by line, then exec'd (the overload
    returns it and Numba compiles it); ``linecache`` keeps it quotable in messages."""

    def __init__(self, header: str, **names: Any) -> None:
        self.lines = [header]
        self.depth = 1
        self.names = names

    def __call__(self, *lines: str) -> None:
        self.lines += ["    " * self.depth + line for line in lines]

    def compile(self, label: str) -> Any:
        source = "\n".join(self.lines) + "\n"
        filename = f"<numbax.ad_adjoints {label} #{next(_GENERATED)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        scope = {
            "np": np,
            "numba": numba,
            "numpy_extra": numpy_extra,
            "reductions": reductions,
            "to_fixed_tuple": to_fixed_tuple,
            "unbroadcast": unbroadcast,
            "_always": _always,
            "_axis_index": _axis_index,
            "_bdim": _bdim,
            **_JITTED,
            **self.names,
        }
        exec(compile(source, filename, "exec"), scope)
        return scope["impl"]


def _tuple(items: Any) -> str:
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _subscript(items: list[str]) -> str:
    return ", ".join(items) + ("," if len(items) == 1 else "") if items else "()"


def _axis_items(name: str, axis: Any, ndim: int) -> list[str] | None:
    """Source expressions of the axes an ``axis`` argument names (None: all)."""
    if _is_none(axis):
        return None
    if isinstance(axis, types.Integer) and not isinstance(axis, types.Boolean):
        return ["axis"]
    if isinstance(axis, types.BaseTuple) and all(isinstance(t, types.Integer) for t in axis.types):
        return [f"axis[{j}]" for j in range(len(axis.types))]
    raise _fail(name, f"axis must be None, an int or a tuple of ints, got {axis}")


def _emit_flags(code: _Code, items: list[str] | None, ndim: int) -> None:
    """Emit ``red``: which of ``ndim`` axes the axis items name (all when None)."""
    if items is None:
        code(f"red = np.ones({max(ndim, 1)}, np.bool_)")
        return
    code(f"red = np.zeros({max(ndim, 1)}, np.bool_)")
    for item in items:
        code(f"k = _axis_index({item}, {ndim})")
        code("if red[k]:", "    raise ValueError(\"duplicate value in 'axis'\")")
        code("red[k] = True")


# ---------------------------------------------------------------------------------------
# Overloads: reductions.
# ---------------------------------------------------------------------------------------


@overload(broadcast_reduced, prefer_literal=True)
def _broadcast_reduced_jit(value, a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda value, a, axis=None, keepdims=False: numba.literally(keepdims)
    keep = _keepdims("broadcast_reduced", keepdims)
    header = "def impl(value, a, axis=None, keepdims=False):"
    dtype = _dtype("broadcast_reduced", value)
    if not isinstance(a, types.Array):
        if isinstance(value, types.Array):
            return lambda value, a, axis=None, keepdims=False: value[()]
        return lambda value, a, axis=None, keepdims=False: value
    n = a.ndim
    code = _Code(header, T=_np(dtype).type)
    if _is_scalar(value) or (isinstance(value, types.Array) and value.ndim == 0):
        item = "value" if _is_scalar(value) else "value[()]"
        code(f"return np.full(a.shape, {item}, T)")
        return code.compile("broadcast_reduced")
    items = _axis_items("broadcast_reduced", axis, n)
    count = n if items is None else len(items)
    vnd = value.ndim
    if vnd != (n if keep else n - count):
        raise _fail("broadcast_reduced", f"a value of {vnd} dims for {n} dims less {count}")
    if keep:
        code("v = value")
    else:
        _emit_flags(code, items, n)
        code("j = 0")
        for d in range(n):
            code(f"s{d} = 1", f"if not red[{d}]:", f"    s{d} = value.shape[j]", "    j += 1")
        code(f"v = np.ascontiguousarray(value).reshape({_tuple(f's{d}' for d in range(n))})")
    code("out = np.empty(a.shape, T)")
    for d in range(n):
        code(f"f{d} = 0 if v.shape[{d}] == 1 else 1")
    for d in range(n):
        code(f"for i{d} in range(a.shape[{d}]):")
        code.depth += 1
    source = _subscript([f"i{d} * f{d}" for d in range(n)])
    code(f"out[{_subscript([f'i{d}' for d in range(n)])}] = v[{source}]")
    code.depth = 1
    code("return out")
    return code.compile("broadcast_reduced")


@overload(reshape_like)
def _reshape_like_jit(value, like):
    if isinstance(like, types.Array):
        if isinstance(value, types.Array):
            return lambda value, like: np.ascontiguousarray(value).reshape(like.shape)
        dtype = types.unliteral(value)
        return lambda value, like: np.full(like.shape, value, dtype)
    if isinstance(value, types.Array):
        return lambda value, like: np.ravel(value)[0]
    return lambda value, like: value


@overload(reduced_count)
def _reduced_count_jit(a, ans, ddof=0):
    cast = _inexact_np(_dtype("reduced_count", a)).type
    if not isinstance(a, types.Array):
        return lambda a, ans, ddof=0: cast(1 - ddof)
    if isinstance(ans, types.Array):
        return lambda a, ans, ddof=0: cast(a.size / ans.size - ddof)
    return lambda a, ans, ddof=0: cast(a.size - ddof)


@overload(tie_weights, prefer_literal=True)
def _tie_weights_jit(a, ans, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, ans, axis=None, keepdims=False: numba.literally(keepdims)
    if not isinstance(a, types.Array):
        return lambda a, ans, axis=None, keepdims=False: 1.0
    cast = _inexact_np(a.dtype).type

    def impl(a, ans, axis=None, keepdims=False):
        mask = a == broadcast_reduced(ans, a, axis, keepdims)
        counts = reductions.sum(mask, axis, keepdims=True)
        none = np.where(counts == 0, np.nan, 1.0)  # a nan extremum: JAX's 0 / 0
        return (mask / np.maximum(counts, 1) * none).astype(cast)

    return impl


@register_jitable
def _prod_others_rows(r):
    """Each row's products of the other elements: before times after, no division."""
    out = np.empty_like(r)
    one = np.ones(1, r.dtype)[0]
    for i in range(r.shape[0]):
        acc = one
        for j in range(r.shape[1]):
            out[i, j] = acc
            acc = acc * r[i, j]
        acc = one
        for j in range(r.shape[1] - 1, -1, -1):
            out[i, j] = out[i, j] * acc
            acc = acc * r[i, j]
    return out


@register_jitable
def _prod_others_jvp_rows(a, t):
    """Each row's ``prod_others`` derivative along ``t``: dual-number scans both ways."""
    out = np.empty_like(t)
    n = a.shape[1]
    left = np.empty(n, a.dtype)
    dleft = np.empty(n, a.dtype)
    one = np.ones(1, a.dtype)[0]
    for i in range(a.shape[0]):
        c = one
        d = one - one
        for j in range(n):
            left[j] = c
            dleft[j] = d
            d = d * a[i, j] + c * t[i, j]
            c = c * a[i, j]
        c = one
        d = one - one
        for j in range(n - 1, -1, -1):
            out[i, j] = dleft[j] * c + left[j] * d
            d = d * a[i, j] + c * t[i, j]
            c = c * a[i, j]
    return out


@register_jitable
def _cumsum_reverse_rows(r):
    """Each row's sums from each element to the end."""
    out = np.empty_like(r)
    zero = np.zeros(1, r.dtype)[0]
    for i in range(r.shape[0]):
        acc = zero
        for j in range(r.shape[1] - 1, -1, -1):
            acc = acc + r[i, j]
            out[i, j] = acc
    return out


@register_jitable
def _cumprod_jvp_rows(a, t):
    """The tangent of each row's cumulative product (product rule along the scan)."""
    out = np.empty_like(t)
    one = np.ones(1, a.dtype)[0]
    for i in range(a.shape[0]):
        c = one
        d = one - one
        for j in range(a.shape[1]):
            d = d * a[i, j] + c * t[i, j]
            c = c * a[i, j]
            out[i, j] = d
    return out


@register_jitable
def _cumprod_vjp_rows(ct, a):
    """The adjoint of ``_cumprod_jvp_rows``: a reverse scan times the products before."""
    out = np.empty_like(ct)
    one = np.ones(1, a.dtype)[0]
    n = a.shape[1]
    for i in range(a.shape[0]):
        s = one - one
        for j in range(n - 1, -1, -1):
            if j + 1 < n:
                s = ct[i, j] + a[i, j + 1] * s
            else:
                s = ct[i, j] + s
            out[i, j] = s
        left = one
        for j in range(n):
            out[i, j] = out[i, j] * left
            left = left * a[i, j]
    return out


_JITTED = {
    "_prod_others_rows": _prod_others_rows,
    "_prod_others_jvp_rows": _prod_others_jvp_rows,
    "_cumsum_reverse_rows": _cumsum_reverse_rows,
    "_cumprod_jvp_rows": _cumprod_jvp_rows,
    "_cumprod_vjp_rows": _cumprod_vjp_rows,
}


def _rowwise(
    label: str,
    header: str,
    kernel: str,
    inputs: list[tuple[str, Any]],
    axis: Any,
    ndim: int,
    result: str,
    dtype: np.dtype,
    flat_result: bool = False,
) -> Any:
    """An implementation that moves the axes ``axis`` names of each input (all of
    ``ndim`` dims, or the whole flattened array for ``axis=None``) to the end, merges
    them into rows, applies jitted ``kernel`` to the rows of the inputs, and puts the
    result back in the shape of input ``result`` (flat when ``flat_result``)."""
    code = _Code(header, T=dtype.type)
    items = _axis_items(label, axis, ndim)
    if items is None:
        for name, ty in inputs:
            cast = ".astype(T)" if _np(ty.dtype) != dtype else ""
            code(f"{name}2 = np.ascontiguousarray({name}).reshape((1, {name}.size)){cast}")
        code(f"r = {kernel}({', '.join(name + '2' for name, _ in inputs)})")
        code(
            f"return r.reshape({result}.size)"
            if flat_result
            else f"return r.reshape({result}.shape)"
        )
        return code.compile(label)
    _emit_flags(code, items, ndim)
    code(f"perm = np.empty({ndim}, np.intp)", "j = 0")
    code(f"for d in range({ndim}):", "    if not red[d]:", "        perm[j] = d", "        j += 1")
    code("count = j")
    code(f"for d in range({ndim}):", "    if red[d]:", "        perm[j] = d", "        j += 1")
    code(f"inv = np.empty({ndim}, np.intp)", f"for d in range({ndim}):", "    inv[perm[d]] = d")
    code(f"pt = to_fixed_tuple(perm, {ndim})", f"it = to_fixed_tuple(inv, {ndim})")
    first = inputs[0][0]
    code(f"moved = np.transpose({first}, pt)", "rows = 1", "for d in range(count):")
    code("    rows *= moved.shape[d]")
    for name, ty in inputs:
        cast = ".astype(T)" if _np(ty.dtype) != dtype else ""
        code(
            f"{name}2 = np.ascontiguousarray(np.transpose({name}, pt))"
            f".reshape((rows, {name}.size // rows if rows else 0)){cast}"
        )
    code(f"r = {kernel}({', '.join(name + '2' for name, _ in inputs)})")
    code("return np.ascontiguousarray(np.transpose(r.reshape(moved.shape), it))")
    return code.compile(label)


def _array(name: str, ty: Any) -> types.Array:
    if not isinstance(ty, types.Array):
        raise _fail(name, f"expected an array, got {ty}")
    return ty


@overload(prod_others)
def _prod_others_jit(a, axis=None):
    if _is_scalar(a):
        one = _np(types.unliteral(a)).type(1)
        return lambda a, axis=None: one
    a = _array("prod_others", a)
    header = "def impl(a, axis=None):"
    return _rowwise(
        "prod_others", header, "_prod_others_rows", [("a", a)], axis, a.ndim, "a", _np(a.dtype)
    )


@overload(prod_others_jvp)
def _prod_others_jvp_jit(a, t, axis=None):
    if _is_scalar(a):
        return lambda a, t, axis=None: t * 0
    a, t = _array("prod_others_jvp", a), _array("prod_others_jvp", t)
    header = "def impl(a, t, axis=None):"
    dtype = _promote(a.dtype, t.dtype)
    inputs = [("a", a), ("t", t)]
    return _rowwise(
        "prod_others_jvp", header, "_prod_others_jvp_rows", inputs, axis, a.ndim, "a", dtype
    )


def _single_axis(name: str, axis: Any) -> None:
    if not (_is_none(axis) or isinstance(axis, types.Integer)):
        raise _fail(name, f"axis must be None or an int, got {axis}")


@overload(cumsum_reverse)
def _cumsum_reverse_jit(value, a, axis=None):
    _single_axis("cumsum_reverse", axis)
    value = _array("cumsum_reverse", value)
    if not isinstance(a, types.Array):
        return lambda value, a, axis=None: np.sum(value)
    header = "def impl(value, a, axis=None):"
    return _rowwise(
        "cumsum_reverse",
        header,
        "_cumsum_reverse_rows",
        [("value", value)],
        axis,
        value.ndim,
        "a",
        _np(value.dtype),
    )


@overload(cumprod_jvp)
def _cumprod_jvp_jit(a, t, axis=None):
    _single_axis("cumprod_jvp", axis)
    a, t = _array("cumprod_jvp", a), _array("cumprod_jvp", t)
    header = "def impl(a, t, axis=None):"
    dtype = _promote(a.dtype, t.dtype)
    return _rowwise(
        "cumprod_jvp",
        header,
        "_cumprod_jvp_rows",
        [("a", a), ("t", t)],
        axis,
        a.ndim,
        "a",
        dtype,
        flat_result=_is_none(axis),
    )


@overload(cumprod_vjp)
def _cumprod_vjp_jit(ct, a, axis=None):
    _single_axis("cumprod_vjp", axis)
    ct, a = _array("cumprod_vjp", ct), _array("cumprod_vjp", a)
    header = "def impl(ct, a, axis=None):"
    dtype = _promote(a.dtype, ct.dtype)
    return _rowwise(
        "cumprod_vjp", header, "_cumprod_vjp_rows", [("ct", ct), ("a", a)], axis, a.ndim, "a", dtype
    )


def _norm_power(ord: Any) -> float | None:
    """``p`` of an ``ord`` known when compiling (None and 'fro': 2); None if a number."""
    if _is_none(ord):
        return 2.0
    if isinstance(ord, types.StringLiteral):
        if ord.literal_value == "fro":
            return 2.0
        raise _fail(
            "norm_weights", f"no derivative rule for the matrix norm ord={ord.literal_value!r}"
        )
    if isinstance(ord, types.Number):
        return None
    raise _fail("norm_weights", f"ord must be None, 'fro' or a number, got {ord}")


@overload(norm_exponent)
def _norm_exponent_jit(ord=None):
    if _norm_power(ord) is not None:
        return lambda ord=None: -1.0

    def impl(ord=None):
        p = float(ord)
        return 0.0 if np.isinf(p) else 1.0 - p

    return impl


@overload(norm_weights, prefer_literal=True)
def _norm_weights_jit(x, norm, ord=None, axis=None, keepdims=False, k=0):
    if _wants_literal(keepdims):
        return lambda x, norm, ord=None, axis=None, keepdims=False, k=0: numba.literally(keepdims)
    x = _array("norm_weights", x)
    p = _norm_power(ord)
    matrix = (_is_none(axis) and x.ndim == 2) or (
        isinstance(axis, types.BaseTuple) and len(axis.types) == 2
    )
    dtype = _inexact_np(x.dtype)
    code = _Code("def impl(x, norm, ord=None, axis=None, keepdims=False, k=0):", T=dtype.type)
    if p is None and matrix:
        code("if _always():")
        code("    raise NotImplementedError('numbax: no derivative rule for this matrix norm')")
    code("big = broadcast_reduced(np.asarray(norm).astype(T), x, axis, keepdims)")
    code("p = 2.0" if p is not None else "p = float(ord)")
    code("if p == 2.0:")
    code("    if k == 0:", "        return (x / big).astype(T)")
    code("    if k == 1:", "        return (1.0 / big).astype(T)")
    code("    return np.zeros(x.shape, T)")
    code("if p == 1.0 or p == 0.0:")
    code("    if k == 0 and p == 1.0:", "        return np.sign(x).astype(T)")
    code("    return np.zeros(x.shape, T)")
    code("if np.isinf(p):")
    code("    if k == 0:")
    code("        return (tie_weights(np.abs(x), norm, axis, keepdims) * np.sign(x)).astype(T)")
    code("    return np.zeros(x.shape, T)")
    code("c = 1.0", "for j in range(1, k + 1):", "    c *= p - j")
    code("if c == 0.0:", "    return np.zeros(x.shape, T)")
    code("s = np.sign(x) ** (k + 1)")
    code("return (c * s * np.abs(x) ** (p - 1 - k) * big ** (1 - p)).astype(T)")
    return code.compile("norm_weights")


_JITTED["broadcast_reduced"] = broadcast_reduced
_JITTED["tie_weights"] = tie_weights


@overload(trace_vjp)
def _trace_vjp_jit(ct, a, offset=0, axis1=0, axis2=1):
    a = _array("trace_vjp", a)
    n = a.ndim
    if n < 2:
        raise _fail("trace_vjp", f"a must have at least 2 dims, got {n}")
    dtype = _inexact_np(_dtype("trace_vjp", ct))
    code = _Code("def impl(ct, a, offset=0, axis1=0, axis2=1):", T=dtype.type)
    code("out = np.zeros(a.shape, T)")
    code(f"p1 = _axis_index(axis1, {n})", f"p2 = _axis_index(axis2, {n})")
    code("if p1 == p2:", "    raise ValueError('axis1 and axis2 cannot be the same')")
    code(f"perm = np.empty({n}, np.intp)", "j = 0", f"for d in range({n}):")
    code("    if d != p1 and d != p2:", "        perm[j] = d", "        j += 1")
    code(f"perm[{n - 2}] = p1", f"perm[{n - 1}] = p2")
    code(f"view = np.transpose(out, to_fixed_tuple(perm, {n}))")
    code(f"n1 = view.shape[{n - 2}]", f"n2 = view.shape[{n - 1}]")
    code("start = max(0, -offset)", "stop = min(n1, n2 - offset)")
    for d in range(n - 2):
        code(f"for b{d} in range(view.shape[{d}]):")
        code.depth += 1
    batch = [f"b{d}" for d in range(n - 2)]
    if _is_scalar(ct):
        item = "ct"
    elif ct.ndim == 0:
        item = "ct[()]"
    else:
        item = f"ct[{_subscript(batch)}]"
    code("for i in range(start, stop):")
    code(f"    view[{', '.join([*batch, 'i', 'i + offset'])}] = {item}")
    code.depth = 1
    code("return out")
    return code.compile("trace_vjp")


# ---------------------------------------------------------------------------------------
# Overloads: products and matrices.
# ---------------------------------------------------------------------------------------


@overload(matrix_transpose)
def _matrix_transpose_jit(x):
    x = _array("matrix_transpose", x)
    if x.ndim < 2:
        raise _fail("matrix_transpose", f"expected at least 2 dims, got {x.ndim}")
    if x.ndim == 2:
        return lambda x: np.ascontiguousarray(x.T)
    perm = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return lambda x: np.ascontiguousarray(np.transpose(x, perm))


@overload(matmul_vjp_x)
def _matmul_vjp_x_jit(ct, x, y):
    x_nd = x.ndim if isinstance(x, types.Array) else 0
    y_nd = y.ndim if isinstance(y, types.Array) else 0
    if y_nd == 1 and x_nd <= 1:
        return lambda ct, x, y: unbroadcast(ct * y, x)
    if y_nd == 1:
        return lambda ct, x, y: unbroadcast(np.expand_dims(ct, -1) * y, x)
    if x_nd == 1:

        def vector(ct, x, y):
            r = numpy_extra.matmul(y, np.expand_dims(ct, -1))
            return unbroadcast(r[..., 0], x)

        return vector
    return lambda ct, x, y: unbroadcast(numpy_extra.matmul(ct, matrix_transpose(y)), x)


@overload(matmul_vjp_y)
def _matmul_vjp_y_jit(ct, x, y):
    x_nd = x.ndim if isinstance(x, types.Array) else 0
    y_nd = y.ndim if isinstance(y, types.Array) else 0
    if x_nd == 1 and y_nd <= 1:
        return lambda ct, x, y: unbroadcast(x * ct, y)
    if x_nd == 1:
        return lambda ct, x, y: unbroadcast(np.expand_dims(x, -1) * np.expand_dims(ct, -2), y)
    if y_nd == 1:

        def vector(ct, x, y):
            r = numpy_extra.matmul(matrix_transpose(x), np.expand_dims(ct, -1))
            return unbroadcast(r[..., 0], y)

        return vector
    return lambda ct, x, y: unbroadcast(numpy_extra.matmul(matrix_transpose(x), ct), y)


def _static_axes(name: str, axes: Any) -> Any:
    """The Python value of a compile-time ``axes`` (int, pair of ints or of tuples)."""
    if isinstance(axes, types.Omitted):
        return axes.value
    if isinstance(axes, types.IntegerLiteral):
        return axes.literal_value
    if isinstance(axes, types.BaseTuple):
        values = []
        for t in axes.types:
            value = _static_axes(name, t)
            if value is None:
                return None
            values.append(value)
        return tuple(values)
    return None


def _tensordot_vjp_code(name: str, which: int, ct: Any, a: Any, b: Any, axes: Any, header: str):
    """The VJP (``which``: 0 for ``a``, 1 for ``b``) of ``tensordot(a, b, axes)``, the
    axes known when compiling: one tensordot, then the axes put back in order."""
    contract, perm = _tensordot_plan(_ndim(a), _ndim(b), axes)[which]
    left, right = ("ct", "b") if which == 0 else ("a", "ct")
    code = _Code(header)
    if _ndim(ct) == 0:
        code(f"r = {left} * {right}")
    else:
        code(f"r = numpy_extra.tensordot({left}, {right}, {contract!r})")
    if perm == tuple(range(len(perm))):
        code("return r")
    else:
        code(f"return np.ascontiguousarray(np.transpose(r, {perm!r}))")
    return code.compile(name)


def _tensordot_vjp(name: str, which: int, ct: Any, a: Any, b: Any, axes: Any) -> Any:
    value = _static_axes(name, axes)
    if value is None:
        if isinstance(axes, types.Integer | types.BaseTuple):
            return lambda ct, a, b, axes=2: numba.literally(axes)
        raise _fail(name, f"axes must be an int or a pair of ints or tuples, got {axes}")
    return _tensordot_vjp_code(name, which, ct, a, b, value, "def impl(ct, a, b, axes=2):")


@overload(tensordot_vjp_a, prefer_literal=True)
def _tensordot_vjp_a_jit(ct, a, b, axes=2):
    return _tensordot_vjp("tensordot_vjp_a", 0, ct, a, b, axes)


@overload(tensordot_vjp_b, prefer_literal=True)
def _tensordot_vjp_b_jit(ct, a, b, axes=2):
    return _tensordot_vjp("tensordot_vjp_b", 1, ct, a, b, axes)


def _ndim(ty: Any) -> int:
    return ty.ndim if isinstance(ty, types.Array) else 0


@overload(dot_vjp_a)
def _dot_vjp_a_jit(ct, a, b):
    if _ndim(a) == 0 or _ndim(b) == 0:
        return lambda ct, a, b: unbroadcast(ct * b, a)
    axes = _dot_axes(_ndim(a), _ndim(b))
    return _tensordot_vjp_code("dot_vjp_a", 0, ct, a, b, axes, "def impl(ct, a, b):")


@overload(dot_vjp_b)
def _dot_vjp_b_jit(ct, a, b):
    if _ndim(a) == 0 or _ndim(b) == 0:
        return lambda ct, a, b: unbroadcast(a * ct, b)
    axes = _dot_axes(_ndim(a), _ndim(b))
    return _tensordot_vjp_code("dot_vjp_b", 1, ct, a, b, axes, "def impl(ct, a, b):")


def _matrix_loops(name: str, x: Any, body: list[str]) -> Any:
    """An implementation that runs ``body`` (on ``m``, ``o``: one matrix in and out,
    indices ``i``, ``j``) over the matrices of a stack ``x``."""
    x = _array(name, x)
    if x.ndim < 2:
        raise _fail(name, f"expected at least 2 dims, got {x.ndim}")
    dtype = _np(x.dtype)
    code = _Code("def impl(x):", T=dtype.type)
    code(f"s = np.ascontiguousarray(x).reshape((-1, x.shape[{x.ndim - 2}], x.shape[{x.ndim - 1}]))")
    code("out = np.zeros(s.shape, T)")
    code("for b in range(s.shape[0]):", "    m = s[b]", "    o = out[b]")
    code("    for i in range(m.shape[0]):", "        for j in range(m.shape[1]):")
    code(*("            " + line for line in body))
    code("return out.reshape(x.shape)")
    return code.compile(name)


@overload(tril_half_diag)
def _tril_half_diag_jit(x):
    body = ["if j < i:", "    o[i, j] = m[i, j]", "elif j == i:", "    o[i, j] = m[i, j] * 0.5"]
    return _matrix_loops("tril_half_diag", x, body)


@overload(tril_symmetric)
def _tril_symmetric_jit(x):
    body = ["o[i, j] = m[i, j] if j <= i else m[j, i]"]
    return _matrix_loops("tril_symmetric", x, body)


@overload(tril_fold)
def _tril_fold_jit(x):
    body = ["if j < i:", "    o[i, j] = m[i, j] + m[j, i]", "elif j == i:", "    o[i, j] = m[i, j]"]
    return _matrix_loops("tril_fold", x, body)


# -- einsum ----------------------------------------------------------------------------


def _spec_value(ty: Any) -> Any:
    """The Python value of a compile-time einsum spec (str or nested (spec, int)), or None."""
    if isinstance(ty, types.StringLiteral):
        return ty.literal_value
    if isinstance(ty, types.BaseTuple) and len(ty.types) == 2:
        inner = _spec_value(ty.types[0])
        if inner is not None and isinstance(ty.types[1], types.IntegerLiteral):
            return (inner, ty.types[1].literal_value)
    return None


_EINSUM_HEADER = "def impl(subscripts, x0, x1=None, x2=None, x3=None, x4=None, x5=None, like=None):"


@overload(einsum_general, prefer_literal=True)
def _einsum_jit(subscripts, x0, x1=None, x2=None, x3=None, x4=None, x5=None, like=None):
    spec = _spec_value(subscripts)
    if spec is None:
        if isinstance(subscripts, types.UnicodeType):

            def literal(subscripts, x0, x1=None, x2=None, x3=None, x4=None, x5=None, like=None):
                return numba.literally(subscripts)

            return literal
        raise _fail("einsum_general", f"subscripts must be a constant, got {subscripts}")
    ops = []
    for name, ty in (("x0", x0), ("x1", x1), ("x2", x2), ("x3", x3), ("x4", x4), ("x5", x5)):
        if _is_none(ty):
            break
        if not isinstance(ty, types.Array) and not _is_scalar(ty):
            raise _fail("einsum_general", f"operand {name} must be an array or a number, got {ty}")
        ops.append((name, ty))
    with_like = not _is_none(like)
    out_ndim = _ndim(like) if with_like else None
    try:
        terms, output = _einsum_plan(spec, tuple(_ndim(t) for _, t in ops), out_ndim)
    except ValueError as err:
        raise _fail("einsum_general", str(err)) from None
    acc = _promote(*(_dtype("einsum_general", t) for _, t in ops))
    cast = acc
    if with_like and _inexact_np(_dtype("einsum_general", like)) == _np(
        _dtype("einsum_general", like)
    ):
        cast = _np(_dtype("einsum_general", like))
    code = _Code(_EINSUM_HEADER, ACC=acc.type, CAST=cast.type)
    letters = list(dict.fromkeys("".join(terms) + output))
    for c in letters:
        code(f"n_{c} = 1")
    for (name, _), term in zip(ops, terms, strict=True):
        for d, c in enumerate(term):
            code(f"n_{c} = _bdim(n_{c}, {name}.shape[{d}])")
            code(f"f_{name}_{d} = 0 if {name}.shape[{d}] == 1 else 1")
    for d, c in enumerate(output):
        if with_like:
            code(f"n_{c} = _bdim(n_{c}, like.shape[{d}])")
            code(f"f_out_{d} = 0 if like.shape[{d}] == 1 else 1")
    shape = _tuple(f"like.shape[{d}]" if with_like else f"n_{c}" for d, c in enumerate(output))
    code(f"out = np.zeros({shape if output else '()'}, ACC)")
    outer = list(dict.fromkeys(output))
    inner = [c for c in letters if c not in outer]
    for c in outer:
        code(f"for i_{c} in range(n_{c}):")
        code.depth += 1
    factors = []
    for (name, ty), term in zip(ops, terms, strict=True):
        if _is_scalar(ty):
            factors.append(name)
        else:
            index = [f"i_{c} * f_{name}_{d}" for d, c in enumerate(term)]
            factors.append(f"{name}[{_subscript(index)}]")
    product = " * ".join(f"ACC({f})" for f in factors)
    out_index = [f"i_{c} * f_out_{d}" if with_like else f"i_{c}" for d, c in enumerate(output)]
    target = f"out[{_subscript(out_index)}]"
    if inner:
        code("s = ACC(0)")
        for c in inner:
            code(f"for i_{c} in range(n_{c}):")
            code.depth += 1
        code(f"s += {product}")
        code.depth -= len(inner)
        code(f"{target} += s")
    else:
        code(f"{target} += {product}")
    code.depth = 1
    result = "out" if cast == acc else "out.astype(CAST)"
    if with_like and not isinstance(like, types.Array):
        code(f"return CAST({result}[()])")
    else:
        code(f"return {result}")
    return code.compile("einsum_general")


__all__ = [
    "broadcast_reduced",
    "cumprod_jvp",
    "cumprod_vjp",
    "cumsum_reverse",
    "dot_vjp_a",
    "dot_vjp_b",
    "einsum_general",
    "matmul_vjp_x",
    "matmul_vjp_y",
    "matrix_transpose",
    "norm_exponent",
    "norm_weights",
    "prod_others",
    "prod_others_jvp",
    "reduced_count",
    "reshape_like",
    "tensordot_vjp_a",
    "tensordot_vjp_b",
    "tie_weights",
    "trace_vjp",
    "tril_fold",
    "tril_half_diag",
    "tril_symmetric",
]
