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
# dtype -> names of the compiled (uniform, normal) loops; other floats use NumPy here.
_FLOAT_KERNELS = {
    np.dtype(np.float32): ("uniform32_flat", "normal32_flat"),
    np.dtype(np.float64): ("uniform64_flat", "normal64_flat"),
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


def _kernels():
    """The compiled loops (numbax.numba_backend.random_kernels), imported on first use:
    they import this module, and importing Numba is not needed to make a key."""
    from numbax.numba_backend import random_kernels

    return random_kernels


def split(key: ArrayLike, num: int | Sequence[int] = 2) -> NDArray[np.uint32]:
    """Split a key into ``num`` new keys (``num`` may be a shape): shape ``(*num, 2)``."""
    k = _check_key_data("split", key)
    shape = _canonical_shape(num)
    return _kernels().split_flat(k[0], k[1], math.prod(shape)).reshape((*shape, 2))


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
        return _kernels().bits64_flat(k[0], k[1], n).reshape(shape)
    raw = _kernels().bits32_flat(k[0], k[1], n).reshape(shape)
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
        kernel = getattr(_kernels(), _FLOAT_KERNELS[dtype][0])
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
    compiled loop (``numba_backend.random_kernels``), the same code ``nx.jit`` calls, so
    plain and jitted calls give the same bits.
    """
    k = _check_key_data("normal", key)
    dtype = _float_dtype("normal", dtype)
    shape = _canonical_shape(shape)
    if dtype in _FLOAT_KERNELS:
        kernel = getattr(_kernels(), _FLOAT_KERNELS[dtype][1])
        return kernel(k[0], k[1], math.prod(shape)).reshape(shape)
    lo = np.nextafter(dtype.type(-1.0), dtype.type(0.0))
    u = _uniform(k, shape, dtype, lo, dtype.type(1.0))
    work = np.promote_types(dtype, np.float32)  # XLA takes erfinv of halves in float32
    return np.asarray(dtype.type(np.sqrt(2.0)) * _erfinv(u.astype(work)).astype(dtype))


# -- XLA's erfinv (the decomposition of chlo.erf_inv), term by term in the input dtype

# Each branch: (upper bound of w or None, uses sqrt(w), shift, Horner coefficients
# highest degree first).  w = -log1p(-x * x).
_ERFINV_F32 = (
    (
        5.0,
        False,
        2.5,
        (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
         -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
    ),
    (
        None,
        True,
        3.0,
        (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682),
    ),
)  # fmt: skip
_ERFINV_F64 = (
    (
        6.25,
        False,
        3.125,
        (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
         1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
         6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
         2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
         1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
         4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
         0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
         0.24015818242558961693, 1.6536545626831027356),
    ),
    (
        16.0,
        True,
        3.25,
        (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
         1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
         2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
         6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
         0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
         -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
         3.0838856104922207635),
    ),
    (
        None,
        True,
        5.0,
        (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
         -3.789465440126737e-09, 7.61570120807834e-09, -1.496002662714924e-08,
         2.914795345090108e-08, -6.771199775845234e-08, 2.2900482228026655e-07,
         -9.9298272942317e-07, 4.526062597223154e-06, -1.968177810553167e-05,
         7.599527703001776e-05, -0.00021503011930044477, -0.00013871931833623122,
         1.0103004648645344, 4.849906401408584),
    ),
)  # fmt: skip


def _horner(coefficients: Sequence[float], t: np.ndarray) -> np.ndarray:
    scalar = t.dtype.type
    p = np.full_like(t, scalar(coefficients[0]))
    for c in coefficients[1:]:
        p = p * t + scalar(c)
    return p


# XLA's log1p on CPU (Cephes' rational approximation for |x| < sqrt(2) - 1, else
# log(1 + x)); using it instead of np.log1p brings float64 ``normal`` from 31 ulp of
# JAX to 4.  Coefficients highest degree first.
_LOG1P_NUMERATOR = (
    4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
    2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
    2.0039553499201281259648e1,
)  # fmt: skip
_LOG1P_DENOMINATOR = (
    1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
    3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1,
)  # fmt: skip


def _log1p(x: np.ndarray) -> np.ndarray:
    scalar = x.dtype.type
    x2 = x * x
    ratio = _horner(_LOG1P_NUMERATOR, x) / _horner(_LOG1P_DENOMINATOR, x)
    small = x + (scalar(-0.5) * x2 + (x * x2) * ratio)
    return np.where(np.abs(x) < scalar(np.sqrt(2.0) - 1.0), small, np.log(x + scalar(1.0)))


def _erfinv(x: np.ndarray) -> np.ndarray:
    """XLA's erfinv for float32 or float64 arrays."""
    branches = _ERFINV_F64 if x.dtype == np.float64 else _ERFINV_F32
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
