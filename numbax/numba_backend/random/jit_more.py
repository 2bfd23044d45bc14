"""numbax.random's other samplers under ``nx.jit``: their Numba implementations.

As in :mod:`numbax.numba_backend.random.jit` (which says how they are registered): each
is an ``overload`` typer that checks the argument types and returns the implementation,
which draws from the compiled loops the plain call runs too
(:mod:`numbax.numba_backend.random.kernels_more`), so jitted and plain calls give the
same numbers.  Arguments that decide an output's rank or an algorithm (``axis``,
``replace``, ``independent``, ``mode``, ``method``) must be constants in the jitted
source.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import types
from numba.core import errors

from numbax.numba_backend.generated import define
from numbax.numba_backend.random.jit import (
    JitImplementation,
    check_key,
    dims_of,
    dtype_of,
    finish,
    key_words,
    shape_kind,
    shape_size,
    spread,
)
from numbax.numba_backend.random.kernels import (
    bits32_flat,
    bits64_flat,
    hash_index,
    helper_jit,
    normal32_flat,
    normal64_flat,
    uniform32_flat,
    uniform64_flat,
)
from numbax.numba_backend.random.kernels_more import (
    beta_flat,
    exponential_flat,
    gamma_flat,
    gumbel_flat,
    log_flat,
    randint_flat,
    shuffle_flat,
    truncated_normal_flat,
)

__all__ = ["IMPLEMENTATIONS"]

_UNIFORM_FLAT = {np.dtype(np.float32): uniform32_flat, np.dtype(np.float64): uniform64_flat}
_NORMAL_FLAT = {np.dtype(np.float32): normal32_flat, np.dtype(np.float64): normal64_flat}


# -- compiled helpers of the implementations ----------------------------------------------


@helper_jit
def _around(shape: Any, axis: int) -> tuple[int, int, int]:
    """(product of dims before ``axis``, ``shape[axis]``, product of dims after)."""
    before, after = 1, 1
    for d in range(len(shape)):
        if d < axis:
            before *= shape[d]
        elif d > axis:
            after *= shape[d]
    return before, shape[axis], after


@helper_jit
def _gather(x: np.ndarray, axis: int, index: np.ndarray) -> np.ndarray:
    """``np.take(x, index, axis)`` for a flat ``index``, flat in C order."""
    flat = np.ascontiguousarray(x).ravel()
    before, length, after = _around(x.shape, axis)
    m = index.size
    out = np.empty(before * m * after, x.dtype)
    for b in range(before):
        for j in range(m):
            for r in range(after):
                out[(b * m + j) * after + r] = flat[(b * length + index[j]) * after + r]
    return out


def _replace_axis(axis: int) -> Any:
    """``f(shape, dims)``: ``shape`` with its ``axis`` replaced by the dims ``dims``; the
    axis is written into the source so that Numba slices the tuples statically."""
    source = f"def f(s, d):\n    return s[:{axis}] + d + s[{axis + 1}:]\n"
    return helper_jit(define(source, {}, "random replace_axis", "f"))


# -- the implementations ------------------------------------------------------------------


def _numpy_dtype(name: str, value: types.Type) -> np.dtype:
    """The dtype of a number or an array argument."""
    if isinstance(value, types.Omitted):
        value = value.value
    if isinstance(value, bool | int | float):
        return np.asarray(value).dtype
    if isinstance(value, types.Array):
        value = value.dtype
    if isinstance(value, types.Number | types.Boolean):
        return np.dtype(types.unliteral(value).name)
    raise errors.TypingError(f"numbax.random.{name}: expected a number or an array; got {value}")


def _constant(name: str, value: Any, allowed: tuple) -> Any:
    """The value of an argument that must be a constant in the jitted source."""
    if isinstance(value, types.Omitted):
        return value.value
    if isinstance(value, types.Literal):
        return value.literal_value
    if isinstance(value, bool | int | str):
        return value
    raise errors.TypingError(
        f"numbax.random.{name} under nx.jit needs this argument as a constant "
        f"(one of {allowed}), written in the jitted source or passed as a static argument; "
        f"got {value}"
    )


def _axis(name: str, axis: Any, ndim: int) -> int:
    value = _constant(name, axis, ("an int",))
    if not isinstance(value, int) or not -ndim <= value < ndim:
        raise errors.TypingError(
            f"numbax.random.{name}: axis {value} is out of bounds for dimension {ndim}"
        )
    return value % ndim


def _clip_to(source: np.dtype, target: np.dtype) -> tuple[Any, Any]:
    """``numbax.random.more._clip_to``'s bounds: the range of ``target`` in ``source``'s type."""
    lo = max(np.iinfo(target).min, np.iinfo(source).min)
    hi = min(np.iinfo(target).max, np.iinfo(source).max)
    return source.type(lo), source.type(hi)


def _randint_impl(key, shape, minval, maxval, dtype=int):
    check_key("randint", key)
    shape_kind("randint", shape)
    want = dtype_of("randint", dtype, np.int64)
    if want.kind not in "iu":
        raise errors.TypingError(f"randint only accepts integer dtypes, got {want}")
    info = np.iinfo(want)
    small = info.bits < 32  # sampled as int32 and clipped first, as the plain call does
    work = np.dtype(np.int32) if small else want
    sources = [_numpy_dtype("randint", bound) for bound in (minval, maxval)]
    if small:
        sources = [np.dtype(np.int32)] * 2
        lo_min, lo_max = np.int32(info.min), np.int32(info.max)
        hi_min, hi_max = np.int32(info.min), np.int32(info.max + 1)
    else:
        sources = [s if s.kind in "iu" else np.dtype(np.int64) for s in sources]
        lo_min, lo_max = _clip_to(sources[0], work)
        hi_min, hi_max = _clip_to(sources[1], work)
    lo_type, hi_type, work_type = sources[0].type, sources[1].type, work.type
    cap = sources[1].type(min(np.iinfo(work).max, np.iinfo(sources[1]).max))
    mask = np.uint64(2 ** np.iinfo(work).bits - 1)
    bits_flat = bits64_flat if np.iinfo(work).bits == 64 else bits32_flat
    out_type = want.type

    def impl(key, shape, minval, maxval, dtype=int):
        k0, k1 = key_words(key)
        dims = dims_of(shape)
        lo = spread(minval, dims, lo_type)
        hi = spread(maxval, dims, hi_type)
        out_of_range = hi > cap
        lo = np.minimum(np.maximum(lo, lo_min), lo_max).astype(work_type)
        hi = np.minimum(np.maximum(hi, hi_min), hi_max).astype(work_type)
        h0, h1 = hash_index(k0, k1, 0)
        l0, l1 = hash_index(k0, k1, 1)
        n = lo.size
        out = np.empty(n, work_type)
        randint_flat(lo, hi, out_of_range, bits_flat(h0, h1, n), bits_flat(l0, l1, n), out, mask)
        return finish(out.astype(out_type), dims)

    return impl


def _omitted(value: Any) -> bool:
    """Whether an optional argument is ``None`` (given or left out)."""
    return value is None or isinstance(value, types.NoneType | types.Omitted)


def _dims(name: str, shape: Any, *params: Any) -> Any:
    """``f(shape, *params)``: the sample shape, ``shape`` as a tuple, or by default the
    broadcast shape of the parameters (numbers and arrays)."""
    names = [f"p{j}" for j in range(len(params))]
    signature = ", ".join(["shape", *names])
    if not _omitted(shape):
        shape_kind(name, shape)
        body = "dims_of(shape)"
    else:
        shapes = [
            f"{n}.shape" for n, p in zip(names, params, strict=True) if isinstance(p, types.Array)
        ]
        body = (
            "()"
            if not shapes
            else shapes[0]
            if len(shapes) == 1
            else f"np.broadcast_shapes({', '.join(shapes)})"
        )
    source = f"def f({signature}):\n    return {body}\n"
    return helper_jit(define(source, {"np": np, "dims_of": dims_of}, "random shape", "f"))


def _float_param(name: str, value: Any) -> np.dtype:
    dtype = _numpy_dtype(name, value)
    if dtype not in _UNIFORM_FLAT:
        raise errors.TypingError(
            f"numbax.random.{name} under nx.jit takes float32 or float64 parameters, got {dtype}"
        )
    return dtype


def _bernoulli_impl(key, p=0.5, shape=None, mode="low"):
    check_key("bernoulli", key)
    dtype = _float_param("bernoulli", p)
    high = _constant("bernoulli", mode, ("'low'", "'high'")) == "high"
    dims_fn = _dims("bernoulli", shape, p)
    uniform_flat, scalar = _UNIFORM_FLAT[dtype], dtype.type
    zero, one = scalar(0.0), scalar(1.0)
    ulp = scalar(2.0 ** -np.finfo(dtype).nmant)

    def impl(key, p=0.5, shape=None, mode="low"):
        k0, k1 = key_words(key)
        dims = dims_fn(shape, p)
        probability = spread(p, dims, scalar)
        n = probability.size
        if high:
            u = uniform_flat(k0, k1, 2 * n, zero, one)
            return finish(u[n:] * ulp < probability - u[:n], dims)
        return finish(uniform_flat(k0, k1, n, zero, one) < probability, dims)

    return impl


def _float_dtype(name: str, dtype: Any) -> type:
    want = dtype_of(name, dtype, np.float64)
    if want not in _UNIFORM_FLAT:
        raise errors.TypingError(
            f"numbax.random.{name} under nx.jit supports float32 and float64, got {want}"
        )
    return want.type


def _exponential_impl(key, shape=(), dtype=float):
    check_key("exponential", key)
    shape_kind("exponential", shape)
    zero = _float_dtype("exponential", dtype)(0.0)

    def impl(key, shape=(), dtype=float):
        k0, k1 = key_words(key)
        dims = dims_of(shape)
        return finish(exponential_flat(k0, k1, shape_size(dims), zero), dims)

    return impl


def _truncated_normal_impl(key, lower, upper, shape=None, dtype=float):
    check_key("truncated_normal", key)
    scalar = _float_dtype("truncated_normal", dtype)
    dims_fn = _dims("truncated_normal", shape, lower, upper)

    def impl(key, lower, upper, shape=None, dtype=float):
        k0, k1 = key_words(key)
        dims = dims_fn(shape, lower, upper)
        lo, hi = spread(lower, dims, scalar), spread(upper, dims, scalar)
        return finish(truncated_normal_flat(k0, k1, lo, hi), dims)

    return impl


def _gamma_impl(key, a, shape=None, dtype=float):
    check_key("gamma", key)
    scalar = _float_dtype("gamma", dtype)
    dims_fn = _dims("gamma", shape, a)

    def impl(key, a, shape=None, dtype=float):
        k0, k1 = key_words(key)
        dims = dims_fn(shape, a)
        return finish(gamma_flat(k0, k1, spread(a, dims, scalar), False), dims)

    return impl


def _beta_impl(key, a, b, shape=None, dtype=float):
    check_key("beta", key)
    scalar = _float_dtype("beta", dtype)
    dims_fn = _dims("beta", shape, a, b)

    def impl(key, a, b, shape=None, dtype=float):
        k0, k1 = key_words(key)
        dims = dims_fn(shape, a, b)
        alpha, beta = spread(a, dims, scalar), spread(b, dims, scalar)
        return finish(beta_flat(k0, k1, alpha, beta), dims)

    return impl


def _categorical_impl(key, logits, axis=-1, shape=None, replace=True):
    check_key("categorical", key)
    if not isinstance(logits, types.Array) or logits.dtype not in (types.float32, types.float64):
        raise errors.TypingError(
            f"numbax.random.categorical under nx.jit takes float32 or float64 logits; got {logits}"
        )
    ax = _axis("categorical", axis, logits.ndim)
    if not _constant("categorical", replace, ("True", "False")):
        raise errors.TypingError(
            "numbax.random.categorical(replace=False) does not compile under nx.jit: "
            "draw it outside the jitted function and pass the indices in"
        )
    zero = np.dtype(str(logits.dtype)).type(0.0)
    batch = helper_jit(
        define(f"def f(s):\n    return s[:{ax}] + s[{ax + 1}:]\n", {}, "random categorical", "f")
    )
    if _omitted(shape):
        dims_fn = helper_jit(lambda shape, logits: batch(logits.shape))
    else:
        shape_kind("categorical", shape)
        dims_fn = helper_jit(lambda shape, logits: dims_of(shape))
    rank = logits.ndim - 1

    def impl(key, logits, axis=-1, shape=None, replace=True):
        k0, k1 = key_words(key)
        dims = dims_fn(shape, logits)
        if len(dims) < rank:
            raise ValueError("categorical: shape must end with the logits' batch shape")
        for t in range(rank):
            if dims[len(dims) - rank + t] != batch(logits.shape)[t]:
                raise ValueError("categorical: shape must end with the logits' batch shape")
        before, length, after = _around(logits.shape, ax)
        n = shape_size(dims)
        repeats = n // (before * after) if before * after else 0
        noise = gumbel_flat(k0, k1, repeats * before * length * after, zero)
        flat = np.ascontiguousarray(logits).ravel()
        out = np.empty(n, np.int64)
        for j in range(n):
            rep, rest = j // (before * after), j % (before * after)
            b, r = rest // after, rest % after
            best, best_c = -np.inf, 0
            for c in range(length):
                position = (b * length + c) * after + r
                value = noise[(rep * before * length) * after + position] + flat[position]
                if c == 0 or value > best or (np.isnan(value) and not np.isnan(best)):
                    best, best_c = value, c
            out[j] = best_c
        return finish(out, dims)

    return impl


def _permutation_impl(key, x, axis=0, independent=False):
    check_key("permutation", key)
    if isinstance(x, types.Integer):

        def shuffled_range(key, x, axis=0, independent=False):
            k0, k1 = key_words(key)
            out = np.arange(np.int64(x))
            shuffle_flat(k0, k1, out, out.size, 1)
            return out

        return shuffled_range
    if not isinstance(x, types.Array) or x.ndim == 0:
        raise errors.TypingError("permutation: x must be an integer or at least 1-dimensional")
    ax = _axis("permutation", axis, x.ndim)
    if _constant("permutation", independent, ("True", "False")) or x.ndim == 1:

        def lanes(key, x, axis=0, independent=False):
            k0, k1 = key_words(key)
            out = np.ascontiguousarray(x).copy().ravel()
            _, length, after = _around(x.shape, ax)
            shuffle_flat(k0, k1, out, length, after)
            return out.reshape(x.shape)

        return lanes

    def slices(key, x, axis=0, independent=False):
        k0, k1 = key_words(key)
        index = np.arange(x.shape[ax])
        shuffle_flat(k0, k1, index, index.size, 1)
        return _gather(x, ax, index).reshape(x.shape)

    return slices


def _choice_indices(replace: bool, p: Any) -> Any:
    """``f(key, n_inputs, n_draws, p)``: the flat int64 indices ``choice`` draws."""
    if _omitted(p):
        if replace:

            def uniform_indices(key, n_inputs, n_draws, p):
                k0, k1 = key_words(key)
                h0, h1 = hash_index(k0, k1, 0)
                l0, l1 = hash_index(k0, k1, 1)
                lo, hi = np.zeros(n_draws, np.int64), np.full(n_draws, np.int64(n_inputs))
                out = np.empty(n_draws, np.int64)
                higher, lower = bits64_flat(h0, h1, n_draws), bits64_flat(l0, l1, n_draws)
                no = np.zeros(n_draws, np.bool_)
                randint_flat(lo, hi, no, higher, lower, out, np.uint64(0xFFFFFFFFFFFFFFFF))
                return out

            return uniform_indices

        def prefix(key, n_inputs, n_draws, p):
            k0, k1 = key_words(key)
            order = np.arange(np.int64(n_inputs))
            shuffle_flat(k0, k1, order, order.size, 1)
            return order[:n_draws]

        return prefix
    if not isinstance(p, types.Array) or p.ndim != 1:
        raise errors.TypingError(f"choice: p must be None or a 1-D array; got {p}")
    dtype = np.dtype(str(p.dtype)) if isinstance(p.dtype, types.Float) else np.dtype(np.float64)
    if dtype not in _UNIFORM_FLAT:
        raise errors.TypingError(f"choice under nx.jit takes float32 or float64 p, got {dtype}")
    scalar, uniform_flat = dtype.type, _UNIFORM_FLAT[dtype]
    tolerance = math.sqrt(np.finfo(dtype).eps)

    def check(p, n_inputs):
        q = p.astype(scalar)
        if q.size != n_inputs:
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]")
        for value in q:
            if value < 0 or np.isnan(value):
                raise ValueError("probabilities p must be non-negative")
        if abs(np.sum(q.astype(np.float64)) - 1.0) > tolerance:
            raise ValueError("probabilities p must sum to 1 (within sqrt(eps) of p's dtype)")
        return q

    check = helper_jit(check)
    if replace:

        def inverse_cdf(key, n_inputs, n_draws, p):
            k0, k1 = key_words(key)
            cumulative = np.cumsum(check(p, n_inputs))
            u = uniform_flat(k0, k1, n_draws, scalar(0.0), scalar(1.0))
            return np.searchsorted(cumulative, cumulative[-1] * (scalar(1.0) - u)).astype(np.int64)

        return inverse_cdf

    def top_k(key, n_inputs, n_draws, p):
        k0, k1 = key_words(key)
        noisy = gumbel_flat(k0, k1, n_inputs, scalar(0.0)) + log_flat(check(p, n_inputs))
        return np.argsort(-noisy, kind="mergesort")[:n_draws]

    return top_k


def _choice_impl(key, a, shape=(), replace=True, p=None, axis=0):
    check_key("choice", key)
    shape_kind("choice", shape)
    with_replacement = bool(_constant("choice", replace, ("True", "False")))
    draw = helper_jit(_choice_indices(with_replacement, p))
    if isinstance(a, types.Integer):

        def from_range(key, a, shape=(), replace=True, p=None, axis=0):
            dims = dims_of(shape)
            n_draws = shape_size(dims)
            if n_draws == 0:
                return finish(np.zeros(0, np.int64), dims)
            if a <= 0:
                raise ValueError("a must be greater than 0 unless no samples are taken")
            if not with_replacement and n_draws > a:
                raise ValueError("Cannot take a larger sample than population when 'replace=False'")
            return finish(draw(key, a, n_draws, p), dims)

        return from_range
    if not isinstance(a, types.Array) or a.ndim == 0:
        raise errors.TypingError(f"choice: a must be an integer or an array; got {a}")
    ax = _axis("choice", axis, a.ndim)
    out_dims = _replace_axis(ax)

    def from_array(key, a, shape=(), replace=True, p=None, axis=0):
        dims = dims_of(shape)
        n_draws, n_inputs = shape_size(dims), a.shape[ax]
        if n_draws > 0 and n_inputs <= 0:
            raise ValueError("a must be greater than 0 unless no samples are taken")
        if not with_replacement and n_draws > n_inputs:
            raise ValueError("Cannot take a larger sample than population when 'replace=False'")
        index = draw(key, n_inputs, n_draws, p) if n_draws else np.zeros(0, np.int64)
        return finish(_gather(a, ax, index), out_dims(a.shape, dims))

    return from_array


def _svd_factor(c: np.ndarray) -> np.ndarray:
    u, s, _ = np.linalg.svd(c)
    return u * np.sqrt(s)


def _eigh_factor(c: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(c)
    return v * np.sqrt(w)


# multivariate_normal's ``factor @ factor.T == cov`` by method, as the plain call's
_FACTORS = {
    "svd": helper_jit(_svd_factor),
    "eigh": helper_jit(_eigh_factor),
    "cholesky": helper_jit(lambda c: np.linalg.cholesky(c)),
}


def _multivariate_normal_impl(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    check_key("multivariate_normal", key)
    if not (isinstance(mean, types.Array) and isinstance(cov, types.Array) and cov.ndim == 2):
        raise errors.TypingError(
            "numbax.random.multivariate_normal under nx.jit takes an array mean and a 2-D cov "
            f"(one covariance; call it outside jit for a batch of them); got {mean}, {cov}"
        )
    work = np.result_type(_numpy_dtype("multivariate_normal", mean),
                          _numpy_dtype("multivariate_normal", cov), np.float16)  # fmt: skip
    want = work.type if _omitted(dtype) else _float_dtype("multivariate_normal", dtype)
    if np.dtype(want) not in _UNIFORM_FLAT or work not in _UNIFORM_FLAT:
        raise errors.TypingError(
            f"numbax.random.multivariate_normal under nx.jit supports float32 and float64, "
            f"got {np.dtype(want)}"
        )
    how = _constant("multivariate_normal", method, ("'cholesky'", "'svd'", "'eigh'"))
    if how not in ("cholesky", "svd", "eigh"):
        raise errors.TypingError("method must be one of {'svd', 'eigh', 'cholesky'}")
    normal_flat = _NORMAL_FLAT[np.dtype(want)]
    work_type = work.type
    if _omitted(shape):
        dims_fn = helper_jit(lambda shape, mean: mean.shape[:-1])
    else:
        shape_kind("multivariate_normal", shape)
        dims_fn = helper_jit(lambda shape, mean: dims_of(shape))
    factor_of = _FACTORS[how]

    def impl(key, mean, cov, shape=None, dtype=None, method="cholesky"):
        k0, k1 = key_words(key)
        n = mean.shape[-1]
        if cov.shape[0] != n or cov.shape[1] != n:
            raise ValueError("multivariate_normal requires cov.shape == (..., n, n)")
        dims = dims_fn(shape, mean)
        full = dims + (n,)
        centre = np.broadcast_to(mean.astype(work_type), full)
        factor = np.ascontiguousarray(factor_of(np.ascontiguousarray(cov).astype(work_type)))
        z = normal_flat(k0, k1, shape_size(full)).astype(work_type).reshape((-1, n))
        return centre + np.dot(z, np.ascontiguousarray(factor.T)).reshape(full)

    return impl


IMPLEMENTATIONS: dict[str, JitImplementation] = {
    "randint": JitImplementation(_randint_impl),
    "bernoulli": JitImplementation(_bernoulli_impl, prefer_literal=True),
    "exponential": JitImplementation(_exponential_impl),
    "truncated_normal": JitImplementation(_truncated_normal_impl),
    "gamma": JitImplementation(_gamma_impl),
    "beta": JitImplementation(_beta_impl),
    "categorical": JitImplementation(_categorical_impl, prefer_literal=True),
    "permutation": JitImplementation(_permutation_impl, prefer_literal=True),
    "choice": JitImplementation(_choice_impl, prefer_literal=True),
    "multivariate_normal": JitImplementation(_multivariate_normal_impl, prefer_literal=True),
}
"""The implementations of :mod:`numbax.random.more`'s samplers under ``nx.jit``, by name."""
