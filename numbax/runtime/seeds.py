"""The cotangents that start reverse passes (``grad``'s one, per output or per example),
and the dtype checks JAX makes of ``grad``'s outputs and inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax import tree_util
from numbax.runtime.registry import helper
from numbax.runtime.tangents import SCALARS

COMPLEX_OUTPUT = (
    "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
    "but got {}. For holomorphic differentiation, pass holomorphic=True. For "
    "differentiating non-holomorphic functions involving complex outputs, use nx.vjp "
    "directly."
)
INTEGER_OUTPUT = (
    "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
    "but got {}. For differentiation of functions with integer outputs, use nx.vjp "
    "directly."
)
REAL_OUTPUT = "grad with holomorphic=True requires outputs with complex dtype, but got {}."
INTEGER_INPUT = (
    "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
    "np.inexact), but got {}. If you want to use Boolean- or integer-valued inputs, use "
    "vjp or set allow_int to True."
)


@helper
def grad_seed(out: Any) -> Any:
    """The cotangent that starts ``grad``'s reverse pass: one, of ``out``'s type.

    ``grad`` is only defined for a real scalar (or 0-d) output; anything else raises
    JAX's TypeError here, when the output is known. A complex output's derivative is
    only defined for holomorphic functions, which the user must say (``holomorphic_seed``):
    silently seeding it with 1 would give the derivative of its real part. An integer
    or boolean output has no derivative (its gradient would be zeros, silently).
    """
    _check_real(_scalar_seed_dtype(out))
    return _one_of(out)


@helper
def holomorphic_seed(out: Any) -> Any:
    """``grad(..., holomorphic=True)``'s seed: one of a complex scalar output's type."""
    dtype = _scalar_seed_dtype(out)
    if dtype.kind != "c":
        raise TypeError(REAL_OUTPUT.format(dtype.name))
    return _one_of(out)


@helper
def grad_seeds(out: Any) -> Any:
    """``grad_seed`` of each example of a batch of scalar outputs (``vmap(grad(f))``,
    vectorized): ones of ``out``'s shape, with the same check of the dtype."""
    _check_real(np.result_type(out))
    return np.ones_like(out)


@helper
def holomorphic_seeds(out: Any) -> Any:
    """``holomorphic_seed`` of each example of a batch of scalar outputs."""
    dtype = np.result_type(out)
    if dtype.kind != "c":
        raise TypeError(REAL_OUTPUT.format(dtype.name))
    return np.ones_like(out)


def _check_real(dtype: np.dtype) -> None:
    """JAX's TypeError for an output ``grad`` cannot seed without ``holomorphic``."""
    if dtype.kind == "c":
        raise TypeError(COMPLEX_OUTPUT.format(dtype.name))
    if dtype.kind in "biu":
        raise TypeError(INTEGER_OUTPUT.format(dtype.name))


def _scalar_seed_dtype(out: Any) -> np.dtype:
    if isinstance(out, np.ndarray):
        if out.ndim:
            raise TypeError(f"grad requires a scalar output, got an array of shape {out.shape}")
        return out.dtype
    if isinstance(out, SCALARS):
        return np.result_type(out)
    raise TypeError(f"grad requires a scalar output, got {type(out).__name__}")


def _one_of(out: Any) -> Any:
    return np.ones((), out.dtype) if isinstance(out, np.ndarray) else type(out)(1)


def grad_dtype_check(x: Any, argnum: int, holomorphic: bool = False) -> None:
    """Raise JAX's TypeError if ``grad`` is asked for the gradient of an integer or
    boolean input (``x``, argument ``argnum``; pytrees leaf by leaf), or, with
    ``holomorphic=True``, of a real one. Called at the API boundary, so there is no
    Numba version."""
    for leaf in tree_util.tree_leaves(x):
        dtype = np.result_type(leaf)
        if holomorphic and dtype.kind != "c":
            raise TypeError(
                "grad with holomorphic=True requires inputs with complex dtype, "
                f"but got {dtype.name}."
            )
        if dtype.kind in "biu":
            raise TypeError(INTEGER_INPUT.format(dtype.name))
    return None
