"""Random numbers following ``jax.random``: explicit keys, no global state.

Why this design:

* **Counter-based.**  Every value is a pure function of a key and its position, hashed
  with Threefry-2x32 (:mod:`numbax.random.threefry`).  There is no hidden generator state to
  thread through transformed, vectorized or parallel code, and any slice of a stream can
  be computed independently of the rest.
* **Explicit keys.**  A key is a plain ``uint32`` array of shape ``(2,)``.  ``split`` and
  ``fold_in`` derive statistically independent keys; reusing a key reuses its numbers.
* **JAX-compatible numbers.**  For the same seed, shape and dtype the results are those
  of JAX's default implementation (``threefry2x32`` with ``jax_threefry_partitionable``
  on, JAX's default since 0.5); float64 results equal JAX's with ``jax_enable_x64``.
  ``key``, ``split``, ``fold_in``, ``bits`` and ``uniform`` match bit for bit.
  ``normal`` uses XLA's inverse-error-function polynomials and ``log1p`` formula; it
  matches within a few ulp, as XLA's ``log`` and NumPy's differ (see :func:`normal`).

Differences from ``jax.random``:

* ``key`` returns raw ``uint32`` key data, like ``PRNGKey``, not a typed key array;
  ``key_data`` and ``wrap_key_data`` are validating identities.
* ``dtype`` defaults to float64 (NumPy's default), not float32 as in JAX without x64;
  ``bits`` defaults to uint32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from numbax.numba_backend.random import kernels as kernels
from numbax.numba_backend.random.tables import (
    ERFINV_F32,
    ERFINV_F64,
    LOG1P_DENOMINATOR,
    LOG1P_NUMERATOR,
)
from numbax.random.threefry import threefry2x32

__all__ = [
    "PRNGKey",
    "bits",
    "fold_in",
    "key",
    "key_data",
    "normal",
    "split",
    "uniform",
    "wrap_key_data",
]

Shape = int | Sequence[int]

_KEY_SHAPE = (2,)
_UINT32_MASK = 0xFFFFFFFF
_UINT_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# dtype -> the compiled (uniform, normal) loops; other floats use NumPy here.
_FLOAT_KERNELS = {
    np.dtype(np.float32): (kernels.uniform32_flat, kernels.normal32_flat),
    np.dtype(np.float64): (kernels.uniform64_flat, kernels.normal64_flat),
}


# -- keys


def _check_key_data(name: str, data: object, *, batched: bool = False) -> NDArray[np.uint32]:
    """Return ``data`` if it is uint32 key data (shape ``(2,)``, or ``(..., 2)`` if batched)."""
    if not (hasattr(data, "dtype") and hasattr(data, "shape")):
        raise TypeError(
            f"{name} expects a PRNG key: a uint32 array of shape (2,) from "
            f"numbax.random.key; got {type(data).__name__} {data!r}"
        )
    data = np.asarray(data)
    if data.dtype != np.uint32:
        raise TypeError(
            f"{name} got invalid PRNG key data: expected dtype uint32, got {data.dtype}"
        )
    ok = data.shape[-1:] == _KEY_SHAPE if batched else data.shape == _KEY_SHAPE
    if not ok:
        want = "(..., 2)" if batched else "(2,); use numbax.vmap for batches of keys"
        raise TypeError(
            f"{name} got invalid PRNG key data: expected shape {want}, got {data.shape}"
        )
    return data


def _as_integer(name: str, value: object) -> int:
    if np.ndim(value) != 0 or not np.issubdtype(np.asarray(value).dtype, np.integer):
        raise TypeError(f"{name} must be an integer scalar; got {value!r}")
    return int(value)


def PRNGKey(seed: int | ArrayLike) -> NDArray[np.uint32]:  # noqa: N802 (JAX's name)
    """Make a key from an integer seed: ``[high 32 bits, low 32 bits]`` of ``seed``.

    ``seed`` is read as a 64-bit integer (two's complement when negative), as JAX does
    with ``jax_enable_x64``; without x64 JAX agrees for seeds in ``[0, 2**31)``.
    """
    seed = _as_integer("PRNG key seed", seed)
    if not -(2**63) <= seed < 2**64:
        raise OverflowError(f"PRNG key seed {seed} does not fit in 64 bits")
    return np.array([(seed >> 32) & _UINT32_MASK, seed & _UINT32_MASK], dtype=np.uint32)


def key(seed: int | ArrayLike) -> NDArray[np.uint32]:
    """Make a key from an integer seed; the same raw uint32 key data as :func:`PRNGKey`.

    (JAX's ``key`` returns a typed key array; numbax keys are always raw key data.)
    """
    return PRNGKey(seed)


def key_data(keys: ArrayLike) -> NDArray[np.uint32]:
    """Return the uint32 data of a key or an array of keys (the identity in numbax)."""
    return _check_key_data("key_data", keys, batched=True)


def wrap_key_data(key_bits_array: ArrayLike) -> NDArray[np.uint32]:
    """Check that ``key_bits_array`` is uint32 key data of shape ``(..., 2)`` and return it."""
    return _check_key_data("wrap_key_data", key_bits_array, batched=True)


# -- hashing counters


def _canonical_shape(shape: Shape) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if not all(isinstance(d, int | np.integer) and d >= 0 for d in dims):
        raise TypeError(f"shape must be a non-negative integer or a tuple of them; got {shape!r}")
    return tuple(int(d) for d in dims)


def split(key: ArrayLike, num: int | Sequence[int] = 2) -> NDArray[np.uint32]:
    """Split a key into ``num`` new keys (``num`` may be a shape): shape ``(*num, 2)``."""
    k = _check_key_data("split", key)
    shape = _canonical_shape(num)
    return kernels.split_flat(k[0], k[1], math.prod(shape)).reshape((*shape, 2))


def fold_in(key: ArrayLike, data: int | ArrayLike) -> NDArray[np.uint32]:
    """Derive a new key from ``key`` and an integer ``data`` (taken modulo 2**32)."""
    k = _check_key_data("fold_in", key)
    if np.ndim(data) != 0:
        raise TypeError(
            f"fold_in accepts a scalar, but was given an array of shape {np.shape(data)} "
            "!= (); use numbax.vmap for batching"
        )
    word = np.array([_as_integer("fold_in data", data) & _UINT32_MASK], dtype=np.uint32)
    w0, w1 = threefry2x32(k[:1], k[1:], np.zeros(1, np.uint32), word)
    return np.concatenate([w0, w1])


def _random_bits(k: NDArray[np.uint32], bit_width: int, shape: tuple[int, ...]) -> np.ndarray:
    """64 bits: the two hashed words, high then low; fewer: their xor, truncated."""
    n = math.prod(shape)
    if bit_width == 64:
        return kernels.bits64_flat(k[0], k[1], n).reshape(shape)
    raw = kernels.bits32_flat(k[0], k[1], n).reshape(shape)
    return raw.astype(_UINT_DTYPES[bit_width], copy=False)


def bits(key: ArrayLike, shape: Shape = (), dtype: DTypeLike = np.uint32) -> np.ndarray:
    """Uniformly random bits as unsigned integers of ``dtype`` (default uint32)."""
    k = _check_key_data("bits", key)
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.unsignedinteger):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
    return _random_bits(k, dtype.itemsize * 8, _canonical_shape(shape))


# -- floats


def _float_dtype(name: str, dtype: DTypeLike) -> np.dtype:
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dtype}")
    return dtype


def _uniform(k, shape, dtype: np.dtype, minval, maxval) -> np.ndarray:
    """JAX's recipe: random mantissa bits under the exponent of 1.0 give a float in
    [1, 2); subtract 1, scale and shift, and clamp below at ``minval``."""
    if dtype in _FLOAT_KERNELS and np.ndim(minval) == 0 and np.ndim(maxval) == 0:
        kernel = _FLOAT_KERNELS[dtype][0]
        lo, hi = (dtype.type(np.asarray(v).astype(dtype)) for v in (minval, maxval))
        return kernel(k[0], k[1], math.prod(shape), lo, hi).reshape(shape)
    finfo = np.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    rng_bits = max(nbits, 8)
    uint = _UINT_DTYPES[nbits]
    raw = _random_bits(k, rng_bits, shape).astype(uint, copy=False)
    mantissa = (raw >> uint(rng_bits - nmant)) | np.array(1.0, dtype).view(uint)
    floats = mantissa.view(dtype) - dtype.type(1.0)
    minval = np.asarray(minval).astype(dtype)
    maxval = np.asarray(maxval).astype(dtype)
    out = np.asarray(np.maximum(minval, floats * (maxval - minval) + minval))
    if out.shape != shape:
        raise ValueError(
            f"uniform: minval and maxval must broadcast to shape {shape}, "
            f"but the result has shape {out.shape}"
        )
    return out


def uniform(
    key: ArrayLike,
    shape: Shape = (),
    dtype: DTypeLike = float,
    minval: ArrayLike = 0.0,
    maxval: ArrayLike = 1.0,
) -> np.ndarray:
    """Uniform floats in ``[minval, maxval)`` of ``shape`` and ``dtype`` (default float64).

    Bit for bit ``jax.random.uniform`` (float64 with ``jax_enable_x64``).
    """
    k = _check_key_data("uniform", key)
    dtype = _float_dtype("uniform", dtype)
    return _uniform(k, _canonical_shape(shape), dtype, minval, maxval)


def normal(key: ArrayLike, shape: Shape = (), dtype: DTypeLike = float) -> np.ndarray:
    """Standard normal floats of ``shape`` and ``dtype`` (default float64).

    As in JAX: ``sqrt(2) * erfinv(u)`` with ``u`` uniform in the open interval (-1, 1)
    and XLA's polynomial ``erfinv`` (M. Giles, "Approximating the erfinv function").
    Not always bit for bit: XLA's CPU ``log`` differs from ours (numbax's vectorized
    ``log`` kernel) in the last bits, so about 4% of float32 values differ from JAX's by
    up to 3 ulp, and about 8% of float64 values by up to 4 ulp (float16, which still
    uses NumPy's ``log``, matched exactly in our checks).  float32 and float64 run as one
    compiled loop (``numba_backend.random.kernels``), the same code ``nx.jit`` calls, so
    plain and jitted calls give the same bits.
    """
    k = _check_key_data("normal", key)
    dtype = _float_dtype("normal", dtype)
    shape = _canonical_shape(shape)
    if dtype in _FLOAT_KERNELS:
        kernel = _FLOAT_KERNELS[dtype][1]
        return kernel(k[0], k[1], math.prod(shape)).reshape(shape)
    lo = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = _uniform(k, shape, dtype, lo, dtype.type(1.0))
    work = np.promote_types(dtype, np.float32)  # XLA takes erfinv of halves in float32
    return np.asarray(dtype.type(np.sqrt(2.0)) * _erfinv(u.astype(work)).astype(dtype))


# -- XLA's erfinv and log1p, term by term in the input dtype (numba_backend.random.tables)


def _horner(coefficients: Sequence[float], t: np.ndarray) -> np.ndarray:
    scalar = t.dtype.type
    p = np.full_like(t, scalar(coefficients[0]))
    for c in coefficients[1:]:
        p = p * t + scalar(c)
    return p


def _log1p(x: np.ndarray) -> np.ndarray:
    """XLA's log1p on CPU (Cephes' rational approximation for ``|x| < sqrt(2) - 1``, else
    ``log(1 + x)``); using it instead of ``np.log1p`` brings float64 ``normal`` from 31
    ulp of JAX to 4."""
    scalar = x.dtype.type
    x2 = x * x
    ratio = _horner(LOG1P_NUMERATOR, x) / _horner(LOG1P_DENOMINATOR, x)
    small = x + (scalar(-0.5) * x2 + (x * x2) * ratio)
    return np.where(np.abs(x) < scalar(np.sqrt(2.0) - 1.0), small, np.log(x + scalar(1.0)))


def _erfinv(x: np.ndarray) -> np.ndarray:
    """XLA's erfinv for float32 or float64 arrays."""
    branches = ERFINV_F64 if x.dtype == np.float64 else ERFINV_F32
    scalar = x.dtype.type
    w = -_log1p(x * -x)
    p = np.empty_like(x)
    todo = np.ones(x.shape, dtype=bool)
    for bound, use_sqrt, shift, coefficients in branches:
        here = todo if bound is None else todo & (w < scalar(bound))
        t = np.sqrt(w[here]) if use_sqrt else w[here]
        p[here] = _horner(coefficients, t - scalar(shift))
        todo &= ~here
    return np.where(np.abs(x) == scalar(1.0), np.copysign(scalar(np.inf), x), p * x)
