"""Writes 07_gpu.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# The GPU: a thread per trajectory, with its gradient\n\n"
        '`nx.jit(nx.vmap(f), backend="gpu")` runs each example as one GPU thread of a '
        "numba-cuda kernel. Each thread follows its own loops and branches, and a "
        "derivative of `f` runs inside the thread, its tape in the thread's local memory. "
        "Here: a batch of Lorenz-63 trajectories, each with the gradient of where it ends "
        "with respect to where it starts and to the parameter `rho`.\n\n"
        "On a machine without an NVIDIA GPU this notebook runs on Numba's CUDA simulator, "
        "which runs every thread as Python: the sizes are then tiny."
    ),
    new_code_cell(
        "import os\n"
        "import shutil\n\n"
        "# Before Numba is imported: the simulator where there is no GPU.\n"
        'has_gpu = shutil.which("nvidia-smi") is not None\n'
        'os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0" if has_gpu else "1")\n'
        "\n"
        "import numpy as np\n\n"
        "import numbax as nx\n\n"
        'SIMULATED = os.environ["NUMBA_ENABLE_CUDASIM"] == "1"\n'
        "TRAJECTORIES, STEPS = (4, 50) if SIMULATED else (100_000, 1_000)\n"
        'print(nx.devices("gpu"), "(simulated)" if SIMULATED else "")'
    ),
    new_markdown_cell(
        "## One trajectory, written as a loop\n\n"
        "Explicit Euler steps of the Lorenz system from `(x, y, z)`; the result is the "
        "squared distance from the origin at the end. `STEPS` is a global, frozen when "
        "compiling, so each thread's tape has a known size."
    ),
    new_code_cell(
        "def trajectory(x, y, z, rho, sigma=10.0, beta=8.0 / 3.0, dt=0.002):\n"
        "    for _ in range(STEPS):\n"
        "        dx = sigma * (y - x)\n"
        "        dy = x * (rho - z) - y\n"
        "        dz = x * y - beta * z\n"
        "        x = x + dt * dx\n"
        "        y = y + dt * dy\n"
        "        z = z + dt * dz\n"
        "    return x * x + y * y + z * z"
    ),
    new_markdown_cell(
        "## The batch on the GPU\n\n"
        "`value_and_grad` of one trajectory, with respect to its start and to `rho`; "
        "`vmap` maps it over the starts and shares `rho` (`in_axes=None`); `jit(..., "
        'backend="gpu")` makes it one kernel. The results are device arrays until '
        "`nx.device_get` copies them back."
    ),
    new_code_cell(
        "per_trajectory = nx.value_and_grad(trajectory, argnums=(0, 1, 2, 3))\n"
        'batch = nx.jit(nx.vmap(per_trajectory, in_axes=(0, 0, 0, None)), backend="gpu")\n\n'
        "rng = np.random.default_rng(0)\n"
        "starts = [rng.uniform(-10.0, 10.0, TRAJECTORIES) for _ in range(3)]\n"
        "value, (dx, dy, dz, drho) = batch(*starts, 28.0)\n"
        "value, drho = nx.device_get((value, drho))\n"
        "print(value[:4])\n"
        "print(drho[:4])"
    ),
    new_markdown_cell(
        "The same numbers as numbax on the CPU (interpreted here, for the first "
        "trajectories), and the derivative in `rho` as central differences give it:"
    ),
    new_code_cell(
        "k = min(TRAJECTORIES, 64)\n"
        "cpu_value, cpu_grads = nx.vmap(per_trajectory, in_axes=(0, 0, 0, None))(\n"
        "    *(s[:k] for s in starts), 28.0\n"
        ")\n"
        "np.testing.assert_allclose(value[:k], cpu_value, rtol=1e-10)\n"
        "np.testing.assert_allclose(drho[:k], cpu_grads[3], rtol=1e-8)\n"
        "eps = 1e-6\n"
        "ends = [trajectory(*(s[0] for s in starts), rho) for rho in (28.0 + eps, 28.0 - eps)]\n"
        "print('central difference:', (ends[0] - ends[1]) / (2 * eps), ' gradient:', drho[0])"
    ),
    new_markdown_cell(
        "## What runs\n\n"
        "The kernel: thread `i` calls the generated `value_and_grad_trajectory` on "
        "trajectory `i` and writes each number it returns. Below it, the device function: "
        "the forward loop pushing the values it overwrites on tapes in local memory "
        "(`nxrt.local_tape(x, STEPS)`: one slot a step), then the loop run backwards, each "
        "line commented with the line of `trajectory` it comes from."
    ),
    new_code_cell("nx.show(batch)"),
    new_markdown_cell(
        "## Arrays of an example: per-example gradients of an MLP\n\n"
        "An example's code may work on its own arrays: here each thread runs a small "
        "MLP on its example and its gradient with respect to the shared weights. One "
        "example runs on the host first to learn the shape of every array; each array "
        "is then a `cuda.local.array` of that shape in the thread, written in loops, and "
        "each gradient is written into its row of the result."
    ),
    new_code_cell(
        "def mlp_loss(w1, b1, w2, x, y):\n"
        "    h = np.tanh(w1 @ x + b1)\n"
        "    return (np.dot(w2, h) - y) ** 2\n\n\n"
        "EXAMPLES = 4 if SIMULATED else 10**6\n"
        "w1, b1, w2 = rng.normal(0, 0.5, (16, 8)), rng.normal(0, 0.1, 16), rng.normal(0, 0.5, 16)\n"
        "xs, ys = rng.normal(size=(EXAMPLES, 8)), rng.normal(size=EXAMPLES)\n"
        "per_example = nx.grad(mlp_loss, argnums=(0, 1, 2))\n"
        "axes = (None, None, None, 0, 0)\n"
        'grads = nx.jit(nx.vmap(per_example, in_axes=axes), backend="gpu")\n'
        "dw1, db1, dw2 = nx.device_get(grads(w1, b1, w2, xs, ys))\n"
        "cpu = nx.vmap(per_example, in_axes=axes)(w1, b1, w2, xs[:4], ys[:4])\n"
        "for got, want in zip((dw1, db1, dw2), cpu):\n"
        "    np.testing.assert_allclose(got[:4], want, rtol=1e-10)\n"
        "print(dw1.shape, db1.shape, dw2.shape)"
    ),
    new_markdown_cell(
        "The device function: each line of `mlp_loss`, then its adjoint, as loops over "
        "arrays in local memory; `_result_0`... are the example's rows of the three "
        "results."
    ),
    new_code_cell("print(grads.source.split('\\n\\n\\n')[-1])"),
    new_markdown_cell(
        "## Elementwise functions\n\n"
        "A function made only of elementwise operations runs with a thread per element "
        "of its arguments' broadcast:"
    ),
    new_code_cell(
        "def selu(x, alpha=1.6732632423543772, lam=1.0507009873554805):\n"
        "    return lam * np.where(x > 0, x, alpha * np.exp(x) - alpha)\n\n\n"
        "x = np.linspace(-3.0, 3.0, 7 if SIMULATED else 10**8).astype(np.float32)\n"
        'y = nx.jit(selu, backend="gpu")(x)\n'
        "np.testing.assert_allclose(nx.device_get(y)[:7], selu(x[:7]), rtol=1e-6)\n"
        "print(y.dtype, y.shape)"
    ),
    new_markdown_cell(
        "## Reductions\n\n"
        "A function that reduces elementwise values (`np.sum`, `prod`, `max`, `min`, "
        "`mean`, with `axis` and `keepdims`), and may finish each result elementwise, "
        "makes the values inside the reduction kernels: here the squares of each row are "
        "never stored. Many outputs take a thread each; few long ones (a whole array, or "
        "each row's last axis) a block of threads each, combined in shared memory."
    ),
    new_code_cell(
        "def row_norms(x, eps=1e-12):\n"
        "    return np.sqrt(np.sum(np.square(x), axis=-1) + eps)\n\n\n"
        "rows = rng.standard_normal((3, 200) if SIMULATED else (100_000, 1_000))\n"
        'norms = nx.jit(row_norms, backend="gpu")\n'
        "got = nx.device_get(norms(rows))\n"
        "np.testing.assert_allclose(got, row_norms(rows), rtol=1e-12)\n"
        "print(got[:3])"
    ),
    new_markdown_cell(
        "The kernels, and the device functions they call: `row_norms` gives a value per "
        "element, `row_norms_after` finishes each row's sum. `np.square` and `np.sqrt` "
        "are written as what they are on one number (numba-cuda compiles neither ufunc in "
        "device code)."
    ),
    new_code_cell("nx.show(norms)"),
    new_markdown_cell(
        "## Several reductions: softmax\n\n"
        "A function whose lines read its reductions runs as stages, one after another: "
        "here each row's `max`, the `sum` of `exp(x - max)`, then the quotient. The "
        "exponentials are made again in the last stage rather than stored, and the "
        "per-row results are read through strides (0 along the row), never spread out."
    ),
    new_code_cell(
        "def softmax(x):\n"
        "    e = np.exp(x - np.max(x, axis=-1, keepdims=True))\n"
        "    return e / np.sum(e, axis=-1, keepdims=True)\n\n\n"
        'probabilities = nx.jit(softmax, backend="gpu")\n'
        "got = nx.device_get(probabilities(rows))\n"
        "np.testing.assert_allclose(got, softmax(rows), rtol=1e-12)\n"
        "print(got.sum(axis=-1)[:3])\n"
        'print([line for line in nx.source(probabilities).splitlines() if "# ---- stage" in line])'
    ),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("07_gpu.ipynb"))
