"""Writes 04_scipy_optimize.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Fitting a force field with `scipy.optimize`\n\n"
        "SciPy's optimizers take a function, its gradient (`jac=`) and sometimes its "
        "Hessian (`hess=`), all as functions of NumPy arrays. JAX's documentation fits a "
        "force field this way with `jax.numpy`, `jax.grad`, `jax.jit` and "
        "`jax.hessian`; here is the same program with the import swapped. Nothing needs "
        "converting back: numbax's derivatives are NumPy arrays.\n\n"
        "```python\n"
        "import jax, jax.numpy as jnp                   # import numpy as np, numbax as nx\n"
        "jac = jax.jit(jax.grad(loss))                  # nx.jit(nx.grad(loss))\n"
        "minimize(loss, theta0, jac=jac, hess=jax.hessian(loss), ...)  # nx.hessian(loss)\n"
        "```"
    ),
    new_code_cell(
        "import time\n\n"
        "import matplotlib.pyplot as plt\n"
        "import numpy as np\n"
        "from scipy.optimize import minimize\n"
        "from scipy.spatial.distance import pdist\n\n"
        "import numbax as nx"
    ),
    new_markdown_cell(
        "## Reference data\n\n"
        "Two hundred configurations of six atoms. Their reference energies come from a "
        "Morse pair potential with known parameters θ = (well depth `D`, width `a`, "
        "equilibrium distance `r0`), plus noise: the fit should recover θ. A "
        "configuration's energy is the sum of its fifteen pair energies; `pdist` lists "
        "each configuration's pair distances."
    ),
    new_code_cell(
        "rng = np.random.default_rng(0)\n"
        "n_configurations, n_atoms = 200, 6\n"
        "positions = rng.uniform(0.0, 3.0, (n_configurations, n_atoms, 3))\n"
        "# one row per configuration, one column per pair of atoms\n"
        "distances = np.array([pdist(atoms) for atoms in positions])\n\n\n"
        "def morse_pair(theta, r):\n"
        '    """Morse energy of a pair of atoms at distance r."""\n'
        "    depth, width, r0 = theta[0], theta[1], theta[2]\n"
        "    return depth * (1.0 - np.exp(-width * (r - r0))) ** 2 - depth\n\n\n"
        "def morse_energy(theta, r):\n"
        '    """Energy of each configuration: the sum over its pairs."""\n'
        "    return np.sum(morse_pair(theta, r), axis=1)\n\n\n"
        "def loss(theta, r, energies):\n"
        "    residual = morse_energy(theta, r) - energies\n"
        "    return np.mean(residual ** 2)\n\n\n"
        "theta_true = np.array([0.8, 1.7, 1.2])\n"
        "reference = morse_energy(theta_true, distances)\n"
        "reference = reference + 0.01 * rng.standard_normal(n_configurations)\n"
        "arguments = (distances, reference)\n"
        "print(distances.shape, 'pair distances')"
    ),
    new_markdown_cell(
        "## The gradient, checked\n\n"
        "`nx.grad(loss)` differentiates with respect to the first argument, θ. Without "
        "`jit` it is generated NumPy code that runs at once (its source is at the end of "
        "this notebook). Central differences agree with it."
    ),
    new_code_cell(
        "loss_grad = nx.grad(loss)\n"
        "theta0 = np.array([0.5, 1.0, 1.5])\n"
        "print(loss_grad(theta0, *arguments))\n\n"
        "step = 1e-6\n"
        "numeric = [(loss(theta0 + step * e, *arguments) - loss(theta0 - step * e, *arguments))\n"
        "           / (2 * step) for e in np.eye(3)]\n"
        "np.testing.assert_allclose(loss_grad(theta0, *arguments), numeric, rtol=1e-6)"
    ),
    new_markdown_cell(
        "## L-BFGS-B and SLSQP with `jac=`\n\n"
        "Both methods take bounds: the depth and the width between 0 and 5, the "
        "equilibrium distance at most 3 (SLSQP's first steps are long; the bounds keep "
        "`exp` finite). SLSQP also takes constraints — here, that the equilibrium "
        "distance stays above 0.5. A "
        "callback records the loss at each iteration, for the plot further down."
    ),
    new_code_cell(
        "bounds = [(1e-3, 5.0), (1e-3, 5.0), (None, 3.0)]\n"
        "above_half = ({'type': 'ineq', 'fun': lambda t: t[2] - 0.5},)\n"
        "fits, history = {}, {}\n"
        "for method, constraints in [('L-BFGS-B', ()), ('SLSQP', above_half)]:\n"
        "    history[method] = [loss(theta0, *arguments)]\n"
        "    fits[method] = minimize(\n"
        "        loss, theta0, args=arguments, jac=loss_grad, method=method, bounds=bounds,\n"
        "        constraints=constraints,\n"
        "        callback=lambda t, m=method: history[m].append(loss(t, *arguments)),\n"
        "    )\n"
        "    fit = fits[method]\n"
        "    print(f'{method:9s} θ = {np.round(fit.x, 4)}  '\n"
        "          f'{fit.nit} iterations, {fit.njev} gradients, loss {fit.fun:.2e}')\n"
        "    np.testing.assert_allclose(fit.x, theta_true, atol=0.02)"
    ),
    new_markdown_cell(
        "## A second-order method with `hess=`\n\n"
        "`trust-exact` uses the exact Hessian, `nx.hessian(loss)` (= "
        "`jacfwd(jacrev(loss))`), and converges in a few iterations. The Hessian is "
        "symmetric and matches finite differences of the gradient."
    ),
    new_code_cell(
        "loss_hessian = nx.hessian(loss)\n"
        "H = loss_hessian(theta0, *arguments)\n"
        "numeric = np.array([(loss_grad(theta0 + step * e, *arguments)\n"
        "                     - loss_grad(theta0 - step * e, *arguments)) / (2 * step)\n"
        "                    for e in np.eye(3)])\n"
        "np.testing.assert_allclose(H, H.T, rtol=1e-12)\n"
        "np.testing.assert_allclose(H, numeric, rtol=1e-5)\n\n"
        "history['trust-exact'] = [loss(theta0, *arguments)]\n"
        "newton = minimize(\n"
        "    loss, theta0, args=arguments, jac=loss_grad, hess=loss_hessian,\n"
        "    method='trust-exact',\n"
        "    callback=lambda t: history['trust-exact'].append(loss(t, *arguments)),\n"
        ")\n"
        "print(f'trust-exact θ = {np.round(newton.x, 4)}  {newton.nit} iterations')\n"
        "np.testing.assert_allclose(newton.x, fits['L-BFGS-B'].x, atol=1e-4)"
    ),
    new_code_cell(
        "fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3))\n"
        "for method, losses in history.items():\n"
        "    left.semilogy(losses, marker='.', label=method)\n"
        "left.set_xlabel('iteration')\n"
        "left.set_ylabel('loss')\n"
        "left.legend()\n"
        "r_plot = np.linspace(0.7, 3.0, 200)\n"
        "right.plot(r_plot, morse_pair(theta_true, r_plot), label='true')\n"
        "right.plot(r_plot, morse_pair(newton.x, r_plot), '--', label='fitted')\n"
        "right.set_xlabel('pair distance')\n"
        "right.set_ylabel('pair energy')\n"
        "right.legend()\n"
        "plt.show()"
    ),
    new_markdown_cell(
        "## Compiled with `nx.jit`\n\n"
        "`nx.jit(nx.grad(loss))` compiles the gradient with Numba on its first call. "
        "numbax compiles Python loops as well as array code, so the loss can also be "
        "written the way the physics reads: a sum over configurations of a sum over "
        "pairs. (JAX needs the vectorized form: its tracer would unroll these 3,000 "
        "iterations.) Loops are also what Numba compiles fastest. Both forms give the "
        "same gradient, and the compiled one serves as `jac=` like any other."
    ),
    new_code_cell(
        "def loss_loops(theta, r, energies):\n"
        "    depth, width, r0 = theta[0], theta[1], theta[2]\n"
        "    total = 0.0\n"
        "    for c in range(r.shape[0]):\n"
        "        energy = 0.0\n"
        "        for p in range(r.shape[1]):\n"
        "            pair = depth * (1.0 - np.exp(-width * (r[c, p] - r0))) ** 2 - depth\n"
        "            energy = energy + pair\n"
        "        total = total + (energy - energies[c]) ** 2\n"
        "    return total / r.shape[0]\n\n\n"
        "compiled_grad = nx.jit(nx.grad(loss_loops))\n"
        "start = time.perf_counter()\n"
        "compiled_grad(theta0, *arguments)\n"
        "print(f'first call (generate and compile): {time.perf_counter() - start:.1f} s')\n"
        "same = loss_grad(theta0, *arguments)\n"
        "np.testing.assert_allclose(compiled_grad(theta0, *arguments), same, rtol=1e-10)\n"
        "fit = minimize(loss, theta0, args=arguments, jac=compiled_grad, method='L-BFGS-B',\n"
        "               bounds=bounds)\n"
        "np.testing.assert_allclose(fit.x, fits['L-BFGS-B'].x, atol=1e-6)"
    ),
    new_markdown_cell(
        "At this size NumPy's vectorized code is already efficient, and compiling gains "
        "little per gradient; `jit` pays where the gradient is the expensive part (many "
        "more configurations, or loops NumPy cannot vectorize). What a derivative "
        "always saves is loss evaluations: without `jac=`, SciPy estimates the gradient "
        "by finite differences — one more loss evaluation per parameter at every step, "
        "and a less accurate gradient — a cost that grows with the number of parameters."
    ),
    new_code_cell(
        "print('one gradient: interpreted (NumPy)')\n"
        "%timeit -n 20 -r 3 loss_grad(theta0, *arguments)\n"
        "print('one gradient: compiled')\n"
        "%timeit -n 20 -r 3 compiled_grad(theta0, *arguments)\n"
        "by_differences = minimize(loss, theta0, args=arguments, method='L-BFGS-B', "
        "bounds=bounds)\n"
        "print(f'L-BFGS-B without jac=: {by_differences.nfev} loss evaluations; with jac=: '\n"
        "      f\"{fits['L-BFGS-B'].nfev} loss and {fits['L-BFGS-B'].njev} gradient evaluations\")"
    ),
    new_markdown_cell(
        "## What was generated\n\n"
        "The gradient is readable NumPy: the forward pass, then the adjoint of each of "
        "your lines in reverse order. `morse_energy` gets a derivative function of its "
        "own, called from the gradient; `morse_pair`'s adjoint sums the cotangents of "
        "θ's three components back into one array (`nxrt.index_add`)."
    ),
    new_code_cell("nx.show(loss_grad)"),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("04_scipy_optimize.ipynb"))
