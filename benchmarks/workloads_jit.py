"""Workloads for ``nx.jit``: elementwise throughput, per-call overhead, and cold start.

Each peer runs the same NumPy-level computation: NumPy itself, ``nx.jit`` of the plain
function in :mod:`benchmarks.kernels`, ``jax.jit`` of its ``jnp`` twin, and a hand-written
Numba loop (``fastmath=False``, no SVML here, single-threaded): the practical limit of
what numbax's Numba backend could emit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

import numbax as nx
from benchmarks import kernels
from benchmarks.coldstart import Case, ColdStart
from benchmarks.runner import PeerWorkload

_ALPHA = np.float32(1.67)
_LMBDA = np.float32(1.05)


@numba.njit(fastmath=False)
def selu_loop(x):
    """SELU as one loop over float32, with float32 constants (as NEP 50 makes NumPy's).

    ``exp`` is computed for every element so that the select compiles without a branch:
    on random signs a branch mispredicts half the time, which made the obvious
    ``v if v > 0 else alpha * np.exp(v) - alpha`` loop twice as slow here. ``exp`` itself
    stays a scalar libm call per element: without SVML, LLVM cannot vectorize it.
    """
    out = np.empty_like(x)
    for i in range(x.size):
        v = x[i]
        negative = _ALPHA * np.exp(v) - _ALPHA
        out[i] = _LMBDA * (v if v > 0 else negative)
    return out


@numba.njit(fastmath=False)
def poly_loop(x):
    """The cubic as one pass over a 2-D array: no temporaries, same operation order."""
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            out[i, j] = v + v * v + v * v * v
    return out


def _jax(name: str) -> Callable[[], Callable[..., Any]]:
    """Factory for ``jax.jit`` of a ``kernels_jax`` function, importing JAX only when run."""

    def factory() -> Callable[..., Any]:
        import jax

        from benchmarks import kernels_jax

        return jax.jit(getattr(kernels_jax, name))

    return factory


def _numbax(fun: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    """Factory for ``nx.jit(fun)``; numbax is imported when the peer runs, not at import."""

    def factory() -> Callable[..., Any]:
        import numbax as nx

        return nx.jit(fun)

    return factory


def random_normal(key: np.ndarray, n: int) -> np.ndarray:
    """``n`` standard normal float32 draws from ``key``: ``numbax.random`` called plainly
    (its compiled loop) and under ``nx.jit`` (the same loop, inlined into the function).

    Defined here rather than in :mod:`benchmarks.kernels`, which must import only NumPy.
    """
    return nx.random.normal(key, n, np.float32)


def _jax_random_normal() -> Callable[..., Any]:
    """``jax.jit`` of ``jax.random.normal`` on raw uint32 key data (JAX's legacy keys,
    which numbax's keys are), float32 without x64; ``n`` is static, as JAX needs."""
    import jax

    def draw(key: Any, n: int) -> Any:
        return jax.random.normal(key, (n,), np.float32)

    return jax.jit(draw, static_argnums=1)


def random_uniform(key: np.ndarray, n: int) -> np.ndarray:
    """``n`` uniform float32 draws in [0, 1) from ``key``, like :func:`random_normal`."""
    return nx.random.uniform(key, n, np.float32)


def _jax_random_uniform() -> Callable[..., Any]:
    """``jax.jit`` of ``jax.random.uniform``, as :func:`_jax_random_normal`."""
    import jax

    def draw(key: Any, n: int) -> Any:
        return jax.random.uniform(key, (n,), np.float32)

    return jax.jit(draw, static_argnums=1)


def _normal_float32(shape: tuple[int, ...]) -> np.ndarray:
    """Standard normal float32 input, fixed seed (the quickstart uses ``random.normal``)."""
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)


WORKLOADS = [
    PeerWorkload(
        id="selu",
        description="selu on 1,000,000 float32 (JAX quickstart)",
        inputs=lambda quick: (_normal_float32((100_000 if quick else 1_000_000,)),),
        impls={
            "numpy": lambda: kernels.selu,
            "numbax": _numbax(kernels.selu),
            "jax": _jax("selu"),
            "numba": lambda: selu_loop,
        },
        bandwidth_bound=True,
    ),
    PeerWorkload(
        id="poly",
        description="x + x*x + x*x*x on a 4000x4000 float32 matrix",
        inputs=lambda quick: (_normal_float32((1000, 1000) if quick else (4000, 4000)),),
        impls={
            "numpy": lambda: kernels.poly,
            "numbax": _numbax(kernels.poly),
            "jax": _jax("poly"),
            "numba": lambda: poly_loop,
        },
        bandwidth_bound=True,
    ),
    PeerWorkload(
        id="dispatch",
        description="x + 1 on a length-3 float64 array: per-call overhead",
        inputs=lambda quick: (np.arange(3.0),),
        impls={
            "numpy": lambda: kernels.add_one,
            "numbax": _numbax(kernels.add_one),
            "jax": _jax("add_one"),
            "numba": lambda: numba.njit(kernels.add_one),
        },
        calls_per_sample=100_000,
    ),
    PeerWorkload(
        id="random_normal",
        description="jax.random.normal: 1,000,000 float32 draws from a key",
        inputs=lambda quick: (nx.random.key(0), 100_000 if quick else 1_000_000),
        impls={
            "numpy": lambda: random_normal,
            "numbax": _numbax(random_normal),
            "jax": _jax_random_normal,
        },
    ),
    PeerWorkload(
        id="random_uniform",
        description="jax.random.uniform: 1,000,000 float32 draws from a key",
        inputs=lambda quick: (nx.random.key(0), 100_000 if quick else 1_000_000),
        impls={
            "numpy": lambda: random_uniform,
            "numbax": _numbax(random_uniform),
            "jax": _jax_random_uniform,
        },
    ),
    ColdStart(
        selu=Case("selu", size=1_000_000, dtype="float32"),
        many_ops=Case("many_ops", size=10_000, dtype="float64"),
    ),
]
