"""What the jit pipeline needs of the runtime: the Numba versions of its helpers
registered, and the table of NumPy functions compiled code calls through ``nxrt``.

Importing this module registers everything compiled code may call as ``nxrt.<name>``
(the runtime's helpers' Numba versions, ``runtime/``; numbax's versions of NumPy
functions, ``math/elementary.py`` and ``np/``, one module per family; the lowering's own
helpers, ``weak``, ``keep_dtype``, ``elementwise``). The lowering pass (``lower.py``)
imports it and asks it which calls and array methods to redirect, matched by identity.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from numbax.numba_backend import (  # noqa: F401  (importing registers them in nxrt)
    boundary,
    runtime,
)
from numbax.numba_backend.caching.startup import DEFERRED
from numbax.numba_backend.loops import elementwise  # noqa: F401  (importing registers them in nxrt)
from numbax.numba_backend.math import elementary  # noqa: F401  (importing registers them in nxrt)
from numbax.numba_backend.np import elementwise as np_elementwise  # noqa: F401  (as above)
from numbax.numba_backend.np import (  # noqa: F401  (importing registers them in nxrt)
    grids,
    linalg,
    norms,
    products,
    reductions,
    selection,
    shapes,
    weak,
)
from numbax.numba_backend.redirects import replacement_for
from numbax.runtime import nxrt

# numbax.random's functions are not redirected: Numba compiles the calls themselves, as
# numbax.random overloads them (numba_backend.random.jit.register_random).

ARRAY_METHODS = frozenset(
    ["sum", "mean", "prod", "max", "min", "var", "std", "argmax", "argmin", "all", "any"]
    + ["cumsum", "cumprod", "take", "choose"]
)
"""Array methods rewritten to the runtime's reductions (``x.sum(axis=0)``)."""

# Non-ufunc elementwise functions whose listed positional arguments promote together.
# ``nxrt.mul_pow(c, x, p)``: c and x (an integer power keeps x's dtype, as in NumPy).
_ELEMENTWISE_VALUE_ARGS: dict[int, tuple[int, ...]] = {
    id(np.where): (1, 2),
    id(np.clip): (0, 1, 2),
    id(nxrt.mul_pow): (0, 1),
}


def elementwise_value_args(func: Any) -> tuple[int, ...]:
    """Positions of ``func``'s arguments that promote together elementwise (NEP 50: a
    Python scalar among them adapts to the others)."""
    if isinstance(func, np.ufunc) and func.nin > 1:
        return tuple(range(func.nin))
    return _ELEMENTWISE_VALUE_ARGS.get(id(func), ())


# Numba versions of other libraries' functions, registered once the program has imported
# the library (importing scipy.special costs half a second, which a program that never
# calls it should not pay): library → the module of its Numba versions.
_LIBRARIES = {"scipy.special": "numbax.numba_backend.runtime.special", **DEFERRED}


def load_libraries() -> None:
    """Register the Numba versions of the functions of the libraries the program has
    imported (called before each function is lowered: a dictionary look-up each)."""
    for library, versions in list(_LIBRARIES.items()):
        if library in sys.modules:
            importlib.import_module(versions)
            del _LIBRARIES[library]


__all__ = [
    "ARRAY_METHODS",
    "elementwise_value_args",
    "load_libraries",
    "nxrt",
    "replacement_for",
]
