"""The GPU workloads, as a NumPy user writes them, and their JAX twins.

Each per-example body runs its own control flow: the Lorenz-63 trajectory a fixed
number of steps, the Newton solve until its own tolerance (bounded, so that its
gradient's tape fits in a thread's local memory). The MLP's per-example gradient works
on arrays of its example: its layers' activations and cotangents live in the thread's
local memory.
"""

from __future__ import annotations

import numpy as np

import numbax as nx

SELU_ALPHA = 1.6732632423543772
SELU_LAMBDA = 1.0507009873554805


def selu(x, alpha=SELU_ALPHA, lam=SELU_LAMBDA):
    return lam * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def root_mean_square(x):
    """Each row's root mean square: a reduction of elementwise values (the squares are
    made inside the reduction kernels, never stored), then a function of its result."""
    return np.sqrt(np.mean(np.square(np.abs(x)), axis=-1))


def softmax(x):
    """Each row's softmax: three kernels (each row's max, the sum of ``exp(x - max)``,
    the quotient), the exponentials made again where a later one reads them."""
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def lorenz(steps: int, dt: float = 0.001):
    """The squared distance from the origin after ``steps`` Euler steps of Lorenz-63."""

    def trajectory(x, y, z, sigma, rho, beta):
        for _ in range(steps):
            dx = sigma * (y - x)
            dy = x * (rho - z) - y
            dz = x * y - beta * z
            x = x + dt * dx
            y = y + dt * dy
            z = z + dt * dz
        return x * x + y * y + z * z

    return trajectory


def newton(max_steps: int = 60):
    """The real root of ``x**3 + a*x - b`` (``a > 0``), to 1e-12, by Newton's method."""

    def root(a, b):
        x = b / (1.0 + a)
        for _ in range(max_steps):
            fx = x * x * x + a * x - b
            if abs(fx) < 1e-12:
                break
            x = x - fx / (3.0 * x * x + a)
        return x

    return root


def noisy_position(key, mu):
    """A draw per example from its own key (``nx.random`` inside a thread)."""
    return mu + 0.1 * nx.random.normal(key) * nx.random.uniform(key, minval=0.5, maxval=1.5)


def random_walk(steps: int):
    """A walk of ``steps`` exponential steps, each to the left or the right by a coin:
    keys made inside the thread (``fold_in``, ``split``), one per step."""

    def walk(key, start):
        position = start
        for i in range(steps):
            step_key, coin_key = nx.random.split(nx.random.fold_in(key, i))
            size = nx.random.exponential(step_key)
            position = position + (size if nx.random.bernoulli(coin_key, 0.5) else -size)
        return position

    return walk


MLP_SIZES = (8, 16)  # inputs, hidden units


def mlp_loss(w1, b1, w2, b2, x, y):
    """The squared error of a one-hidden-layer MLP on one example."""
    h = np.tanh(w1 @ x + b1)
    prediction = np.dot(w2, h) + b2
    return (prediction - y) ** 2


def mlp_parameters(seed: int = 0) -> tuple:
    inputs, hidden = MLP_SIZES
    rng = np.random.default_rng(seed)
    return (
        rng.normal(0.0, 0.5, (hidden, inputs)),
        rng.normal(0.0, 0.1, hidden),
        rng.normal(0.0, 0.5, hidden),
        0.1,
    )


def gamma_draws(key, a):
    """A gamma draw per example (its rejection loop runs to each thread's own end)."""
    return nx.random.gamma(key, a)


# -- JAX twins --------------------------------------------------------------------------


def jax_twins(steps: int, max_steps: int = 60) -> dict:
    """The same workloads in JAX, jitted: ``vmap`` of ``value_and_grad`` of a
    ``fori_loop`` (a ``while_loop`` has no reverse mode in JAX, so the Newton solve runs
    every step and freezes converged examples with ``where``)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def selu_jax(x):
        return SELU_LAMBDA * jnp.where(x > 0, x, SELU_ALPHA * jnp.exp(x) - SELU_ALPHA)

    def root_mean_square_jax(x):
        return jnp.sqrt(jnp.mean(jnp.square(jnp.abs(x)), axis=-1))

    def softmax_jax(x):
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True)

    def trajectory(x, y, z, sigma, rho, beta, dt=0.001):
        def step(_, s):
            x, y, z = s
            return (
                x + dt * sigma * (y - x),
                y + dt * (x * (rho - z) - y),
                z + dt * (x * y - beta * z),
            )

        x, y, z = jax.lax.fori_loop(0, steps, step, (x, y, z))
        return x * x + y * y + z * z

    def root(a, b):
        def step(_, x):
            fx = x * x * x + a * x - b
            return jnp.where(jnp.abs(fx) < 1e-12, x, x - fx / (3.0 * x * x + a))

        return jax.lax.fori_loop(0, max_steps, step, b / (1.0 + a))

    def mlp_loss_jax(w1, b1, w2, b2, x, y):
        h = jnp.tanh(w1 @ x + b1)
        return (jnp.dot(w2, h) + b2 - y) ** 2

    mlp_grads = jax.vmap(
        jax.grad(mlp_loss_jax, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0)
    )
    lorenz_vg = jax.vmap(
        jax.value_and_grad(trajectory, argnums=(0, 1, 2)), in_axes=(0, 0, 0, None, None, None)
    )
    newton_vg = jax.vmap(jax.value_and_grad(root, argnums=(0, 1)))
    return {
        "selu": jax.jit(selu_jax),
        "rms": jax.jit(root_mean_square_jax),
        "softmax": jax.jit(softmax_jax),
        "lorenz": jax.jit(lorenz_vg),
        "newton": jax.jit(newton_vg),
        "mlp": jax.jit(mlp_grads),
    }
