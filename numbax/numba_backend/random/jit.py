"""numbax.random's core functions under ``nx.jit``: Numba implementations, and the
registration that makes ``nx.jit`` compile calls of numbax.random's functions.

Why this exists: jitted user code calls ``numbax.random.normal(key, shape)`` like any
other function; Numba compiles that call with the implementation given here, which draws
from the same compiled loops (:mod:`numbax.numba_backend.random.kernels`) as the plain
call, so jitted and plain calls give the same bits.  Each implementation is a Numba
``overload`` typer: called with the argument types, it checks them (a typing error
becomes numbax's ``CompileError``) and returns the function to compile.  Shapes are
integers or tuples of integers, dtypes NumPy scalar types (``np.float32``) or left out.

The public functions are overloaded by :func:`register_random`, which
:mod:`numbax.random` calls for each of its functions: this backend is a layer below the
public package and does not import it.  The other samplers' implementations are in
:mod:`numbax.numba_backend.random.jit_more`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numba
import numpy as np
from numba import literal_unroll, types
from numba.core import errors
from numba.extending import overload

from numbax.numba_backend.generated import define
from numbax.numba_backend.random.kernels import (
    bits32_flat,
    bits64_flat,
    fold_in_pair,
    helper_jit,
    normal32_flat,
    normal64_flat,
    split_flat,
    uniform32_flat,
    uniform64_flat,
    uniform_between_flat,
)

__all__ = ["IMPLEMENTATIONS", "JitImplementation", "register_random", "registered_samplers"]
# and, for random_jit_more, the shared pieces of an implementation
__all__ += ["check_key", "dims_of", "dtype_of", "finish", "key_words", "shape_kind"]
__all__ += ["shape_size", "spread"]


class JitImplementation(NamedTuple):
    """How Numba compiles one of numbax.random's functions."""

    typer: Callable[..., Any]
    """The ``overload`` typer: takes the call's argument types (with the public
    function's signature) and returns the implementation, or raises a typing error."""
    prefer_literal: bool = False
    """Type constant arguments as literals first (``axis``, ``replace``, ``mode``...)."""


_SAMPLERS: dict[str, Callable[..., Any]] = {}


def register_random(sampler: Callable[..., Any], implementation: JitImplementation) -> None:
    """Have ``nx.jit`` compile calls of ``sampler`` (a numbax.random function) with
    ``implementation``.

    The public function itself is overloaded, so generated code keeps the user's call
    (``nx.random.normal(key, (3,))``), interpreted it runs the plain function, and
    compiled Numba types it with ``implementation.typer``. The GPU target finds it by
    name (:func:`registered_samplers`).
    """
    overload(sampler, prefer_literal=implementation.prefer_literal)(implementation.typer)
    _SAMPLERS[sampler.__name__] = sampler


def registered_samplers() -> dict[str, Callable[..., Any]]:
    """numbax.random's functions registered so far, by name."""
    return dict(_SAMPLERS)


@helper_jit
def key_words(key: np.ndarray) -> tuple[np.uint32, np.uint32]:
    """The two uint32 words of a key (its shape checked at run time; its type by
    :func:`check_key`)."""
    if key.shape[0] != 2:
        raise ValueError("numbax.random expects a PRNG key: a uint32 array of shape (2,)")
    return key[0], key[1]


def shape_size(shape: tuple[int, ...]) -> int:
    """The number of elements of ``shape``; compiled, negative dims raise ValueError."""
    return math.prod(shape)


@overload(shape_size)
def _shape_size_impl(shape):
    if len(shape) == 0:  # (literal_unroll cannot iterate an empty tuple)
        return lambda shape: 1

    def impl(shape):
        n = 1
        for d in literal_unroll(shape):
            if d < 0:
                raise ValueError("numbax.random: shape must not have negative dimensions")
            n *= d
        return n

    return impl


def check_key(name: str, key: types.Type) -> None:
    """Raise a typing error unless ``key`` types a 1-d uint32 array (key data)."""
    if not (isinstance(key, types.Array) and key.ndim == 1 and key.dtype == types.uint32):
        raise errors.TypingError(
            f"numbax.random.{name} expects a PRNG key: a uint32 array of shape (2,); got {key}"
        )


def shape_kind(name: str, shape: types.Type) -> str:
    """'int', 'tuple' or 'scalar' (the empty tuple) for a shape Numba can take; a typing
    error otherwise."""
    if isinstance(shape, types.Omitted):  # (Numba passes some defaults as the value)
        shape = shape.value
    if isinstance(shape, tuple) or isinstance(shape, types.BaseTuple) and len(shape) == 0:
        return "tuple" if len(shape) else "scalar"
    if isinstance(shape, int | types.Integer):
        return "int"
    if isinstance(shape, types.BaseTuple) and all(isinstance(d, types.Integer) for d in shape):
        return "tuple"
    raise errors.TypingError(
        f"numbax.random.{name} under nx.jit takes a shape that is an integer or a tuple of "
        f"integers; got {shape}"
    )


def dtype_of(name: str, dtype: types.Type, default: type) -> np.dtype:
    """The NumPy dtype an argument such as ``np.float32`` (or its omission) stands for."""
    if isinstance(dtype, types.Omitted):  # (Numba passes some defaults as the value)
        dtype = dtype.value
    if not isinstance(dtype, types.Type):  # the default: float, np.uint32
        return np.dtype(default if dtype is None else dtype)
    if isinstance(dtype, types.NumberClass):
        return np.dtype(numba.np.numpy_support.as_dtype(dtype.instance_type))
    if isinstance(dtype, types.DType):
        return np.dtype(numba.np.numpy_support.as_dtype(dtype.dtype))
    raise errors.TypingError(
        f"numbax.random.{name} under nx.jit takes dtype as a NumPy type such as np.float32; "
        f"got {dtype}"
    )


def _shaped(flat_fn: Any, kind: str, trailing: tuple[int, ...] = ()) -> Any:
    """An implementation ``(k0, k1, shape, *args)`` that fills ``flat_fn(k0, k1, n, *args)``
    and gives it ``shape`` (plus ``trailing`` dims: the 2 words of split's keys);
    ``kind`` is the shape's :func:`shape_kind`.

    Shape ``()`` gives a scalar, not a 0-d array (Numba cannot reshape to ``()``); its
    value and dtype are the plain call's."""
    if kind == "int":

        @helper_jit
        def by_int(k0, k1, shape, *args):
            if shape < 0:
                raise ValueError("numbax.random: shape must not have negative dimensions")
            return flat_fn(k0, k1, shape, *args).reshape((shape, *trailing))

        return by_int

    if kind == "scalar" and trailing:

        @helper_jit
        def one_key(k0, k1, shape, *args):
            return flat_fn(k0, k1, 1, *args).reshape(trailing)

        return one_key

    if kind == "scalar":

        @helper_jit
        def by_scalar(k0, k1, shape, *args):
            return flat_fn(k0, k1, 1, *args)[0]

        return by_scalar

    @helper_jit
    def by_tuple(k0, k1, shape, *args):
        return flat_fn(k0, k1, shape_size(shape), *args).reshape(shape + trailing)

    return by_tuple


def dims_of(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of integers (an int ``n`` is ``(n,)``); compiled, as int64s."""
    return (shape,) if isinstance(shape, int | np.integer) else tuple(shape)


@overload(dims_of)
def _dims_of_impl(shape):
    kind = shape_kind("random", shape)
    if kind == "int":
        return lambda shape: (np.int64(shape),)
    if kind == "scalar":
        return lambda shape: ()
    # one homogeneous tuple, also from a tuple of integer literals
    items = ", ".join(f"np.int64(shape[{j}])" for j in range(len(shape)))
    return define(f"def impl(shape):\n    return ({items},)\n", {"np": np}, "random shape")


def finish(flat: np.ndarray, dims: tuple[int, ...]) -> Any:
    """A flat sample of ``dims``'s size given shape ``dims``."""
    return flat.reshape(dims)


@overload(finish)
def _finish_impl(flat, dims):
    if len(dims) == 0:  # Numba has no 0-d arrays to reshape to: the plain value's scalar
        return lambda flat, dims: flat[0]
    return lambda flat, dims: flat.reshape(dims)


def spread(x: Any, dims: tuple[int, ...], dtype: Any) -> np.ndarray:
    """``x`` (a scalar or an array) broadcast to ``dims`` and converted to ``dtype``, as a
    flat contiguous array: per-element parameters such as ``uniform``'s bounds."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x).astype(dtype), dims)).ravel()


@overload(spread)
def _spread_impl(x, dims, dtype):
    if isinstance(x, types.Array):
        return lambda x, dims, dtype: (
            np.ascontiguousarray(np.broadcast_to(x, dims)).ravel().astype(dtype)
        )
    if isinstance(x, types.Number | types.Boolean) and len(dims) == 0:
        return lambda x, dims, dtype: np.full(1, x).astype(dtype)
    if isinstance(x, types.Number | types.Boolean):
        return lambda x, dims, dtype: np.full(shape_size(dims), x).astype(dtype)
    raise errors.TypingError(f"numbax.random: expected a scalar or an array; got {x}")


def _seed_impl(seed):
    if not isinstance(seed, types.Integer):
        raise errors.TypingError(f"numbax.random.key takes an integer seed; got {seed}")

    def impl(seed):
        word = np.uint64(seed)  # two's complement, as the plain call reads a negative seed
        out = np.empty(2, np.uint32)
        out[0] = np.uint32(word >> np.uint64(32))
        out[1] = np.uint32(word & np.uint64(0xFFFFFFFF))
        return out

    return impl


def _key_data_impl(keys):
    if not (isinstance(keys, types.Array) and keys.dtype == types.uint32 and keys.ndim >= 1):
        raise errors.TypingError(f"numbax.random expects uint32 key data; got {keys}")

    def impl(keys):
        if keys.shape[-1] != 2:
            raise TypeError("numbax.random: key data must have shape (..., 2)")
        return keys

    return impl


def _split_impl(key, num=2):
    check_key("split", key)
    draw = _shaped(split_flat, shape_kind("split", num), (2,))

    def impl(key, num=2):
        k0, k1 = key_words(key)
        return draw(k0, k1, num)

    return impl


def _fold_in_impl(key, data):
    check_key("fold_in", key)
    if not isinstance(data, types.Integer):
        raise errors.TypingError(f"numbax.random.fold_in takes an integer scalar; got {data}")

    def impl(key, data):
        k0, k1 = key_words(key)
        return fold_in_pair(k0, k1, data)

    return impl


def _bits_impl(key, shape=(), dtype=np.uint32):
    check_key("bits", key)
    kind = shape_kind("bits", shape)
    want = dtype_of("bits", dtype, np.uint32)
    if want.kind != "u":
        raise errors.TypingError(
            f"dtype argument to `bits` must be an unsigned int dtype, got {want}"
        )
    if want.itemsize == 8:
        draw = _shaped(bits64_flat, kind)

        def impl(key, shape=(), dtype=np.uint32):
            k0, k1 = key_words(key)
            return draw(k0, k1, shape)

        return impl
    draw = _shaped(bits32_flat, kind)
    out = want.type
    if kind == "scalar":

        def one(key, shape=(), dtype=np.uint32):
            k0, k1 = key_words(key)
            return out(draw(k0, k1, shape))

        return one

    def impl(key, shape=(), dtype=np.uint32):
        k0, k1 = key_words(key)
        return draw(k0, k1, shape).astype(out)

    return impl


_FLOATS = {np.dtype(np.float32): (uniform32_flat, normal32_flat),
           np.dtype(np.float64): (uniform64_flat, normal64_flat)}  # fmt: skip


def _float_kernels(name: str, dtype: types.Type) -> tuple[Any, Any, type]:
    want = dtype_of(name, dtype, np.float64)
    if want not in _FLOATS:
        raise errors.TypingError(
            f"numbax.random.{name} under nx.jit supports float32 and float64, got {want}"
        )
    return (*_FLOATS[want], want.type)


def _uniform_impl(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    check_key("uniform", key)
    uniform_flat, _, scalar = _float_kernels("uniform", dtype)
    kind = shape_kind("uniform", shape)
    bounds = [b.value if isinstance(b, types.Omitted) else b for b in (minval, maxval)]
    for bound in bounds:
        if not isinstance(bound, float | types.Number | types.Array):
            raise errors.TypingError(
                "numbax.random.uniform under nx.jit takes minval and maxval as numbers or "
                f"arrays; got {bound}"
            )
    if not any(isinstance(bound, types.Array) for bound in bounds):
        draw = _shaped(uniform_flat, kind)

        def impl(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
            k0, k1 = key_words(key)
            return draw(k0, k1, shape, scalar(minval), scalar(maxval))

        return impl

    def between(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
        k0, k1 = key_words(key)
        dims = dims_of(shape)
        lo, hi = spread(minval, dims, scalar), spread(maxval, dims, scalar)
        return finish(uniform_between_flat(k0, k1, lo, hi), dims)

    return between


def _normal_impl(key, shape=(), dtype=float):
    check_key("normal", key)
    _, normal_flat, _ = _float_kernels("normal", dtype)
    draw = _shaped(normal_flat, shape_kind("normal", shape))

    def impl(key, shape=(), dtype=float):
        k0, k1 = key_words(key)
        return draw(k0, k1, shape)

    return impl


IMPLEMENTATIONS: dict[str, JitImplementation] = {
    "key": JitImplementation(_seed_impl),
    "PRNGKey": JitImplementation(_seed_impl),
    "key_data": JitImplementation(_key_data_impl),
    "wrap_key_data": JitImplementation(_key_data_impl),
    "split": JitImplementation(_split_impl),
    "fold_in": JitImplementation(_fold_in_impl),
    "bits": JitImplementation(_bits_impl),
    "uniform": JitImplementation(_uniform_impl),
    "normal": JitImplementation(_normal_impl),
}
"""The implementations of :mod:`numbax.random.core`'s functions under ``nx.jit``, by name."""
