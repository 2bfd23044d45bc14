"""Runtime helpers of numbax's Jacobians, for arguments and outputs that are pytrees.

``jacfwd``/``jacrev`` generate a loop over basis vectors (``transform/ad/jacobians.py``)
that fills a flat ``(size(out), size(x))`` buffer and then cuts it into the result: as
in JAX, the output's structure holding, at each output leaf, the input's structure,
with leaves shaped ``out_leaf.shape + x_leaf.shape``. These helpers see a value as the
concatenation of its leaves in flattening order (C order inside each leaf); a value
that is an array or a scalar is a pytree of one leaf, so they also serve plain arrays.
Two of them are ``nx.flatten_util.ravel_pytree`` inside a transformed function
(``transform/normalize/ravel.py``): :func:`ravel_pytree` gives its flat vector and
:func:`unravel_pytree` its ``unravel``.

Here they work with NumPy and ``tree_util`` (generated code run interpreted keeps the
user's dicts, lists and registered classes); their Numba versions
(``numba_backend/runtime/jacobians.py``) walk the (named) tuples that stand for
pytrees under ``jit``. Leaves are visited in the same order both ways: a dict's
NamedTuple has its keys' fields sorted, as ``tree_util`` sorts the keys.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax import tree_util
from numbax.runtime.registry import helper


def jacobian_dtype(dtypes: list[np.dtype]) -> np.dtype:
    """The promotion of ``dtypes``, at least floating (ints and bools give float64)."""
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    return np.dtype(np.float64) if dtype.kind in "biu" else dtype


def _dtypes(leaves: list[Any]) -> list[np.dtype]:
    """Each leaf's own dtype (a Python float is a float64, as Numba sees it)."""
    return [np.result_type(leaf) for leaf in leaves]


@helper
def jac_size(x: Any) -> int:
    """The number of elements of all of ``x``'s leaves (a scalar counts one)."""
    return sum(int(np.size(leaf)) for leaf in tree_util.tree_leaves(x))


@helper
def jac_basis(x: Any, k: int) -> Any:
    """The ``k``-th standard basis vector in ``x``'s space: zeros of x's structure,
    leaf types and shapes, with element ``k`` of the leaves' concatenation set to one.
    Seeds one Jacobian column (forward mode) or row (reverse mode)."""
    leaves, treedef = tree_util.tree_flatten(x)
    parts, offset = [], 0
    for leaf in leaves:
        n = int(np.size(leaf))
        if isinstance(leaf, np.ndarray):
            part = np.zeros(leaf.shape, leaf.dtype)
            if offset <= k < offset + n:
                part.flat[k - offset] = 1
        else:
            part = type(leaf)(1 if k == offset else 0)
        parts.append(part)
        offset += n
    return tree_util.tree_unflatten(treedef, parts)


@helper
def jac_basis_all(x: Any) -> Any:
    """Every standard basis vector of ``x``'s space at once, as a batch: ``x``'s
    structure with each leaf shaped ``(jac_size(x),) + shape(leaf)`` (a scalar leaf: a
    vector), its row ``k`` being :func:`jac_basis` ``(x, k)``. The tangents of all the
    Jacobian's columns, for one ``vmap`` of the JVP (``jacfwd``)."""
    leaves, treedef = tree_util.tree_flatten(x)
    n = sum(int(np.size(leaf)) for leaf in leaves)
    parts, offset = [], 0
    for leaf in leaves:
        size, dtype = int(np.size(leaf)), np.result_type(leaf)
        part = np.zeros((n, size), dtype)
        part[np.arange(offset, offset + size), np.arange(size)] = 1
        parts.append(part.reshape((n, *np.shape(leaf))))
        offset += size
    return tree_util.tree_unflatten(treedef, parts)


@helper
def ravel_batch(x: Any) -> np.ndarray:
    """A batch of pytrees (every leaf with the batch axis first) as a ``(batch, size)``
    matrix: row ``b`` is :func:`ravel_pytree` of example ``b``."""
    leaves = tree_util.tree_leaves(x)
    rows = [np.reshape(leaf, (np.shape(leaf)[0], _example_size(leaf))) for leaf in leaves]
    if len(rows) == 1:
        return rows[0]
    return np.concatenate(rows, axis=1)


def _example_size(leaf: Any) -> int:
    """The number of elements of one example of a batched leaf (also of an empty batch,
    where ``reshape``'s ``-1`` cannot tell)."""
    return int(np.prod(np.shape(leaf)[1:], dtype=np.int64))


@helper
def unravel_batch(flat: np.ndarray, like: Any) -> Any:
    """The inverse of :func:`ravel_batch`: the ``(batch, size)`` matrix ``flat`` cut into
    ``like``'s structure and leaf shapes (each with the batch axis first)."""
    leaves, treedef = tree_util.tree_flatten(like)
    parts, offset = [], 0
    for leaf in leaves:
        n = _example_size(leaf)
        parts.append(flat[:, offset : offset + n].reshape(np.shape(leaf)))
        offset += n
    return tree_util.tree_unflatten(treedef, parts)


UNRAVEL_LENGTH = "unravel expects a vector as long as the one ravel_pytree returned"


@helper
def ravel_pytree(x: Any) -> np.ndarray:
    """The concatenation of ``x``'s leaves, each raveled in C order: a 1-D array in
    their common dtype (``ravel_pytree``'s flat vector)."""
    leaves = tree_util.tree_leaves(x)
    if len(leaves) == 1:
        return np.ravel(leaves[0])
    if not leaves:
        return np.zeros(0)
    return np.concatenate([np.ravel(leaf) for leaf in leaves])


@helper
def unravel_pytree(flat: np.ndarray, like: Any) -> Any:
    """The inverse of :func:`ravel_pytree`: 1-D ``flat`` cut into ``like``'s structure and
    leaf shapes (a scalar leaf gets a scalar), in ``flat``'s dtype. A vector of another
    length is a ValueError (``unravel(v)`` of a wrong ``v``), never a tree cut short."""
    leaves, treedef = tree_util.tree_flatten(like)
    if np.shape(flat) != (sum(int(np.size(leaf)) for leaf in leaves),):
        raise ValueError(UNRAVEL_LENGTH)
    parts, offset = [], 0
    for leaf in leaves:
        n = int(np.size(leaf))
        if isinstance(leaf, np.ndarray):
            parts.append(flat[offset : offset + n].reshape(leaf.shape))
        else:
            parts.append(flat[offset])
        offset += n
    return tree_util.tree_unflatten(treedef, parts)


COMPLEX_INPUT = (
    "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
    "but got {}. For holomorphic differentiation, pass holomorphic=True. For "
    "differentiating non-holomorphic functions involving complex inputs, use nx.jvp directly."
)
COMPLEX_OUTPUT = (
    "jacrev requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
    "but got {}. For holomorphic differentiation, pass holomorphic=True. For "
    "differentiating non-holomorphic functions involving complex outputs, use nx.vjp directly."
)
NOT_COMPLEX = "{} with holomorphic=True requires {}s with complex dtype, but got {}."


def jacobian_dtype_error(
    transformation: str, holomorphic: bool, outs: list[np.dtype], xs: list[np.dtype]
) -> str | None:
    """JAX's TypeError message for a Jacobian of these output and input dtypes, if any:
    with ``holomorphic``, both must be complex; without, ``jacfwd``'s inputs and
    ``jacrev``'s outputs must be real (a basis of real vectors does not span them, so
    the result would silently be the real part's Jacobian)."""
    for kind, dtypes in (("input", xs), ("output", outs)):
        for dtype in dtypes:
            if holomorphic and dtype.kind != "c":
                return NOT_COMPLEX.format(transformation, kind, dtype.name)
    if holomorphic:
        return None
    checked, message = (xs, COMPLEX_INPUT) if transformation == "jacfwd" else (outs, COMPLEX_OUTPUT)
    for dtype in checked:
        if dtype.kind == "c":
            return message.format(dtype.name)
    return None


@helper
def jac_buffer(
    out: Any, x: Any, transformation: str | None = None, holomorphic: bool = False
) -> np.ndarray:
    """An uninitialised ``(jac_size(out), jac_size(x))`` Jacobian buffer. The dtype
    promotes every leaf's, at least to floating: float32 only when no leaf is float64,
    as in JAX. Python scalars count as float64 / int64, as Numba sees them. Complex
    values where ``transformation`` (``"jacfwd"``, ``"jacrev"``) and ``holomorphic``
    do not allow them raise JAX's TypeError (:func:`jacobian_dtype_error`; None: no
    check)."""
    outs, xs = _dtypes(tree_util.tree_leaves(out)), _dtypes(tree_util.tree_leaves(x))
    message = transformation and jacobian_dtype_error(transformation, holomorphic, outs, xs)
    if message:
        raise TypeError(message)
    return np.empty((jac_size(out), jac_size(x)), jacobian_dtype(outs + xs))


@helper
def jac_diagonal(d_out: Any, out: Any, x: Any, transformation: str = "jacfwd") -> np.ndarray:
    """The ``(jac_size(out), jac_size(x))`` Jacobian buffer of a Jacobian known to be
    diagonal (a separable function's Hessian, ``transform/ad/separable.py``): zeros, with
    ``ravel_pytree(d_out)`` on the diagonal. ``d_out`` is the JVP along ``ones_like(x)``,
    the sum of the basis ``jacfwd`` would map (or, for ``jacrev``, the VJP of
    ``ones_like(out)``), which a diagonal Jacobian takes to its diagonal. Dtypes and
    their checks are :func:`jac_buffer`'s for ``transformation``."""
    jac = jac_buffer(out, x, transformation)
    diagonal = ravel_pytree(d_out)
    if not jac.shape[0] == jac.shape[1] == diagonal.size:
        raise ValueError(DIAGONAL_SIZES)
    jac[...] = 0
    jac[np.diag_indices(diagonal.size)] = diagonal
    return jac


DIAGONAL_SIZES = (
    "jac_diagonal: a diagonal Jacobian has as many outputs as inputs, and its tangent "
    "as many elements"
)


@helper
def jac_unflatten(jac: np.ndarray, out: Any, x: Any) -> Any:
    """The flat Jacobian ``jac`` as JAX gives it: ``out``'s structure holding, at each
    of its leaves, ``x``'s structure, each leaf ``jac``'s block of that output leaf's
    rows and that input leaf's columns shaped ``shape(out_leaf) + shape(x_leaf)``;
    a scalar where both leaves are scalars (not 0-d arrays). A 3-d ``jac`` is a batch of
    buffers (``vmap`` of a Jacobian): every leaf keeps its leading batch axis."""
    out_leaves, out_tree = tree_util.tree_flatten(out)
    x_leaves, x_tree = tree_util.tree_flatten(x)
    batch = np.shape(jac)[:-2]
    rows, r = [], 0
    for o in out_leaves:
        m, row, c = int(np.size(o)), [], 0
        for leaf in x_leaves:
            n = int(np.size(leaf))
            if not isinstance(o, np.ndarray) and not isinstance(leaf, np.ndarray):
                row.append(jac[..., r, c] if batch else jac[r, c])
            else:
                block = jac[..., r : r + m, c : c + n]
                row.append(block.reshape(batch + np.shape(o) + np.shape(leaf)))
            c += n
        rows.append(tree_util.tree_unflatten(x_tree, row))
        r += m
    return tree_util.tree_unflatten(out_tree, rows)


@helper
def jac_flatten(tree: Any, out: Any, x: Any) -> np.ndarray:
    """The inverse of :func:`jac_unflatten`: the ``(jac_size(out), jac_size(x))`` matrix
    of a Jacobian-shaped pytree (``out``'s structure of ``x``'s structure)."""
    blocks = tree_util.tree_structure(out).flatten_up_to(tree)
    out_leaves, x_leaves = tree_util.tree_leaves(out), tree_util.tree_leaves(x)
    dtype = jacobian_dtype(_dtypes(tree_util.tree_leaves(tree)))
    matrix = np.zeros((jac_size(out), jac_size(x)), dtype)
    r = 0
    for o, block in zip(out_leaves, blocks, strict=True):
        m, c = int(np.size(o)), 0
        for leaf, part in zip(x_leaves, tree_util.tree_leaves(block), strict=True):
            n = int(np.size(leaf))
            matrix[r : r + m, c : c + n] = np.reshape(part, (m, n))
            c += n
        r += m
    return matrix
