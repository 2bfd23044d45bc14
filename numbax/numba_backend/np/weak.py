"""Python scalars are *weakly typed* (NumPy 2 / NEP 50, and JAX): keep that under Numba.

In NumPy 2, ``float32_array * 1.67`` is float32: the Python float adapts to the array.
Numba types every Python float as float64 and so returns float64, doubling memory
traffic and silently changing results. Generated code therefore wraps each value that
may be a Python scalar, where it meets another operand, in ``weak(value, like)``: in
plain Python it returns ``value`` unchanged (NumPy already does the right thing); under
Numba it casts a scalar ``value`` to the type NEP 50 would give it next to ``like``.
Arrays pass through unchanged, so wrapping something that turns out to be an array is
harmless.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.redirects import lowering_helper


@lowering_helper
def weak(value: Any, like: Any) -> Any:
    """``value`` as a weakly typed scalar next to ``like`` (identity outside Numba)."""
    return value


def weak_target(value: types.Type, like: types.Type) -> types.Type | None:
    """The Numba type NEP 50 gives Python scalar ``value`` next to ``like``, or None."""
    other = like.dtype if isinstance(like, types.Array) else like
    if not isinstance(other, (types.Number, types.Boolean)) or other == value:
        return None
    if isinstance(value, types.Boolean):
        return other if isinstance(other, types.Number) else None
    if isinstance(value, types.Integer):
        return other if isinstance(other, types.Number) else None
    if isinstance(value, types.Float):
        if isinstance(other, types.Float):
            return other
        if isinstance(other, types.Complex):
            return other.underlying_float
        return None  # int or bool next to a Python float: float64, as Numba does
    if isinstance(value, types.Complex):
        if other in (types.float32, types.complex64):
            return types.complex64
        if other == types.float16:
            return types.complex64
        return None
    return None


def weak_implementation(value, like):  # noqa: ANN001, ANN201 (Numba reads annotations as types)
    """The Numba implementation of :func:`weak` for these argument types."""
    if isinstance(value, types.Array) or not isinstance(value, (types.Number, types.Boolean)):
        return lambda value, like: value
    target = weak_target(value, like)
    if target is None:
        return lambda value, like: value
    cast = as_dtype(target).type

    def impl(value, like):
        return cast(value)

    return impl


def checked_weak_implementation(value, like):  # noqa: ANN001, ANN201
    """:func:`weak_implementation`, but a Python int out of an integer ``like``'s range
    raises NumPy 2's ``OverflowError`` (``uint8_array * -2``), as :func:`weak_cast` does,
    rather than wrapping (the CPU's; a device function raises nothing)."""
    if isinstance(value, types.Array) or not isinstance(value, types.Integer):
        return weak_implementation(value, like)
    target = weak_target(value, like)
    if not isinstance(target, types.Integer):
        return weak_implementation(value, like)
    cast = weak_cast(types.unliteral(value), target)

    def impl(value, like):
        return cast(value)

    return impl


# On the CPU the body is inlined where it is called, as Numba's IR, so no function is
# compiled per pair of types. numba-cuda (0.30) miscompiles that inlining inside loops
# (a value the loop carries is read stale: the result of a generated loop came out
# half its value on an H200), so the device registers its own, called like any
# function, which NVVM inlines (``cuda._register_device_overloads``).
overload(weak, target="cpu", inline="always")(checked_weak_implementation)


def weak_cast(value: types.Type, target: types.Type) -> Any:
    """The cast of a weak scalar of type ``value`` to ``target`` (from :func:`weak_target`),
    callable under Numba: a Python int out of an integer target's range raises NumPy 2's
    ``OverflowError`` (``int8_array + 1000``) rather than wrapping."""
    cast = as_dtype(target).type
    if not (isinstance(value, types.Integer) and isinstance(target, types.Integer)):
        return cast
    info = np.iinfo(cast)
    low, high = int(info.min), int(info.max)
    if (
        value.signed
        and low <= -(2 ** (value.bitwidth - 1))
        and high >= 2 ** (value.bitwidth - 1) - 1
    ):
        return cast  # every value fits
    message = f"Python integer out of bounds for {as_dtype(target)}"

    @register_jitable
    def checked(number):  # noqa: ANN001, ANN202 (Numba reads annotations as types)
        if number < low or number > high:
            raise OverflowError(message)
        return cast(number)

    return checked
