"""The JAX peers of :mod:`benchmarks.kernels`, written the way a JAX user would (``jnp``).

Separate from ``kernels`` so that importing the NumPy functions never imports JAX; only
imported when JAX is installed (the ``compare`` extra).
"""

import jax.numpy as jnp


def selu(x, alpha=1.67, lmbda=1.05):
    """JAX quickstart's ``selu``, verbatim."""
    return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def poly(x):
    """Same expression as the NumPy version; XLA fuses it into one loop."""
    return x + x * x + x * x * x


def add_one(x):
    """Almost no work, so a call measures JAX's dispatch overhead."""
    return x + 1


def sum_logistic(x):
    return jnp.sum(1.0 / (1.0 + jnp.exp(-x)))


def mlp_loss(params, x, y):
    w1, b1, w2, b2, w3, b3 = params
    h1 = jnp.tanh(x @ w1 + b1)
    h2 = jnp.tanh(h1 @ w2 + b2)
    out = h2 @ w3 + b3
    return jnp.mean((out - y) ** 2)


def apply_matrix(v):
    from benchmarks.kernels import VMAP_MAT

    return jnp.dot(VMAP_MAT, v)


def apply_matrix32(v):
    from benchmarks.kernels import VMAP_MAT32

    return jnp.dot(VMAP_MAT32, v)


def logistic_loss(w, x, y):
    p = 1.0 / (1.0 + jnp.exp(-jnp.dot(x, w)))
    return -(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))


def mlp_example_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.sum((h @ w2 + b2 - y) ** 2)
