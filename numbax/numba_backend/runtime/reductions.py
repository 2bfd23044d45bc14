"""Numba versions of the adjoints of reductions (``numbax/runtime/reductions.py``): one
compiled kernel per family works on rows (the reduced axes moved last and merged), and
generated code moves the axes in and out for the argument types.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.np import reductions
from numbax.numba_backend.np._typing import _wants_literal
from numbax.numba_backend.runtime.common import (
    _array,
    _axis_items,
    _code,
    _dtype_of,
    _emit_flags,
    _fail,
    _inexact_np,
    _is_none,
    _is_scalar,
    _np,
    _promote,
)
from numbax.runtime.broadcasting import broadcast_reduced
from numbax.runtime.reductions import (
    cumprod_jvp,
    cumprod_vjp,
    cumsum_reverse,
    norm_exponent,
    norm_weights,
    prod_others,
    prod_others_jvp,
    prod_others_jvp2,
    prod_others_jvp3,
    reduced_count,
    tie_weights,
)


@overload(reduced_count)
def _reduced_count_jit(a, ans, ddof=0):
    cast = _inexact_np(_dtype_of("reduced_count", a)).type
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
        # the ties counted by the floating sum that programs compile anyway: a sum of
        # truth values and an np.where took a second of a first compile; a nan extremum
        # ties nothing, and 0 / 0 (an array division: no error) is JAX's nan
        mask = (a == broadcast_reduced(ans, a, axis, keepdims)).astype(cast)
        return mask / reductions.sum(mask, axis, keepdims=True)

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


@register_jitable
def _times_element(jet, x, ts, i, j):
    """``jet`` times the element ``x`` moving along ``ts[b, i, j]``, in place: from the
    largest subset down, as each part reads smaller ones."""
    k = ts.shape[0]
    for subset in range(jet.shape[0] - 1, -1, -1):
        value = jet[subset] * x
        for b in range(k):
            if subset >> b & 1:
                value += jet[subset ^ (1 << b)] * ts[b, i, j]
        jet[subset] = value


@register_jitable
def _mixed_others_rows(a, ts):
    """Each row's mixed derivative along all of ``ts[b]`` of ``prod_others``: the scans
    of ``runtime.reductions._mixed_others``, one jet part per subset of the tangents."""
    n = a.shape[1]
    full = (1 << ts.shape[0]) - 1
    out = np.empty(a.shape, ts.dtype)
    before = np.empty((full + 1, n), ts.dtype)
    jet = np.empty(full + 1, ts.dtype)
    for i in range(a.shape[0]):
        jet[:] = 0
        jet[0] = 1
        for j in range(n):
            before[:, j] = jet
            _times_element(jet, a[i, j], ts, i, j)
        jet[:] = 0
        jet[0] = 1
        for j in range(n - 1, -1, -1):
            total = jet[0] * 0
            for subset in range(full + 1):
                total += before[subset, j] * jet[full ^ subset]
            out[i, j] = total
            _times_element(jet, a[i, j], ts, i, j)
    return out


@register_jitable
def _prod_others_jvp2_rows(a, t, u):
    return _mixed_others_rows(a, np.stack((t, u)))


@register_jitable
def _prod_others_jvp3_rows(a, t, u, w):
    return _mixed_others_rows(a, np.stack((t, u, w)))


_SCOPE = {  # what the generated implementations call
    "numba": numba,
    "reductions": reductions,
    "to_fixed_tuple": to_fixed_tuple,
    "_prod_others_rows": _prod_others_rows,
    "_prod_others_jvp_rows": _prod_others_jvp_rows,
    "_prod_others_jvp2_rows": _prod_others_jvp2_rows,
    "_prod_others_jvp3_rows": _prod_others_jvp3_rows,
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
    code = _code(header, _SCOPE, T=dtype.type)
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


@overload(prod_others_jvp2)
def _prod_others_jvp2_jit(a, t, u, axis=None):
    if _is_scalar(a):
        return lambda a, t, u, axis=None: t * u * 0
    a = _array("prod_others_jvp2", a)
    t, u = _array("prod_others_jvp2", t), _array("prod_others_jvp2", u)
    header = "def impl(a, t, u, axis=None):"
    dtype = _promote(a.dtype, t.dtype, u.dtype)
    inputs = [("a", a), ("t", t), ("u", u)]
    return _rowwise(
        "prod_others_jvp2", header, "_prod_others_jvp2_rows", inputs, axis, a.ndim, "a", dtype
    )


@overload(prod_others_jvp3)
def _prod_others_jvp3_jit(a, t, u, w, axis=None):
    if _is_scalar(a):
        return lambda a, t, u, w, axis=None: t * u * w * 0
    a = _array("prod_others_jvp3", a)
    t, u, w = (_array("prod_others_jvp3", x) for x in (t, u, w))
    header = "def impl(a, t, u, w, axis=None):"
    dtype = _promote(a.dtype, t.dtype, u.dtype, w.dtype)
    inputs = [("a", a), ("t", t), ("u", u), ("w", w)]
    return _rowwise(
        "prod_others_jvp3", header, "_prod_others_jvp3_rows", inputs, axis, a.ndim, "a", dtype
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
    """``p`` of an ``ord`` known when compiling (None and 'fro': 2; 'nuc': -2, which no
    vector norm has); None if a number."""
    if _is_none(ord):
        return 2.0
    if isinstance(ord, types.StringLiteral):
        if ord.literal_value == "fro":
            return 2.0
        if ord.literal_value == "nuc":
            return -2.0
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
    code = _code(
        "def impl(x, norm, ord=None, axis=None, keepdims=False, k=0):", _SCOPE, T=dtype.type
    )
    if matrix and (p is None or p == -2.0):
        nuc = p == -2.0
        _matrix_norm_weights_code(code, x.ndim, axis, nuc)
        if nuc:
            return code.compile("norm_weights")
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


_NO_SECOND = (
    "numbax: np.linalg.norm(x, ord) of matrices has first derivatives only for ord in "
    "(2, -2, -1, 'nuc'); for more, compute it from np.linalg.svd(x, full_matrices=False)"
)


def _matrix_norm_weights_code(code: Any, ndim: int, axis: Any, nuc: bool) -> None:
    """Code returning ``norm_weights`` of a matrix norm of order ``ord`` (``nuc``: the
    nuclear norm): each matrix's gradient (``_matrix_norm_gradient``), its axes moved
    last and back; the second derivatives of the piecewise linear norms (zero)."""
    p = "0.0" if nuc else "float(ord)"
    code(f"p = {p}", "if k != 0:")
    if not nuc:
        code("    if p == 1.0 or np.isinf(p):", "        return np.zeros(x.shape, T)")
    code(f"    raise ValueError({_NO_SECOND!r})")
    if _is_none(axis):
        code("stack = np.ascontiguousarray(x).reshape((1, x.shape[0], x.shape[1]))")
        code("out = np.empty(stack.shape, T)")
        code(f"out[0] = _matrix_norm_gradient(stack[0], p, {nuc})")
        code("return out.reshape(x.shape)")
        return
    code(f"row = _axis_index(axis[0], {ndim})", f"col = _axis_index(axis[1], {ndim})")
    code(f"perm = np.empty({ndim}, np.intp)", "j = 0", f"for d in range({ndim}):")
    code("    if d != row and d != col:", "        perm[j] = d", "        j += 1")
    code(f"perm[{ndim - 2}] = row", f"perm[{ndim - 1}] = col")
    code(f"m = np.ascontiguousarray(x.transpose(to_fixed_tuple(perm, {ndim})))")
    code(f"stack = m.reshape((-1, m.shape[{ndim - 2}], m.shape[{ndim - 1}]))")
    code("out = np.empty(stack.shape, T)")
    code("for t in range(stack.shape[0]):")
    code(f"    out[t] = _matrix_norm_gradient(stack[t], p, {nuc})")
    code(f"back = to_fixed_tuple(np.argsort(perm), {ndim})")
    code("return np.ascontiguousarray(out.reshape(m.shape).transpose(back))")


@register_jitable
def _shared_rows(values, largest):
    """1/count at the largest (smallest) of ``values``, 0 elsewhere."""
    best = values.max() if largest else values.min()
    mask = (values == best).astype(np.float64)
    return mask / mask.sum()


@register_jitable
def _matrix_norm_gradient(m, p, nuc):
    """The gradient of the matrix norm of order ``p`` (or the nuclear norm) of ``m``."""
    if nuc or p == 2.0 or p == -2.0:
        u, s, vh = np.linalg.svd(np.ascontiguousarray(m), full_matrices=False)
        w = np.ones(s.shape[0]) if nuc else _shared_rows(s, p > 0)
        return (u * w.astype(u.dtype)) @ vh
    rows, cols = m.shape
    out = np.sign(m)
    if p == 1.0 or p == -1.0:
        w = _shared_rows(np.abs(m).sum(axis=0), p > 0)
        for i in range(rows):
            for j in range(cols):
                out[i, j] *= w[j]
    elif np.isinf(p):
        w = _shared_rows(np.abs(m).sum(axis=1), p > 0)
        for i in range(rows):
            for j in range(cols):
                out[i, j] *= w[i]
    else:
        raise ValueError("Invalid norm order for matrices.")
    return out


_SCOPE["_matrix_norm_gradient"] = _matrix_norm_gradient
_SCOPE["broadcast_reduced"] = broadcast_reduced
_SCOPE["tie_weights"] = tie_weights
