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


def apply_matrix_numpy(batch):
    return batch @ kernels.VMAP_MAT.T


@numba.njit(fastmath=False)
def _apply_matrix_loop(batch, mat):
    out = np.empty((batch.shape[0], mat.shape[0]))
    for i in range(batch.shape[0]):
        out[i] = mat @ batch[i]
    return out


def apply_matrix_numba(batch):
    return _apply_matrix_loop(batch, kernels.VMAP_MAT)


def apply_matrix32_numpy(batch):
    return batch @ kernels.VMAP_MAT32.T


@numba.njit(fastmath=False)
def _apply_matrix32_loop(batch, mat):
    out = np.empty((batch.shape[0], mat.shape[0]), np.float32)
    for i in range(batch.shape[0]):
        out[i] = mat @ batch[i]
    return out


def apply_matrix32_numba(batch):
    return _apply_matrix32_loop(batch, kernels.VMAP_MAT32)


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


WORKLOADS = [
    PeerWorkload(
        id="vmap_small",
        description="vmap(apply_matrix), matrix 150x100, batch 10 (quickstart)",
        inputs=_batch_inputs(10),
        impls={
            "numpy": lambda: apply_matrix_numpy,
            "numbax": _numbax(kernels.apply_matrix),
            "jax": _jax("apply_matrix"),
            "numba": lambda: apply_matrix_numba,
        },
        calls_per_sample=200,
        rtol=1e-12,
    ),
    PeerWorkload(
        id="vmap_large",
        description="vmap(apply_matrix), matrix 150x100, batch 10,000",
        inputs=_batch_inputs(10_000),
        impls={
            "numpy": lambda: apply_matrix_numpy,
            "numbax": _numbax(kernels.apply_matrix),
            "jax": _jax("apply_matrix"),
            "numba": lambda: apply_matrix_numba,
        },
        rtol=1e-12,
    ),
    PeerWorkload(
        id="vmap_large_f32",
        description="vmap(apply_matrix) in float32, matrix 150x100, batch 10,000",
        inputs=_batch_inputs(10_000, np.float32),
        impls={
            "numpy": lambda: apply_matrix32_numpy,
            "numbax": _numbax(kernels.apply_matrix32),
            "jax": _jax("apply_matrix32"),
            "numba": lambda: apply_matrix32_numba,
        },
        rtol=1e-4,
    ),
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
