"""Plain Python/NumPy functions with loops that the loop benchmarks differentiate.

They live in their own module, importing nothing but NumPy, for the reasons
``kernels.py`` gives: numbax reads a function's source from its file, and the
compile-time workload's fresh subprocesses import them from here.
"""

import numpy as np

LORENZ_DT = 0.001
"""Explicit-Euler step: 10,000 steps cover t = 0..10, where the trajectory stays bounded."""


def lorenz(sigma, rho, beta, n_steps=10_000):
    """Final x² of the Lorenz-63 system integrated by explicit Euler from (1, 1, 1).

    Written as a scientist would: a Python loop over scalar state. ``n_steps`` is
    meant to be static (a constant in the generated source), as JAX's unrolled
    trace of the same loop also bakes it in.
    """
    x, y, z = 1.0, 1.0, 1.0
    dt = LORENZ_DT
    for _ in range(n_steps):
        dx = sigma * (y - x)
        dy = x * (rho - z) - y
        dz = x * y - beta * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
    return x * x


NEWTON_TOL = 1e-12
"""Absolute residual at which Newton's method stops; the roots are of order one."""


def newton_cubic(a, b):
    """Sum of the real roots of x³ + a·x − b = 0, elementwise, by Newton's method.

    For a > 0 the cubic is increasing, so Newton's method converges from x = 0; the
    ``while`` loop runs until every residual is below the tolerance, so the number of
    iterations depends on the data.
    """
    x = np.zeros_like(b)
    r = x * x * x + a * x - b
    while np.max(np.abs(r)) > NEWTON_TOL:
        x = x - r / (3.0 * x * x + a)
        r = x * x * x + a * x - b
    return np.sum(x)
