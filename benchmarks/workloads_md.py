"""Molecular dynamics: forces as ``-grad(energy)`` inside a Python time-stepping loop.

``md`` integrates 64 Lennard-Jones particles (ε = σ = 1, no cutoff, unit masses) by
velocity Verlet for 1,000 steps (20 under ``--quick``) and returns the final positions.
The user's program is :func:`md_run`: the energy written once as array code
(:func:`benchmarks.kernels_loops.lj_energy`) and a plain ``for`` loop that calls
``nx.grad`` of it every step, compiled whole by ``nx.jit``. The NumPy reference is the
same loop with the analytic force (:func:`benchmarks.kernels_loops.lj_forces`), the
Numba peer the analytic force as a double loop over pairs, and JAX's peer ``jax.grad``
of the ``jnp`` energy inside ``lax.fori_loop``, as JAX's documentation writes MD.

Particles start on a 4×4×4 cubic lattice of spacing 1.2 (the potential's minimum is at
2^(1/6) ≈ 1.12) with a ±0.05 uniform perturbation, at rest, so every pair distance stays
near or above 1 and the forces are finite and moderate.

Agreement: over t = 1 (1,000 steps) the peers' round-off differences grow with the
system's chaos; positions agree with NumPy's to ``MD_RTOL`` relative, checked at the full
step count (see the README's workload table for the measured gap).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

import numbax as nx
from benchmarks.kernels_loops import MD_DT, lj_energy, lj_forces
from benchmarks.workloads_loops import NotedWorkload

MD_RTOL = 1e-8
"""Relative (and absolute) tolerance on final positions, which are of order one."""

MD_LATTICE = 4
"""Particles per side of the starting lattice: 4³ = 64."""

MD_SPACING = 1.2
"""Lattice spacing, just above the pair potential's minimum at 2^(1/6)."""


def md_run(pos, vel, n_steps):
    """Final positions after ``n_steps`` velocity-Verlet steps, forces by ``nx.grad``.

    The user's program: no force derived by hand, the gradient of the energy is taken
    where it is needed, inside the loop. ``n_steps`` is static under ``nx.jit``.
    """
    force = -nx.grad(lj_energy)(pos)
    for _ in range(n_steps):
        vel = vel + 0.5 * MD_DT * force
        pos = pos + MD_DT * vel
        force = -nx.grad(lj_energy)(pos)
        vel = vel + 0.5 * MD_DT * force
    return pos


def md_run_numpy(pos: np.ndarray, vel: np.ndarray, n_steps: int) -> np.ndarray:
    """:func:`md_run` with the analytic force: the reference."""
    force = lj_forces(pos)
    for _ in range(n_steps):
        vel = vel + 0.5 * MD_DT * force
        pos = pos + MD_DT * vel
        force = lj_forces(pos)
        vel = vel + 0.5 * MD_DT * force
    return pos


@numba.njit(fastmath=False)
def _lj_forces_loop(pos, force):
    """Analytic forces into ``force``, one pass over the pairs i < j (Newton's third law)."""
    force[:] = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            inv2 = 1.0 / (dx * dx + dy * dy + dz * dz)
            inv6 = inv2 * inv2 * inv2
            scale = 24.0 * inv2 * (2.0 * inv6 * inv6 - inv6)
            force[i, 0] += scale * dx
            force[i, 1] += scale * dy
            force[i, 2] += scale * dz
            force[j, 0] -= scale * dx
            force[j, 1] -= scale * dy
            force[j, 2] -= scale * dz


@numba.njit(fastmath=False)
def md_run_numba(pos, vel, n_steps):
    """Velocity Verlet as an expert writes it: copies updated in place, forces by pairs."""
    pos = pos.copy()
    vel = vel.copy()
    force = np.empty_like(pos)
    _lj_forces_loop(pos, force)
    for _ in range(n_steps):
        for i in range(pos.shape[0]):
            for k in range(3):
                vel[i, k] += 0.5 * MD_DT * force[i, k]
                pos[i, k] += MD_DT * vel[i, k]
        _lj_forces_loop(pos, force)
        for i in range(pos.shape[0]):
            for k in range(3):
                vel[i, k] += 0.5 * MD_DT * force[i, k]
    return pos


def _jax_md() -> Callable[..., Any]:
    """``jax.jit`` of velocity Verlet in ``lax.fori_loop``, forces ``-jax.grad(energy)``."""
    import jax
    import jax.numpy as jnp

    def energy(pos: Any) -> Any:
        n = pos.shape[0]
        eye = jnp.eye(n)
        diff = pos[:, None, :] - pos[None, :, :]
        r2 = jnp.sum(diff * diff, axis=2) + eye
        inv6 = 1.0 / (r2 * r2 * r2)
        return 2.0 * jnp.sum((1.0 - eye) * (inv6 * inv6 - inv6))

    force_fn = jax.grad(energy)

    def run(pos: Any, vel: Any, n_steps: int) -> Any:
        def step(_: Any, state: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
            pos, vel, force = state
            vel = vel + 0.5 * MD_DT * force
            pos = pos + MD_DT * vel
            force = -force_fn(pos)
            vel = vel + 0.5 * MD_DT * force
            return pos, vel, force

        final, _, _ = jax.lax.fori_loop(0, n_steps, step, (pos, vel, -force_fn(pos)))
        return final

    return jax.jit(run, static_argnums=2)


def md_inputs(quick: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Perturbed-lattice positions, zero velocities (float64) and the step count."""
    side = np.arange(MD_LATTICE) * MD_SPACING
    lattice = np.stack(np.meshgrid(side, side, side, indexing="ij"), axis=-1).reshape(-1, 3)
    jitter = np.random.default_rng(0).uniform(-0.05, 0.05, lattice.shape)
    return lattice + jitter, np.zeros_like(lattice), 20 if quick else 1_000


WORKLOADS = [
    NotedWorkload(
        id="md",
        description="Lennard-Jones MD, 64 particles, forces -grad(energy), 1,000 Verlet steps",
        inputs=md_inputs,
        impls={
            "numpy": lambda: md_run_numpy,
            "numbax": lambda: nx.jit(md_run, static_argnums=2),
            "jax": _jax_md,
            "numba": lambda: md_run_numba,
        },
        rtol=MD_RTOL,
        notes={
            "numpy": "analytic force, array code (the reference)",
            "numbax": "nx.grad(lj_energy) in the Python loop as written",
            "jax": "jax.grad(energy) in lax.fori_loop",
            "numba": "analytic force, loop over pairs i < j",
        },
    ),
]
