"""Compiled loops for :mod:`numbax.random.more`'s samplers, shared by plain and jitted
calls.

Why this exists: so that a sampler gives the same numbers jitted and plain.  Where the
plain implementation would take a transcendental function from NumPy (whose SIMD
``log``/``exp`` differ from any compiled code's in the last bits), the plain call runs
the loop here instead (float32 and float64), so both paths share one implementation:
``exponential``, ``truncated_normal``, the Gumbel noise of ``categorical`` and
``choice``, ``gamma`` and ``beta``.  Integer samplers (``randint``, ``permutation``,
``choice``) are exact in either form, and ``multivariate_normal`` agrees to rounding
(Numba's LAPACK and matrix product, not NumPy's).  The samplers under ``nx.jit`` are in
:mod:`numbax.numba_backend.random.jit_more`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numba import types
from numba.extending import overload

from numbax.numba_backend.math import _kernels32 as _k32
from numbax.numba_backend.math import _kernels64 as _k64
from numbax.numba_backend.random.kernels import (
    F32,
    F64,
    FloatBodies,
    bits32_flat,
    erfinv_f32,
    erfinv_f64,
    hash_index,
    helper_jit,
    inline_jit,
    loop_jit,
    unit,
)

_F32, _F64 = np.float32, np.float64


# -- scalar helpers that pick their float32 or float64 version when compiled -----------


def _by_float(f32: Any, f64: Any) -> Any:
    """A function of one float that calls ``f32`` or ``f64`` by its type; compiled,
    Numba picks one when it types the call, so one loop serves both dtypes."""

    def op(x: Any) -> Any:
        return (f32 if isinstance(x, np.float32) else f64)(x)

    @overload(op, inline="always")
    def _impl(x):
        fn = f32 if x == types.float32 else f64
        return lambda x: fn(x)

    return op


log = _by_float(_k32.log, _k64.log)
exp = _by_float(_k32.exp, _k64.exp)
erfinv = _by_float(erfinv_f32, erfinv_f64)


def pick(v32: np.float32, v64: np.float64, like: Any) -> Any:
    """``v32`` or ``v64``, whichever has ``like``'s type: a constant in the loop's dtype."""
    return v32 if isinstance(like, np.float32) else v64


@overload(pick, inline="always")
def _pick_impl(v32, v64, like):
    if like == types.float32:
        return lambda v32, v64, like: v32
    return lambda v32, v64, like: v64


def _pair(value: float) -> tuple[np.float32, np.float64]:
    """``value`` as a float32 and a float64 constant, for :func:`pick`."""
    return _F32(value), _F64(value)


_ONE = _pair(1.0)
_SQRT2 = _pair(math.sqrt(2.0))
_INF = _pair(math.inf)
_TINY = (np.finfo(_F32).tiny, np.finfo(_F64).tiny)


# -- scalar bodies shared by the CPU loops and GPU threads ------------------------------


class MoreBodies(NamedTuple):
    """Scalar bodies of :mod:`numbax.random.more`'s samplers that a GPU thread draws too,
    for one float kind and one target (see :func:`more_bodies`), each named as its
    sampler: the GPU finds them by name."""

    exponential: Any
    """``exponential(k0, k1, i)``: element ``i`` of ``exponential(key)``."""
    gamma: Any
    """``gamma(k0, k1, alpha, log_space)``: one gamma draw (its log if ``log_space``)."""


def more_bodies(
    kind: type,
    floats: FloatBodies,
    hash_index: Any,
    log: Any,
    inline: Callable[[Callable], Any],
) -> MoreBodies:
    """The bodies of ``exponential`` and ``gamma`` for ``kind`` (np.float32 or
    np.float64), compiled with ``inline``, from one target's :func:`float_bodies`,
    ``hash_index`` and ``log``: Numba's inlining ``njit`` for the CPU loops below, or
    ``cuda.jit(device=True)`` for GPU threads (see :func:`float_bodies`)."""
    zero, one, two, half = kind(0.0), kind(1.0), kind(2.0), kind(0.5)
    third, squeeze = kind(1.0 / 3.0), kind(0.0331)  # Marsaglia and Tsang's squeeze
    unit, normal, log1p = floats.unit, floats.normal, floats.log1p

    @inline
    def exponential(k0, k1, i):  # noqa: ANN001, ANN202
        """``-log1p(-u)``, XLA's log1p."""
        return -log1p(-unit(k0, k1, i))

    @inline
    def gamma_one(k0, k1, alpha, log_space):  # noqa: ANN001, ANN202
        """JAX's ``_gamma_one``: Marsaglia and Tsang's rejection loop with JAX's key
        splits, boosting ``alpha < 1`` to ``alpha + 1`` (``numbax.random.more._gamma_one``
        element-wise)."""
        boost = alpha >= one
        d = (alpha if boost else alpha + one) - third
        c = third / kind(math.sqrt(d))
        key0, key1 = hash_index(k0, k1, 0)
        sub0, sub1 = hash_index(k0, k1, 1)
        big_x, big_v, big_u = zero, one, two
        while big_u >= one - squeeze * (big_x * big_x) and log(big_u) >= (
            big_x * half + d * (one - big_v + log(big_v))
        ):
            x_key0, x_key1 = hash_index(key0, key1, 1)
            u_key0, u_key1 = hash_index(key0, key1, 2)
            key0, key1 = hash_index(key0, key1, 0)
            x, v = zero, -one
            while v <= zero:
                draw0, draw1 = hash_index(x_key0, x_key1, 1)
                x_key0, x_key1 = hash_index(x_key0, x_key1, 0)
                x = normal(draw0, draw1, 0)
                v = one + x * c
            big_x, big_v, big_u = x * x, (v * v) * v, unit(u_key0, u_key1, 0)
        if log_space:
            log_sample = log1p(-unit(sub0, sub1, 0))
            log_boost = zero if boost or log_sample == zero else log_sample * (one / alpha)
            return (log(d) + log(big_v)) + log_boost
        sample = one - unit(sub0, sub1, 0)
        return (d * big_v) * (one if boost else sample ** (one / alpha))

    return MoreBodies(exponential, gamma_one)


_M32 = more_bodies(np.float32, F32, hash_index, _k32.log, inline_jit)
_M64 = more_bodies(np.float64, F64, hash_index, _k64.log, inline_jit)
_exponential_f32, _exponential_f64 = _M32.exponential, _M64.exponential
_gamma_f32, _gamma_f64 = _M32.gamma, _M64.gamma


def gamma_one(k0: np.uint32, k1: np.uint32, alpha: Any, log_space: bool) -> Any:
    """One gamma draw of ``alpha``'s dtype; compiled, the float32 or float64 body."""
    return (_gamma_f32 if isinstance(alpha, np.float32) else _gamma_f64)(k0, k1, alpha, log_space)


@overload(gamma_one, inline="always")
def _gamma_one_impl(k0, k1, alpha, log_space):
    draw = _gamma_f32 if alpha == types.float32 else _gamma_f64
    return lambda k0, k1, alpha, log_space: draw(k0, k1, alpha, log_space)


def exponential_at(k0: np.uint32, k1: np.uint32, i: int, like: Any) -> Any:
    """Element ``i`` of ``exponential(key, dtype=type(like))``."""
    return (_exponential_f32 if isinstance(like, np.float32) else _exponential_f64)(k0, k1, i)


@overload(exponential_at, inline="always")
def _exponential_at_impl(k0, k1, i, like):
    draw = _exponential_f32 if like == types.float32 else _exponential_f64
    return lambda k0, k1, i, like: draw(k0, k1, i)


# -- float loops shared by plain and jitted calls ----------------------------------------


@loop_jit
def exponential_flat(k0: np.uint32, k1: np.uint32, n: int, zero: Any) -> np.ndarray:
    """``n`` standard exponentials of ``zero``'s dtype: ``-log1p(-u)``, XLA's log1p."""
    out = np.full(n, zero)
    for i in range(n):
        out[i] = exponential_at(k0, k1, i, zero)
    return out


@loop_jit
def truncated_normal_flat(
    k0: np.uint32, k1: np.uint32, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """Normals truncated to ``(lower[i], upper[i])``, as ``numbax.random.more.truncated_normal``:
    ``sqrt(2) * erfinv(u)``, ``u`` uniform between the bounds' ``erf`` (C's, in float64),
    clipped into the open interval."""
    out = np.empty_like(lower)
    for i in range(lower.size):
        lo, hi = lower[i], upper[i]
        sqrt2 = pick(_SQRT2[0], _SQRT2[1], lo)
        inf = pick(_INF[0], _INF[1], lo)
        a = pick(_F32(math.erf(_F64(lo / sqrt2))), math.erf(_F64(lo / sqrt2)), lo)
        b = pick(_F32(math.erf(_F64(hi / sqrt2))), math.erf(_F64(hi / sqrt2)), lo)
        x = sqrt2 * erfinv(max(a, unit(k0, k1, i, lo) * (b - a) + a))
        out[i] = min(max(x, np.nextafter(lo, inf)), np.nextafter(hi, -inf))
    return out


@loop_jit
def gumbel_flat(k0: np.uint32, k1: np.uint32, n: int, zero: Any) -> np.ndarray:
    """``n`` Gumbel variates (JAX's ``mode="low"``): ``-log(-log(u))``, u in [tiny, 1)."""
    out = np.full(n, zero)
    tiny = pick(_TINY[0], _TINY[1], zero)
    for i in range(n):
        u = max(tiny, unit(k0, k1, i, zero) * (pick(_ONE[0], _ONE[1], zero) - tiny) + tiny)
        out[i] = -log(-log(u))
    return out


@loop_jit
def log_flat(x: np.ndarray) -> np.ndarray:
    """``log`` of each element (``choice``'s log-probabilities)."""
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = log(x[i])
    return out


@loop_jit
def gamma_flat(k0: np.uint32, k1: np.uint32, alpha: np.ndarray, log_space: bool) -> np.ndarray:
    """Gamma(``alpha[i]``) draws (their logs if ``log_space``), key ``split(key, n)[i]``."""
    out = np.empty_like(alpha)
    for i in range(alpha.size):
        e0, e1 = hash_index(k0, k1, i)
        out[i] = gamma_one(e0, e1, alpha[i], log_space)
    return out


@loop_jit
def beta_flat(k0: np.uint32, k1: np.uint32, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Beta(``a[i]``, ``b[i]``): two log-space gammas (keys ``split(key)``), rescaled by
    their maximum before exponentiating, as JAX does."""
    ka0, ka1 = hash_index(k0, k1, 0)
    kb0, kb1 = hash_index(k0, k1, 1)
    log_a = gamma_flat(ka0, ka1, a, True)
    log_b = gamma_flat(kb0, kb1, b, True)
    out = np.empty_like(a)
    for i in range(a.size):
        top = max(log_a[i], log_b[i])
        scaled_a, scaled_b = exp(log_a[i] - top), exp(log_b[i] - top)
        out[i] = scaled_a / (scaled_a + scaled_b)
    return out


# -- integer loops ------------------------------------------------------------------------


@helper_jit
def _rem(x: np.uint64, span: np.uint64) -> np.uint64:
    """XLA's unsigned remainder: ``x % 0 == x``."""
    return x if span == 0 else x % span


@loop_jit
def randint_flat(
    lo: np.ndarray,
    hi: np.ndarray,
    out_of_range: np.ndarray,
    higher: np.ndarray,
    lower: np.ndarray,
    out: np.ndarray,
    mask: np.uint64,
) -> None:
    """``numbax.random.more._randint``'s arithmetic per element, into ``out``: bounds already in
    the output dtype, random words ``higher``/``lower`` of ``nbits`` bits.  The unsigned
    arithmetic runs in uint64 and is cut to ``nbits`` with ``mask``."""
    half = np.uint64(65536) if mask == np.uint64(0xFFFFFFFF) else np.uint64(2**32)
    for i in range(out.size):
        span = np.uint64(hi[i] - lo[i]) & mask
        if hi[i] <= lo[i]:
            span = np.uint64(1)
        elif out_of_range[i]:
            span = (span + np.uint64(1)) & mask
        multiplier = _rem(half & mask, span)
        multiplier = _rem((multiplier * multiplier) & mask, span)
        mixed = _rem(np.uint64(higher[i]), span) * multiplier + _rem(np.uint64(lower[i]), span)
        out[i] = np.uint64(lo[i]) + _rem(mixed & mask, span)


@loop_jit
def shuffle_flat(k0: np.uint32, k1: np.uint32, x: np.ndarray, length: int, inner: int) -> None:
    """JAX's shuffle, in place: ``x`` is a C-ordered array flattened, whose shuffled axis
    has ``length`` entries and ``inner`` elements per entry after it.  Each round sorts
    every lane stably by fresh 32-bit keys laid out like ``x``."""
    n = x.size
    rounds = int(math.ceil(3 * math.log(max(1, n)) / math.log(4294967295.0)))
    lane = length * inner
    outer = n // lane if lane else 0
    lane_keys = np.empty(length, np.uint32)
    lane_values = np.empty(length, x.dtype)
    for _ in range(rounds):
        s0, s1 = hash_index(k0, k1, 1)
        k0, k1 = hash_index(k0, k1, 0)
        sort_keys = bits32_flat(s0, s1, n)
        for o in range(outer):
            for r in range(inner):
                base = o * lane + r
                for j in range(length):
                    lane_keys[j] = sort_keys[base + j * inner]
                    lane_values[j] = x[base + j * inner]
                order = np.argsort(lane_keys, kind="mergesort")
                for j in range(length):
                    x[base + j * inner] = lane_values[order[j]]
