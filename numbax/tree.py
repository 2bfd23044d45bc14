"""Pytree flattening at numbax's jit boundary, where it runs on every call.

A jitted call must turn its arguments into a flat list of leaves (what the compiled code
takes) and a hashable structure (part of the cache key, and what rebuilds pytrees). Most
calls pass only arrays and scalars, so :func:`is_flat` answers that case with one type
lookup per argument and :func:`flatten_args` then skips the tree walk altogether.

Every walk uses optree's registry namespace :data:`NAMESPACE`, so that types registered
through :mod:`numbax.tree_util` change nothing for other optree users in the process.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import numpy as np
import optree

NAMESPACE = "numbax"

# Exact types that are always pytree leaves. A subclass (np.matrix, an IntEnum) misses the
# fast path and takes the full walk, which still treats it as a leaf: only the speed differs.
_FLAT_TYPES: frozenset[type] = frozenset(
    {
        np.ndarray,
        bool,
        int,
        float,
        complex,
        *(t for t in np.sctypeDict.values() if issubclass(t, (np.number, np.bool_))),
    }
)


def is_flat(args: tuple) -> bool:
    """Whether every argument is an ndarray, a Python scalar or a NumPy scalar.

    Such arguments are their own leaves, so the caller can skip flattening. A plain loop
    with an early exit is the cheapest form in CPython (cheaper than ``all(map(...))``).
    """
    for arg in args:
        if type(arg) not in _FLAT_TYPES:
            return False
    return True


@functools.cache
def _flat_treedef(num_args: int) -> optree.PyTreeSpec:
    """The structure of a tuple of ``num_args`` leaves, built once per arity."""
    return optree.tree_structure((0,) * num_args, none_is_leaf=False, namespace=NAMESPACE)


def flatten_args(args: tuple) -> tuple[list[Any], optree.PyTreeSpec]:
    """Flatten a call's positional arguments into ``(leaves, treedef)``.

    The treedef equals ``numbax.tree_util.tree_structure(args)`` in every case, so it
    can key a compilation cache whichever path produced it.
    """
    if is_flat(args):
        return list(args), _flat_treedef(len(args))
    return optree.tree_flatten(args, none_is_leaf=False, namespace=NAMESPACE)


def unflatten(treedef: optree.PyTreeSpec, leaves: Iterable[Any]) -> Any:
    """Rebuild the pytree that ``treedef`` describes from ``leaves`` (e.g. jit outputs)."""
    return treedef.unflatten(leaves)
