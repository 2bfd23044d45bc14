"""Workloads for ``vmap``: the quickstart's batched matrix-vector product at batch 10
and 10,000 (float64, and float32 at 10,000), and per-example gradients of logistic
regression and of a small MLP.

The NumPy peer is the batching written by hand (one matrix product; the per-example
gradient formula ``(p - y) x``), the Numba peer the same as a compiled loop; JAX's is
``jax.jit(jax.vmap(...))`` of the ``jnp`` twin in the inputs' dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from benchmarks import kernels
from benchmarks.runner import PeerWorkload


def _by_hand(mat: np.ndarray) -> tuple[Callable, Callable]:
    """NumPy's and Numba's peers for ``mat`` times each example: the batch written by
    hand, and a compiled loop over the examples."""

    def numpy_peer(batch):
        return batch @ mat.T

    def numba_peer(batch):
        return _apply_matrix_loop(batch, mat)

    return numpy_peer, numba_peer


@numba.njit(fastmath=False)
def _apply_matrix_loop(batch, mat):
    out = np.empty((batch.shape[0], mat.shape[0]), mat.dtype)
    for i in range(batch.shape[0]):
        out[i] = mat @ batch[i]
    return out


apply_matrix_numpy, apply_matrix_numba = _by_hand(kernels.VMAP_MAT)
apply_matrix32_numpy, apply_matrix32_numba = _by_hand(kernels.VMAP_MAT32)


def per_example_numpy(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    return (p - y)[:, None] * x


@numba.njit(fastmath=False)
def per_example_numba(w, x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        p = 1.0 / (1.0 + np.exp(-np.dot(x[i], w)))
        out[i] = (p - y[i]) * x[i]
    return out


def per_example_mlp_numpy(params, x, y):
    """Backpropagation of each example's loss, batched by hand."""
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    g_out = 2.0 * (h @ w2 + b2 - y)
    g_a = (g_out @ w2.T) * (1.0 - h * h)
    return x[:, :, None] * g_a[:, None, :], g_a, h[:, :, None] * g_out[:, None, :], g_out


def _per_example_mlp_inputs(quick: bool) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    n, d = (200 if quick else 2_000), 50
    params = (
        rng.standard_normal((d, 32)) / np.sqrt(d),
        np.zeros(32),
        rng.standard_normal((32, 3)) / np.sqrt(32),
        np.zeros(3),
    )
    return (params, rng.standard_normal((n, d)), rng.standard_normal((n, 3)))


def _batch_inputs(size: int, dtype: Any = np.float64) -> Callable[[bool], tuple[Any, ...]]:
    return lambda quick: (np.random.default_rng(0).standard_normal((size, 100)).astype(dtype),)


def _per_example_inputs(quick: bool) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    n = 1_000 if quick else 10_000
    x = rng.standard_normal((n, 100))
    w = rng.standard_normal(100) / 10
    y = (rng.random(n) < 0.5).astype(np.float64)
    return (w, x, y)


def _numbax(fun: Callable[..., Any], in_axes: Any = 0, grad: bool = False) -> Callable:
    def factory() -> Callable[..., Any]:
        import numbax as nx

        target = nx.grad(fun) if grad else fun
        return nx.jit(nx.vmap(target, in_axes=in_axes))

    return factory


def _jax(name: str, in_axes: Any = 0, grad: bool = False) -> Callable:
    def factory() -> Callable[..., Any]:
        import jax

        from benchmarks import kernels_jax

        target = getattr(kernels_jax, name)
        return jax.jit(jax.vmap(jax.grad(target) if grad else target, in_axes=in_axes))

    return factory


def _batched_product(
    id: str, what: str, size: int, dtype: Any, calls: int | None = None
) -> PeerWorkload:
    """``vmap(apply_matrix)`` (``apply_matrix32`` in float32) at this batch size."""
    single = np.dtype(dtype) == np.float32
    name = "apply_matrix32" if single else "apply_matrix"
    numpy_peer, numba_peer = (
        (apply_matrix32_numpy, apply_matrix32_numba)
        if single
        else (apply_matrix_numpy, apply_matrix_numba)
    )
    return PeerWorkload(
        id=id,
        description=f"vmap({name}), matrix 150x100, {what}",
        inputs=_batch_inputs(size, dtype),
        impls={
            "numpy": lambda: numpy_peer,
            "numbax": _numbax(getattr(kernels, name)),
            "jax": _jax(name),
            "numba": lambda: numba_peer,
        },
        calls_per_sample=calls,
        rtol=1e-4 if single else 1e-12,
    )


WORKLOADS = [
    _batched_product("vmap_small", "batch 10 (quickstart)", 10, np.float64, calls=200),
    _batched_product("vmap_large", "batch 10,000", 10_000, np.float64),
    _batched_product("vmap_large_f32", "batch 10,000, float32", 10_000, np.float32),
    PeerWorkload(
        id="per_example",
        description="vmap(grad(logistic_loss), in_axes=(None, 0, 0)), 10,000 x 100",
        inputs=_per_example_inputs,
        impls={
            "numpy": lambda: per_example_numpy,
            "numbax": _numbax(kernels.logistic_loss, (None, 0, 0), grad=True),
            "jax": _jax("logistic_loss", (None, 0, 0), grad=True),
            "numba": lambda: per_example_numba,
        },
        rtol=1e-10,
    ),
    PeerWorkload(
        id="per_example_mlp",
        description="vmap(grad(mlp_loss), in_axes=(None, 0, 0)), 50-32-3 tanh MLP, 2,000 examples",
        inputs=_per_example_mlp_inputs,
        impls={
            "numpy": lambda: per_example_mlp_numpy,
            "numbax": _numbax(kernels.mlp_example_loss, (None, 0, 0), grad=True),
            "jax": _jax("mlp_example_loss", (None, 0, 0), grad=True),
        },
        rtol=1e-10,
    ),
]
