"""Compiled loops behind :mod:`numbax.random`, and its functions under ``nx.jit``.

Why this exists: the vectorized NumPy implementation in :mod:`numbax.random` makes a
temporary array per Threefry round and per erfinv term, so ``normal`` of 10^6 float32
took ~7x JAX's jitted time.  Here the per-element work (hash one counter, turn the bits
into a float, take XLA's erfinv) is one loop of scalar uint32/float arithmetic, which
LLVM vectorizes; ``numbax.random`` calls these loops for the bulk work, so plain Python
calls are fast too, and keeps its argument validation in Python.

The loops do the NumPy implementation's operations in the same order and dtype (Numba
does not contract multiply-adds into FMAs unless asked), with uint32 wrap-around made
explicit because Numba promotes uint32 arithmetic to 64 bits; keys, bits and uniforms are
bit for bit what the NumPy code gave.  ``normal`` takes ``log`` from numbax's own
vectorizable kernel (``_kernels32``/``_kernels64``): libm's is a call per element that
stops the loop vectorizing, and NumPy's SIMD ``log`` is out of Numba's reach.  So about
0.5% of values differ from the former NumPy results by up to 3 ulp, while staying as
close to JAX's as before (3 ulp float32, 4 ulp float64).

The ``random_*`` functions at the end are what ``nx.jit``-generated code calls as
``nxrt.random_normal(...)`` etc. when the user's code calls ``numbax.random.normal``
(see ``runtime.py``): interpreted they are the plain functions; compiled, each has an
``overload`` that takes shapes as integers or tuples of integers, and dtypes as NumPy
scalar types (``np.float32``) or left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numba
import numpy as np
from numba import literal_unroll, types
from numba.core import errors
from numba.extending import overload

from numbax import random as _random
from numbax.numba_backend import _kernels32 as _k32
from numbax.numba_backend import _kernels64 as _k64
from numbax.random import core as _random_core

# ``error_model="numpy"``: a float division must not check for zero (and raise), or
# the loop branches per element and does not vectorize.
_inline = numba.njit(error_model="numpy")
_loop = numba.njit(cache=True, error_model="numpy")

_U32 = np.uint32
_PARITY = np.uint32(0x1BD11BDA)
_SQRT2_F32 = np.float32(np.sqrt(2.0))
_SQRT2_F64 = np.float64(np.sqrt(2.0))
_LOG1P_SMALL_F32 = np.float32(np.sqrt(2.0) - 1.0)
_LOG1P_SMALL_F64 = np.float64(np.sqrt(2.0) - 1.0)


# -- Threefry-2x32 and bits-to-float on scalars --------------------------------------------


class ScalarCore(NamedTuple):
    """The per-element generator, compiled for one target (see :func:`scalar_core`)."""

    threefry2x32: Any
    hash_index: Any
    unit_f32: Any
    unit_f64: Any


def scalar_core(jit: Callable[[Callable[..., Any]], Any]) -> ScalarCore:
    """Compile the generator's scalar core with ``jit``: ``numba.njit`` for the CPU loops
    below, or ``numba.cuda.jit(device=True)`` for GPU kernels.

    Why a factory: a CUDA kernel can only call device functions, so the same Python
    functions are compiled once per target, each calling its own target's helpers.  They
    use only scalar uint32/uint64 arithmetic and bit casts (no arrays, no Python
    objects), which both targets compile; uint32 wrap-around is made explicit because
    Numba promotes uint32 arithmetic to 64 bits.
    """

    @jit
    def rotl(x: np.uint32, r: int) -> np.uint32:
        """Rotate left; the 64-bit promotion is truncated back to 32 bits explicitly."""
        x64 = np.uint64(x)
        shifted = (x64 << np.uint64(r)) | (x64 >> np.uint64(32 - r))
        return _U32(shifted & np.uint64(0xFFFFFFFF))

    @jit
    def add(a: np.uint32, b: np.uint32) -> np.uint32:
        """uint32 addition modulo 2**32 (Numba would widen the sum to 64 bits)."""
        return _U32((np.uint64(a) + np.uint64(b)) & np.uint64(0xFFFFFFFF))

    @jit
    def mix(x0: np.uint32, x1: np.uint32, r: int) -> tuple[np.uint32, np.uint32]:
        x0 = add(x0, x1)
        return x0, rotl(x1, r) ^ x0

    @jit
    def rounds_a(x0: np.uint32, x1: np.uint32) -> tuple[np.uint32, np.uint32]:
        """Four Threefry rounds with rotations 13, 15, 26, 6."""
        x0, x1 = mix(x0, x1, 13)
        x0, x1 = mix(x0, x1, 15)
        x0, x1 = mix(x0, x1, 26)
        return mix(x0, x1, 6)

    @jit
    def rounds_b(x0: np.uint32, x1: np.uint32) -> tuple[np.uint32, np.uint32]:
        """Four Threefry rounds with rotations 17, 29, 16, 24."""
        x0, x1 = mix(x0, x1, 17)
        x0, x1 = mix(x0, x1, 29)
        x0, x1 = mix(x0, x1, 16)
        return mix(x0, x1, 24)

    @jit
    def inject(
        x0: np.uint32, x1: np.uint32, ka: np.uint32, kb: np.uint32, step: int
    ) -> tuple[np.uint32, np.uint32]:
        """Key injection number ``step``: add ``ka`` and ``kb + step``."""
        return add(x0, ka), add(add(x1, kb), _U32(step))

    @jit
    def threefry2x32(
        k0: np.uint32, k1: np.uint32, x0: np.uint32, x1: np.uint32
    ) -> tuple[np.uint32, np.uint32]:
        """``numbax.random.threefry.threefry2x32`` on scalars: 20 rounds, 5 key injections."""
        k2 = _U32(k0 ^ k1 ^ _PARITY)
        x0, x1 = add(x0, k0), add(x1, k1)
        a0, a1 = rounds_a(x0, x1)
        x0, x1 = inject(a0, a1, k1, k2, 1)
        a0, a1 = rounds_b(x0, x1)
        x0, x1 = inject(a0, a1, k2, k0, 2)
        a0, a1 = rounds_a(x0, x1)
        x0, x1 = inject(a0, a1, k0, k1, 3)
        a0, a1 = rounds_b(x0, x1)
        x0, x1 = inject(a0, a1, k1, k2, 4)
        a0, a1 = rounds_a(x0, x1)
        return inject(a0, a1, k2, k0, 5)

    @jit
    def hash_index(k0: np.uint32, k1: np.uint32, i: int) -> tuple[np.uint32, np.uint32]:
        """Hash the 64-bit counter ``i`` (high word, low word): JAX's counter layout."""
        i64 = np.uint64(i)
        hi = _U32(i64 >> np.uint64(32))
        lo = _U32(i64 & np.uint64(0xFFFFFFFF))
        return threefry2x32(k0, k1, hi, lo)

    @jit
    def unit_f32(k0: np.uint32, k1: np.uint32, i: int) -> np.float32:
        """A float32 in [0, 1): 23 random mantissa bits under the exponent of 1.0, minus 1."""
        w0, w1 = hash_index(k0, k1, i)
        mantissa = _U32(((w0 ^ w1) >> _U32(9)) | _U32(0x3F800000))
        return mantissa.view(np.float32) - np.float32(1.0)

    @jit
    def unit_f64(k0: np.uint32, k1: np.uint32, i: int) -> np.float64:
        """A float64 in [0, 1): 52 random mantissa bits under the exponent of 1.0, minus 1."""
        w0, w1 = hash_index(k0, k1, i)
        raw = (np.uint64(w0) << np.uint64(32)) | np.uint64(w1)
        mantissa = np.uint64((raw >> np.uint64(12)) | np.uint64(0x3FF0000000000000))
        return mantissa.view(np.float64) - np.float64(1.0)

    return ScalarCore(threefry2x32, hash_index, unit_f32, unit_f64)


threefry2x32, _hash_index, _unit_f32, _unit_f64 = scalar_core(_inline)


# -- bulk loops: flat outputs of n elements ----------------------------------------------


@_loop
def split_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """``n`` new keys as an ``(n, 2)`` uint32 array."""
    out = np.empty((n, 2), dtype=np.uint32)
    for i in range(n):
        w0, w1 = _hash_index(k0, k1, i)
        out[i, 0] = w0
        out[i, 1] = w1
    return out


@_loop
def fold_in_pair(k0: np.uint32, k1: np.uint32, word: np.uint32) -> np.ndarray:
    """The key ``threefry2x32(key, (0, word))``."""
    out = np.empty(2, dtype=np.uint32)
    w0, w1 = threefry2x32(k0, k1, _U32(0), word)
    out[0] = w0
    out[1] = w1
    return out


@_loop
def bits32_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """32 random bits per element: the xor of the two hashed words."""
    out = np.empty(n, dtype=np.uint32)
    for i in range(n):
        w0, w1 = _hash_index(k0, k1, i)
        out[i] = w0 ^ w1
    return out


@_loop
def bits64_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """64 random bits per element: the two hashed words, high then low."""
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        w0, w1 = _hash_index(k0, k1, i)
        out[i] = (np.uint64(w0) << np.uint64(32)) | np.uint64(w1)
    return out


@_loop
def uniform32_flat(k0: np.uint32, k1: np.uint32, n: int, lo: np.float32, hi: np.float32):
    """float32 uniforms in [lo, hi): ``max(lo, u * (hi - lo) + lo)`` as in ``_uniform``."""
    out = np.empty(n, dtype=np.float32)
    scale = hi - lo
    for i in range(n):
        out[i] = max(lo, _unit_f32(k0, k1, i) * scale + lo)
    return out


@_loop
def uniform64_flat(k0: np.uint32, k1: np.uint32, n: int, lo: np.float64, hi: np.float64):
    """float64 uniforms in [lo, hi): ``max(lo, u * (hi - lo) + lo)`` as in ``_uniform``."""
    out = np.empty(n, dtype=np.float64)
    scale = hi - lo
    for i in range(n):
        out[i] = max(lo, _unit_f64(k0, k1, i) * scale + lo)
    return out


def unit(k0: np.uint32, k1: np.uint32, i: int, like: Any) -> Any:
    """Element ``i`` of ``uniform(key, dtype=type(like))`` (float32 or float64), in [0, 1).

    Compiled, Numba picks the float32 or float64 function from ``like``'s type when it
    types the call, so one loop serves both dtypes.
    """
    return (_unit_f32 if isinstance(like, np.float32) else _unit_f64)(k0, k1, i)


@overload(unit, inline="always")
def _unit_impl(k0, k1, i, like):
    draw = _unit_f32 if like == types.float32 else _unit_f64
    return lambda k0, k1, i, like: draw(k0, k1, i)


@_loop
def uniform_between_flat(k0: np.uint32, k1: np.uint32, lo: np.ndarray, hi: np.ndarray):
    """Uniforms in ``[lo[i], hi[i])`` (float32 or float64, as ``lo``): ``_uniform``'s
    ``max(lo, u * (hi - lo) + lo)`` with bounds per element."""
    out = np.empty_like(lo)
    for i in range(lo.size):
        out[i] = max(lo[i], unit(k0, k1, i, lo[i]) * (hi[i] - lo[i]) + lo[i])
    return out


# -- normal: XLA's erfinv, as random._erfinv computes it ---------------------------------


def _horner(coefficients: Sequence[float], dtype: type) -> Any:
    """A compiled ``p(t)`` by Horner's rule, coefficients highest degree first, in
    ``dtype``, as ``random._horner`` evaluates it.

    Written out as straight-line code with the constants bound as globals: a loop over
    a tuple of 23 coefficients is neither unrolled nor vectorized by LLVM (the tuple is
    indexed through a switch), which made float64 ``normal`` 4x slower.
    """
    names = [f"c{j}" for j in range(len(coefficients))]
    lines = [f"def horner(t):\n    p = {names[0]}"]
    lines += [f"    p = p * t + {name}" for name in names[1:]]
    namespace = {name: dtype(c) for name, c in zip(names, coefficients, strict=True)}
    exec("\n".join(lines) + "\n    return p\n", namespace)  # noqa: S102 (our own source)
    return _inline(namespace["horner"])


def _branches(table: tuple, dtype: type) -> list[Any]:
    return [_horner(branch[3], dtype) for branch in table]


_F32_CENTRAL, _F32_TAIL = _branches(_random_core._ERFINV_F32, np.float32)
_F64_CENTRAL, _F64_MIDDLE, _F64_TAIL = _branches(_random_core._ERFINV_F64, np.float64)
_LOG1P_NUM_F32 = _horner(_random_core._LOG1P_NUMERATOR, np.float32)
_LOG1P_DEN_F32 = _horner(_random_core._LOG1P_DENOMINATOR, np.float32)
_LOG1P_NUM_F64 = _horner(_random_core._LOG1P_NUMERATOR, np.float64)
_LOG1P_DEN_F64 = _horner(_random_core._LOG1P_DENOMINATOR, np.float64)


_LO_F32 = np.nextafter(np.float32(-1.0), np.float32(0.0))
_LO_F64 = np.nextafter(np.float64(-1.0), np.float64(0.0))


# Too big for LLVM's inliner, so inlined by Numba (in Numba IR) into each loop: a call
# per element would stop the loop from vectorizing.
_big = numba.njit(error_model="numpy", inline="always")


@_big
def log1p_f32(a: np.float32) -> np.float32:
    """XLA's CPU ``log1p`` (``random._log1p``), with numbax's vectorizable ``log``."""
    a2 = a * a
    ratio = _LOG1P_NUM_F32(a) / _LOG1P_DEN_F32(a)
    near = a + (np.float32(-0.5) * a2 + (a * a2) * ratio)
    far = _k32.log(a + np.float32(1.0))
    return near if abs(a) < _LOG1P_SMALL_F32 else far


@_big
def log1p_f64(a: np.float64) -> np.float64:
    """XLA's CPU ``log1p`` (``random._log1p``), with numbax's vectorizable ``log``."""
    a2 = a * a
    ratio = _LOG1P_NUM_F64(a) / _LOG1P_DEN_F64(a)
    near = a + (np.float64(-0.5) * a2 + (a * a2) * ratio)
    far = _k64.log(a + np.float64(1.0))
    return near if abs(a) < _LOG1P_SMALL_F64 else far


@_big
def erfinv_f32(x: np.float32) -> np.float32:
    """XLA's float32 ``erfinv`` (``random._erfinv``).  Both polynomials are computed and
    one selected, so there is no branch to stop vectorization."""
    w = -log1p_f32(x * -x)
    central = _F32_CENTRAL(w - np.float32(2.5))
    tail = _F32_TAIL(np.sqrt(w) - np.float32(3.0))
    p = central if w < np.float32(5.0) else tail
    edge = np.float32(np.inf) if x > np.float32(0.0) else np.float32(-np.inf)
    return edge if abs(x) == np.float32(1.0) else p * x


@_big
def erfinv_f64(x: np.float64) -> np.float64:
    """XLA's float64 ``erfinv`` (``random._erfinv``), three polynomials, no branch."""
    w = -log1p_f64(x * -x)
    s = np.sqrt(w)
    central = _F64_CENTRAL(w - np.float64(3.125))
    middle = _F64_MIDDLE(s - np.float64(3.25))
    tail = _F64_TAIL(s - np.float64(5.0))
    p = central if w < np.float64(6.25) else (middle if w < np.float64(16.0) else tail)
    edge = np.inf if x > 0.0 else -np.inf
    return edge if abs(x) == 1.0 else p * x


@_big
def normal_f32(k0: np.uint32, k1: np.uint32, i: int) -> np.float32:
    """Element ``i`` of float32 ``normal``: ``sqrt(2) * erfinv(u)``, ``u`` in (-1, 1)."""
    u = _unit_f32(k0, k1, i) * (np.float32(1.0) - _LO_F32) + _LO_F32
    return _SQRT2_F32 * erfinv_f32(max(_LO_F32, u))


@_big
def normal_f64(k0: np.uint32, k1: np.uint32, i: int) -> np.float64:
    """Element ``i`` of float64 ``normal``: ``sqrt(2) * erfinv(u)``, ``u`` in (-1, 1)."""
    u = _unit_f64(k0, k1, i) * (np.float64(1.0) - _LO_F64) + _LO_F64
    return _SQRT2_F64 * erfinv_f64(max(_LO_F64, u))


@_loop
def normal32_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """``n`` float32 standard normals."""
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        out[i] = normal_f32(k0, k1, i)
    return out


@_loop
def normal64_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """``n`` float64 standard normals."""
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = normal_f64(k0, k1, i)
    return out


# -- numbax.random under nx.jit ----------------------------------------------------------


def random_split(key: Any, num: Any = 2) -> np.ndarray:
    """``numbax.random.split``; compiled, ``num`` is an int or a tuple of ints."""
    return _random.split(key, num)


def random_fold_in(key: Any, data: Any) -> np.ndarray:
    """``numbax.random.fold_in``; compiled, ``data`` is an integer scalar."""
    return _random.fold_in(key, data)


def random_bits(key: Any, shape: Any = (), dtype: Any = np.uint32) -> np.ndarray:
    """``numbax.random.bits``; compiled, ``dtype`` is an unsigned NumPy type."""
    return _random.bits(key, shape, dtype)


def random_uniform(
    key: Any, shape: Any = (), dtype: Any = float, minval: Any = 0.0, maxval: Any = 1.0
) -> np.ndarray:
    """``numbax.random.uniform``; compiled, ``minval`` and ``maxval`` are numbers, or
    arrays that broadcast to ``shape``."""
    return _random.uniform(key, shape, dtype, minval, maxval)


def random_normal(key: Any, shape: Any = (), dtype: Any = float) -> np.ndarray:
    """``numbax.random.normal``; compiled, ``dtype`` is ``np.float32`` or ``np.float64``."""
    return _random.normal(key, shape, dtype)


@_inline
def _key_words(key: np.ndarray) -> tuple[np.uint32, np.uint32]:
    if key.shape[0] != 2:
        raise ValueError("numbax.random expects a PRNG key: a uint32 array of shape (2,)")
    return key[0], key[1]


def _size(shape: tuple[int, ...]) -> int:
    """The number of elements of ``shape``; compiled, negative dims raise ValueError."""
    return math.prod(shape)


@overload(_size)
def _size_impl(shape):
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


def _check_key(name: str, key: types.Type) -> None:
    if not (isinstance(key, types.Array) and key.ndim == 1 and key.dtype == types.uint32):
        raise errors.TypingError(
            f"numbax.random.{name} expects a PRNG key: a uint32 array of shape (2,); got {key}"
        )


def _shape_kind(name: str, shape: types.Type) -> str:
    """'int' or 'tuple' for a shape Numba can take; a typing error otherwise."""
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


def _dtype_of(name: str, dtype: types.Type, default: type) -> np.dtype:
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


def _shaped(flat_fn: Any, shape_kind: str, trailing: tuple[int, ...] = ()) -> Any:
    """An implementation ``(k0, k1, shape, *args)`` that fills ``flat_fn(k0, k1, n, *args)``
    and gives it ``shape`` (plus ``trailing`` dims: the 2 words of split's keys).

    Shape ``()`` gives a scalar, not a 0-d array (Numba cannot reshape to ``()``); its
    value and dtype are the plain call's."""
    if shape_kind == "int":

        @_inline
        def by_int(k0, k1, shape, *args):
            if shape < 0:
                raise ValueError("numbax.random: shape must not have negative dimensions")
            return flat_fn(k0, k1, shape, *args).reshape((shape, *trailing))

        return by_int

    if shape_kind == "scalar" and trailing:

        @_inline
        def one_key(k0, k1, shape, *args):
            return flat_fn(k0, k1, 1, *args).reshape(trailing)

        return one_key

    if shape_kind == "scalar":

        @_inline
        def by_scalar(k0, k1, shape, *args):
            return flat_fn(k0, k1, 1, *args)[0]

        return by_scalar

    @_inline
    def by_tuple(k0, k1, shape, *args):
        return flat_fn(k0, k1, _size(shape), *args).reshape(shape + trailing)

    return by_tuple


def dims_of(shape: Any) -> tuple[int, ...]:
    """``shape`` as a tuple of integers (an int ``n`` is ``(n,)``)."""
    return _random_core._canonical_shape(shape)


@overload(dims_of)
def _dims_of_impl(shape):
    kind = _shape_kind("random", shape)
    if kind == "int":
        return lambda shape: (np.int64(shape),)
    if kind == "scalar":
        return lambda shape: ()
    # one homogeneous tuple, also from a tuple of integer literals
    items = ", ".join(f"np.int64(shape[{j}])" for j in range(len(shape)))
    namespace = {"np": np}
    exec(f"def impl(shape):\n    return ({items},)\n", namespace)  # noqa: S102 (our own source)
    return namespace["impl"]


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
        return lambda x, dims, dtype: np.full(_size(dims), x).astype(dtype)
    raise errors.TypingError(f"numbax.random: expected a scalar or an array; got {x}")


@overload(random_split)
def _split_impl(key, num=2):
    _check_key("split", key)
    draw = _shaped(split_flat, _shape_kind("split", num), (2,))

    def impl(key, num=2):
        k0, k1 = _key_words(key)
        return draw(k0, k1, num)

    return impl


@overload(random_fold_in)
def _fold_in_impl(key, data):
    _check_key("fold_in", key)
    if not isinstance(data, types.Integer):
        raise errors.TypingError(f"numbax.random.fold_in takes an integer scalar; got {data}")

    def impl(key, data):
        k0, k1 = _key_words(key)
        return fold_in_pair(k0, k1, _U32(np.uint64(data) & np.uint64(0xFFFFFFFF)))

    return impl


@overload(random_bits)
def _bits_impl(key, shape=(), dtype=np.uint32):
    _check_key("bits", key)
    kind = _shape_kind("bits", shape)
    want = _dtype_of("bits", dtype, np.uint32)
    if want.kind != "u":
        raise errors.TypingError(
            f"dtype argument to `bits` must be an unsigned int dtype, got {want}"
        )
    if want.itemsize == 8:
        draw = _shaped(bits64_flat, kind)

        def impl(key, shape=(), dtype=np.uint32):
            k0, k1 = _key_words(key)
            return draw(k0, k1, shape)

        return impl
    draw = _shaped(bits32_flat, kind)
    out = want.type
    if kind == "scalar":

        def one(key, shape=(), dtype=np.uint32):
            k0, k1 = _key_words(key)
            return out(draw(k0, k1, shape))

        return one

    def impl(key, shape=(), dtype=np.uint32):
        k0, k1 = _key_words(key)
        return draw(k0, k1, shape).astype(out)

    return impl


_FLOATS = {np.dtype(np.float32): (uniform32_flat, normal32_flat),
           np.dtype(np.float64): (uniform64_flat, normal64_flat)}  # fmt: skip


def _float_kernels(name: str, dtype: types.Type) -> tuple[Any, Any, type]:
    want = _dtype_of(name, dtype, np.float64)
    if want not in _FLOATS:
        raise errors.TypingError(
            f"numbax.random.{name} under nx.jit supports float32 and float64, got {want}"
        )
    return (*_FLOATS[want], want.type)


@overload(random_uniform)
def _uniform_impl(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
    _check_key("uniform", key)
    uniform_flat, _, scalar = _float_kernels("uniform", dtype)
    kind = _shape_kind("uniform", shape)
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
            k0, k1 = _key_words(key)
            return draw(k0, k1, shape, scalar(minval), scalar(maxval))

        return impl

    def between(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
        k0, k1 = _key_words(key)
        dims = dims_of(shape)
        lo, hi = spread(minval, dims, scalar), spread(maxval, dims, scalar)
        return finish(uniform_between_flat(k0, k1, lo, hi), dims)

    return between


@overload(random_normal)
def _normal_impl(key, shape=(), dtype=float):
    _check_key("normal", key)
    _, normal_flat, _ = _float_kernels("normal", dtype)
    draw = _shaped(normal_flat, _shape_kind("normal", shape))

    def impl(key, shape=(), dtype=float):
        k0, k1 = _key_words(key)
        return draw(k0, k1, shape)

    return impl


def __getattr__(name: str) -> Any:
    """The other samplers' ``random_*`` functions, from ``random_kernels_more``, so that
    ``runtime`` finds every sampler here.  Looked up on first use: that module imports
    this one."""
    if name.startswith("random_"):
        from numbax.numba_backend import random_kernels_more

        return getattr(random_kernels_more, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
