"""numbax.random's scalar draws in GPU device code: numba-cuda overloads.

A thread of a per-example kernel draws numbers, not arrays (it cannot allocate one):
``normal(key)``, ``uniform(key, minval=..., maxval=...)``, ``exponential(key)``,
``gamma(key, a)`` and ``bernoulli(key, p)`` with the default empty shape, as float32 or
float64 (bernoulli: a boolean). Keys a thread makes (``fold_in(key, i)``, ``split(key,
num)`` with ``num`` a constant) are pairs of uint32 words, tuples, where the CPU has
arrays of two: a key from ``split`` is ``keys[i]`` or unpacked, as with arrays, and a
draw takes either.
Each is the CPU's draw of element 0 (``random_kernels``):
the same Threefry-2x32 counter hash, compiled for the device from the same Python
(``scalar_core``), the same bits-to-float, and for ``normal`` XLA's ``erfinv``
polynomials, with ``log`` from CUDA's libdevice where the CPU uses numbax's own
vectorizable kernel, so a normal draw may differ from the CPU's in its last bits.

The public functions live in ``numbax.random``, a layer above: they are registered here
by name as that package registers them for the CPU (:func:`random_jit.register_random`),
and :func:`register` gives those it finds their device implementations.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import types
from numba.core import errors

from numbax.numba_backend.random.jit import dtype_of, registered_samplers
from numbax.numba_backend.random.kernels import horner, scalar_core
from numbax.numba_backend.random.tables import (
    ERFINV_F32,
    ERFINV_F64,
    LOG1P_DENOMINATOR,
    LOG1P_NUMERATOR,
)

_DONE: set[str] = set()


def register(cuda: Any, overload: Callable[..., Any]) -> None:
    """Give the scalar draws numbax.random has registered so far their numba-cuda
    implementations (each once; a later call adds those registered since)."""
    found = {name: f for name, f in registered_samplers().items() if name in _TYPERS}
    if not found.keys() - _DONE:
        return
    draws = scalar_draws(cuda.jit(device=True), "cuda")
    for name, sampler in found.items():
        if name not in _DONE:
            literal = name == "split"  # num: a constant, the number of keys in the tuple
            overload(sampler, target="cuda", prefer_literal=literal)(_TYPERS[name](draws))
            _DONE.add(name)


def sampler_name(function: Any) -> str | None:
    """The name numbax.random registered ``function`` under, if it is one of its
    functions."""
    for name, sampler in registered_samplers().items():
        if sampler is function:
            return name
    return None


_cached_draws: dict[str, dict[str, Any]] = {}


def scalar_draws(device: Callable[[Callable], Any], target: str) -> dict[str, Any]:
    """Element 0 of ``uniform``, ``normal``, ``exponential`` and ``gamma`` by name and
    dtype, and
    the key functions (``fold_in``; ``split``'s key ``i``: ``split_one``), compiled
    with ``device`` (``cuda.jit(device=True)``; ``numba.njit`` for a check of these
    formulas on the CPU), once per ``target``."""
    if target in _cached_draws:
        return _cached_draws[target]
    core = scalar_core(device)
    f32, f64 = np.float32, np.float64
    central32, tail32 = (horner(b[3], f32, device) for b in ERFINV_F32)
    central64, middle64, tail64 = (horner(b[3], f64, device) for b in ERFINV_F64)
    num32, den32 = (horner(c, f32, device) for c in (LOG1P_NUMERATOR, LOG1P_DENOMINATOR))
    num64, den64 = (horner(c, f64, device) for c in (LOG1P_NUMERATOR, LOG1P_DENOMINATOR))
    small32, small64 = f32(np.sqrt(2.0) - 1.0), f64(np.sqrt(2.0) - 1.0)
    lo32, lo64 = np.nextafter(f32(-1.0), f32(0.0)), np.nextafter(f64(-1.0), f64(0.0))
    sqrt2_32, sqrt2_64 = f32(np.sqrt(2.0)), f64(np.sqrt(2.0))
    unit32, unit64 = core.unit_f32, core.unit_f64

    @device
    def log1p32(a):
        a2 = a * a
        near = a + (f32(-0.5) * a2 + (a * a2) * (num32(a) / den32(a)))
        return near if abs(a) < small32 else f32(math.log(a + f32(1.0)))

    @device
    def log1p64(a):
        a2 = a * a
        near = a + (f64(-0.5) * a2 + (a * a2) * (num64(a) / den64(a)))
        return near if abs(a) < small64 else math.log(a + 1.0)

    @device
    def erfinv32(x):
        w = -log1p32(x * -x)
        p = central32(w - f32(2.5)) if w < f32(5.0) else tail32(f32(math.sqrt(w)) - f32(3.0))
        edge = f32(np.inf) if x > f32(0.0) else f32(-np.inf)
        return edge if abs(x) == f32(1.0) else p * x

    @device
    def erfinv64(x):
        w = -log1p64(x * -x)
        s = math.sqrt(w)
        if w < 6.25:
            p = central64(w - 3.125)
        elif w < 16.0:
            p = middle64(s - 3.25)
        else:
            p = tail64(s - 5.0)
        edge = np.inf if x > 0.0 else -np.inf
        return edge if abs(x) == 1.0 else p * x

    @device
    def normal32(k0, k1):
        u = unit32(k0, k1, 0) * (f32(1.0) - lo32) + lo32
        return sqrt2_32 * erfinv32(max(lo32, u))

    @device
    def normal64(k0, k1):
        u = unit64(k0, k1, 0) * (1.0 - lo64) + lo64
        return sqrt2_64 * erfinv64(max(lo64, u))

    @device
    def uniform32(k0, k1, lo, hi):
        return max(lo, unit32(k0, k1, 0) * (hi - lo) + lo)

    @device
    def uniform64(k0, k1, lo, hi):
        return max(lo, unit64(k0, k1, 0) * (hi - lo) + lo)

    @device
    def exponential32(k0, k1):
        return -log1p32(-unit32(k0, k1, 0))

    @device
    def exponential64(k0, k1):
        return -log1p64(-unit64(k0, k1, 0))

    threefry, hash_index = core.threefry2x32, core.hash_index

    @device
    def fold_in(k0, k1, data):
        return threefry(k0, k1, np.uint32(0), np.uint32(np.uint64(data) & np.uint64(0xFFFFFFFF)))

    @device
    def split_one(k0, k1, i):
        return hash_index(k0, k1, i)

    found = {
        "normal": {np.dtype(f32): normal32, np.dtype(f64): normal64},
        "uniform": {np.dtype(f32): uniform32, np.dtype(f64): uniform64},
        "exponential": {np.dtype(f32): exponential32, np.dtype(f64): exponential64},
        "gamma": {
            np.dtype(f32): _gamma_one(device, hash_index, unit32, normal32, f32),
            np.dtype(f64): _gamma_one(device, hash_index, unit64, normal64, f64),
        },
        "keys": {"fold_in": fold_in, "split_one": split_one},
    }
    _cached_draws[target] = found
    return found


def _gamma_one(
    device: Callable[[Callable], Any], hash_index: Any, unit: Any, normal: Any, kind: type
) -> Any:
    """``random_kernels_more._gamma_one`` (JAX's Marsaglia and Tsang loop, with JAX's
    key splits, ``alpha < 1`` boosted to ``alpha + 1``) for one ``kind`` of float,
    with that kind's draws; ``log`` is libdevice's on a GPU."""
    zero, one, two, half = kind(0.0), kind(1.0), kind(2.0), kind(0.5)
    third, squeeze = kind(1.0 / 3.0), kind(0.0331)

    @device
    def gamma_one(k0, k1, alpha):
        boost = alpha >= one
        d = (alpha if boost else alpha + one) - third
        c = third / kind(math.sqrt(d))
        key0, key1 = hash_index(k0, k1, 0)
        sub0, sub1 = hash_index(k0, k1, 1)
        big_x, big_v, big_u = zero, one, two
        while big_u >= one - squeeze * (big_x * big_x) and kind(math.log(big_u)) >= (
            big_x * half + d * (one - big_v + kind(math.log(big_v)))
        ):
            x_key0, x_key1 = hash_index(key0, key1, 1)
            u_key0, u_key1 = hash_index(key0, key1, 2)
            key0, key1 = hash_index(key0, key1, 0)
            x, v = zero, -one
            while v <= zero:
                draw0, draw1 = hash_index(x_key0, x_key1, 1)
                x_key0, x_key1 = hash_index(x_key0, x_key1, 0)
                x = normal(draw0, draw1)
                v = one + x * c
            big_x, big_v, big_u = x * x, (v * v) * v, unit(u_key0, u_key1, 0)
        sample = one - unit(sub0, sub1, 0)
        return (d * big_v) * (one if boost else sample ** (one / alpha))

    return gamma_one


def _scalar_only(name: str, shape: Any) -> None:
    if isinstance(shape, types.Omitted):
        shape = shape.value
    empty = shape == () or isinstance(shape, types.BaseTuple) and len(shape) == 0
    if not empty:
        raise errors.TypingError(
            f"numbax.random.{name} in GPU device code draws one number (shape=()): a thread "
            "cannot allocate an array of draws. Draw each number from its own key "
            "(nx.random.fold_in(key, i)), or run the function on the CPU."
        )


def _float_draw(name: str, draws: dict, dtype: Any) -> tuple[Any, Any]:
    want = dtype_of(name, dtype, np.float64)
    if want not in draws[name]:
        raise errors.TypingError(f"numbax.random.{name} on the GPU draws float32 or float64")
    return draws[name][want], want.type


def check_key(name: str, key: types.Type) -> None:
    """A typing error unless ``key`` is key data in device code: a uint32 array (of
    shape (2,): an argument's key) or a pair of uint32 (a key the thread made)."""
    pair = isinstance(key, types.UniTuple) and key.count == 2 and key.dtype == types.uint32
    array = isinstance(key, types.Array) and key.ndim == 1 and key.dtype == types.uint32
    if not (pair or array):
        raise errors.TypingError(
            f"numbax.random.{name} expects a PRNG key: a uint32 array of shape (2,), or a key "
            f"made by fold_in or split in the thread; got {key}"
        )


def _normal(draws: dict) -> Callable[..., Any]:
    def typer(key, shape=(), dtype=float):  # noqa: ANN001, ANN202 (Numba reads annotations)
        check_key("normal", key)
        _scalar_only("normal", shape)
        draw, _ = _float_draw("normal", draws, dtype)
        return lambda key, shape=(), dtype=float: draw(key[0], key[1])

    return typer


def _exponential(draws: dict) -> Callable[..., Any]:
    def typer(key, shape=(), dtype=float):  # noqa: ANN001, ANN202
        check_key("exponential", key)
        _scalar_only("exponential", shape)
        draw, _ = _float_draw("exponential", draws, dtype)
        return lambda key, shape=(), dtype=float: draw(key[0], key[1])

    return typer


def _bernoulli(draws: dict) -> Callable[..., Any]:
    def typer(key, p=0.5, shape=None, mode="low"):  # noqa: ANN001, ANN202
        check_key("bernoulli", key)
        if not (shape is None or isinstance(shape, types.NoneType | types.Omitted)):
            _scalar_only("bernoulli", shape)
        chosen = mode.value if isinstance(mode, types.Omitted) else mode
        if getattr(chosen, "literal_value", chosen) != "low":
            raise errors.TypingError(
                "numbax.random.bernoulli on the GPU draws with mode='low' (the default)"
            )
        if not isinstance(p, types.Float):
            raise errors.TypingError(
                f"numbax.random.bernoulli on the GPU takes one float probability p; got {p}"
            )
        dtype = np.dtype(np.float32 if p.bitwidth == 32 else np.float64)
        draw, zero, one = draws["uniform"][dtype], dtype.type(0.0), dtype.type(1.0)

        def impl(key, p=0.5, shape=None, mode="low"):
            return draw(key[0], key[1], zero, one) < p

        return impl

    return typer


def _gamma(draws: dict) -> Callable[..., Any]:
    one = draws["keys"]["split_one"]

    def typer(key, a, shape=None, dtype=float):  # noqa: ANN001, ANN202
        check_key("gamma", key)
        if not (shape is None or isinstance(shape, types.NoneType | types.Omitted)):
            _scalar_only("gamma", shape)
        if not isinstance(a, types.Float | types.Integer):
            raise errors.TypingError(
                f"numbax.random.gamma on the GPU takes one number a (a thread draws one "
                f"number); got {a}"
            )
        draw, scalar = _float_draw("gamma", draws, dtype)

        def impl(key, a, shape=None, dtype=float):
            element0, element1 = one(key[0], key[1], 0)  # split(key, 1)[0], as on the CPU
            return draw(element0, element1, scalar(a))

        return impl

    return typer


def _fold_in(draws: dict) -> Callable[..., Any]:
    fold = draws["keys"]["fold_in"]

    def typer(key, data):  # noqa: ANN001, ANN202
        check_key("fold_in", key)
        if not isinstance(data, types.Integer):
            raise errors.TypingError(f"numbax.random.fold_in takes an integer scalar; got {data}")
        return lambda key, data: fold(key[0], key[1], data)

    return typer


MAX_SPLIT = 64
"""The most keys ``split`` makes in device code: they are a tuple, one type per count."""


def _split(draws: dict) -> Callable[..., Any]:
    one = draws["keys"]["split_one"]

    def typer(key, num=2):  # noqa: ANN001, ANN202
        check_key("split", key)
        count = num.value if isinstance(num, types.Omitted) else num
        count = getattr(count, "literal_value", count)
        if not (isinstance(count, int) and 0 < count <= MAX_SPLIT):
            raise errors.TypingError(
                "numbax.random.split in GPU device code makes a constant number of keys, 1 to "
                f"{MAX_SPLIT} (a tuple of them); got num={num}. Derive keys in a loop with "
                "fold_in(key, i) instead."
            )
        body = ", ".join(f"one(key[0], key[1], {i})" for i in range(count))
        return eval(f"lambda key, num=2: ({body},)", {"one": one})  # noqa: S307 (constants)

    return typer


def _uniform(draws: dict) -> Callable[..., Any]:
    def typer(key, shape=(), dtype=float, minval=0.0, maxval=1.0):  # noqa: ANN001, ANN202
        check_key("uniform", key)
        _scalar_only("uniform", shape)
        draw, scalar = _float_draw("uniform", draws, dtype)

        def impl(key, shape=(), dtype=float, minval=0.0, maxval=1.0):
            return draw(key[0], key[1], scalar(minval), scalar(maxval))

        return impl

    return typer


_TYPERS = {
    "normal": _normal,
    "uniform": _uniform,
    "exponential": _exponential,
    "bernoulli": _bernoulli,
    "gamma": _gamma,
    "fold_in": _fold_in,
    "split": _split,
}

IN_A_THREAD = frozenset(_TYPERS)
"""numbax.random's functions with a version for a GPU thread."""
