"""Pytrees at numbax's jit boundary, where the check runs on every call.

Most calls pass only arrays and scalars, which compiled code takes as they are:
:func:`is_flat` answers that case with one type lookup per argument, so only calls with
real pytrees pay for converting them (``numba_backend/boundary.py``).

Every walk uses optree's registry namespace :data:`NAMESPACE`, so that types registered
through :mod:`numbax.tree_util` change nothing for other optree users in the process.
"""

from __future__ import annotations

import numpy as np

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
