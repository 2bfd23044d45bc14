"""NumPy functions that numbax reads as the compositions they are.

Some functions of ``numpy.linalg`` are short programs of operations that have rules:
``cond(a, p)`` is ``norm(a, p) * norm(inv(a), p)``, ``lstsq`` is the pseudo-inverse
applied to ``b``, ``multi_dot`` a chain of products. Rather than a rule each (whose
templates would have to spell out the chain rule through the whole program),
normalization calls the function below in their place (``normalize/values.py``, by
the identity of the NumPy function), and the transformations read it like any helper
of the user's: they generate its derivative, batch it and compile it. Each computes
what NumPy computes, in the same order of operations where it matters for rounding.

The functions are plain NumPy in numbax's core language, without annotations (generated
code is loaded without this module's imports); a refusal inside one names the function
here and its line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax.runtime import nxrt


def cond(x, p=None):
    """``np.linalg.cond(x, p)`` (``p`` None, the 2-norm one, has its own rule): the norm
    of ``x`` times the norm of its inverse, as NumPy computes it; for ``p`` = 2 or -2
    the ratio of the extreme singular values."""
    if p is None:
        return np.linalg.cond(x)
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1))


def multi_dot(arrays, out=None):
    """``np.linalg.multi_dot`` of a sequence built elsewhere (a literal list is written
    as the products themselves): the products from the left. NumPy may choose another
    order, equal up to rounding."""
    product = arrays[0]
    for k in range(1, len(arrays)):
        product = np.dot(product, arrays[k])
    return product


def lstsq(a, b, rcond=None):
    """``np.linalg.lstsq(a, b, rcond)``: ``(x, residuals, rank, s)``. The solution is
    the pseudo-inverse applied to ``b``, whose derivative is that of a matrix of full
    rank (as JAX's); the residuals are the squared norms of ``b - a x`` (real for a
    complex ``a``; empty unless ``a`` has full column rank and more rows than columns);
    ``s`` are ``a``'s singular values and ``rank`` how many exceed ``rcond`` times the
    largest (by default machine precision times the larger dimension), as NumPy's."""
    rows, columns = a.shape
    relative = rcond
    if rcond is None:
        relative = np.finfo(np.float64).eps * max(rows, columns)
    s = np.linalg.svd(a, compute_uv=False)
    rank = np.sum(s > relative * s[0])
    if rcond is None:  # pinv's own default cutoff is lstsq's
        x = np.dot(np.linalg.pinv(a), b)
    else:
        x = np.dot(np.linalg.pinv(a, relative), b)
    residuals = np.zeros(0)
    if rank == columns and rows > columns:
        r = b - np.dot(a, x)
        residuals = np.atleast_1d(np.sum(np.real(r * np.conj(r)), axis=0))  # |r|^2
    return x, residuals, rank, s


def vector_norm(x, axis=None, keepdims=False, ord=2):
    """``np.linalg.vector_norm``: the ``ord``-norm of the elements over ``axis`` (all of
    them for None, several for a tuple), written as NumPy 2 writes it."""
    if ord == np.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum(x != 0, axis=axis, keepdims=keepdims) * 1.0
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 2:
        return np.sqrt(np.sum(np.real(x * np.conj(x)), axis=axis, keepdims=keepdims))
    return np.sum(np.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def tensorinv(a, ind=2):
    """``np.linalg.tensorinv``: the inverse of ``a`` read as a matrix of its first
    ``ind`` axes by the rest, shaped back the other way round (``shape[ind:] +
    shape[:ind]``). That shape is ``a``'s rotated one step at a time, a tuple of one
    length throughout, which compiled code can hold where it cannot slice a shape at a
    position known only when running."""
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = a.shape
    columns = 1
    for k in range(ind, a.ndim):
        columns = columns * shape[k]
    inverse = np.linalg.inv(np.reshape(a, (columns, a.size // columns)))
    inverse_shape = shape
    for _step in range(min(ind, a.ndim)):
        inverse_shape = inverse_shape[1:] + inverse_shape[:1]
    return np.reshape(inverse, inverse_shape)


def tensorsolve(a, b, axes=None):
    """``np.linalg.tensorsolve``: ``x`` with ``tensordot(a, x, x.ndim) == b``, solved as
    the matrix problem of ``a`` read as a square matrix (the ``axes`` of ``a`` moved to
    the end first, as NumPy does)."""
    if axes is not None:
        a = axes_moved_to_end(a, axes)
    x = np.linalg.solve(np.reshape(a, (b.size, a.size // b.size)), np.ravel(b))
    return np.reshape(x, nxrt.trailing_shape(a, b))


def axes_moved_to_end(a, axes):
    """``a`` with its ``axes`` moved to the end one after the other, in their order, as
    ``np.linalg.tensorsolve`` moves them (each to the end, past those moved before it),
    as a contiguous array. A function of its own so that compiled code whose ``axes``
    is None leaves out its loop, and the tapes of that loop's derivative, whole."""
    for i in range(len(axes)):
        position = axes[i]
        if position < 0 or position >= a.ndim:
            raise ValueError("tensorsolve: an axis of axes is not one of a's")
        for j in range(i):
            if axes[j] == axes[i]:
                raise ValueError("tensorsolve: an axis is named twice in axes")
            if axes[j] < axes[i]:
                position = position - 1
        a = np.moveaxis(a, position, -1)
    return np.ascontiguousarray(a)  # as NumPy's reshape copies it; Numba reshapes no view


def maximum_of(items):
    """Python's ``max(items)`` of one sequence (a list, tuple or array, read by index;
    a dict or set by its keys, as Python reads it): the larger of each pair in turn, so
    that the derivative at ties is shared as ``max(a, b)`` (``np.maximum``) shares it."""
    items = nxrt.as_sequence(items)
    best = items[0]
    for k in range(1, len(items)):
        best = max(best, items[k])
    return best


def minimum_of(items):
    """Python's ``min(items)`` of one sequence, as :func:`maximum_of`."""
    items = nxrt.as_sequence(items)
    best = items[0]
    for k in range(1, len(items)):
        best = min(best, items[k])
    return best


COMPOSED = {
    np.linalg.cond: cond,
    np.linalg.multi_dot: multi_dot,
    np.linalg.lstsq: lstsq,
    np.linalg.vector_norm: vector_norm,
    np.linalg.tensorinv: tensorinv,
    np.linalg.tensorsolve: tensorsolve,
}
"""The NumPy function (by identity) → the composition numbax reads in its place."""

PLAIN_ARGUMENTS = {np.linalg.cond: 1}
"""Functions whose rule covers calls of up to this many arguments (``cond(a)``): only
calls that pass more go through the composition."""


def numpy_composition(target: Any, arguments: int) -> Any:
    """The composition to call in place of ``target`` called with ``arguments``
    arguments, or None."""
    composed = next((c for f, c in COMPOSED.items() if f is target), None)
    if composed is None or arguments <= PLAIN_ARGUMENTS.get(target, 0):
        return None
    return composed
