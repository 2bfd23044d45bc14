"""numbax.random's scalar draws in GPU device code: numba-cuda overloads.

A thread of a per-example kernel draws numbers, not arrays (it cannot allocate one):
``normal(key)``, ``uniform(key, minval=..., maxval=...)``, ``exponential(key)``,
``gamma(key, a)`` and ``bernoulli(key, p)`` with the default empty shape, as float32 or
float64 (bernoulli: a boolean). Keys a thread makes (``fold_in(key, i)``, ``split(key,
num)`` with ``num`` a constant) are pairs of uint32 words, tuples, where the CPU has
arrays of two: a key from ``split`` is ``keys[i]`` or unpacked, as with arrays, and a
draw takes either.
Each is the CPU's draw of element 0, from the same Python: the Threefry-2x32 counter hash
and bits-to-float (``scalar_core``), and each sampler's scalar body (``float_bodies``,
``more_bodies``), compiled for the device, with ``log`` from CUDA's libdevice where the
CPU uses numbax's own vectorizable kernel, so a normal draw may differ from the CPU's in
its last bits.

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
from numbax.numba_backend.random.kernels import float_bodies, scalar_core
from numbax.numba_backend.random.kernels_more import more_bodies

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
    """The draws of ``uniform``, ``normal``, ``exponential`` and ``gamma`` by name and
    dtype (element ``i`` of a key's draws, as the CPU's loops draw it: a thread draws
    element 0), and the key functions (``fold_in``; ``split``'s key ``i``:
    ``split_one``), compiled with ``device`` (``cuda.jit(device=True)``; ``numba.njit``
    for a check of the device's formulas on the CPU), once per ``target``.

    The bodies are the CPU's (:func:`~numbax.numba_backend.random.kernels.float_bodies`,
    :func:`~numbax.numba_backend.random.kernels_more.more_bodies`), compiled for the
    device with libdevice's ``log``."""
    if target in _cached_draws:
        return _cached_draws[target]
    core = scalar_core(device)
    found: dict[str, dict[Any, Any]] = {}
    for kind in (np.float32, np.float64):
        log = _libdevice_log(device, kind)
        floats = float_bodies(kind, core, log, device, device)
        bodies = (
            floats._asdict() | more_bodies(kind, floats, core.hash_index, log, device)._asdict()
        )
        for name in _TYPERS.keys() & bodies.keys():  # the samplers' bodies, by their names
            found.setdefault(name, {})[np.dtype(kind)] = bodies[name]
    found["keys"] = {"fold_in": core.fold_in, "split_one": core.hash_index}
    _cached_draws[target] = found
    return found


def _libdevice_log(device: Callable[[Callable], Any], kind: type) -> Any:
    """``log`` of a ``kind`` float in device code: libdevice's on a GPU (the CPU's
    loops take numbax's vectorizable kernel instead, so a draw may differ in its last
    bits)."""

    @device
    def log(x):  # noqa: ANN001, ANN202
        return kind(math.log(x))

    return log


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


def _draw_of_a_key(name: str) -> Callable[[dict], Callable[..., Any]]:
    """The typer of sampler ``name`` whose only parameters are ``shape`` and ``dtype``
    (``normal``, ``exponential``)."""

    def typer_of(draws: dict) -> Callable[..., Any]:
        def typer(key, shape=(), dtype=float):  # noqa: ANN001, ANN202 (Numba reads annotations)
            check_key(name, key)
            _scalar_only(name, shape)
            draw, _ = _float_draw(name, draws, dtype)
            return lambda key, shape=(), dtype=float: draw(key[0], key[1], 0)

        return typer

    return typer_of


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
            return draw(key[0], key[1], 0, zero, one) < p

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
            return draw(element0, element1, scalar(a), False)

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
            return draw(key[0], key[1], 0, scalar(minval), scalar(maxval))

        return impl

    return typer


_TYPERS = {
    "normal": _draw_of_a_key("normal"),
    "uniform": _uniform,
    "exponential": _draw_of_a_key("exponential"),
    "bernoulli": _bernoulli,
    "gamma": _gamma,
    "fold_in": _fold_in,
    "split": _split,
}

IN_A_THREAD = frozenset(_TYPERS)
"""numbax.random's functions with a version for a GPU thread."""
