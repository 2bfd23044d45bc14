"""The helpers generated code calls as ``nxrt.<name>``, usable in Python and in Numba.

Each helper is a plain Python function that does exactly what NumPy does when the
generated code runs interpreted, and has a Numba implementation (an ``overload``) for
compiled code. This module is also the table that tells the lowering pass which NumPy
functions and array methods are redirected here, matched by identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba.extending import register_jitable

from numbax.numba_backend import elementary, numpy_extra, reductions
from numbax.numba_backend.boundary import keep_dtype
from numbax.numba_backend.elementwise import elementwise
from numbax.numba_backend.weak import weak

_ELEMENTARY = ["exp", "expm1", "log", "log1p", "tanh", "sin", "cos", "power"]
_ELEMENTARY += ["exp2", "log2", "log10", "sinh", "cosh"]
_REDUCTIONS = ["sum", "mean", "prod", "max", "min", "amax", "amin", "var", "std"]
_REDUCTIONS += ["argmax", "argmin", "all", "any", "cumsum", "cumprod"]

# NumPy functions Numba lacks or compiles with other semantics (numpy_extra.py), by the
# NumPy namespace they live in.
_NUMPY_EXTRA = ["sinc", "angle", "clip", "trace", "dot", "matmul", "vdot", "inner"]
_NUMPY_EXTRA += ["tensordot", "einsum", "squeeze", "expand_dims", "concatenate", "stack"]
_NUMPY_EXTRA += ["hstack", "vstack", "flip", "roll", "tile", "repeat", "atleast_1d"]
_NUMPY_EXTRA += ["atleast_2d"]
_LINALG_EXTRA = ["norm", "det", "slogdet"]

_REDIRECTS: dict[int, str] = {}
for _module, _names, _namespace in (
    (elementary, _ELEMENTARY, np),
    (reductions, _REDUCTIONS, np),
    (numpy_extra, _NUMPY_EXTRA, np),
    (numpy_extra, _LINALG_EXTRA, np.linalg),
):
    for _name in _names:
        globals()[_name] = getattr(_module, _name)
        _REDIRECTS[id(getattr(_namespace, _name))] = _name

# numbax.random's functions are not redirected: Numba compiles the calls themselves, as
# numbax.random overloads them (numba_backend.random_jit.register_random).


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
__all__ += [*_NUMPY_EXTRA, *_LINALG_EXTRA]

# -- automatic differentiation: the helpers derivative code calls as nxrt.<name> --------
# (each a plain function doing what NumPy does, with a Numba overload; each has its own
# JVP and VJP rule in transform/rules/, so derivative code can be differentiated again)
from numbax import lax as _lax  # noqa: E402
from numbax.numba_backend import (  # noqa: E402
    ad_adjoints,
    ad_elementwise,
    ad_jacobians,
    ad_runtime,
    ad_shapes,
    batch_runtime,
)

_AD_HELPERS = {
    ad_runtime: ["zeros_like", "ones_like", "unbroadcast", "broadcast_like"]
    + ["grad_seed", "grad_seeds", "holomorphic_seed", "holomorphic_seeds"]
    + ["index_add", "tree_add", "owned", "ravel"]
    + ["custom_cotangents", "loop_cotangent"],
    ad_adjoints: ["broadcast_reduced", "reshape_like", "matmul_vjp_x", "matmul_vjp_y"]
    + ["cumprod_jvp", "cumprod_vjp", "cumsum_reverse", "dot_vjp_a", "dot_vjp_b"]
    + ["einsum_general", "matrix_transpose", "norm_exponent", "norm_weights"]
    + ["prod_others", "prod_others_jvp", "reduced_count", "tensordot_vjp_a"]
    + ["tensordot_vjp_b", "tie_weights", "trace_vjp", "tril_fold", "tril_half_diag"]
    + ["tril_symmetric"],
    ad_shapes: ["cast", "uncast", "inverse_axes", "transpose_axes", "join_like", "split_like"]
    + ["linspace_weights", "undiag", "unrepeat", "unrolled", "unstack_like", "untile"],
    ad_elementwise: ["mul_pow", "xlogy"],
    ad_jacobians: list(ad_jacobians.__all__),
    batch_runtime: ["batch_size", "batch_take", "batch_empty", "batch_put", "batch_sum"]
    + ["batch_broadcast"],
    _lax: ["psum", "pmean", "pmax", "pmin", "axis_index"],  # rewritten by vmap
}
for _module, _names in _AD_HELPERS.items():
    for _name in _names:
        globals()[_name] = getattr(_module, _name)
__all__ += [name for names in _AD_HELPERS.values() for name in names] + ["first"]


@register_jitable
def first(value: Any, like: Any) -> Any:
    """``value``: in a fused kernel, a scalar spread over ``like``'s elements (``like``
    is an argument only so that the kernel broadcasts to its shape)."""
    return value
