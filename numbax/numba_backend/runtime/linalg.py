"""Numba versions of the adjoints of products and matrix functions
(``numbax/runtime/linalg.py``): contractions end in ``np/products.py``'s (BLAS for
floats), with the same plans (axes, permutations) as the interpreted helpers, computed
from the ranks while compiling.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.loops.matrix_product import is_blas_matrix_pair, matrix_product
from numbax.numba_backend.np import products, reductions
from numbax.numba_backend.runtime.common import (
    _array,
    _code,
    _dtype_of,
    _fail,
    _inexact_np,
    _is_none,
    _is_scalar,
    _np,
    _promote,
    _subscript,
    _tuple,
)
from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.linalg import (
    block_upper,
    diagonal_blocks,
    diagonal_matrix,
    dot_axes,
    dot_vjp_a,
    dot_vjp_b,
    einsum_general,
    einsum_plan,
    inverse_differences,
    matmul_vjp_x,
    matmul_vjp_y,
    matrix_diagonal,
    matrix_transpose,
    svd_vectors_defined,
    tensordot_plan,
    tensordot_vjp_a,
    tensordot_vjp_b,
    trace_vjp,
    trailing_shape,
    tril_fold,
    tril_half_diag,
    tril_symmetric,
    upper_right,
)

_SCOPE = {  # what the generated implementations call
    "numba": numba,
    "products": products,
    "reductions": reductions,
    "to_fixed_tuple": to_fixed_tuple,
    "unbroadcast": unbroadcast,
}


@overload(trace_vjp)
def _trace_vjp_jit(ct, a, offset=0, axis1=0, axis2=1):
    a = _array("trace_vjp", a)
    n = a.ndim
    if n < 2:
        raise _fail("trace_vjp", f"a must have at least 2 dims, got {n}")
    dtype = _inexact_np(_dtype_of("trace_vjp", ct))
    code = _code("def impl(ct, a, offset=0, axis1=0, axis2=1):", _SCOPE, T=dtype.type)
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
            r = products.matmul(y, np.expand_dims(ct, -1))
            return unbroadcast(r[..., 0], x)

        return vector
    if is_blas_matrix_pair(ct, _transposed(y)):
        return lambda ct, x, y: unbroadcast(matrix_product(ct, y.T), x)
    return lambda ct, x, y: unbroadcast(products.matmul(ct, matrix_transpose(y)), x)


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
            r = products.matmul(matrix_transpose(x), np.expand_dims(ct, -1))
            return unbroadcast(r[..., 0], y)

        return vector
    if is_blas_matrix_pair(_transposed(x), ct):
        return lambda ct, x, y: unbroadcast(matrix_product(x.T, ct), y)
    return lambda ct, x, y: unbroadcast(products.matmul(matrix_transpose(x), ct), y)


def _transposed(matrix: Any) -> Any:
    """The Numba type of ``matrix.T`` (2-d): a C-contiguous matrix's transpose is
    Fortran-contiguous, and the reverse. BLAS reads either in place
    (:func:`matrix_product`), where a copy in C order was made before."""
    if not isinstance(matrix, types.Array):
        return matrix
    return matrix.copy(layout={"C": "F", "F": "C"}.get(matrix.layout, matrix.layout))


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
    contract, perm = tensordot_plan(_ndim(a), _ndim(b), axes)[which]
    left, right = ("ct", "b") if which == 0 else ("a", "ct")
    code = _code(header, _SCOPE)
    if _ndim(ct) == 0:
        code(f"r = {left} * {right}")
    else:
        code(f"r = products.tensordot({left}, {right}, {contract!r})")
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
    axes = dot_axes(_ndim(a), _ndim(b))
    return _tensordot_vjp_code("dot_vjp_a", 0, ct, a, b, axes, "def impl(ct, a, b):")


@overload(dot_vjp_b)
def _dot_vjp_b_jit(ct, a, b):
    if _ndim(a) == 0 or _ndim(b) == 0:
        return lambda ct, a, b: unbroadcast(a * ct, b)
    axes = dot_axes(_ndim(a), _ndim(b))
    return _tensordot_vjp_code("dot_vjp_b", 1, ct, a, b, axes, "def impl(ct, a, b):")


def _matrix_loops(name: str, x: Any, body: list[str]) -> Any:
    """An implementation that runs ``body`` (on ``m``, ``o``: one matrix in and out,
    indices ``i``, ``j``) over the matrices of a stack ``x``."""
    x = _array(name, x)
    if x.ndim < 2:
        raise _fail(name, f"expected at least 2 dims, got {x.ndim}")
    dtype = _np(x.dtype)
    code = _code("def impl(x):", _SCOPE, T=dtype.type)
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
    body = [
        "if j < i:",
        "    o[i, j] = m[i, j]",
        "elif j == i:",
        "    o[i, j] = m[i, j].real",
        "else:",
        "    o[i, j] = m[j, i].conjugate()",
    ]
    return _matrix_loops("tril_symmetric", x, body)


@overload(tril_fold)
def _tril_fold_jit(x):
    body = [
        "if j < i:",
        "    o[i, j] = m[i, j] + m[j, i].conjugate()",
        "elif j == i:",
        "    o[i, j] = m[i, j].real",
    ]
    return _matrix_loops("tril_fold", x, body)


# -- pieces of the derivatives of decompositions ---------------------------------------


@overload(matrix_diagonal)
def _matrix_diagonal_jit(x):
    x = _array("matrix_diagonal", x)
    if x.ndim < 2:
        raise _fail("matrix_diagonal", f"expected at least 2 dims, got {x.ndim}")
    lead = x.ndim - 2
    code = _code("def impl(x):", _SCOPE, T=_np(x.dtype).type)
    code(f"s = np.ascontiguousarray(x).reshape((-1, x.shape[{lead}], x.shape[{lead + 1}]))")
    code("k = min(s.shape[1], s.shape[2])", "out = np.empty((s.shape[0], k), T)")
    code("for b in range(s.shape[0]):", "    for i in range(k):", "        out[b, i] = s[b, i, i]")
    code(f"return out.reshape({_tuple([*(f'x.shape[{d}]' for d in range(lead)), 'k'])})")
    return code.compile("matrix_diagonal")


@overload(diagonal_matrix)
def _diagonal_matrix_jit(v):
    v = _array("diagonal_matrix", v)
    lead = v.ndim - 1
    code = _code("def impl(v):", _SCOPE, T=_inexact_np(v.dtype).type)
    code(f"s = np.ascontiguousarray(v).reshape((-1, v.shape[{lead}]))", "k = s.shape[1]")
    code("out = np.zeros((s.shape[0], k, k), T)")
    code("for b in range(s.shape[0]):", "    for i in range(k):", "        out[b, i, i] = s[b, i]")
    code(f"return out.reshape({_tuple([*(f'v.shape[{d}]' for d in range(lead)), 'k', 'k'])})")
    return code.compile("diagonal_matrix")


@overload(inverse_differences)
def _inverse_differences_jit(w):
    w = _array("inverse_differences", w)
    lead = w.ndim - 1
    code = _code("def impl(w):", _SCOPE, T=_inexact_np(w.dtype).type)
    code(f"s = np.ascontiguousarray(w).reshape((-1, w.shape[{lead}]))", "k = s.shape[1]")
    code("out = np.zeros((s.shape[0], k, k), T)")
    code("for b in range(s.shape[0]):", "    for i in range(k):", "        for j in range(k):")
    code("            if i != j:", "                out[b, i, j] = 1 / (s[b, j] - s[b, i])")
    code(f"return out.reshape({_tuple([*(f'w.shape[{d}]' for d in range(lead)), 'k', 'k'])})")
    return code.compile("inverse_differences")


@overload(svd_vectors_defined)
def _svd_vectors_defined_jit(u, a, full_matrices):
    a = _array("svd_vectors_defined", a)
    rows, cols = a.ndim - 2, a.ndim - 1

    def impl(u, a, full_matrices):
        if full_matrices and a.shape[rows] != a.shape[cols]:
            raise ValueError(
                "numbax: np.linalg.svd(a, full_matrices=True) of a non-square matrix has no "
                "derivative (its extra singular vectors are arbitrary): pass full_matrices=False"
            )
        return u

    return impl


def _blocks(name: str, x: Any, header: str, lines: list[str], dtype: Any) -> Any:
    x = _array(name, x)
    if x.ndim < 2:
        raise _fail(name, f"expected at least 2 dims, got {x.ndim}")
    code = _code(header, _SCOPE, T=dtype.type)
    code(*lines)
    return code.compile(name)


@overload(block_upper)
def _block_upper_jit(a, t):
    dtype = _promote(_dtype_of("block_upper", a), _dtype_of("block_upper", t), types.float64)
    n = _array("block_upper", a).ndim
    lead = ", ".join(f"a.shape[{d}]" for d in range(n - 2))
    shape = f"({lead}{', ' if lead else ''}2 * k, 2 * k)"
    lines = [
        f"k = a.shape[{n - 1}]",
        f"out = np.zeros({shape}, T)",
        "out[..., :k, :k] = a",
        "out[..., k:, k:] = a",
        "out[..., :k, k:] = t",
        "return out",
    ]
    return _blocks("block_upper", a, "def impl(a, t):", lines, dtype)


@overload(upper_right)
def _upper_right_jit(x):
    n = _array("upper_right", x).ndim
    lines = [f"k = x.shape[{n - 1}] // 2", "return np.ascontiguousarray(x[..., :k, k:])"]
    return _blocks("upper_right", x, "def impl(x):", lines, _np(x.dtype))


@overload(diagonal_blocks)
def _diagonal_blocks_jit(x):
    n = _array("diagonal_blocks", x).ndim
    lines = [f"k = x.shape[{n - 1}] // 2", "return x[..., :k, :k] + x[..., k:, k:]"]
    return _blocks("diagonal_blocks", x, "def impl(x):", lines, _np(x.dtype))


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
        terms, output = einsum_plan(spec, tuple(_ndim(t) for _, t in ops), out_ndim)
    except ValueError as err:
        raise _fail("einsum_general", str(err)) from None
    acc = _promote(*(_dtype_of("einsum_general", t) for _, t in ops))
    cast = acc
    if with_like and _inexact_np(_dtype_of("einsum_general", like)) == _np(
        _dtype_of("einsum_general", like)
    ):
        cast = _np(_dtype_of("einsum_general", like))
    code = _code(_EINSUM_HEADER, _SCOPE, ACC=acc.type, CAST=cast.type)
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


@overload(trailing_shape)
def _trailing_shape_jit(a, b):
    if not isinstance(a, types.Array):
        raise _fail("trailing_shape", f"expected an array, got {a}")
    start = b.ndim if isinstance(b, types.Array) else 0
    if start > a.ndim:
        raise _fail("trailing_shape", f"{b} has more axes than {a}")
    return lambda a, b: a.shape[start:]
