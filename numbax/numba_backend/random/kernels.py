"""Compiled loops behind :mod:`numbax.random`, shared by its plain and jitted calls.

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

Under ``nx.jit``, numbax.random's functions compile to calls of these same loops (see
``random_jit``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numba
import numpy as np
from numba import types
from numba.extending import overload

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.generated import define
from numbax.numba_backend.math import _kernels32 as _k32
from numbax.numba_backend.math import _kernels64 as _k64
from numbax.numba_backend.random.tables import (
    ERFINV_F32,
    ERFINV_F64,
    LOG1P_DENOMINATOR,
    LOG1P_NUMERATOR,
)

# ``error_model="numpy"``: a float division must not check for zero (and raise), or
# the loop branches per element and does not vectorize.  Small helpers, which LLVM
# inlines into their callers, and the bulk loops; both kept in numbax's runtime cache:
helper_jit = runtime_cache.njit(error_model="numpy")
loop_jit = runtime_cache.njit(error_model="numpy")

_U32 = np.uint32
_PARITY = np.uint32(0x1BD11BDA)


# -- Threefry-2x32 and bits-to-float on scalars --------------------------------------------


class ScalarCore(NamedTuple):
    """The per-element generator, compiled for one target (see :func:`scalar_core`)."""

    threefry2x32: Any
    hash_index: Any
    fold_in: Any
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
    def fold_in(k0: np.uint32, k1: np.uint32, data: int) -> tuple[np.uint32, np.uint32]:
        """The key ``threefry2x32(key, (0, data mod 2**32))``."""
        word = _U32(np.uint64(data) & np.uint64(0xFFFFFFFF))
        return threefry2x32(k0, k1, _U32(0), word)

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

    return ScalarCore(threefry2x32, hash_index, fold_in, unit_f32, unit_f64)


_CORE = scalar_core(helper_jit)
threefry2x32, hash_index, _fold_in, _unit_f32, _unit_f64 = _CORE


# -- bulk loops: flat outputs of n elements ----------------------------------------------


@loop_jit
def split_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """``n`` new keys as an ``(n, 2)`` uint32 array."""
    out = np.empty((n, 2), dtype=np.uint32)
    for i in range(n):
        w0, w1 = hash_index(k0, k1, i)
        out[i, 0] = w0
        out[i, 1] = w1
    return out


@loop_jit
def fold_in_pair(k0: np.uint32, k1: np.uint32, data: int) -> np.ndarray:
    """The key ``fold_in(key, data)`` as an array."""
    out = np.empty(2, dtype=np.uint32)
    w0, w1 = _fold_in(k0, k1, data)
    out[0] = w0
    out[1] = w1
    return out


@loop_jit
def bits32_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """32 random bits per element: the xor of the two hashed words."""
    out = np.empty(n, dtype=np.uint32)
    for i in range(n):
        w0, w1 = hash_index(k0, k1, i)
        out[i] = w0 ^ w1
    return out


@loop_jit
def bits64_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """64 random bits per element: the two hashed words, high then low."""
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        w0, w1 = hash_index(k0, k1, i)
        out[i] = (np.uint64(w0) << np.uint64(32)) | np.uint64(w1)
    return out


# -- the float samplers' scalar bodies, one source for the CPU loops and GPU threads --------


def horner(
    coefficients: Sequence[float], dtype: type, jit: Callable[[Callable], Any] = helper_jit
) -> Any:
    """A compiled ``p(t)`` by Horner's rule, coefficients highest degree first, in
    ``dtype``, as ``numbax.random.core._horner`` evaluates it (``jit``: for the CPU, or
    ``cuda.jit(device=True)``).

    Written out as straight-line code with the constants bound as globals: a loop over
    a tuple of 23 coefficients is neither unrolled nor vectorized by LLVM (the tuple is
    indexed through a switch), which made float64 ``normal`` 4x slower.
    """
    names = [f"c{j}" for j in range(len(coefficients))]
    lines = [f"def horner(t):\n    p = {names[0]}"]
    lines += [f"    p = p * t + {name}" for name in names[1:]]
    constants = {name: dtype(c) for name, c in zip(names, coefficients, strict=True)}
    source = "\n".join(lines) + "\n    return p\n"
    return jit(define(source, constants, "random horner", "horner"))


# Too big for LLVM's inliner, so inlined by Numba (in Numba IR) into each loop: a call
# per element would stop the loop from vectorizing.
inline_jit = numba.njit(error_model="numpy", inline="always")


class FloatBodies(NamedTuple):
    """Element ``i`` of the float samplers of one float kind, compiled for one target
    (see :func:`float_bodies`); a sampler's body has the sampler's name."""

    unit: Any
    """``unit(k0, k1, i)``: element ``i`` of ``uniform(key)``, in [0, 1)."""
    log1p: Any
    erfinv: Any
    normal: Any
    """``normal(k0, k1, i)``: element ``i`` of ``normal(key)``."""
    uniform: Any
    """``uniform(k0, k1, i, lo, hi)``: element ``i`` of ``uniform(key, minval=lo, maxval=hi)``."""


def float_bodies(
    kind: type,
    core: ScalarCore,
    log: Any,
    jit: Callable[[Callable], Any],
    inline: Callable[[Callable], Any],
) -> FloatBodies:
    """The scalar bodies of ``uniform`` and ``normal`` (with XLA's ``log1p`` and
    ``erfinv``) for ``kind`` (np.float32 or np.float64), compiled with ``jit`` and, for
    those a CPU loop must inline to vectorize, ``inline``: the CPU's below, or
    ``cuda.jit(device=True)`` for both in GPU kernels, with that target's ``core`` and
    ``log`` (numbax's vectorizable kernel on the CPU, libdevice's on a GPU).

    Why a factory: written once, these are the CPU loops' and the GPU threads' draws,
    operation for operation (each polynomial is selected, not branched to, so that a
    CPU loop vectorizes).
    """
    unit = core.unit_f32 if kind is np.float32 else core.unit_f64
    num, den = (horner(c, kind, jit) for c in (LOG1P_NUMERATOR, LOG1P_DENOMINATOR))
    small, sqrt2 = kind(np.sqrt(2.0) - 1.0), kind(np.sqrt(2.0))
    lo = np.nextafter(kind(-1.0), kind(0.0))
    one, edge_up, edge_down = kind(1.0), kind(np.inf), kind(-np.inf)

    @inline
    def log1p(a):  # noqa: ANN001, ANN202
        """XLA's CPU ``log1p`` (``numbax.random.core._log1p``), with ``log``."""
        a2 = a * a
        ratio = num(a) / den(a)
        near = a + (kind(-0.5) * a2 + (a * a2) * ratio)
        far = log(a + one)
        return near if abs(a) < small else far

    if kind is np.float32:
        central, tail = (horner(branch[3], kind, jit) for branch in ERFINV_F32)

        @inline
        def erfinv(x):  # noqa: ANN001, ANN202
            """XLA's float32 ``erfinv`` (``numbax.random.core._erfinv``), two polynomials."""
            w = -log1p(x * -x)
            p_central = central(w - kind(2.5))
            p_tail = tail(kind(math.sqrt(w)) - kind(3.0))
            p = p_central if w < kind(5.0) else p_tail
            edge = edge_up if x > kind(0.0) else edge_down
            return edge if abs(x) == one else p * x

    else:
        central, middle, tail = (horner(branch[3], kind, jit) for branch in ERFINV_F64)

        @inline
        def erfinv(x):  # noqa: ANN001, ANN202
            """XLA's float64 ``erfinv`` (``numbax.random.core._erfinv``), three polynomials."""
            w = -log1p(x * -x)
            s = kind(math.sqrt(w))
            p_central = central(w - kind(3.125))
            p_middle = middle(s - kind(3.25))
            p_tail = tail(s - kind(5.0))
            p = p_central if w < kind(6.25) else (p_middle if w < kind(16.0) else p_tail)
            edge = edge_up if x > kind(0.0) else edge_down
            return edge if abs(x) == one else p * x

    @inline
    def normal(k0, k1, i):  # noqa: ANN001, ANN202
        """``sqrt(2) * erfinv(u)``, ``u`` uniform in (-1, 1)."""
        u = unit(k0, k1, i) * (one - lo) + lo
        return sqrt2 * erfinv(max(lo, u))

    @inline
    def uniform(k0, k1, i, lo, hi):  # noqa: ANN001, ANN202
        """``max(lo, u * (hi - lo) + lo)``, as ``numbax.random.core._uniform``."""
        return max(lo, unit(k0, k1, i) * (hi - lo) + lo)

    return FloatBodies(unit, log1p, erfinv, normal, uniform)


F32 = float_bodies(np.float32, _CORE, _k32.log, helper_jit, inline_jit)
F64 = float_bodies(np.float64, _CORE, _k64.log, helper_jit, inline_jit)
log1p_f32, erfinv_f32, normal_f32 = F32.log1p, F32.erfinv, F32.normal
log1p_f64, erfinv_f64, normal_f64 = F64.log1p, F64.erfinv, F64.normal
_uniform_f32, _uniform_f64 = F32.uniform, F64.uniform


# -- bulk loops of floats: flat outputs of n elements --------------------------------------


@loop_jit
def uniform32_flat(k0: np.uint32, k1: np.uint32, n: int, lo: np.float32, hi: np.float32):
    """float32 uniforms in [lo, hi): ``max(lo, u * (hi - lo) + lo)`` as in ``_uniform``."""
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        out[i] = _uniform_f32(k0, k1, i, lo, hi)
    return out


@loop_jit
def uniform64_flat(k0: np.uint32, k1: np.uint32, n: int, lo: np.float64, hi: np.float64):
    """float64 uniforms in [lo, hi): ``max(lo, u * (hi - lo) + lo)`` as in ``_uniform``."""
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = _uniform_f64(k0, k1, i, lo, hi)
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


def uniform_at(k0: np.uint32, k1: np.uint32, i: int, lo: Any, hi: Any) -> Any:
    """Element ``i`` of ``uniform(key, dtype=type(lo), minval=lo, maxval=hi)``; compiled,
    the float32 or float64 body by ``lo``'s type."""
    return (_uniform_f32 if isinstance(lo, np.float32) else _uniform_f64)(k0, k1, i, lo, hi)


@overload(uniform_at, inline="always")
def _uniform_at_impl(k0, k1, i, lo, hi):
    draw = _uniform_f32 if lo == types.float32 else _uniform_f64
    return lambda k0, k1, i, lo, hi: draw(k0, k1, i, lo, hi)


@loop_jit
def uniform_between_flat(k0: np.uint32, k1: np.uint32, lo: np.ndarray, hi: np.ndarray):
    """Uniforms in ``[lo[i], hi[i])`` (float32 or float64, as ``lo``): ``_uniform``'s
    ``max(lo, u * (hi - lo) + lo)`` with bounds per element."""
    out = np.empty_like(lo)
    for i in range(lo.size):
        out[i] = uniform_at(k0, k1, i, lo[i], hi[i])
    return out


@loop_jit
def normal32_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """``n`` float32 standard normals."""
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        out[i] = normal_f32(k0, k1, i)
    return out


@loop_jit
def normal64_flat(k0: np.uint32, k1: np.uint32, n: int) -> np.ndarray:
    """``n`` float64 standard normals."""
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        out[i] = normal_f64(k0, k1, i)
    return out
