"""More samplers for :mod:`numbax.random`, following ``jax.random`` 0.10.

Why a separate module: these samplers are built only from the primitives of
:mod:`numbax.random` (keys, ``split``, raw bits, ``uniform``, ``normal``), re-doing the
steps of JAX's own implementations in NumPy so that, for the same key, they give JAX's
numbers.  ``numbax.random`` re-exports them.  For float32 and float64, the samplers that
need ``log``, ``exp``, ``erf`` or ``pow`` (``exponential``, ``truncated_normal``,
``gamma``, ``beta``, and the Gumbel noise of ``categorical`` and ``choice``) run the
compiled loops of ``numba_backend.random.kernels_more`` -- the code ``nx.jit`` runs -- so
plain and jitted calls give the same bits; other float dtypes use the NumPy code here.

Exactness against JAX (float64 results compared with ``jax_enable_x64`` on):

* bit for bit: ``randint``, ``bernoulli``, ``permutation``, and ``choice`` except with
  ``p`` and ``replace=False``;
* the same integers in our checks, but not guaranteed: ``categorical`` and ``choice``
  with ``p`` and ``replace=False`` take an argmax / top-k over Gumbel noise
  ``-log(-log(u))``, and XLA's ``log`` differs from ours in the last bits, so two
  candidates within an ulp of each other could be ordered differently;
* within 2 ulp: ``exponential`` (XLA's ``log`` inside ``log1p``);
* to rounding: ``truncated_normal`` (libm's ``erf``, not XLA's: ~1e-13 relative in float64,
  ~3e-5 in float32, the erf error amplified by ``erfinv`` in the tails) and
  ``multivariate_normal`` (LAPACK's Cholesky/SVD/eigh and NumPy's einsum, not XLA's);
* same algorithm, close but not guaranteed: ``gamma`` and ``beta`` run JAX's
  Marsaglia-Tsang rejection loop with JAX's per-element key splitting, so agree with
  JAX to rounding (~1e-12 relative in float64) unless a last-bit difference in ``log``
  or ``pow`` flips an accept/reject decision, after which that element's sample differs.

Differences from ``jax.random``: no ``out_sharding``; ``categorical`` and ``choice`` have
no ``mode`` (they use JAX's default, ``"low"``, Gumbel noise); ``choice`` accepts an int
``shape`` and checks that ``p`` is non-negative and sums to 1.

Conventions as in :mod:`numbax.random`: raw ``uint32`` keys of shape ``(2,)``; shapes may
be ints; float dtypes default to float64 and ``randint`` to int64 (JAX's defaults with
``jax_enable_x64``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from numbax.numba_backend.random import kernels_more as kernels
from numbax.random.core import (
    _canonical_shape,
    _check_key_data,
    _erfinv,
    _float_dtype,
    _log1p,
    _random_bits,
    _uniform,
    normal,
    split,
)
from numbax.random.threefry import threefry2x32

__all__ = [
    "bernoulli",
    "beta",
    "categorical",
    "choice",
    "exponential",
    "gamma",
    "multivariate_normal",
    "permutation",
    "randint",
    "truncated_normal",
]

Shape = int | Sequence[int]

_UINT_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
# float32 and float64 samples come from compiled loops (the code nx.jit runs); others from
# the NumPy code here.
_KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


# -- shape helpers


def _check_shape(name: str, shape: tuple[int, ...], *param_shapes: tuple[int, ...]) -> None:
    """JAX's check: parameters must broadcast to exactly ``shape``."""
    if not param_shapes:
        return
    try:
        result = np.broadcast_shapes(shape, *param_shapes)
    except ValueError:
        result = None
    if result != shape:
        raise ValueError(
            f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
            "the result of broadcasting the shapes must equal the shape argument, but got "
            f"result {result} for shape argument {shape}."
        )


def _optional_shape(shape: Shape | None) -> tuple[int, ...] | None:
    return None if shape is None else _canonical_shape(shape)


# -- integers


def _rem(x: np.ndarray, span: np.ndarray) -> np.ndarray:
    """XLA's unsigned remainder: ``x % 0 == x``."""
    zero = span == 0
    return np.where(zero, x, x % np.where(zero, span.dtype.type(1), span))


def _clip_to(val: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Convert integers to ``dtype``, clipping to its range instead of wrapping."""
    lo = max(np.iinfo(dtype).min, np.iinfo(val.dtype).min)
    hi = min(np.iinfo(dtype).max, np.iinfo(val.dtype).max)
    return np.clip(val, val.dtype.type(lo), val.dtype.type(hi)).astype(dtype)


def _randint(k, shape: tuple[int, ...], minval, maxval, dtype: np.dtype) -> np.ndarray:
    _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
    minval, maxval = np.asarray(minval), np.asarray(maxval)
    if not np.issubdtype(minval.dtype, np.integer):
        minval = minval.astype(np.int64)
    if not np.issubdtype(maxval.dtype, np.integer):
        maxval = maxval.astype(np.int64)
    info = np.iinfo(dtype)
    maxval_out_of_range = maxval > _clip_to(np.array(info.max, dtype), maxval.dtype)
    minval = np.broadcast_to(_clip_to(minval, dtype), shape)
    maxval = np.broadcast_to(_clip_to(maxval, dtype), shape)
    maxval_out_of_range = np.broadcast_to(maxval_out_of_range, shape)
    nbits = info.bits
    unsigned = _UINT_DTYPES[nbits]
    k1, k2 = split(k)
    higher_bits = _random_bits(k1, nbits, shape)
    lower_bits = _random_bits(k2, nbits, shape)
    span = (maxval - minval).astype(unsigned)  # wraps, as XLA's subtraction does
    span = np.where(maxval <= minval, unsigned(1), span)
    span = np.where(maxval_out_of_range & (maxval > minval), span + unsigned(1), span)
    multiplier = _rem(np.full(shape, 2 ** (nbits // 2), unsigned), span)
    multiplier = _rem(multiplier * multiplier, span)
    offset = _rem(_rem(higher_bits, span) * multiplier + _rem(lower_bits, span), span)
    return np.asarray(minval + offset.astype(dtype))


def randint(
    key: ArrayLike,
    shape: Shape,
    minval: ArrayLike,
    maxval: ArrayLike,
    dtype: DTypeLike = int,
) -> np.ndarray:
    """Uniform integers in ``[minval, maxval)`` of ``shape`` and ``dtype`` (default int64).

    Bit for bit ``jax.random.randint`` (int64 with ``jax_enable_x64``), including its
    small modulo bias, its clipping of out-of-range bounds to the dtype, returning
    ``minval`` when ``maxval <= minval``, and sampling 8- and 16-bit dtypes in 32 bits.
    """
    k = _check_key_data("randint", key)
    dtype = np.dtype(dtype)
    shape = _canonical_shape(shape)
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
    info = np.iinfo(dtype)
    if info.bits < 32:
        lo = np.asarray(minval).astype(np.int32).clip(int(info.min), int(info.max))
        hi = np.asarray(maxval).astype(np.int32).clip(int(info.min), int(info.max) + 1)
        return _randint(k, shape, lo, hi, np.dtype(np.int32)).astype(dtype)
    return _randint(k, shape, minval, maxval, dtype)


# -- simple transforms of uniform floats


def bernoulli(
    key: ArrayLike, p: ArrayLike = 0.5, shape: Shape | None = None, mode: str = "low"
) -> NDArray[np.bool_]:
    """Booleans that are True with probability ``p``; shape ``shape`` or ``p.shape``.

    Bit for bit ``jax.random.bernoulli``: ``uniform(key, shape, p.dtype) < p`` (and JAX's
    two-uniform ``mode="high"``).  ``p`` must be a float (a Python float is float64).
    """
    k = _check_key_data("bernoulli", key)
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    p = np.asarray(p)
    if not np.issubdtype(p.dtype, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {p.dtype}.")
    shape = _optional_shape(shape)
    if shape is None:
        shape = p.shape
    else:
        _check_shape("bernoulli", shape, p.shape)
    if mode == "high":
        u1, u2 = _uniform(k, (2, *shape), p.dtype, 0.0, 1.0)
        u2 = u2 * p.dtype.type(2.0 ** -np.finfo(p.dtype).nmant)
        return np.asarray(u2 < p - u1)
    return np.asarray(_uniform(k, shape, p.dtype, 0.0, 1.0) < p)


def exponential(key: ArrayLike, shape: Shape = (), dtype: DTypeLike = float) -> np.ndarray:
    """Standard exponential floats: ``-log1p(-u)`` for ``u`` uniform in ``[0, 1)``.

    JAX's algorithm with XLA's CPU ``log1p`` formula; within 2 ulp of JAX in our checks
    (XLA's ``log``, used for ``u >= sqrt(2) - 1``, differs from numbax's in the last bit).
    """
    k = _check_key_data("exponential", key)
    dtype = _float_dtype("exponential", dtype)
    shape = _canonical_shape(shape)
    if dtype in _KERNEL_FLOATS:
        flat = kernels.exponential_flat(k[0], k[1], math.prod(shape), dtype.type(0.0))
        return flat.reshape(shape)
    u = _uniform(k, shape, dtype, 0.0, 1.0)
    work = np.promote_types(dtype, np.float32)
    return np.asarray(-_log1p(-u.astype(work)).astype(dtype))


def _erf(x: np.ndarray) -> np.ndarray:
    """``erf`` element-wise in float64 (via :func:`math.erf`), cast back to x's dtype."""
    erf = np.frompyfunc(math.erf, 1, 1)
    return np.asarray(erf(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def truncated_normal(
    key: ArrayLike,
    lower: ArrayLike,
    upper: ArrayLike,
    shape: Shape | None = None,
    dtype: DTypeLike = float,
) -> np.ndarray:
    """Standard normal floats truncated to the open interval ``(lower, upper)``.

    JAX's inverse-CDF method: ``sqrt(2) * erfinv(u)`` with ``u`` uniform between
    ``erf(lower / sqrt(2))`` and ``erf(upper / sqrt(2))``, clipped into the open interval.
    Agrees with JAX to rounding, not bit for bit: ``erf`` here is C's (float32 rounded
    from float64), not XLA's polynomial, which moves the uniform's bounds by an ulp or
    so (about 1e-13 relative error in float64, 3e-5 in float32 after ``erfinv``).
    """
    k = _check_key_data("truncated_normal", key)
    dtype = _float_dtype("truncated_normal", dtype)
    shape = _optional_shape(shape)
    if shape is None:
        shape = np.broadcast_shapes(np.shape(lower), np.shape(upper))
    else:
        _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
    lower = np.asarray(lower).astype(dtype)
    upper = np.asarray(upper).astype(dtype)
    if dtype in _KERNEL_FLOATS:
        lo, hi = (np.broadcast_to(b, shape).ravel() for b in (lower, upper))
        return kernels.truncated_normal_flat(k[0], k[1], lo, hi).reshape(shape)
    sqrt2 = dtype.type(np.sqrt(2.0))
    a, b = _erf(lower / sqrt2), _erf(upper / sqrt2)
    u = _uniform(k, shape, dtype, a, b)
    work = np.promote_types(dtype, np.float32)
    out = sqrt2 * _erfinv(u.astype(work)).astype(dtype)
    inf = dtype.type(np.inf)
    return np.asarray(np.clip(out, np.nextafter(lower, inf), np.nextafter(upper, -inf)))


def _gumbel(k, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """JAX's ``gumbel`` with ``mode="low"``: ``-log(-log(u))``, ``u`` uniform in [tiny, 1)."""
    if dtype in _KERNEL_FLOATS:
        return kernels.gumbel_flat(k[0], k[1], math.prod(shape), dtype.type(0.0)).reshape(shape)
    u = _uniform(k, shape, dtype, np.finfo(dtype).tiny, 1.0)
    return -np.log(-np.log(u))


def _top_k_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest entries along the last axis, largest first; ties go
    to the lower index (as ``lax.top_k``)."""
    return np.argsort(-x, axis=-1, kind="stable")[..., :k]


def categorical(
    key: ArrayLike,
    logits: ArrayLike,
    axis: int = -1,
    shape: Shape | None = None,
    replace: bool = True,
) -> np.ndarray:
    """Category indices drawn with probabilities ``softmax(logits, axis)``.

    JAX's Gumbel-max trick (Gumbel top-k without replacement): the argmax along ``axis``
    of ``logits + gumbel``.  The Gumbel noise's ``log`` is numbax's, not XLA's, so an
    index could differ from JAX's when two perturbed logits are within an ulp; it never
    did in our checks.  ``logits`` must be floats, as in JAX.  Indices are int64, or
    int32 with ``replace=False`` (JAX's ``top_k`` indices; JAX does the same with x64).
    """
    k = _check_key_data("categorical", key)
    logits = np.asarray(logits)
    if not np.issubdtype(logits.dtype, np.floating):
        raise ValueError(
            f"dtype argument to `gumbel` must be a float dtype, got {logits.dtype} "
            "(categorical needs float logits)"
        )
    if logits.ndim == 0:
        raise ValueError("categorical needs logits with at least one dimension")
    axis = _canonical_axis(axis, logits.ndim)
    batch_shape = tuple(np.delete(logits.shape, axis))
    shape = _optional_shape(shape)
    if shape is None:
        shape = batch_shape
    else:
        _check_shape("categorical", shape, batch_shape)
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        logits_shape = list(shape[len(prefix) :])
        logits_shape.insert(axis, logits.shape[axis])
        noisy = _gumbel(k, (*prefix, *logits_shape), logits.dtype) + logits
        return np.asarray(np.argmax(noisy, axis=axis - logits.ndim)).astype(np.int64)
    noisy = logits + _gumbel(k, logits.shape, logits.dtype)
    n = math.prod(prefix)
    if n > logits.shape[axis]:
        raise ValueError(
            f"Number of samples without replacement ({n}) cannot exceed number of "
            f"categories ({logits.shape[axis]})."
        )
    indices = _top_k_indices(np.moveaxis(noisy, axis, -1), n)  # batch_shape + (n,)
    indices = np.moveaxis(indices, -1, 0).reshape(shape)
    return indices.astype(np.int32)  # JAX's top_k indices are int32, even with x64


def _canonical_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


# -- shuffles and choices


def _shuffle(k, x: np.ndarray, axis: int) -> np.ndarray:
    """JAX's shuffle: repeated stable sorts by fresh 32-bit random keys; the number of
    rounds, ``ceil(3 * log(size) / log(2**32 - 1))``, makes key collisions unlikely."""
    num_rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(num_rounds):
        k, subkey = split(k)
        sort_keys = _random_bits(subkey, 32, x.shape)
        order = np.argsort(sort_keys, axis=axis, kind="stable")
        x = np.take_along_axis(x, order, axis=axis)
    return x


def permutation(
    key: ArrayLike, x: int | ArrayLike, axis: int = 0, independent: bool = False
) -> np.ndarray:
    """A random permutation of ``arange(x)`` (int ``x``) or of ``x`` along ``axis``.

    Bit for bit ``jax.random.permutation``: JAX's sort-based shuffle (see ``_shuffle``).
    With ``independent=True`` each slice along ``axis`` is shuffled separately.
    """
    k = _check_key_data("permutation", key)
    arr = np.asarray(x)
    if arr.ndim == 0:
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(k, np.arange(int(arr), dtype=np.int64), 0)
    axis = _canonical_axis(axis, arr.ndim)
    if independent or arr.ndim == 1:
        return _shuffle(k, arr, axis)
    ind = _shuffle(k, np.arange(arr.shape[axis], dtype=np.int64), 0)
    return np.take(arr, ind, axis=axis)


def _check_p(p: ArrayLike, n_inputs: int) -> np.ndarray:
    p_arr = np.asarray(p)
    if not np.issubdtype(p_arr.dtype, np.inexact):
        p_arr = p_arr.astype(np.float64)
    if p_arr.shape != (n_inputs,):
        raise ValueError(
            "p must be None or a 1D vector with the same size as a.shape[axis]. "
            f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}."
        )
    if np.any(p_arr < 0) or np.any(np.isnan(p_arr)):
        raise ValueError("probabilities p must be non-negative")
    total = float(np.sum(p_arr, dtype=np.float64))
    tolerance = math.sqrt(np.finfo(p_arr.dtype).eps)
    if abs(total - 1.0) > tolerance:
        raise ValueError(f"probabilities p must sum to 1 (within {tolerance:.1e}); got {total}")
    return p_arr


def choice(
    key: ArrayLike,
    a: int | ArrayLike,
    shape: Shape = (),
    replace: bool = True,
    p: ArrayLike | None = None,
    axis: int = 0,
) -> np.ndarray:
    """A random sample of ``arange(a)`` (int ``a``) or of ``a``'s slices along ``axis``.

    JAX's algorithms: ``randint`` indices (with replacement), a ``permutation`` prefix
    (without), inverse-CDF ``searchsorted`` on ``cumsum(p)`` (with ``p``), or Gumbel
    top-k on ``log(p)`` (``p`` without replacement).  Bit for bit ``jax.random.choice``
    except the last, which shares :func:`categorical`'s ``log`` caveat.

    Unlike JAX, ``shape`` may be an int, and ``p`` is checked: it must be non-negative
    and sum to 1 within ``sqrt(eps)`` of its dtype (JAX silently renormalizes).
    """
    k = _check_key_data("choice", key)
    shape = _canonical_shape(shape)
    arr = np.asarray(a)
    if arr.ndim == 0:
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"a must be an integer or an array; got {a!r}")
        n_inputs = int(arr)
    else:
        axis = _canonical_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return np.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than "
            f"population (size {n_inputs}) when 'replace=False'"
        )
    if p is None:
        if replace:
            ind = randint(k, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else np.take(arr, ind, axis)
        else:
            slices = (slice(None),) * axis + (slice(n_draws),)
            result = permutation(k, n_inputs if arr.ndim == 0 else arr, axis)[slices]
    else:
        p_arr = _check_p(p, n_inputs)
        if replace:
            p_cuml = np.cumsum(p_arr)
            one = p_arr.dtype.type(1)
            r = p_cuml[-1] * (one - _uniform(k, shape, p_arr.dtype, 0.0, 1.0))
            ind = np.searchsorted(p_cuml, r).astype(np.int64)
        else:
            with np.errstate(divide="ignore"):
                log_p = kernels.log_flat(p_arr) if p_arr.dtype in _KERNEL_FLOATS else np.log(p_arr)
                g = _gumbel(k, (n_inputs,), p_arr.dtype) + log_p
            ind = _top_k_indices(g, n_draws).astype(np.int64)
        result = ind if arr.ndim == 0 else np.take(arr, ind, axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    return np.asarray(result).reshape(out_shape)


# -- multivariate normal


def multivariate_normal(
    key: ArrayLike,
    mean: ArrayLike,
    cov: ArrayLike,
    shape: Shape | None = None,
    dtype: DTypeLike | None = None,
    method: str = "cholesky",
) -> np.ndarray:
    """Normal vectors with ``mean`` (``(..., n)``) and covariance ``cov`` (``(..., n, n)``).

    JAX's method: ``mean + factor @ z`` with ``z = normal(key, shape + (n,))`` and
    ``factor`` from ``method`` (``"cholesky"``, or ``"svd"`` / ``"eigh"`` for singular
    ``cov``).  Output shape ``shape + (n,)``; ``shape`` defaults to the broadcast batch
    shape of ``mean`` and ``cov``, ``dtype`` to theirs.  Agrees with JAX to rounding:
    the factorization is LAPACK's via NumPy, not XLA's.
    """
    k = _check_key_data("multivariate_normal", key)
    mean, cov = np.asarray(mean), np.asarray(cov)
    work = np.result_type(mean, cov, np.float16)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    dtype = work if dtype is None else np.dtype(dtype)
    dtype = _float_dtype("multivariate_normal", dtype)
    if mean.ndim < 1:
        raise ValueError(
            f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"
        )
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}")
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise ValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
            f"but got cov.shape == {cov.shape}."
        )
    shape = _optional_shape(shape)
    if shape is None:
        shape = np.broadcast_shapes(mean.shape[:-1], cov.shape[:-2])
    else:
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    mean, cov = mean.astype(work), cov.astype(work)
    if method == "svd":
        u, s, _ = np.linalg.svd(cov)
        factor = u * np.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = np.linalg.eigh(cov)
        factor = v * np.sqrt(w[..., None, :])
    else:
        factor = np.linalg.cholesky(cov)
    z = normal(k, (*shape, n), dtype)
    return np.asarray(mean + np.einsum("...ij,...j->...i", factor, z))


# -- gamma and beta: JAX's Marsaglia-Tsang loop, vectorized over elements


def _split_keys(keys: np.ndarray, num: int) -> np.ndarray:
    """``split`` applied to each key of ``keys`` (shape ``(m, 2)``): shape ``(m, num, 2)``."""
    index = np.arange(num, dtype=np.uint64)
    hi = (index >> np.uint64(32)).astype(np.uint32)[None, :]
    lo = index.astype(np.uint32)[None, :]
    w0, w1 = threefry2x32(keys[:, :1], keys[:, 1:], hi, lo)
    return np.stack([w0, w1], axis=-1)


def _scalar_uniforms(keys: np.ndarray, dtype: np.dtype, minval: float = 0.0) -> np.ndarray:
    """``uniform(key, (), dtype, minval, 1)`` for each key of ``keys`` (shape ``(m, 2)``)."""
    zeros = np.zeros(len(keys), np.uint32)
    w0, w1 = threefry2x32(keys[:, 0], keys[:, 1], zeros, zeros)
    finfo = np.finfo(dtype)
    uint = _UINT_DTYPES[finfo.bits]
    if finfo.bits == 64:
        raw = (w0.astype(np.uint64) << np.uint64(32)) | w1.astype(np.uint64)
    else:
        raw = (w0 ^ w1).astype(uint)
    mantissa = (raw >> uint(max(finfo.bits, 8) - finfo.nmant)) | np.array(1.0, dtype).view(uint)
    floats = mantissa.view(dtype) - dtype.type(1.0)
    lo = dtype.type(minval)
    return np.maximum(lo, floats * (dtype.type(1.0) - lo) + lo)


def _scalar_normals(keys: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``normal(key, (), dtype)`` for each key of ``keys``."""
    lo = float(np.nextafter(dtype.type(-1.0), dtype.type(0.0)))
    u = _scalar_uniforms(keys, dtype, lo)
    work = np.promote_types(dtype, np.float32)
    return dtype.type(np.sqrt(2.0)) * _erfinv(u.astype(work)).astype(dtype)


def _gamma_one(keys: np.ndarray, alpha: np.ndarray, log_space: bool) -> np.ndarray:
    """JAX's ``_gamma_one`` for each (key, alpha) pair; alpha is 1-D of a float dtype."""
    dtype = alpha.dtype
    t = dtype.type
    boost_mask = alpha >= t(1)
    alpha_orig = alpha
    alpha = np.where(boost_mask, alpha, alpha + t(1))
    d = alpha - t(1.0 / 3.0)
    c = t(1.0 / 3.0) / np.sqrt(d)
    pair = _split_keys(keys, 2)
    key, subkey = pair[:, 0], pair[:, 1]
    big_x = np.zeros_like(alpha)
    big_v = np.ones_like(alpha)
    big_u = np.full_like(alpha, t(2))
    with np.errstate(invalid="ignore", divide="ignore"):
        while True:
            again = (big_u >= t(1) - t(0.0331) * (big_x * big_x)) & (
                np.log(big_u) >= big_x * t(0.5) + d * (t(1) - big_v + np.log(big_v))
            )
            (rows,) = np.nonzero(again)
            if rows.size == 0:
                break
            three = _split_keys(key[rows], 3)
            key[rows] = three[:, 0]
            x_key, u_key = three[:, 1], three[:, 2]
            x = np.zeros(rows.size, dtype)
            v = np.full(rows.size, t(-1))
            while True:
                (inner,) = np.nonzero(v <= t(0))
                if inner.size == 0:
                    break
                two = _split_keys(x_key[inner], 2)
                x_key[inner] = two[:, 0]
                x[inner] = _scalar_normals(two[:, 1], dtype)
                v[inner] = t(1) + x[inner] * c[rows[inner]]
            big_x[rows] = x * x
            big_v[rows] = (v * v) * v
            big_u[rows] = _scalar_uniforms(u_key, dtype)
        if log_space:
            u = _scalar_uniforms(subkey, dtype)
            log_samples = _log1p(-u.astype(np.promote_types(dtype, np.float32))).astype(dtype)
            log_boost = np.where(
                boost_mask | (log_samples == 0), t(0), log_samples * (t(1) / alpha_orig)
            )
            return (np.log(d) + np.log(big_v)) + log_boost
        samples = t(1) - _scalar_uniforms(subkey, dtype)
        boost = np.where(boost_mask, t(1), np.power(samples, t(1) / alpha_orig))
        return (d * big_v) * boost


def _gamma(k, a: np.ndarray, shape: tuple[int, ...], dtype: np.dtype, log_space: bool):
    a = np.broadcast_to(a.astype(dtype), shape).reshape(-1)
    if dtype in _KERNEL_FLOATS:
        return kernels.gamma_flat(k[0], k[1], a, log_space).reshape(shape)
    keys = _split_keys(k[None, :], a.size)[0]
    return _gamma_one(keys, a, log_space).reshape(shape)


def gamma(
    key: ArrayLike, a: ArrayLike, shape: Shape | None = None, dtype: DTypeLike = float
) -> np.ndarray:
    """Standard gamma floats with shape parameter ``a`` (unit scale).

    JAX's algorithm: one key per element (``split(key, size)``), then Marsaglia and
    Tsang's rejection loop with JAX's key splits, boosting ``a < 1`` to ``a + 1``.
    Agrees with JAX to rounding, but not guaranteed bit for bit: our ``log`` and
    ``pow`` differ from XLA's in the last bits, and where that flips an accept/reject
    test the element's sample differs entirely (rare).  Statistically exact either way.
    """
    k = _check_key_data("gamma", key)
    dtype = _float_dtype("gamma", dtype)
    a = np.asarray(a)
    shape = _optional_shape(shape)
    if shape is None:
        shape = a.shape
    else:
        _check_shape("gamma", shape, a.shape)
    return _gamma(k, a, shape, dtype, log_space=False)


def beta(
    key: ArrayLike,
    a: ArrayLike,
    b: ArrayLike,
    shape: Shape | None = None,
    dtype: DTypeLike = float,
) -> np.ndarray:
    """Beta(a, b) floats in [0, 1]: ``G_a / (G_a + G_b)`` from two log-space gammas.

    JAX's algorithm (log-space gamma draws with keys ``split(key)``, rescaled by their
    maximum before exponentiating); same exactness caveat as :func:`gamma`.
    """
    k = _check_key_data("beta", key)
    dtype = _float_dtype("beta", dtype)
    a, b = np.asarray(a), np.asarray(b)
    shape = _optional_shape(shape)
    if shape is None:
        shape = np.broadcast_shapes(a.shape, b.shape)
    else:
        _check_shape("beta", shape, a.shape, b.shape)
    if dtype in _KERNEL_FLOATS:
        a, b = (np.broadcast_to(x.astype(dtype), shape).ravel() for x in (a, b))
        return kernels.beta_flat(k[0], k[1], a, b).reshape(shape)
    key_a, key_b = split(k)
    log_a = _gamma(key_a, a, shape, dtype, log_space=True)
    log_b = _gamma(key_b, b, shape, dtype, log_space=True)
    log_max = np.maximum(log_a, log_b)
    scaled_a, scaled_b = np.exp(log_a - log_max), np.exp(log_b - log_max)
    return np.asarray(scaled_a / (scaled_a + scaled_b))
