"""Typing-time helpers: what NumPy under Numba (``np/``) and the runtime helpers' Numba
versions (``runtime/``) read from argument types while Numba types a call, and the
errors they raise there.

An overload sees types, not values: whether an argument is None or omitted, a number,
a compile-time int or bool, how many axes an ``axis`` tuple names, which dtype a
``dtype=`` argument asks for and which dtype NumPy computes in. Each of these questions
is answered here once, for every module that asks it; so is the run-time check of an
axis whose value the types do not tell (``_normalize``, which generated implementations
call), and the scope the families' generated implementations are defined in
(``_family_code``).

A typing error names the function it is about, after a prefix that says whose it is;
``_failing`` makes a module's ``_fail``. The families of NumPy functions (``elementwise``,
``products``, ``norms``, ``shapes``) were one module, ``numpy_extra``: their errors, and
the names of their generated source (``_FAMILIES``), keep that name, so what a user reads
did not change when they were split.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import types
from numba.core import errors
from numba.extending import register_jitable
from numba.np.numpy_support import as_dtype, from_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.generated import Code

Fail = Callable[[str, str], errors.NumbaTypeError]


def _failing(prefix: str) -> Fail:
    """A module's ``_fail``: ``_fail(name, message)`` is the typing error about its
    function ``name`` (``{prefix}{name}: {message}``), reported by Numba at the user's
    call."""

    def fail(name: str, message: str) -> errors.NumbaTypeError:
        return errors.NumbaTypeError(f"{prefix}{name}: {message}")

    return fail


_FAMILIES = "numpy_extra"
"""How the families of NumPy functions name themselves in errors and generated source."""

_fail = _failing(f"numbax {_FAMILIES}.")
"""The typing error of the families of NumPy functions."""

_fail_reductions = _failing("numbax reductions.")
"""The typing error of the reductions, and of a ``dtype=`` argument wherever it is read."""


def _is_none(ty: Any) -> bool:
    """Whether an overload argument is an omitted or explicit None."""
    if isinstance(ty, types.Omitted):
        return ty.value is None
    return ty is None or isinstance(ty, types.NoneType)


def _is_scalar(ty: Any) -> bool:
    """Whether an argument is a number or a bool (not an array)."""
    return isinstance(ty, types.Number | types.Boolean)


def _scalar_type(name: str, ty: Any, fail: Fail = _fail) -> types.Type:
    """The element type of an array or scalar argument (``fail``: whose error otherwise)."""
    if isinstance(ty, types.Array):
        return ty.dtype
    if _is_scalar(ty):
        return types.unliteral(ty)
    raise fail(name, f"expected an array or a number, got {ty}")


# ---------------------------------------------------------------------------------------
# Dtypes: NumPy's rules, on Numba types.
# ---------------------------------------------------------------------------------------


def _npt(ty: types.Type) -> Any:
    """The NumPy scalar type of a Numba type (callable in jitted code, as a cast)."""
    return as_dtype(ty).type


def _promote(*tys: types.Type) -> types.Type:
    """NumPy's result dtype of these element types."""
    return from_dtype(np.result_type(*(as_dtype(t) for t in tys)))


def _inexact(dt: types.Type) -> types.Type:
    """The dtype NumPy computes in for float functions (and for mean, and the mean inside
    var): ints and bools become float64."""
    return dt if isinstance(dt, types.Float | types.Complex) else types.float64


def _real(dt: types.Type) -> types.Type:
    """The real type of a float or complex type."""
    return dt.underlying_float if isinstance(dt, types.Complex) else dt


def _accumulating(dt: types.Type) -> types.Type:
    """NumPy's result dtype for sum/prod/cumsum/cumprod: small ints widen to 64 bits."""
    if isinstance(dt, types.Boolean):
        return types.int64
    if isinstance(dt, types.Integer) and dt.bitwidth < 64:
        return types.int64 if dt.signed else types.uint64
    return dt


_BUILTIN_DTYPES = {
    float: types.float64,
    int: types.intp,
    bool: types.boolean,
    complex: types.complex128,
}


def _dtype_arg(name: str, dtype: Any) -> types.Type | None:
    """The Numba scalar type named by a ``dtype=`` argument, or None."""
    if _is_none(dtype):
        return None
    if isinstance(dtype, types.NumberClass):
        return dtype.instance_type
    if isinstance(dtype, types.DType):
        return dtype.dtype
    if isinstance(dtype, types.StringLiteral):
        return from_dtype(np.dtype(dtype.literal_value))
    key = getattr(dtype, "typing_key", None)
    if isinstance(dtype, types.Function) and key in _BUILTIN_DTYPES:
        return _BUILTIN_DTYPES[key]
    raise _fail_reductions(name, f"unsupported dtype argument {dtype}")


# ---------------------------------------------------------------------------------------
# Compile-time arguments: keepdims, ints, axes.
# ---------------------------------------------------------------------------------------


def _wants_literal(ty: Any) -> bool:
    """Whether a ``keepdims`` argument is a bool only known at run time."""
    return isinstance(ty, types.Boolean) and not isinstance(ty, types.BooleanLiteral)


def _keepdims(name: str, ty: Any, fail: Fail = _fail_reductions) -> bool:
    """The value of a compile-time ``keepdims`` (default, omitted or literal)."""
    if isinstance(ty, bool):
        return ty
    if isinstance(ty, types.Omitted):
        return bool(ty.value)
    if isinstance(ty, types.BooleanLiteral | types.IntegerLiteral):
        return bool(ty.literal_value)
    raise fail(name, f"keepdims must be True or False, got {ty}")


def _literal_int(ty: Any) -> int | None:
    """The value of a compile-time int (literal or omitted default), else None."""
    if isinstance(ty, types.IntegerLiteral):
        return ty.literal_value
    if isinstance(ty, types.Omitted) and isinstance(ty.value, int):
        return ty.value
    if isinstance(ty, int) and not isinstance(ty, bool):
        return ty
    return None


def _wants_literal_int(ty: Any) -> bool:
    """Whether an int argument is only known at run time (``numba.literally`` makes it a
    constant)."""
    return isinstance(ty, types.Integer) and not isinstance(
        ty, types.IntegerLiteral | types.Boolean
    )


def _axis_count(name: str, axis: Any, what: str = "axis") -> int:
    """How many axes an int or tuple-of-ints argument names (a compile-time fact)."""
    if isinstance(axis, types.Integer) and not isinstance(axis, types.Boolean):
        return 1
    if isinstance(axis, types.BaseTuple) and builtins.all(
        isinstance(t, types.Integer) and not isinstance(t, types.Boolean) for t in axis.types
    ):
        return len(axis.types)
    if isinstance(axis, types.List):
        raise _fail(
            name,
            f"{what} must be an int or a tuple of ints under jit, got a list: Numba does not "
            "know a list's length when it compiles; write a tuple",
        )
    raise _fail(name, f"{what} must be an int or a tuple of ints, got {axis}")


def _axis_items(var: str, axis: Any) -> list[str]:
    """Source expressions for the ints of an int or tuple-of-ints argument ``var``."""
    if isinstance(axis, types.Integer):
        return [var]
    return [f"{var}[{j}]" for j in range(len(axis.types))]


def _tuple(items: Any) -> str:
    """Source of a tuple of these source items."""
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


# ---------------------------------------------------------------------------------------
# Generated implementations: the run-time check of an axis, the families' scope.
# ---------------------------------------------------------------------------------------


@register_jitable
def _normalize(axis, ndim):
    """``axis`` counted from the front; NumPy's AxisError when out of range: generated
    implementations check with it an axis whose value the types do not tell."""
    if axis < -ndim or axis >= ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis + ndim if axis < 0 else axis


def _family_code(*functions: Callable, **names: Any) -> Callable[..., Code]:
    """A family module's ``_code(header, **names)``: an implementation built line by line,
    which the overload returns for Numba to compile, in a scope of NumPy, ``_normalize``,
    ``to_fixed_tuple`` and what the module's generated lines call besides (``functions``
    by their names, and ``names``)."""
    scope = {"np": np, "to_fixed_tuple": to_fixed_tuple, "_normalize": _normalize}
    scope.update({f.__name__: f for f in functions}, **names)
    return functools.partial(Code, scope=scope, origin=_FAMILIES)
