"""Per-example functions the scale-out benchmark maps over every core (``scale.py``).

Plain NumPy, as a user writes them, in a module of their own (numbax reads a function's
source from its file). Each is one example's work; the benchmark maps it with ``nx.pmap``
(and ``jax.pmap`` of ``jax.vmap`` over the same examples).

* ``mlp_loss``: the squared error of a two-layer tanh network on one example's batch of
  points. Its gradient with respect to the shared parameters, per example, is the
  workload: matrix products and a backward pass, about a millisecond an example.
* ``lorenz_rk4``: the Lorenz-63 system integrated by classical Runge-Kutta for a fixed
  number of steps from parameters (σ, ρ, β); its gradient with respect to them, per
  example, is reverse mode through a 2,000-step Python loop over scalars.
* ``damped_newton``: a ``while`` loop to a tolerance whose iteration count grows with the
  example's index, so that the examples' costs are uneven and their order is the worst
  for a static split of the axis.
"""

import numpy as np

RK4_DT = 0.005
"""Runge-Kutta step: 2,000 steps cover t = 0..10, where the trajectory stays bounded."""


def mlp_loss(params, x, y):
    """Mean squared error of ``tanh(x @ w1 + b1) @ w2 + b2`` against ``y``."""
    w1, b1, w2, b2 = params
    hidden = np.tanh(x @ w1 + b1)
    error = hidden @ w2 + b2 - y
    return np.mean(error * error)


def _lorenz_rates(x, y, z, sigma, rho, beta):
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


def lorenz_rk4(theta, n_steps=2_000):
    """Final x² of the Lorenz system from (1, 1, 1), ``theta = (σ, ρ, β)``."""
    sigma, rho, beta = theta[0], theta[1], theta[2]
    x, y, z = 1.0, 1.0, 1.0
    h = RK4_DT
    for _ in range(n_steps):
        k1x, k1y, k1z = _lorenz_rates(x, y, z, sigma, rho, beta)
        k2x, k2y, k2z = _lorenz_rates(
            x + 0.5 * h * k1x, y + 0.5 * h * k1y, z + 0.5 * h * k1z, sigma, rho, beta
        )
        k3x, k3y, k3z = _lorenz_rates(
            x + 0.5 * h * k2x, y + 0.5 * h * k2y, z + 0.5 * h * k2z, sigma, rho, beta
        )
        k4x, k4y, k4z = _lorenz_rates(x + h * k3x, y + h * k3y, z + h * k3z, sigma, rho, beta)
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
        z = z + h / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z)
    return x * x


NEWTON_TOL = 1e-10


def damped_newton(a, damping):
    """The root of x³ + a·x − 1 = 0 by Newton's method with its step scaled by
    ``damping`` (in (0, 1]): the smaller it is, the more iterations the ``while`` loop
    runs before the residual is below the tolerance."""
    x = 0.0
    r = x * x * x + a * x - 1.0
    while abs(r) > NEWTON_TOL:
        x = x - damping * r / (3.0 * x * x + a)
        r = x * x * x + a * x - 1.0
    return x
