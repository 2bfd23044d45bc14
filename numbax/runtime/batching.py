"""The helpers of ``vmap``'s generated loops: the batch size, one example's slice of an
argument, and the batched output filled one example at a time.

Each is plain NumPy on pytrees here; its Numba version
(``numba_backend/runtime/batching.py``) takes arrays, numbers and tuples of them (what
compiled code passes). An axis is an int (negative counts from the end, per leaf) or
None (the argument is the same for every example); for a pytree argument it may be a
pytree prefix of axes, as ``in_axes`` allows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import optree

from numbax.runtime.registry import helper
from numbax.tree_util import NAMESPACE


def _leaves_with_axes(tree: Any, axes: Any) -> tuple[list[Any], list[int | None], Any]:
    """The leaves of ``tree``, the axis of each (``axes`` broadcast as a prefix), and
    the tree's structure."""
    full = optree.tree_broadcast_prefix(axes, tree, none_is_leaf=True, namespace=NAMESPACE)
    leaves, treedef = optree.tree_flatten(tree, none_is_leaf=False, namespace=NAMESPACE)
    # An axis for every node of ``tree`` that is a leaf or None (None is an empty
    # subtree, as in JAX: it has no leaf, so its axis is dropped).
    nodes = optree.tree_leaves(tree, none_is_leaf=True, namespace=NAMESPACE)
    node_axes = optree.tree_leaves(full, none_is_leaf=True, namespace=NAMESPACE)
    leaf_axes = [a for n, a in zip(nodes, node_axes, strict=True) if n is not None]
    return leaves, leaf_axes, treedef


def mapped_axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(
            f"vmap was requested to map {what} along axis {axis}, which implies that its "
            f"rank should be at least {max(axis, -axis - 1) + 1}, but is only {ndim} (its "
            f"shape is of rank {ndim})"
        )
    return axis % ndim


@helper
def batch_size(name: str, args: tuple, axes: tuple, params: tuple) -> int:
    """The common size of the mapped axes of ``args`` (each mapped by ``axes``), or
    JAX's ValueError listing every mapped argument's size."""
    sizes = []
    for arg, axis, param in zip(args, axes, params, strict=True):
        leaves, leaf_axes, _ = _leaves_with_axes(arg, axis)
        for leaf, leaf_axis in zip(leaves, leaf_axes, strict=True):
            if leaf_axis is not None:
                shape = np.shape(leaf)
                sizes.append(
                    (param, shape[mapped_axis(leaf_axis, len(shape), repr(param))], leaf_axis)
                )
    if len({size for _, size, _ in sizes}) > 1:
        lines = "\n".join(
            f"  * argument {param} has shape with axis {axis} of size {size}"
            for param, size, axis in sizes
        )
        raise ValueError(
            f"vmap of {name} got inconsistent sizes for the array axes to be mapped:\n{lines}"
        )
    return sizes[0][1]


EMPTY_BATCH = (
    "vmap's loop method cannot batch an empty axis: it runs the function on the first "
    "example to learn the shape and dtype of its output, and there is none"
)


@helper
def batch_take(x: Any, i: int, axis: Any) -> Any:
    """Example ``i`` of ``x`` along ``axis`` (``x`` itself where the axis is None). An
    empty batch is a ValueError (:data:`EMPTY_BATCH`), here and in the Numba version,
    which would otherwise read the first example out of bounds."""
    leaves, leaf_axes, treedef = _leaves_with_axes(x, axis)
    pairs = list(zip(leaves, leaf_axes, strict=True))
    if any(a is not None and np.shape(leaf)[a] == 0 for leaf, a in pairs):
        raise ValueError(EMPTY_BATCH)
    taken = [leaf if a is None else np.take(leaf, i, axis=a) for leaf, a in pairs]
    return optree.tree_unflatten(treedef, taken)


@helper
def batch_empty(first: Any, size: int, axis: Any) -> Any:
    """An uninitialized batch of ``size`` examples shaped like ``first``, the batch axis
    at ``axis`` (None: not batched, ``first`` itself)."""
    leaves, leaf_axes, treedef = _leaves_with_axes(first, axis)
    out = []
    for leaf, a in zip(leaves, leaf_axes, strict=True):
        if a is None:
            out.append(leaf)
            continue
        shape = list(np.shape(leaf))
        shape.insert(mapped_axis(a, len(shape) + 1, "its output"), size)
        out.append(np.empty(shape, np.result_type(leaf)))
    return optree.tree_unflatten(treedef, out)


def _same(a: Any, b: Any) -> bool:
    """Equal shapes and elements, NaN equal to NaN (an output that is NaN for every
    example does not depend on the mapped axis)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.all((a == b) | ((a != a) & (b != b))))
    return bool(np.array_equal(a, b))


@helper
def batch_put(out: Any, i: int, axis: Any, value: Any, name: str) -> None:
    """Store example ``i`` into the batch ``out`` (in place). Where the axis is None the
    output must be the same for every example, as JAX requires of ``out_axes=None``."""
    leaves, leaf_axes, _ = _leaves_with_axes(out, axis)
    values = optree.tree_leaves(value, none_is_leaf=False, namespace=NAMESPACE)
    for leaf, a, v in zip(leaves, leaf_axes, values, strict=True):
        if a is None:
            if not _same(leaf, v):
                raise ValueError(
                    f"vmap of {name} has an output that depends on the mapped axis, but "
                    "out_axes is None for it"
                )
            continue
        index = [slice(None)] * np.ndim(leaf)
        index[a % np.ndim(leaf)] = i
        leaf[tuple(index)] = v


@helper
def batch_repeat(x: Any, size: int) -> np.ndarray:
    """``size`` copies of the array ``x`` along a new first axis: a buffer that the
    vectorized code fills differently for each example (a new array, not a view)."""
    out = np.empty((size, *np.shape(x)), np.result_type(x))
    out[...] = x
    return out


@helper
def batch_sum(x: Any) -> Any:
    """The sum over the batch axis (0) of every leaf: the cotangent of an argument the
    batch shared, from each example's."""
    return optree.tree_map(lambda leaf: np.sum(leaf, axis=0), x, namespace=NAMESPACE)


@helper
def batch_broadcast(value: Any, like: Any) -> Any:
    """``value`` repeated over the batch axis of ``like`` (leaf by leaf): the adjoint of
    :func:`batch_sum`."""
    return optree.tree_map(
        lambda v, ref: np.broadcast_to(v, np.shape(ref)).copy(), value, like, namespace=NAMESPACE
    )
