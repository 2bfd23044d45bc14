"""Adjoints of products and matrix functions: the cotangents of each operand of
``matmul``, ``dot`` and ``tensordot``, an einsum general enough that an einsum's VJP is
one again (``einsum_general``), the adjoint of ``np.trace``, the transpose of each
matrix of a stack, and the triangular masks of the Cholesky factorization's derivative
(``tril_half_diag``, ``tril_symmetric``, ``tril_fold``); and ``trailing_shape``, the
shape of ``np.linalg.tensorsolve``'s solution.

Each is linear in its cotangent argument and has its own rules in
``transform/rules/runtime.py``, so derivative code that calls it can be differentiated
again. The plans (which axes contract, how results transpose back) are computed from
ranks only, so the Numba versions compute the same ones while compiling.
"""

from __future__ import annotations

import functools
import string
from typing import Any

import numpy as np

from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.reductions import inexact_dtype
from numbax.runtime.registry import helper


@helper
def trace_vjp(ct: Any, a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The adjoint of ``np.trace(a, offset, axis1, axis2)``: ``ct`` on that diagonal of
    an array of ``a``'s shape, zeros elsewhere."""
    ct = np.asarray(ct)
    out = np.zeros(np.shape(a), inexact_dtype(ct.dtype))
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    n1, n2 = view.shape[-2:]
    rows = np.arange(max(0, -offset), max(max(0, -offset), min(n1, n2 - offset)))
    view[..., rows, rows + offset] = ct[..., None]
    return out


def _swap_last(a: Any) -> Any:
    return np.swapaxes(a, -1, -2)


@helper
def matrix_transpose(x: Any) -> Any:
    """``x`` with its last two axes swapped (each matrix of a stack transposed)."""
    return np.swapaxes(x, -1, -2)


@helper
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


@helper
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


def tensordot_plan(a_nd: int, b_nd: int, axes: Any) -> tuple:
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


@helper
def tensordot_vjp_a(ct: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """The cotangent of ``a`` in ``np.tensordot(a, b, axes)`` given the output's ``ct``."""
    (contract, perm), _ = tensordot_plan(np.ndim(a), np.ndim(b), axes)
    return np.transpose(np.tensordot(ct, b, contract), perm)


@helper
def tensordot_vjp_b(ct: Any, a: Any, b: Any, axes: Any = 2) -> Any:
    """The cotangent of ``b`` in ``np.tensordot(a, b, axes)`` given the output's ``ct``."""
    _, (contract, perm) = tensordot_plan(np.ndim(a), np.ndim(b), axes)
    return np.transpose(np.tensordot(a, ct, contract), perm)


def dot_axes(a_nd: int, b_nd: int) -> tuple[tuple[int], tuple[int]]:
    """``np.dot`` as a tensordot: a's last axis with b's second-to-last (or only) one."""
    return (a_nd - 1,), (b_nd - 2 if b_nd >= 2 else 0,)


@helper
def dot_vjp_a(ct: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``a`` in ``np.dot(a, b)`` given the output's cotangent ``ct``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(ct * b, a)  # no conjugate: the transpose, as JAX's
    return tensordot_vjp_a(ct, a, b, dot_axes(np.ndim(a), np.ndim(b)))


@helper
def dot_vjp_b(ct: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``b`` in ``np.dot(a, b)`` given the output's cotangent ``ct``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(a * ct, b)
    return tensordot_vjp_b(ct, a, b, dot_axes(np.ndim(a), np.ndim(b)))


@helper
def tril_half_diag(x: Any) -> Any:
    """The lower triangle of (each matrix of) ``x``, its diagonal halved."""
    out = np.tril(x)
    n = min(out.shape[-2:])
    i = np.arange(n)
    out[..., i, i] *= 0.5
    return out


@helper
def tril_symmetric(x: Any) -> Any:
    """The Hermitian (for real x, symmetric) matrix whose lower triangle is x's, which
    is what ``np.linalg.cholesky(x)`` and ``np.linalg.eigh(x)`` read of ``x``: LAPACK
    takes the diagonal as real."""
    lower = np.tril(x, -1)
    return lower + np.conj(matrix_transpose(lower)) + diagonal_matrix(np.real(matrix_diagonal(x)))


@helper
def tril_fold(x: Any) -> Any:
    """The adjoint of ``tril_symmetric``: the strict upper triangle of ``x`` added onto
    the lower one (transposed, conjugated), the real part of the diagonal, upper
    triangle zero."""
    upper = np.tril(np.conj(matrix_transpose(x)), -1)
    return np.tril(x, -1) + upper + diagonal_matrix(np.real(matrix_diagonal(x)))


# ---------------------------------------------------------------------------------------
# einsum, closed under VJPs.
# ---------------------------------------------------------------------------------------

_LETTERS = string.ascii_letters


def einsum_terms(subscripts: str, ndims: tuple[int, ...], out_ndim: int | None) -> tuple:
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
def einsum_plan(spec: Any, ndims: tuple[int, ...], out_ndim: int | None) -> tuple:
    """(input terms, output term) of an einsum ``spec``: subscripts, or ``(spec, j)``, the
    VJP of operand ``j`` of einsum ``spec``: its output's term trades places with the
    term of operand ``j``, whose place the cotangent takes."""
    if isinstance(spec, str):
        return einsum_terms(spec, ndims, out_ndim)
    inner, j = spec
    inner_ndims = list(ndims)
    inner_ndims[j] = out_ndim if out_ndim is not None else ndims[j]
    terms, output = einsum_plan(inner, tuple(inner_ndims), ndims[j])
    terms = list(terms)
    terms[j], output = output, terms[j]
    return terms, output


@helper
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
    terms, output = einsum_plan(subscripts, tuple(np.ndim(x) for x in ops), out_ndim)
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
# Pieces of the derivatives of decompositions (svd, eigh) and matrix functions.
# ---------------------------------------------------------------------------------------


@helper
def matrix_diagonal(x: Any) -> Any:
    """The diagonal of each matrix of a stack ``x`` (..., n, n): (..., n). Linear; its
    adjoint is :func:`diagonal_matrix`."""
    x = np.asarray(x)
    return np.ascontiguousarray(np.diagonal(x, axis1=-2, axis2=-1))


@helper
def diagonal_matrix(v: Any) -> Any:
    """The matrices (..., n, n) with the vectors ``v`` (..., n) on their diagonals."""
    v = np.asarray(v)
    n = v.shape[-1]
    return v[..., None, :] * np.eye(n, dtype=inexact_dtype(v.dtype))


@helper
def inverse_differences(w: Any) -> Any:
    """``F[..., i, j] = 1 / (w[..., j] - w[..., i])`` off the diagonal, 0 on it: the
    factor of the derivatives of eigenvectors and singular vectors. Equal values give
    infinities: those vectors have no derivative (as in JAX)."""
    w = np.asarray(w)
    eye = np.eye(w.shape[-1], dtype=inexact_dtype(w.dtype))
    return 1 / (w[..., None, :] - w[..., :, None] + eye) - eye


@helper
def svd_vectors_defined(u: Any, a: Any, full_matrices: bool) -> Any:
    """``u``, the left singular vectors of ``a``, once it is checked that they have a
    derivative: with ``full_matrices`` and ``a`` not square, the vectors beyond the
    first ``min(m, n)`` are any orthonormal basis LAPACK picks, which has none."""
    shape = np.shape(a)
    if full_matrices and shape[-1] != shape[-2]:
        raise ValueError(
            "numbax: np.linalg.svd(a, full_matrices=True) of a non-square matrix has no "
            "derivative (its extra singular vectors are arbitrary): pass full_matrices=False"
        )
    return u


@helper
def block_upper(a: Any, t: Any) -> Any:
    """The block matrices ``[[a, t], [0, a]]`` of each pair of matrices of ``a`` and
    ``t`` (of one shape, (..., n, n)): a matrix function of it has the function of
    ``a`` on its diagonal and its derivative along ``t`` in the upper right block."""
    a = np.asarray(a)
    t = np.asarray(t)
    n = a.shape[-1]
    out = np.zeros(a.shape[:-2] + (2 * n, 2 * n), np.result_type(a, t, 1.0))
    out[..., :n, :n] = a
    out[..., n:, n:] = a
    out[..., :n, n:] = t
    return out


@helper
def upper_right(x: Any) -> Any:
    """The upper right block (..., n, n) of block matrices ``x`` (..., 2n, 2n)."""
    x = np.asarray(x)
    n = x.shape[-1] // 2
    return np.ascontiguousarray(x[..., :n, n:])


@helper
def diagonal_blocks(x: Any) -> Any:
    """The sum of the two diagonal blocks of block matrices ``x`` (..., 2n, 2n): the
    adjoint of :func:`block_upper` for its first argument."""
    x = np.asarray(x)
    n = x.shape[-1] // 2
    return x[..., :n, :n] + x[..., n:, n:]


@helper
def trailing_shape(a: Any, b: Any) -> tuple[int, ...]:
    """``a``'s shape without its first ``np.ndim(b)`` axes: the shape of the solution
    ``x`` of ``np.linalg.tensorsolve(a, b)``. A helper because compiled code cannot
    slice a shape at a position it knows only when running; its Numba version reads
    ``b``'s rank from its type."""
    return np.shape(a)[np.ndim(b) :]
