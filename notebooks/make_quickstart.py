"""Writes 01_quickstart.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# numbax quickstart\n\n"
        "JAX's quickstart, on plain NumPy code. numbax reads your function's source, "
        "generates new source, compiles it with Numba, and lets you read what it generated."
    ),
    new_code_cell("import numpy as np\nimport numbax as nx"),
    new_markdown_cell(
        "## NumPy code, as you write it\n\n"
        "The quickstart's SELU, written against `numpy` — there is no `numbax.numpy`."
    ),
    new_code_cell(
        "def selu(x, alpha=1.67, lmbda=1.05):\n"
        "    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)\n\n"
        "x = np.arange(5.0)\n"
        "print(selu(x))"
    ),
    new_markdown_cell(
        "## Just-in-time compilation with `nx.jit`\n\n"
        "The first call generates source and compiles it; later calls reuse the machine "
        "code (and so does a new kernel, from the disk cache)."
    ),
    new_code_cell(
        "selu_jit = nx.jit(selu)\n"
        "print(selu_jit(x))\n"
        "np.testing.assert_allclose(selu_jit(x), [0.0, 1.05, 2.1, 3.15, 4.2])"
    ),
    new_code_cell(
        "rng = np.random.default_rng(1701)\n"
        "data = rng.standard_normal(1_000_000).astype(np.float32)\n"
        "assert selu_jit(data).dtype == np.float32  # a Python float does not promote float32\n"
        "%timeit -n 5 -r 3 selu(data)\n"
        "%timeit -n 5 -r 3 nx.block_until_ready(selu_jit(data))"
    ),
    new_markdown_cell(
        "## Reading the generated source\n\n"
        "One operation per line, each block tied to the line of your cell it came from, "
        "and the chain of elementwise operations fused into one loop. `nxrt.exp` is "
        "numbax's vectorizable `exp`; `weak=` keeps NumPy 2's promotion rules for Python "
        "scalars under Numba."
    ),
    new_code_cell("nx.show(selu_jit)"),
    new_markdown_cell(
        "## Static arguments and helper functions\n\n"
        "A static argument is baked into the source as a constant: each value gets its own "
        "specialization. Functions defined in cells can call each other; numbax compiles "
        "the helpers too."
    ),
    new_code_cell(
        "from functools import partial\n\n"
        "def softplus(v):\n"
        "    return np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0.0)\n\n"
        "@partial(nx.jit, static_argnames='n')\n"
        "def smooth_power(x, n):\n"
        "    out = np.ones_like(x)\n"
        "    for _ in range(n):\n"
        "        out = out * softplus(x)\n"
        "    return out\n\n"
        "y = np.linspace(-2.0, 2.0, 5)\n"
        "for n in (1, 3):\n"
        "    np.testing.assert_allclose(smooth_power(y, n), softplus(y) ** n, rtol=1e-12)\n"
        "nx.show(smooth_power)"
    ),
    new_markdown_cell(
        "## Taking derivatives with `nx.grad`\n\n"
        "`nx.grad` reads `sum_logistic`'s source and writes its reverse-mode derivative as "
        "new source: the forward computation, then each line's adjoint, last line first."
    ),
    new_code_cell(
        "def sum_logistic(x):\n"
        "    return np.sum(1.0 / (1.0 + np.exp(-x)))\n\n"
        "x_small = np.arange(3.0)\n"
        "derivative_fn = nx.grad(sum_logistic)\n"
        "print(derivative_fn(x_small))\n"
        "np.testing.assert_allclose(derivative_fn(x_small), [0.25, 0.19661197, 0.10499357], "
        "rtol=1e-6)"
    ),
    new_code_cell("nx.show(derivative_fn)"),
    new_markdown_cell("Checked against central finite differences, as the quickstart does:"),
    new_code_cell(
        "def first_finite_differences(f, x, eps=1e-3):\n"
        "    return np.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps)\n"
        "                     for v in np.eye(len(x))])\n\n"
        "print(first_finite_differences(sum_logistic, x_small))\n"
        "np.testing.assert_allclose(first_finite_differences(sum_logistic, x_small),\n"
        "                           derivative_fn(x_small), rtol=1e-5)"
    ),
    new_markdown_cell(
        "Transformations compose to any depth, with `jit` anywhere in the chain: the third "
        "derivative of `sum_logistic` at 1.0."
    ),
    new_code_cell(
        "third = nx.grad(nx.jit(nx.grad(nx.jit(nx.grad(sum_logistic)))))\n"
        "print(third(1.0))\n"
        "np.testing.assert_allclose(third(1.0), -0.0353256, rtol=1e-5)"
    ),
    new_markdown_cell(
        "Jacobians: `nx.jacobian` (reverse mode, `jacrev`) and `nx.jacfwd`, also of NumPy "
        "functions themselves; the Hessian is `jacfwd(jacrev(f))`, compiled here."
    ),
    new_code_cell(
        "print(nx.jacobian(np.exp)(x_small))\n"
        "np.testing.assert_allclose(nx.jacobian(np.exp)(x_small), np.diag(np.exp(x_small)))\n\n"
        "def hessian(f):\n"
        "    return nx.jit(nx.jacfwd(nx.jacrev(f)))\n\n"
        "H = hessian(sum_logistic)(x_small)\n"
        "print(H)\n"
        "s = 1.0 / (1.0 + np.exp(-x_small))\n"
        "np.testing.assert_allclose(H, np.diag(s * (1 - s) * (1 - 2 * s)), atol=1e-12)"
    ),
    new_code_cell("nx.show(nx.jacrev(sum_logistic))"),
    new_markdown_cell(
        "Loops and branches differentiate too (JAX needs `lax.fori_loop` for this, and "
        "cannot reverse a `while`): reverse mode saves what each iteration overwrites on a "
        "tape and runs the loop backwards."
    ),
    new_code_cell(
        "def horner(c, x):\n"
        "    acc = 0.0\n"
        "    for i in range(c.shape[0]):\n"
        "        acc = acc * x + c[i]\n"
        "    return acc\n\n"
        "c = np.array([1.0, -2.0, 3.0, 0.5])\n"
        "print(nx.grad(horner, argnums=1)(c, 0.7))  # 3x^2 - 4x + 3 at 0.7\n"
        "np.testing.assert_allclose(nx.grad(horner, argnums=1)(c, 0.7), 3 * 0.49 - 2.8 + 3)\n"
        "nx.show(nx.grad(horner, argnums=1))"
    ),
    new_markdown_cell(
        "## Auto-vectorization with `nx.vmap`\n\n"
        "`apply_matrix` is written for one vector. JAX's quickstart batches it three ways: a "
        "Python loop, a rewrite by hand (`batched_x @ mat.T`), and `vmap`. numbax's `vmap` "
        "rewrites the function for the whole batch (`np.dot(mat, x)` becomes one matrix "
        "product, as by hand) and compiles it under `nx.jit`. A function that branches on the mapped values "
        "is batched too: by a generated loop over the examples."
    ),
    new_code_cell(
        "key = nx.random.key(1701)\n"
        "key1, key2 = nx.random.split(key)\n"
        "mat = nx.random.normal(key1, (150, 100))\n"
        "batched_x = nx.random.normal(key2, (10, 100))\n\n"
        "def apply_matrix(x):\n"
        "    return np.dot(mat, x)\n\n"
        "def naively_batched_apply_matrix(v_batched):\n"
        "    return np.stack([apply_matrix(v) for v in v_batched])\n\n"
        "def batched_apply_matrix(batched_x):\n"
        "    return np.dot(batched_x, mat.T)\n\n"
        "vmap_batched_apply_matrix = nx.jit(nx.vmap(apply_matrix))\n"
        "np.testing.assert_allclose(\n"
        "    naively_batched_apply_matrix(batched_x), batched_apply_matrix(batched_x), atol=1e-12\n"
        ")\n"
        "np.testing.assert_allclose(\n"
        "    vmap_batched_apply_matrix(batched_x), batched_apply_matrix(batched_x), atol=1e-12\n"
        ")\n"
        "print('Naively batched')\n"
        "%timeit -n 100 -r 3 naively_batched_apply_matrix(batched_x)\n"
        "print('Manually batched')\n"
        "%timeit -n 100 -r 3 batched_apply_matrix(batched_x)\n"
        "print('Auto-vectorized with vmap')\n"
        "%timeit -n 100 -r 3 nx.block_until_ready(vmap_batched_apply_matrix(batched_x))"
    ),
    new_markdown_cell(
        "The batched function numbax generated for this call: one matrix product for the "
        "whole batch."
    ),
    new_code_cell("batched = nx.vmap(apply_matrix)\nbatched(batched_x)\nnx.show(batched)"),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("01_quickstart.ipynb"))
