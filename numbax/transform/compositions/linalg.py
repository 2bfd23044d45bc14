"""The functions of ``numpy`` and ``numpy.linalg`` that numbax reads as the programs of
ruled operations they are (the package's docstring says how): ``kron``, ``cond`` with
``p``, ``lstsq``, ``multi_dot`` of a sequence built elsewhere, ``vector_norm``,
``tensorinv``, ``tensorsolve``.
"""

import numpy as np

from numbax.runtime import nxrt
from numbax.transform.compositions import composes


@composes(np.kron)
def kron(a, b):
    """``np.kron(a, b)``: every product of an element of ``a`` and one of ``b``, at its
    place in the blocks, as NumPy computes them (the same products, so the same values):
    the outer product with the axes of ``a`` and ``b`` interleaved, then reshaped. Its
    derivatives and batching are those of the product, the transpose and the reshape.
    ``ones``, the shape of a product of two sums that keep their dimensions, is as many
    ones as the result has axes."""
    a = np.asarray(a)
    b = np.asarray(b)
    ones = (np.sum(a == 0, keepdims=True) * np.sum(b == 0, keepdims=True)).shape
    axes, shape = kron_layout(a.shape, b.shape, ones)
    outer = np.multiply.outer(a, b)
    return np.reshape(np.ascontiguousarray(np.transpose(outer, axes)), shape)


def kron_layout(a_shape, b_shape, ones):
    """The order of the axes of the outer product of arrays of shapes ``a_shape`` and
    ``b_shape`` that interleaves them (the operand of lower rank taking the trailing
    places, as if padded with leading axes of one), and the shape of their Kronecker
    product, with as many axes as ``ones``. Both are built a place at a time, as tuples
    of one length throughout, which compiled code can hold. A function of its own, of
    shapes only, so that derivatives compute it once and keep no tape of its loop."""
    na = len(a_shape)
    nb = len(b_shape)
    nd = len(ones)
    axes = a_shape + b_shape
    shape = ones
    for place in range(nd):
        size = 1
        if place >= nd - na:
            axes = axes[1:] + (place - (nd - na),)
            size = a_shape[place - (nd - na)]
        if place >= nd - nb:
            axes = axes[1:] + (na + place - (nd - nb),)
            size = size * b_shape[place - (nd - nb)]
        shape = shape[1:] + (size,)
    return axes, shape


@composes(np.linalg.cond, beyond=1)
def cond(x, p=None):
    """``np.linalg.cond(x, p)`` (``p`` None, the 2-norm one, has its own rule): the norm
    of ``x`` times the norm of its inverse, as NumPy computes it; for ``p`` = 2 or -2
    the ratio of the extreme singular values."""
    if p is None:
        return np.linalg.cond(x)
    return np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1))


@composes(np.linalg.multi_dot)
def multi_dot(arrays, out=None):
    """``np.linalg.multi_dot`` of a sequence built elsewhere (a literal list is written
    as the products themselves): the products from the left. NumPy may choose another
    order, equal up to rounding."""
    product = arrays[0]
    for k in range(1, len(arrays)):
        product = np.dot(product, arrays[k])
    return product


@composes(np.linalg.lstsq)
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


@composes(np.linalg.vector_norm)
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


@composes(np.linalg.tensorinv)
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


@composes(np.linalg.tensorsolve)
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
