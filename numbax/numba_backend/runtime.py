"""The helpers generated code calls as ``nxrt.<name>``, usable in Python and in Numba.

Each helper is a plain Python function that does exactly what NumPy does when the
generated code runs interpreted, and has a Numba implementation (an ``overload``) for
compiled code. This module is also the table that tells the lowering pass which NumPy
functions and array methods are redirected here, matched by identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax import random as _numbax_random
from numbax.numba_backend import elementary, random_kernels, reductions
from numbax.numba_backend.boundary import keep_dtype
from numbax.numba_backend.elementwise import elementwise
from numbax.numba_backend.weak import weak

_ELEMENTARY = ["exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "power"]
_ELEMENTARY += ["exp2", "log2", "log10", "sinh", "cosh"]
_REDUCTIONS = ["sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std"]
_REDUCTIONS += ["argmax", "argmin", "all", "any", "cumsum", "cumprod"]

_REDIRECTS: dict[int, str] = {}
for _module, _names in ((elementary, _ELEMENTARY), (reductions, _REDUCTIONS)):
    for _name in _names:
        globals()[_name] = getattr(_module, _name)
        _REDIRECTS[id(getattr(np, _name))] = _name

# numbax.random's functions are vectorized NumPy; compiled code calls Numba versions.
_RANDOM = ["split", "fold_in", "bits", "uniform", "normal"]
for _name in _RANDOM:
    globals()[f"random_{_name}"] = getattr(random_kernels, f"random_{_name}")
    _REDIRECTS[id(getattr(_numbax_random, _name))] = f"random_{_name}"


ARRAY_METHODS = frozenset(
    ["sum", "mean", "prod", "max", "min", "var", "std", "argmax", "argmin", "all", "any"]
    + ["cumsum", "cumprod"]
)
"""Array methods rewritten to the runtime's reductions (``x.sum(axis=0)``)."""

# Non-ufunc elementwise functions whose listed positional arguments promote together.
_ELEMENTWISE_VALUE_ARGS: dict[int, tuple[int, ...]] = {id(np.where): (1, 2), id(np.clip): (0, 1, 2)}


def replacement_for(func: Any) -> str | None:
    """Name of this module's replacement for NumPy function ``func``, if it has one."""
    return _REDIRECTS.get(id(func))


def elementwise_value_args(func: Any) -> tuple[int, ...]:
    """Positions of ``func``'s arguments that promote together elementwise (NEP 50: a
    Python scalar among them adapts to the others)."""
    if isinstance(func, np.ufunc) and func.nin > 1:
        return tuple(range(func.nin))
    return _ELEMENTWISE_VALUE_ARGS.get(id(func), ())


__all__ = ["ARRAY_METHODS", "elementwise", "keep_dtype", "weak", *_ELEMENTARY, *_REDUCTIONS]
__all__ += [f"random_{name}" for name in _RANDOM]

# Automatic differentiation's helpers (ad_runtime.py), adjoints of reductions.
from numbax.numba_backend.ad_adjoints import (  # noqa: E402
    broadcast_reduced,
    matmul_vjp_x,
    matmul_vjp_y,
    reshape_like,
)
from numbax.numba_backend.ad_runtime import (  # noqa: E402
    basis,
    broadcast_like,
    grad_seed,
    index_add,
    jac_empty,
    jac_reshape,
    ones_like,
    owned,
    ravel,
    size,
    tree_add,
    unbroadcast,
    zeros_like,
)

__all__ += ["matmul_vjp_x", "matmul_vjp_y", "reshape_like"]
__all__ += ["basis", "broadcast_like", "broadcast_reduced", "grad_seed", "index_add", "jac_empty", "jac_reshape"]
__all__ += ["ones_like", "owned", "ravel", "size", "tree_add", "unbroadcast", "zeros_like"]
