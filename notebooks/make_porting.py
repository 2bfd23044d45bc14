"""Writes 06_porting_from_jax.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Porting from JAX (and autograd)\n\n"
        "numbax keeps JAX's transformations — `grad`, `jit`, `vmap`, `jacfwd`, `hessian`, "
        "`custom_jvp`… — with JAX's names and semantics, and applies them to plain NumPy. "
        "What changes in a port is mostly what JAX made you *stop* writing: loops, "
        "in-place updates and `if`s come back.\n\n"
        "| JAX | numbax |\n"
        "|---|---|\n"
        "| `import jax.numpy as jnp` | `import numpy as np` |\n"
        "| `jax.grad`, `jax.jit`, `jax.vmap`, … | `nx.grad`, `nx.jit`, `nx.vmap`, … |\n"
        "| `x.at[i].set(v)`, `x.at[i].add(v)` | `x[i] = v`, `x[i] += v` (on an array the "
        "function made) |\n"
        "| `lax.fori_loop(lo, hi, body, init)` | `for i in range(lo, hi): ...` |\n"
        "| `lax.while_loop(cond, body, init)` | `while cond: ...` (reverse mode too) |\n"
        "| `lax.scan(f, carry, xs)` | a `for` loop writing rows of a result array |\n"
        "| `lax.cond(p, f, g, x)`, `lax.switch(i, fs, x)` | `if p: ... else: ...`, "
        "`if/elif` |\n"
        "| `jax.random.PRNGKey`, `split`, `normal` | `nx.random.PRNGKey`, `split`, "
        "`normal` |\n"
        "| `jax.pure_callback`, `jax.debug.print` | `nx.pure_callback`, `nx.debug.print` |\n"
        "| `jax.flatten_util.ravel_pytree` | `nx.flatten_util.ravel_pytree` |\n"
        "| `jax.example_libraries.optimizers` | `nx.example_libraries.optimizers` |\n"
        "| `jax.nn.relu`, `softplus`, `log_softmax`, … | `nx.nn.relu`, `softplus`, "
        "`log_softmax`, … |\n\n"
        "From autograd: `import autograd.numpy as np` → `import numpy as np`, "
        "`autograd.grad` → `nx.grad`, `elementwise_grad(f)` → "
        "`nx.grad(lambda x: np.sum(f(x)))` (the same vector-Jacobian product with ones), "
        "`autograd.misc.optimizers` → `nx.misc.optimizers`.\n\n"
        "Each section below shows a JAX idiom as text (JAX is not needed here) and its "
        "numbax port as code, checked against a closed form."
    ),
    new_code_cell("import numpy as np\n\nimport numbax as nx"),
    new_markdown_cell(
        "## `fori_loop` and `.at[].set` → a loop and stores\n\n"
        "Three sweeps of a smoothing stencil, then the energy of the result. In JAX every "
        "update makes a new array and the loop body is a function:\n\n"
        "```python\n"
        "def smooth_energy(x, n_sweeps):\n"
        "    def sweep(_, y):\n"
        "        inner = 0.25 * y[:-2] + 0.5 * y[1:-1] + 0.25 * y[2:]\n"
        "        return y.at[1:-1].set(inner)\n\n"
        "    return jnp.sum(jax.lax.fori_loop(0, n_sweeps, sweep, x) ** 2)\n"
        "```\n\n"
        "In NumPy it is the loop one would write anyway, with stores into a copy:"
    ),
    new_code_cell(
        "def smooth_energy(x, n_sweeps):\n"
        "    y = x.copy()\n"
        "    for _ in range(n_sweeps):\n"
        "        z = y.copy()\n"
        "        for i in range(1, y.shape[0] - 1):\n"
        "            z[i] = 0.25 * y[i - 1] + 0.5 * y[i] + 0.25 * y[i + 1]\n"
        "        y = z\n"
        "    return np.sum(y ** 2)\n\n\n"
        "x = np.linspace(0.0, 1.0, 8) ** 2\n"
        "g = nx.grad(smooth_energy)(x, 3)\n"
        "print(g)\n\n"
        "# the sweeps are linear, y = S x, so the gradient is 2 Sᵀ S x\n"
        "sweep = np.eye(8)\n"
        "for i in range(1, 7):\n"
        "    sweep[i, i - 1 : i + 2] = [0.25, 0.5, 0.25]\n"
        "S = np.linalg.matrix_power(sweep, 3)\n"
        "np.testing.assert_allclose(g, 2 * S.T @ S @ x, rtol=1e-12)"
    ),
    new_markdown_cell(
        "## `scan` → a loop writing rows\n\n"
        "A carry updated step by step, each step's value kept:\n\n"
        "```python\n"
        "def decay_path(rates, x0):\n"
        "    def step(x, rate):\n"
        "        x = x * jnp.exp(-rate)\n"
        "        return x, x\n\n"
        "    return jax.lax.scan(step, x0, rates)[1]\n"
        "```\n\n"
        "In NumPy the kept values are the rows of an array you allocate. `jacrev` gives "
        "the whole Jacobian of the trajectory: `path[t]` depends on the rates up to `t`."
    ),
    new_code_cell(
        "def decay_path(rates, x0):\n"
        "    path = np.zeros(rates.shape[0])\n"
        "    x = x0\n"
        "    for t in range(rates.shape[0]):\n"
        "        x = x * np.exp(-rates[t])\n"
        "        path[t] = x\n"
        "    return path\n\n\n"
        "rates = np.array([0.1, 0.2, 0.3])\n"
        "J = nx.jacrev(decay_path)(rates, 2.0)\n"
        "print(J)\n\n"
        "path = decay_path(rates, 2.0)\n"
        "np.testing.assert_allclose(J, -np.tril(np.ones((3, 3))) * path[:, None], rtol=1e-12)"
    ),
    new_markdown_cell(
        "## `cond` and `switch` → `if`/`elif`\n\n"
        "```python\n"
        "def shaped(x, mode):\n"
        "    return jax.lax.switch(mode, [jnp.sin, jnp.cos, lambda x: x ** 3], x)\n"
        "```\n\n"
        "An `if` on a number that does not carry a derivative (here `mode`, shared by the "
        "batch with `in_axes=None`) picks the code; an `if` on a value that does is "
        "followed per example under `vmap`."
    ),
    new_code_cell(
        "def shaped(x, mode):\n"
        "    if mode == 0:\n"
        "        return np.sin(x)\n"
        "    elif mode == 1:\n"
        "        return np.cos(x)\n"
        "    return x ** 3\n\n\n"
        "def clipped(x):\n"
        "    if x > 0.25:\n"
        "        return 0.25 + 0.5 * (x - 0.25)\n"
        "    return x\n\n\n"
        "xs = np.array([0.1, 0.2, 0.3])\n"
        "print(nx.vmap(nx.grad(shaped), in_axes=(0, None))(xs, 1))  # -sin(x)\n"
        "np.testing.assert_allclose(nx.vmap(nx.grad(shaped), in_axes=(0, None))(xs, 1), "
        "-np.sin(xs))\n"
        "np.testing.assert_allclose(nx.vmap(nx.grad(clipped))(xs), [1.0, 1.0, 0.5])"
    ),
    new_markdown_cell(
        "## `while_loop` → `while`, in reverse mode too\n\n"
        "Newton's method for a square root runs until it has converged: the number of "
        "iterations depends on the input. JAX writes it as\n\n"
        "```python\n"
        "def newton_sqrt(a):\n"
        "    def not_done(x):\n"
        "        return jnp.abs(x * x - a) > 1e-12 * a\n\n"
        "    return jax.lax.while_loop(not_done, lambda x: 0.5 * (x + a / x), a)\n"
        "```\n\n"
        "and `jax.grad(newton_sqrt)` fails: *Reverse-mode differentiation does not work "
        "for lax.while_loop or lax.fori_loop with dynamic start/stop values.* numbax "
        "counts the iterations on the way forward and runs as many backwards, compiled "
        "here:"
    ),
    new_code_cell(
        "def newton_sqrt(a):\n"
        "    x = a\n"
        "    while abs(x * x - a) > 1e-12 * a:\n"
        "        x = 0.5 * (x + a / x)\n"
        "    return x\n\n\n"
        "d_sqrt = nx.jit(nx.grad(newton_sqrt))\n"
        "print(d_sqrt(2.0), 0.5 / np.sqrt(2.0))\n"
        "np.testing.assert_allclose(d_sqrt(2.0), 0.5 / np.sqrt(2.0), rtol=1e-12)"
    ),
    new_markdown_cell(
        "The derivative is Python source you can read: the forward loop keeps a tape of "
        "the values each iteration overwrites, the reverse loop pops them. Each block "
        "names the line of your function it came from."
    ),
    new_code_cell("nx.show(nx.grad(newton_sqrt))"),
    new_markdown_cell(
        "## Nested functions and closures\n\n"
        "JAX code defines helpers inside the function it transforms, closing over its "
        "variables, and calls them in loops. numbax lifts such a `def` out of the "
        "function and passes the variables it reads as arguments, so it differentiates "
        "as written. Here a damped oscillator, stepped by a nested `step` that reads "
        "`dt` and `damping` from the enclosing function; the gradient is with respect to "
        "the damping."
    ),
    new_code_cell(
        "def final_energy(damping, x0, v0, dt, n_steps):\n"
        "    def step(x, v):\n"
        "        v = v - dt * (x + damping * v)\n"
        "        return x + dt * v, v\n\n"
        "    x, v = x0, v0\n"
        "    for _ in range(n_steps):\n"
        "        x, v = step(x, v)\n"
        "    return 0.5 * (x * x + v * v)\n\n\n"
        "d_damping = nx.grad(final_energy)(0.1, 1.0, 0.0, 0.01, 500)\n"
        "h = 1e-6\n"
        "numeric = (final_energy(0.1 + h, 1.0, 0.0, 0.01, 500)\n"
        "           - final_energy(0.1 - h, 1.0, 0.0, 0.01, 500)) / (2 * h)\n"
        "print(d_damping, numeric)\n"
        "np.testing.assert_allclose(d_damping, numeric, rtol=1e-6)"
    ),
    new_markdown_cell(
        "## What to keep in mind\n\n"
        "- `nx.jit` captures globals and closure values when it compiles, as `jax.jit` "
        "does; un-jitted transformations read them when they run, as Python does.\n"
        "- Arguments that choose code (sizes, modes, loop counts) can be "
        "`static_argnums`/`static_argnames`, as in JAX; under `nx.jit` a loop count can "
        "also stay an ordinary argument.\n"
        "- `x += v` on a name rebinds it, as JAX's functional updates do: an array "
        "argument is not changed for the caller.\n"
        "- An operation numbax has no rule for raises a `TransformError` naming the call "
        "and your line; nothing is silently treated as a constant. The limitations page "
        "(docs/limitations.md) lists what is refused."
    ),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("06_porting_from_jax.ipynb"))
