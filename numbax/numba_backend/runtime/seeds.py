"""Numba versions of the seeds of reverse passes (``numbax/runtime/seeds.py``): the
checks are on types, known when compiling, so a wrong output raises JAX's TypeError.
"""

from __future__ import annotations

from typing import Any

from numba import types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.runtime.common import (
    _always,
    _dtype_of,
    _fail,
    _is_scalar,
)
from numbax.runtime.seeds import (
    COMPLEX_OUTPUT,
    INTEGER_OUTPUT,
    REAL_OUTPUT,
    grad_seed,
    grad_seeds,
    holomorphic_seed,
    holomorphic_seeds,
)
from numbax.runtime.tangents import ones_like


def _raising(message: str) -> Any:
    """An implementation that raises ``TypeError(message)``. The message is a constant:
    one built at run time does not survive being raised through nested compiled calls
    (Numba 0.68)."""

    def impl(out):
        if _always():
            raise TypeError(message)
        return ones_like(out)

    return impl


def _seed_jit(name: str, out: Any, holomorphic: bool, per_example: bool = False) -> Any:
    """The seeds compiled: the checks are on types, known now."""
    if isinstance(out, types.Array) and out.ndim and not per_example:
        return _raising(f"grad requires a scalar output, got an array of {out.ndim} dimension(s)")
    if isinstance(out, types.BaseTuple):
        return _raising("grad requires a scalar output, got tuple")
    if not (_is_scalar(out) or isinstance(out, types.Array)):
        raise _fail(name, f"expected an array or a number, got {out}")
    dtype = as_dtype(_dtype_of(name, out))
    if holomorphic and dtype.kind != "c":
        return _raising(REAL_OUTPUT.format(dtype.name))
    if not holomorphic and dtype.kind == "c":
        return _raising(COMPLEX_OUTPUT.format(dtype.name))
    if not holomorphic and dtype.kind in "biu":
        return _raising(INTEGER_OUTPUT.format(dtype.name))
    return lambda out: ones_like(out)


@overload(grad_seed)
def _grad_seed_jit(out):
    return _seed_jit("grad_seed", out, holomorphic=False)


@overload(holomorphic_seed)
def _holomorphic_seed_jit(out):
    return _seed_jit("holomorphic_seed", out, holomorphic=True)


@overload(grad_seeds)
def _grad_seeds_jit(out):
    return _seed_jit("grad_seeds", out, holomorphic=False, per_example=True)


@overload(holomorphic_seeds)
def _holomorphic_seeds_jit(out):
    return _seed_jit("holomorphic_seeds", out, holomorphic=True, per_example=True)
