"""Workloads for automatic differentiation: ``nx.jit(nx.grad(f))`` and the Hessian.

The NumPy peer is the derivative written out by hand (what a NumPy user would do
without AD); JAX's is ``jax.jit(jax.grad(...))`` of the ``jnp`` twin in float64;
autograd traces the NumPy code at every call; the Numba peer is the hand-derived
derivative as one compiled loop (or BLAS calls), the practical limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from benchmarks import kernels
from benchmarks.runner import PeerWorkload

# -- sum_logistic: gradient and Hessian ---------------------------------------------------


def logistic_grad_numpy(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return s * (1.0 - s)


@numba.njit(fastmath=False)
def logistic_grad_loop(x):
    out = np.empty_like(x)
    for i in range(x.size):
        s = 1.0 / (1.0 + np.exp(-x[i]))
        out[i] = s * (1.0 - s)
    return out


def logistic_hessian_numpy(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return np.diag(s * (1.0 - s) * (1.0 - 2.0 * s))


@numba.njit(fastmath=False)
def logistic_hessian_loop(x):
    out = np.zeros((x.size, x.size))
    for i in range(x.size):
        s = 1.0 / (1.0 + np.exp(-x[i]))
        out[i, i] = s * (1.0 - s) * (1.0 - 2.0 * s)
    return out


# -- the MLP's MSE loss -----------------------------------------------------------------------


def mlp_grad_numpy(params, x, y):
    """Backpropagation by hand."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    out = h2 @ w3 + b3
    d_out = 2.0 * (out - y) / out.size
    d_w3 = h2.T @ d_out
    d_b3 = d_out.sum(axis=0)
    d_h2 = (d_out @ w3.T) * (1.0 - h2 * h2)
    d_w2 = h1.T @ d_h2
    d_b2 = d_h2.sum(axis=0)
    d_h1 = (d_h2 @ w2.T) * (1.0 - h1 * h1)
    d_w1 = x.T @ d_h1
    d_b1 = d_h1.sum(axis=0)
    return (d_w1, d_b1, d_w2, d_b2, d_w3, d_b3)


mlp_grad_numba = numba.njit(fastmath=False)(mlp_grad_numpy)


def mlp_inputs(quick: bool) -> tuple[Any, ...]:
    rng = np.random.default_rng(0)
    sizes = (784, 256, 256, 10)
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        params.append(rng.standard_normal((n_in, n_out)) / np.sqrt(n_in))
        params.append(np.zeros(n_out))
    batch = 32 if quick else 128
    x = rng.standard_normal((batch, sizes[0]))
    y = rng.standard_normal((batch, sizes[-1]))
    return (tuple(params), x, y)


# -- peers ------------------------------------------------------------------------------


def _numbax(transform: str, fun: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    def factory() -> Callable[..., Any]:
        import numbax as nx

        return nx.jit(getattr(nx, transform)(fun))

    return factory


def _jax(transform: str, name: str) -> Callable[[], Callable[..., Any]]:
    def factory() -> Callable[..., Any]:
        import jax

        from benchmarks import kernels_jax

        return jax.jit(getattr(jax, transform)(getattr(kernels_jax, name)))

    return factory


def _autograd(transform: str, fun: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    """autograd differentiates code written against ``autograd.numpy``: the kernels'
    own source with ``np`` bound to it."""

    def factory() -> Callable[..., Any]:
        import types

        import autograd
        import autograd.numpy as anp

        traced = types.FunctionType(fun.__code__, {**fun.__globals__, "np": anp})
        return getattr(autograd, transform)(traced)

    return factory


WORKLOADS = [
    PeerWorkload(
        id="grad_logistic",
        description="grad(sum(1/(1+exp(-x)))) on 1,000,000 float64",
        inputs=lambda quick: (
            np.random.default_rng(0).standard_normal(100_000 if quick else 1_000_000),
        ),
        impls={
            "numpy": lambda: logistic_grad_numpy,
            "numbax": _numbax("grad", kernels.sum_logistic),
            "jax": _jax("grad", "sum_logistic"),
            "autograd": _autograd("grad", kernels.sum_logistic),
            "numba": lambda: logistic_grad_loop,
        },
        rtol=1e-12,
    ),
    PeerWorkload(
        id="hessian_logistic",
        description="hessian(sum_logistic) = jacfwd(jacrev) on 100 float64",
        inputs=lambda quick: (np.random.default_rng(0).standard_normal(100),),
        impls={
            "numpy": lambda: logistic_hessian_numpy,
            "numbax": _numbax("hessian", kernels.sum_logistic),
            "jax": _jax("hessian", "sum_logistic"),
            "autograd": _autograd("hessian", kernels.sum_logistic),
            "numba": lambda: logistic_hessian_loop,
        },
        rtol=1e-12,
    ),
    PeerWorkload(
        id="mlp_grad",
        description="grad of a 784-256-256-10 tanh MLP's MSE, batch 128, float64",
        inputs=mlp_inputs,
        impls={
            "numpy": lambda: mlp_grad_numpy,
            "numbax": _numbax("grad", kernels.mlp_loss),
            "jax": _jax("grad", "mlp_loss"),
            "autograd": _autograd("grad", kernels.mlp_loss),
            "numba": lambda: mlp_grad_numba,
        },
        rtol=1e-9,
    ),
]
