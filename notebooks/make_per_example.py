"""Writes 03_per_example_gradients.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Per-example gradients\n\n"
        "Differential privacy clips each example's gradient; influence functions and "
        "gradient-noise studies need them one by one. In JAX the idiom is "
        "`vmap(grad(loss), in_axes=(None, 0, 0))`: `grad` differentiates the loss of one "
        "example, `vmap` maps it over the batch while sharing the parameters. numbax "
        "takes the same line, on NumPy code."
    ),
    new_code_cell("import time\n\nimport numpy as np\n\nimport numbax as nx"),
    new_markdown_cell(
        "## Logistic regression\n\n"
        "The loss of one example `(x, y)`; its gradient in `w` is `(p - y) x`."
    ),
    new_code_cell(
        "def logistic_loss(w, x, y):\n"
        "    p = 1.0 / (1.0 + np.exp(-np.dot(x, w)))\n"
        "    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))\n\n\n"
        "rng = np.random.default_rng(0)\n"
        "n, d = 2_000, 50\n"
        "X = rng.standard_normal((n, d))\n"
        "w = rng.standard_normal(d) / np.sqrt(d)\n"
        "Y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ w))).astype(np.float64)\n\n"
        "per_example_grads = nx.jit(nx.vmap(nx.grad(logistic_loss), in_axes=(None, 0, 0)))\n"
        "G = per_example_grads(w, X, Y)\n"
        "print(G.shape)"
    ),
    new_markdown_cell("Checked against a Python loop of `nx.grad`, and against the formula:"),
    new_code_cell(
        "loop = np.stack([nx.grad(logistic_loss)(w, X[i], Y[i]) for i in range(n)])\n"
        "np.testing.assert_allclose(G, loop, rtol=1e-12)\n"
        "p = 1.0 / (1.0 + np.exp(-X @ w))\n"
        "np.testing.assert_allclose(G, (p - Y)[:, None] * X, rtol=1e-10)\n"
        "print('per-example gradients agree with the loop and the formula')"
    ),
    new_markdown_cell(
        "What `vmap` generated: the gradient of one example rewritten for the whole batch. "
        "`np.dot(x, w)` is one matrix-vector product over the batch, and the gradient's "
        "last line, `nxrt.dot_vjp_b`, is the outer product `_ct_dot[:, None] * x`; the "
        "parameters (`in_axes=None`) are shared, not repeated."
    ),
    new_code_cell(
        "batched_grad = nx.vmap(nx.grad(logistic_loss), in_axes=(None, 0, 0))\n"
        "batched_grad(w, X, Y)\n"
        "nx.show(batched_grad)"
    ),
    new_markdown_cell(
        "Clipping each example's gradient to norm 1 before averaging, as DP-SGD does:"
    ),
    new_code_cell(
        "norms = np.linalg.norm(G, axis=1, keepdims=True)\n"
        "clipped_mean = np.mean(G / np.maximum(1.0, norms), axis=0)\n"
        "print('largest per-example norm:', norms.max())\n"
        "print('clipped mean gradient (first 5):', clipped_mean[:5])"
    ),
    new_markdown_cell(
        "## Collectives: the batch inside the per-example function\n\n"
        "With `axis_name`, the function written for one example can reduce over the "
        "batch: here each example's gradient is divided by the batch's mean gradient "
        "norm (`nx.lax.pmean`). The gradient is built in place, JAX style; numbax builds it "
        "once beforehand. Because the body calls another function, `vmap` batches it by "
        "its loop over the examples, split at the collective."
    ),
    new_code_cell(
        "def normalized_grad(w, x, y):\n"
        "    g = nx.grad(logistic_loss)(w, x, y)\n"
        "    return g / nx.lax.pmean(np.sqrt(np.sum(g * g)), 'batch')\n\n\n"
        "normalized = nx.jit(nx.vmap(normalized_grad, in_axes=(None, 0, 0), axis_name='batch'))\n"
        "Gn = normalized(w, X, Y)\n"
        "np.testing.assert_allclose(Gn, G / np.linalg.norm(G, axis=1).mean(), rtol=1e-12)\n"
        "print('normalized by the mean norm over the batch:', np.linalg.norm(G, axis=1).mean())"
    ),
    new_markdown_cell(
        "## A small MLP\n\n"
        "Parameters as a tuple; the gradient comes back as a tuple of per-example "
        "arrays, each with the batch as its first axis."
    ),
    new_code_cell(
        "def mlp_loss(params, x, y):\n"
        "    w1, b1, w2, b2 = params\n"
        "    h = np.tanh(x @ w1 + b1)\n"
        "    out = h @ w2 + b2\n"
        "    return np.sum((out - y) ** 2)\n\n\n"
        "params = (\n"
        "    rng.standard_normal((d, 32)) / np.sqrt(d),\n"
        "    np.zeros(32),\n"
        "    rng.standard_normal((32, 3)) / np.sqrt(32),\n"
        "    np.zeros(3),\n"
        ")\n"
        "targets = rng.standard_normal((n, 3))\n"
        "mlp_per_example = nx.jit(nx.vmap(nx.grad(mlp_loss), in_axes=(None, 0, 0)))\n"
        "grads = mlp_per_example(params, X, targets)\n"
        "print([g.shape for g in grads])\n"
        "for i in (0, 1, n - 1):\n"
        "    one = nx.grad(mlp_loss)(params, X[i], targets[i])\n"
        "    for g, o in zip(grads, one):\n"
        "        np.testing.assert_allclose(g[i], o, rtol=1e-12)\n"
        "print('per-example MLP gradients agree with nx.grad of each example')"
    ),
    new_markdown_cell(
        "The mean of the per-example gradients is the gradient of the mean loss — which "
        "`nx.grad` of a loss that calls the batched function gives directly (the "
        "derivative of a batched call is the batched derivative):"
    ),
    new_code_cell(
        "batched_mlp_loss = nx.vmap(mlp_loss, in_axes=(None, 0, 0))\n\n\n"
        "def mean_mlp_loss(params):\n"
        "    return np.mean(batched_mlp_loss(params, X, targets))\n\n\n"
        "full = nx.grad(mean_mlp_loss)(params)\n"
        "for g, f in zip(grads, full):\n"
        "    np.testing.assert_allclose(g.mean(axis=0), f, rtol=1e-10, atol=1e-14)\n"
        "print('mean of per-example gradients == gradient of the mean loss')"
    ),
    new_markdown_cell(
        "## Timing\n\n"
        "Both numbax and JAX run the per-example gradient as whole-array operations over "
        "the batch. (JAX is optional: this cell skips it when it is not installed.)"
    ),
    new_code_cell(
        "def best_time(fun, *args, repeat=20):\n"
        "    fun(*args)\n"
        "    times = []\n"
        "    for _ in range(repeat):\n"
        "        start = time.perf_counter()\n"
        "        fun(*args)\n"
        "        times.append(time.perf_counter() - start)\n"
        "    return min(times)\n\n\n"
        "t_numbax = best_time(per_example_grads, w, X, Y)\n"
        "t_formula = best_time(lambda w, X, Y: (1 / (1 + np.exp(-X @ w)) - Y)[:, None] * X, w, X, Y)\n"
        "print(f'numbax jit(vmap(grad))  : {t_numbax * 1e3:7.3f} ms')\n"
        "print(f'NumPy, formula by hand  : {t_formula * 1e3:7.3f} ms')\n"
        "try:\n"
        "    import jax\n"
        "    import jax.numpy as jnp\n"
        "except ImportError:\n"
        "    print('JAX is not installed: no JAX timing')\n"
        "else:\n"
        "    jax.config.update('jax_enable_x64', True)\n\n"
        "    def jax_loss(w, x, y):\n"
        "        p = 1.0 / (1.0 + jnp.exp(-jnp.dot(x, w)))\n"
        "        return -(y * jnp.log(p) + (1.0 - y) * jnp.log(1.0 - p))\n\n"
        "    jax_grads = jax.jit(jax.vmap(jax.grad(jax_loss), in_axes=(None, 0, 0)))\n"
        "    np.testing.assert_allclose(np.asarray(jax_grads(w, X, Y)), G, rtol=1e-10)\n"
        "    t_jax = best_time(lambda *a: jax_grads(*a).block_until_ready(), w, X, Y)\n"
        "    print(f'JAX jit(vmap(grad))     : {t_jax * 1e3:7.3f} ms')"
    ),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("03_per_example_gradients.ipynb"))
