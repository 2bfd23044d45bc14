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


MD_DT = 0.001
"""Velocity-Verlet step in reduced Lennard-Jones units (the oscillation period near the
potential's minimum is about 0.3): small enough that 1,000 steps stay smooth."""


def lj_energy(pos):
    """Lennard-Jones energy (ε = σ = 1, no cutoff) of all pairs of particles in ``pos``.

    Written as array code over every ordered pair: the identity added to the squared
    distances keeps the diagonal's division finite (r² = 1 there), and multiplying by
    the off-diagonal mask removes the diagonal's term, so the energy and its gradient
    are exactly those of the pairs i < j (each counted twice, hence 2 = 4 / 2).
    """
    n = pos.shape[0]
    eye = np.eye(n)
    diff = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(diff * diff, axis=2) + eye
    inv6 = 1.0 / (r2 * r2 * r2)
    return 2.0 * np.sum((1.0 - eye) * (inv6 * inv6 - inv6))


def lj_forces(pos):
    """The analytic Lennard-Jones forces, −∇E: what a scientist writes without AD.

    F_i = Σ_j 24 (2/r¹⁴ − 1/r⁸) (x_i − x_j); the diagonal is masked as in
    :func:`lj_energy`.
    """
    n = pos.shape[0]
    eye = np.eye(n)
    diff = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(diff * diff, axis=2) + eye
    inv2 = 1.0 / r2
    inv6 = inv2 * inv2 * inv2
    scale = (1.0 - eye) * 24.0 * inv2 * (2.0 * inv6 * inv6 - inv6)
    return np.sum(scale[:, :, None] * diff, axis=1)
