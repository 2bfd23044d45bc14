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
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("01_quickstart.ipynb"))
