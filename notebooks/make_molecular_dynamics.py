"""Writes 05_molecular_dynamics.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Molecular dynamics: forces as `-grad(energy)`\n\n"
        "A molecular-dynamics code needs forces, and the forces are the negative gradient "
        "of the potential energy. JAX's documentation writes them as "
        "`force = lambda R: -jax.grad(energy)(R)` and steps the atoms with velocity "
        "Verlet inside `jax.jit`. The same program runs on numbax with the import "
        "swapped — and, since numbax differentiates and compiles Python loops, the "
        "energy can be the sum over pairs a physicist writes on the board, and the time "
        "loop a plain `for`."
    ),
    new_code_cell(
        "import time\n\nimport matplotlib.pyplot as plt\nimport numpy as np\n\nimport numbax as nx"
    ),
    new_markdown_cell(
        "## The potential energy, pair by pair\n\n"
        "Lennard-Jones atoms in reduced units (well depth ε = 1, size σ = 1): each pair at "
        "distance r contributes 4 (r⁻¹² − r⁻⁶). The double loop visits every pair once. "
        "Plain NumPy runs it slowly (one interpreted operation at a time) and JAX's "
        "tracer would unroll it into thousands of operations; under `nx.jit` it is "
        "compiled to a native loop, and so is its derivative.\n\n"
        "`force` is the line from JAX's documentation, with `jax.grad` → `nx.grad`."
    ),
    new_code_cell(
        "def energy(positions):\n"
        '    """Lennard-Jones energy of a cluster of atoms (positions: n × 3)."""\n'
        "    n = positions.shape[0]\n"
        "    total = 0.0\n"
        "    for i in range(n):\n"
        "        for j in range(i + 1, n):\n"
        "            dx = positions[i, 0] - positions[j, 0]\n"
        "            dy = positions[i, 1] - positions[j, 1]\n"
        "            dz = positions[i, 2] - positions[j, 2]\n"
        "            inv6 = 1.0 / (dx * dx + dy * dy + dz * dz) ** 3\n"
        "            total = total + 4.0 * (inv6 * inv6 - inv6)\n"
        "    return total\n\n\n"
        "force = lambda positions: -nx.grad(energy)(positions)"
    ),
    new_markdown_cell(
        "Twenty-seven atoms on a cubic lattice at the pair potential's minimum distance "
        "2^(1/6), with random velocities (no net momentum). A scientist checks the "
        "forces against the ones derived by hand, "
        "F_i = Σ_j 24 (2 r⁻¹⁴ − r⁻⁸) (x_i − x_j), written here as vectorized NumPy — "
        "the code one writes without automatic differentiation. They agree on the lattice "
        "and on a perturbed copy of it."
    ),
    new_code_cell(
        "def lj_forces(positions):\n"
        '    """The same forces derived by hand: all pairs at once, with broadcasting."""\n'
        "    delta = positions[:, None, :] - positions[None, :, :]\n"
        "    r2 = np.sum(delta ** 2, axis=-1)\n"
        "    np.fill_diagonal(r2, np.inf)  # an atom exerts no force on itself\n"
        "    inv2 = 1.0 / r2\n"
        "    inv6 = inv2 ** 3\n"
        "    scale = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0)\n"
        "    return np.sum(scale[:, :, None] * delta, axis=1)\n\n\n"
        "grid = np.arange(3) * 2 ** (1 / 6)\n"
        "x0 = np.stack(np.meshgrid(grid, grid, grid, indexing='ij'), axis=-1).reshape(-1, 3)\n"
        "rng = np.random.default_rng(0)\n"
        "v0 = 0.3 * rng.standard_normal(x0.shape)\n"
        "v0 -= v0.mean(axis=0)\n"
        "f0 = force(x0)\n"
        "np.testing.assert_allclose(f0, lj_forces(x0), rtol=1e-9, atol=1e-12)\n"
        "shaken = x0 + 0.05 * rng.standard_normal(x0.shape)\n"
        "np.testing.assert_allclose(force(shaken), lj_forces(shaken), rtol=1e-9, atol=1e-12)\n"
        "print(x0.shape, 'atoms; largest force on the perturbed lattice:',\n"
        "      np.abs(force(shaken)).max())"
    ),
    new_markdown_cell(
        "## Velocity Verlet in a Python loop, under `nx.jit`\n\n"
        "In JAX the time loop is `lax.fori_loop(0, n_steps, step, state)`, with `step` a "
        "function of the loop index and a state tuple. Here it is the loop itself. `step` "
        "is a nested function that reads `dt` from the enclosing function, as JAX code "
        "writes it. The state includes the forces, so each step evaluates them once, and "
        "a run can continue where the last one stopped.\n\n"
        "`nx.jit` compiles `simulate` on the first call, the loops of `energy`'s "
        "derivative included (numbax says so on stderr when a compile takes more than "
        "two seconds); every later call with arrays of the same types reuses the "
        "machine code, whatever `n_steps` is."
    ),
    new_code_cell(
        "def simulate(positions, velocities, forces, dt, n_steps):\n"
        "    def step(x, v, f):\n"
        "        v = v + 0.5 * dt * f\n"
        "        x = x + dt * v\n"
        "        f = force(x)\n"
        "        v = v + 0.5 * dt * f\n"
        "        return x, v, f\n\n"
        "    for _ in range(n_steps):\n"
        "        positions, velocities, forces = step(positions, velocities, forces)\n"
        "    return positions, velocities, forces\n\n\n"
        "simulate_jit = nx.jit(simulate)\n"
        "dt = 0.005\n"
        "start = time.perf_counter()\n"
        "simulate_jit(x0, v0, f0, dt, 1)\n"
        "print(f'first call (generate and compile): {time.perf_counter() - start:.1f} s')"
    ),
    new_markdown_cell(
        "The compiled function computes what the interpreted one does (`simulate` without "
        "`jit` runs as Python, the derivative's loops included):"
    ),
    new_code_cell(
        "compiled = simulate_jit(x0, v0, f0, dt, 3)\n"
        "interpreted = simulate(x0, v0, f0, dt, 3)\n"
        "for got, want in zip(compiled, interpreted, strict=True):\n"
        "    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)"
    ),
    new_markdown_cell(
        "## Energy conservation\n\n"
        "Velocity Verlet is symplectic: the total energy does not drift, it only "
        "fluctuates at order dt². The run is 2,000 steps in chunks of 20; between chunks "
        "Python records the potential energy (the same `energy`, interpreted) and the "
        "kinetic energy. The lattice is not the cluster's lowest-energy shape, so "
        "potential energy turns into heat as the atoms rearrange — while the total stays "
        "put."
    ),
    new_code_cell(
        "n_chunks, chunk = 100, 20\n"
        "state = (x0, v0, f0)\n"
        "potential, kinetic = [energy(x0)], [0.5 * np.sum(v0 ** 2)]\n"
        "for _ in range(n_chunks):\n"
        "    state = simulate_jit(*state, dt, chunk)\n"
        "    potential.append(energy(state[0]))\n"
        "    kinetic.append(0.5 * np.sum(state[1] ** 2))\n"
        "potential, kinetic = np.array(potential), np.array(kinetic)\n"
        "total = potential + kinetic\n"
        "times = dt * chunk * np.arange(n_chunks + 1)\n\n"
        "fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3))\n"
        "left.plot(times, potential - potential[0], label='potential')\n"
        "left.plot(times, kinetic - kinetic[0], label='kinetic')\n"
        "left.plot(times, total - total[0], label='total')\n"
        "left.set_xlabel('time')\n"
        "left.set_ylabel('change in energy')\n"
        "left.legend()\n"
        "right.plot(times, total - total[0], color='C2')\n"
        "right.set_xlabel('time')\n"
        "right.set_title('total energy, magnified')\n"
        "plt.show()\n"
        "drift = np.abs(total - total[0]).max()\n"
        "print(f'kinetic energy {kinetic[0]:.2f} → {kinetic[-1]:.2f}; '\n"
        "      f'total energy within {drift:.1e} of {total[0]:.3f}')\n"
        "assert drift < 1e-3 * abs(total[0])"
    ),
    new_markdown_cell(
        "## Speed\n\n"
        "The fair comparison is with the NumPy program one writes without numbax: the "
        "hand-derived, vectorized `lj_forces` in the same Verlet loop. Both run 100 steps "
        "from the same state."
    ),
    new_code_cell(
        "def simulate_numpy(positions, velocities, forces, dt, n_steps):\n"
        "    for _ in range(n_steps):\n"
        "        velocities = velocities + 0.5 * dt * forces\n"
        "        positions = positions + dt * velocities\n"
        "        forces = lj_forces(positions)\n"
        "        velocities = velocities + 0.5 * dt * forces\n"
        "    return positions, velocities, forces\n\n\n"
        "compiled = simulate_jit(x0, v0, f0, dt, 100)\n"
        "by_hand = simulate_numpy(x0, v0, f0, dt, 100)\n"
        "for got, want in zip(compiled, by_hand, strict=True):\n"
        "    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)\n"
        "print('NumPy, forces by hand')\n"
        "%timeit -n 3 -r 3 simulate_numpy(x0, v0, f0, dt, 100)\n"
        "print('numbax, forces as -grad(energy), compiled')\n"
        "%timeit -n 3 -r 3 simulate_jit(x0, v0, f0, dt, 100)"
    ),
    new_markdown_cell(
        "## What was generated\n\n"
        "`step` was lifted out of `simulate` into a function of its own; the `dt` it "
        "reads from the enclosing function is passed to it as an argument. Its "
        "derivative code (`force`, reverse mode through both pair loops) is compiled "
        "into the same machine code."
    ),
    new_code_cell("nx.show(simulate_jit)"),
    new_markdown_cell(
        "## The same program in JAX\n\n"
        "For comparison, JAX's version (not run here). The energy is vectorized over "
        "all pairs — a double loop would be unrolled by the tracer — and the time loop is "
        "a `fori_loop` over a state tuple:\n\n"
        "```python\n"
        "import jax\n"
        "import jax.numpy as jnp\n\n"
        "def energy(R):\n"
        "    delta = R[:, None, :] - R[None, :, :]\n"
        "    r2 = jnp.sum(delta ** 2, axis=-1) + jnp.eye(R.shape[0])\n"
        "    inv6 = 1.0 / r2 ** 3\n"
        "    return 2.0 * jnp.sum((inv6 ** 2 - inv6) * (1.0 - jnp.eye(R.shape[0])))\n\n"
        "force = lambda R: -jax.grad(energy)(R)\n\n"
        "@jax.jit\n"
        "def simulate(R, V, F, dt, n_steps):\n"
        "    def step(i, state):\n"
        "        R, V, F = state\n"
        "        V = V + 0.5 * dt * F\n"
        "        R = R + dt * V\n"
        "        F = force(R)\n"
        "        V = V + 0.5 * dt * F\n"
        "        return R, V, F\n\n"
        "    return jax.lax.fori_loop(0, n_steps, step, (R, V, F))\n"
        "```\n\n"
        "That vectorized energy also runs on numbax unchanged but for `jnp` → `np` "
        "(`nx.grad` of it is shown below, interpreted): forces of both forms agree."
    ),
    new_code_cell(
        "def energy_vectorized(R):\n"
        "    delta = R[:, None, :] - R[None, :, :]\n"
        "    r2 = np.sum(delta ** 2, axis=-1) + np.eye(R.shape[0])\n"
        "    inv6 = 1.0 / r2 ** 3\n"
        "    return 2.0 * np.sum((inv6 ** 2 - inv6) * (1.0 - np.eye(R.shape[0])))\n\n\n"
        "np.testing.assert_allclose(energy_vectorized(shaken), energy(shaken), rtol=1e-12)\n"
        "forces_vectorized = -nx.grad(energy_vectorized)(shaken)\n"
        "np.testing.assert_allclose(forces_vectorized, force(shaken), rtol=1e-9, atol=1e-12)\n"
        "print('the vectorized and the loop energy give the same forces')"
    ),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("05_molecular_dynamics.ipynb"))
