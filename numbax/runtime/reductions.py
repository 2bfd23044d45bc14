"""Adjoints and derivatives of reductions that are no NumPy function: the divisor of
``mean``/``var``/``std`` (``reduced_count``), how ``max``/``min`` share a derivative
among tied elements (``tie_weights``), each element's product of the others of its
reduction (``prod_others``: ``prod``'s derivative without dividing by zero) and its
derivatives ``prod_others_jvp``, ``prod_others_jvp2`` and ``prod_others_jvp3``,
``cumsum_reverse``, ``cumprod_jvp``/``cumprod_vjp``, and the derivatives of
``np.linalg.norm`` (``norm_weights``/``norm_exponent``).

Each is linear in its cotangent (or tangent) argument, or has no derivative, and has its
own rules in ``transform/rules/runtime.py``, so derivative code that calls it can be
differentiated again.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from numbax.runtime.broadcasting import broadcast_reduced, reduced_axes, reshape_like
from numbax.runtime.registry import helper


def inexact_dtype(dtype: Any) -> np.dtype:
    """``dtype`` if floating or complex, else float64: the dtype of a derivative."""
    dtype = np.result_type(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


@helper
def reduced_count(a: Any, ans: Any, ddof: Any = 0) -> Any:
    """How many elements of ``a`` each element of its reduction ``ans`` reduces, less
    ``ddof``: the divisor of ``mean``, ``var`` and ``std``, as a scalar of a's floating
    dtype (so a float32 derivative stays float32 under Numba too)."""
    return inexact_dtype(np.result_type(a)).type(np.size(a) / np.size(ans) - ddof)


@helper
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
    return (mask / np.maximum(counts, 1) * none).astype(inexact_dtype(a.dtype))


def _rows(a: np.ndarray, axis: Any) -> tuple[np.ndarray, Any]:
    """``a`` with the axes of ``axis`` moved last and merged: (..., N), and the inverse."""
    axes = reduced_axes(a.ndim, axis)
    kept = a.ndim - len(axes)
    moved = np.moveaxis(a, axes, tuple(range(kept, a.ndim)))
    rows = moved.reshape(moved.shape[:kept] + (-1,))

    def back(r: np.ndarray) -> np.ndarray:
        out = np.moveaxis(r.reshape(moved.shape), tuple(range(kept, a.ndim)), axes)
        return np.ascontiguousarray(out)

    return rows, back


@helper
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


@helper
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


@helper
def prod_others_jvp2(a: Any, t: Any, u: Any, axis: Any = None) -> Any:
    """The derivative of ``prod_others_jvp(a, t, axis)`` in ``a`` along ``u``: for each
    element, the sum over ordered pairs ``j != k`` of the other elements of its reduction
    of ``t[j] * u[k]`` times the product of the rest (``prod``'s third derivative, so
    symmetric in ``t``, ``u`` and the cotangent: its own adjoint in each). Exact with
    zeros (:func:`_mixed_others`)."""
    if not isinstance(a, np.ndarray):
        return type(a)(0) * t * u
    return _mixed_others(a, (t, u), axis)


@helper
def prod_others_jvp3(a: Any, t: Any, u: Any, w: Any, axis: Any = None) -> Any:
    """The derivative of ``prod_others_jvp2(a, t, u, axis)`` in ``a`` along ``w``:
    ``prod``'s fourth derivative, symmetric in ``t``, ``u``, ``w`` and the cotangent.
    Exact with zeros (:func:`_mixed_others`)."""
    if not isinstance(a, np.ndarray):
        return type(a)(0) * t * u * w
    return _mixed_others(a, (t, u, w), axis)


def _mixed_others(a: np.ndarray, tangents: tuple, axis: Any) -> np.ndarray:
    """For each element of ``a``, the mixed derivative along all of ``tangents`` of the
    product of the other elements of its reduction over ``axis``. Scans both ways carry
    the jet of the running product: one part per subset of the tangents (bit ``b`` of
    its index for tangent ``b``), the derivative along those; a factor ``x`` moving along
    ``t_b`` multiplies part ``S`` by ``x`` and adds ``t_b`` times part ``S - {b}``. No
    division, so zeros are exact."""
    rows, back = _rows(a, axis)
    moving = [_rows(np.broadcast_to(t, a.shape), axis)[0] for t in tangents]
    dtype = np.result_type(a, *tangents)
    k, n = len(tangents), rows.shape[-1]
    full = (1 << k) - 1

    def times(jet: list, i: int) -> list:
        out = [part * rows[..., i] for part in jet]
        for subset in range(1, full + 1):
            for b in range(k):
                if subset >> b & 1:
                    out[subset] = out[subset] + jet[subset ^ (1 << b)] * moving[b][..., i]
        return out

    def start() -> list:
        return [np.ones(rows.shape[:-1], dtype)] + [np.zeros(rows.shape[:-1], dtype)] * full

    before = np.empty((full + 1, *rows.shape), dtype)
    jet = start()
    for i in range(n):
        for subset, part in enumerate(jet):
            before[subset, ..., i] = part
        jet = times(jet, i)
    out = np.empty(rows.shape, dtype)
    jet = start()
    for i in range(n - 1, -1, -1):
        out[..., i] = sum(before[subset, ..., i] * jet[full ^ subset] for subset in range(full + 1))
        jet = times(jet, i)
    return back(out)


@helper
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


@helper
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


@helper
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


def _is_matrix_norm(ord: Any, ndim: int, axis: Any) -> bool:
    """Whether ``np.linalg.norm(x, ord, axis)`` is a matrix norm other than Frobenius's
    (whose derivatives are those of the vector 2-norm)."""
    matrix = (axis is None and ndim == 2) or (isinstance(axis, tuple) and len(axis) == 2)
    return matrix and ord is not None and ord != "fro"


def _shared(values: np.ndarray, largest: bool) -> np.ndarray:
    """1/count at the ``count`` largest (or smallest) of each row's ``values``, else 0:
    a max's derivative shared among ties, as JAX does."""
    best = values.max(axis=-1, keepdims=True) if largest else values.min(axis=-1, keepdims=True)
    mask = values == best
    return mask / mask.sum(axis=-1, keepdims=True)


def matrix_norm_gradient(m: np.ndarray, ord: Any) -> np.ndarray:
    """The gradient of the matrix norm of order ``ord`` of each matrix of a stack ``m``
    (..., r, c): for the column-sum norms (1, -1) ``sign(m)`` in the column(s) of the
    largest (smallest) sum, for the row-sum norms (inf, -inf) in the row(s); for the
    spectral norms (2, -2) ``u v^T`` of the largest (smallest) singular value, and
    ``U V^T`` for the nuclear norm (ties share, as for ``max``)."""
    if ord == "nuc" or ord in (2, -2):
        u, s, vh = np.linalg.svd(m, full_matrices=False)
        weights = np.ones_like(s) if ord == "nuc" else _shared(s, ord > 0)
        return (u * weights[..., None, :]) @ vh
    if ord in (1, -1):
        return np.sign(m) * _shared(np.abs(m).sum(axis=-2), ord > 0)[..., None, :]
    if ord in (np.inf, -np.inf):
        return np.sign(m) * _shared(np.abs(m).sum(axis=-1), ord > 0)[..., :, None]
    raise ValueError(f"Invalid norm order {ord!r} for matrices.")


def _matrix_norm_weights(x: np.ndarray, ord: Any, axis: Any, k: int, dtype: Any) -> np.ndarray:
    axes = (-2, -1) if axis is None else axis
    if k == 0:
        m = np.moveaxis(x, axes, (-2, -1))
        return np.ascontiguousarray(np.moveaxis(matrix_norm_gradient(m, ord), (-2, -1), axes))
    if ord in (1, np.inf, -np.inf):  # piecewise linear, and norm_exponent(ord) is 0
        return np.zeros(x.shape, dtype)
    raise ValueError(
        f"numbax: np.linalg.norm(x, ord={ord!r}) of matrices has first derivatives only; "
        "for more, compute it from np.linalg.svd(x, full_matrices=False) (singular values)"
        " or from sums of np.abs(x), whose derivatives numbax has"
    )


@helper
def norm_exponent(ord: Any = None) -> float:
    """``1 - p`` for the p-norm named by ``ord`` (2 for None and 'fro'), 0 for the max
    norms: how the derivatives ``norm_weights`` of a norm scale with the norm."""
    p = 2.0 if ord is None or isinstance(ord, str) else float(ord)
    return 0.0 if math.isinf(p) else 1.0 - p


@helper
def norm_weights(
    x: Any, norm: Any, ord: Any = None, axis: Any = None, keepdims: bool = False, k: int = 0
) -> Any:
    """The ``k+1``-th derivative of the vector p-norm ``norm`` of ``x`` over ``axis``
    with respect to each element of ``x`` (holding ``norm`` fixed beyond the first):
    ``(p-1)...(p-k) sign(x)^(k+1) |x|^(p-1-k) norm^(1-p)``, of ``x``'s shape. ``k=0`` is
    the gradient (``x / norm`` for the 2-norm, ``sign(x)`` for the 1-norm, the sign at
    the tied maxima for the max norm); its derivatives are ``k=1, 2, ...``. Matrix norms
    (``matrix_norm_gradient``) have their gradient, and second derivatives where they
    are piecewise linear (1, inf, -inf); the others raise."""
    x = np.asarray(x)
    if k and x.dtype.kind == "c":
        raise TypeError(
            "numbax: second derivatives of np.linalg.norm of complex values are not "
            "supported; write the norm as np.sqrt(np.sum(np.abs(z) ** 2)) instead"
        )
    dtype = inexact_dtype(x.dtype)
    if _is_matrix_norm(ord, x.ndim, axis):
        return _matrix_norm_weights(x, ord, axis, k, dtype).astype(dtype)
    p = 2.0 if ord is None or ord == "fro" else float(ord)
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
