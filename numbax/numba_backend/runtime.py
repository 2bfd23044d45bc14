"""The helpers generated code calls as ``nxrt.<name>``, usable in Python and in Numba.

Each helper is a plain Python function that does exactly what NumPy does when the
generated code runs interpreted, and has a Numba implementation (an ``overload``) for
compiled code. This module is also the table that tells the lowering pass which NumPy
functions and array methods are redirected here, matched by identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from numbax.numba_backend import elementary, reductions
from numbax.numba_backend.boundary import keep_dtype
from numbax.numba_backend.weak import weak

_ELEMENTARY = ["exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "power"]
_ELEMENTARY += ["exp2", "log2", "log10", "sinh", "cosh"]
_REDUCTIONS = ["sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std"]
_REDUCTIONS += ["argmax", "argmin", "all", "any", "cumsum", "cumprod"]

_REDIRECTS: dict[int, str] = {}
for _name in _ELEMENTARY:
    if hasattr(elementary, _name):
        globals()[_name] = getattr(elementary, _name)
        _REDIRECTS[id(getattr(np, _name))] = _name
for _name in _REDUCTIONS:
    globals()[_name] = getattr(reductions, _name)
    _REDIRECTS[id(getattr(np, _name))] = _name
sigmoid = elementary.sigmoid


def elementwise(kernel: Callable) -> Callable:
    """Compile a scalar kernel (see fuse.py) as a Numba ufunc: one loop over the
    broadcast elements of its arguments, whatever their shapes and dtypes."""
    return numba.vectorize(cache=True)(kernel)


ARRAY_METHODS = frozenset(
    ["sum", "mean", "prod", "max", "min", "var", "std", "argmax", "argmin", "all", "any"]
    + ["cumsum", "cumprod"]
)
"""Array methods rewritten to the runtime's reductions (``x.sum(axis=0)``)."""

# Elementwise NumPy functions whose listed positional arguments take part in type
# promotion: a Python scalar among them adapts to the others (NEP 50).
_BINARY = (0, 1)
_ELEMENTWISE_VALUE_ARGS: dict[int, tuple[int, ...]] = {
    id(np.where): (1, 2),
    id(np.clip): (0, 1, 2),
}
for _ufunc in (
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.true_divide,
    np.floor_divide,
    np.power,
    np.maximum,
    np.minimum,
    np.fmax,
    np.fmin,
    np.arctan2,
    np.hypot,
    np.logaddexp,
    np.logaddexp2,
    np.copysign,
    np.mod,
    np.remainder,
):
    _ELEMENTWISE_VALUE_ARGS[id(_ufunc)] = _BINARY


def replacement_for(func: Any) -> str | None:
    """Name of this module's replacement for NumPy function ``func``, if it has one."""
    name = _REDIRECTS.get(id(func))
    return name if name is not None and globals().get(name) is not None else None


def elementwise_value_args(func: Any) -> tuple[int, ...]:
    """Positions of ``func``'s arguments that promote together elementwise."""
    return _ELEMENTWISE_VALUE_ARGS.get(id(func), ())


__all__ = ["ARRAY_METHODS", "keep_dtype", "weak", "sigmoid", *_ELEMENTARY, *_REDUCTIONS]
