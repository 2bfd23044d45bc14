"""``ravel_pytree`` (``jax.flatten_util``): a pytree of arrays as one flat vector, and
the function that rebuilds the tree from such a vector.

The usual use is at the boundary with a library that wants a vector, such as
``scipy.optimize.minimize``: ``flat, unravel = ravel_pytree(params)``, then
``loss(unravel(v))`` and ``ravel_pytree(grad(loss)(unravel(v)))[0]``.

``unravel`` is itself differentiable, batchable and compilable when the tree is made of
dicts, lists, tuples and ``None`` (the common case): it is then a small generated Python
function that slices the vector and builds the tree as literals
(``{"b": flat[0:3], "w": flat[3:9].reshape((2, 3))}``), which numbax reads like user
code, so ``grad(lambda v: loss(unravel(v)))`` works. For other node types (NamedTuples,
registered classes) it rebuilds the tree with ``tree_unflatten``, which runs eagerly
but cannot be transformed: transform ``loss`` itself and ravel its result.

Called inside a transformed function, ``ravel_pytree`` is not run: normalization reads
``flat, unravel = ravel_pytree(tree)`` and the calls ``unravel(v)`` as runtime helpers
with derivative rules (``numbax/transform/normalize/ravel.py``), for any pytree.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax import tree_util
from numbax.transform.normalize.ravel import register_ravel

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[np.ndarray, Callable[[np.ndarray], Any]]:
    """``(flat, unravel)``: the leaves of ``pytree`` raveled and concatenated in
    ``tree_flatten`` order (in their common dtype, as ``np.result_type`` gives), and a
    function that maps such a vector back to a pytree of the same structure, shapes and
    dtypes (JAX's ``jax.flatten_util.ravel_pytree``)."""
    leaves, treedef = tree_util.tree_flatten(pytree)
    arrays = [np.asarray(leaf) for leaf in leaves]
    dtype = np.result_type(*arrays) if arrays else np.dtype(np.float64)
    flat = (
        np.concatenate([np.ravel(a).astype(dtype, copy=False) for a in arrays])
        if arrays
        else np.zeros(0, dtype)
    )
    shapes = [a.shape for a in arrays]
    dtypes = [a.dtype for a in arrays]
    literal = _literal(pytree, iter(range(len(arrays))), shapes, dtypes, dtype)
    if literal is None:
        return flat, _unflattener(treedef, shapes, dtypes, flat.size)
    return flat, _generated_unravel(literal, flat.size)


register_ravel(ravel_pytree)


def _unflattener(
    treedef: Any, shapes: list[tuple[int, ...]], dtypes: list[np.dtype], size: int
) -> Callable[[np.ndarray], Any]:
    """``unravel`` for any tree: slices reshaped, cast back, and ``tree_unflatten``."""
    stops = list(itertools.accumulate(int(np.prod(s)) for s in shapes))
    starts = [0, *stops[:-1]]

    def unravel(flat: np.ndarray) -> Any:
        flat = np.asarray(flat)
        _check_length(flat, size)
        leaves = [
            flat[a:b].reshape(s).astype(d, copy=False)
            for a, b, s, d in zip(starts, stops, shapes, dtypes, strict=True)
        ]
        return tree_util.tree_unflatten(treedef, leaves)

    return unravel


def _check_length(flat: np.ndarray, size: int) -> None:
    if flat.shape != (size,):
        raise ValueError(
            f"unravel expects a vector of shape ({size},), like the one ravel_pytree "
            f"returned; got shape {flat.shape}"
        )


class _Offsets:
    """Where each leaf lies in the flat vector, in flattening order."""

    def __init__(self) -> None:
        self.next = 0


def _literal(
    node: Any,
    numbers: Any,
    shapes: list,
    dtypes: list,
    common: np.dtype,
    at: _Offsets | None = None,
) -> str | None:
    """Python source that builds ``node``'s structure from ``flat`` (None: a node type a
    literal cannot build). Dict keys go in sorted order, as ``tree_flatten`` takes them."""
    at = at or _Offsets()
    if node is None:
        return "None"
    kind = type(node)
    if kind is dict:
        keys = sorted(node)
        if not all(type(k) in (str, int) for k in keys):
            return None
        parts = [_literal(node[k], numbers, shapes, dtypes, common, at) for k in keys]
        if any(p is None for p in parts):
            return None
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(keys, parts, strict=True)) + "}"
    if kind in (list, tuple):
        parts = [_literal(child, numbers, shapes, dtypes, common, at) for child in node]
        if any(p is None for p in parts):
            return None
        if kind is tuple:
            return "(" + "".join(f"{p}, " for p in parts) + ")"
        return "[" + ", ".join(parts) + "]"
    if tree_util.treedef_is_leaf(tree_util.tree_structure(node)):
        index = next(numbers)
        shape, dtype = shapes[index], dtypes[index]
        size = int(np.prod(shape))
        start, at.next = at.next, at.next + size
        text = f"flat[{start}:{at.next}]"
        if shape != (size,):
            text += f".reshape({shape!r})"
        if dtype != common:
            text += f".astype(np.{dtype.name})"
        return text
    return None


_made = itertools.count()


def _generated_unravel(literal: str, size: int) -> Callable[[np.ndarray], Any]:
    """``unravel`` as a Python function whose source numbax can read (kept in
    ``linecache`` under its own file name, as a notebook cell's is)."""
    filename = f"<numbax.flatten_util unravel {next(_made)}>"
    text = f"def unravel(flat):\n    return {literal}\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict[str, Any] = {"np": np, "__name__": __name__}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 (text made here)
    unravel = namespace["unravel"]
    unravel.__doc__ = f"The pytree that ravel_pytree flattened, from a vector of {size} values."
    return unravel
