"""Writes 08_scale_out.ipynb (kept as code so its text is reviewable in diffs)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "# Scale out: every core with `nx.pmap`, more machines with Dask\n\n"
        "`nx.vmap` batches a function written for one example; `nx.pmap` (JAX's name and "
        "signature) runs the same examples on every core of this machine, with no flag: "
        "the CPU's cores are its devices, and any number of examples is spread over "
        "them, each core taking the next example when it finishes one. The results are "
        "bit-identical to `nx.jit(nx.vmap(f, method='loop'))` for any number of "
        "threads. Beyond one machine, `nx.distributed.map` runs the same map on a Dask "
        "cluster."
    ),
    new_code_cell(
        "import time\n\n"
        "import numba\n"
        "import numpy as np\n\n"
        "import numbax as nx\n\n"
        "print(nx.local_device_count(), 'devices:', nx.devices()[:4])"
    ),
    new_markdown_cell(
        "## Work of uneven cost\n\n"
        "Newton's method for the cube root, to a tolerance: each example takes its own "
        "number of steps. A `while` loop is what JAX's `pmap` cannot trace; here it is "
        "plain Python, compiled per example."
    ),
    new_code_cell(
        "def cube_root(a):\n"
        "    x = 1.0 + a / 3.0\n"
        "    steps = 0\n"
        "    while abs(x * x * x - a) > 1e-12 * a and steps < 200:\n"
        "        x = x - (x * x * x - a) / (3.0 * x * x)\n"
        "        steps += 1\n"
        "    return x\n\n\n"
        "a = np.geomspace(1e-3, 1e12, 200_000)\n"
        "on_every_core = nx.pmap(cube_root)\n"
        "roots = on_every_core(a)\n"
        "np.testing.assert_allclose(roots, np.cbrt(a), rtol=1e-10)\n"
        "loop = nx.jit(nx.vmap(cube_root, method='loop'))\n"
        "assert np.array_equal(roots, loop(a))\n"
        "print('pmap agrees with np.cbrt, and bit for bit with the vmap loop')"
    ),
    new_markdown_cell(
        "Timed on one thread and on every core (`numba.set_num_threads` limits the "
        "threads, as `devices=nx.devices()[:k]` does):"
    ),
    new_code_cell(
        "def best_time(fun, *args, repeat=5):\n"
        "    fun(*args)\n"
        "    times = []\n"
        "    for _ in range(repeat):\n"
        "        start = time.perf_counter()\n"
        "        fun(*args)\n"
        "        times.append(time.perf_counter() - start)\n"
        "    return min(times)\n\n\n"
        "every = numba.get_num_threads()\n"
        "numba.set_num_threads(1)\n"
        "one = best_time(on_every_core, a)\n"
        "numba.set_num_threads(every)\n"
        "all_cores = best_time(on_every_core, a)\n"
        "print(f'1 thread : {one * 1e3:7.1f} ms')\n"
        "print(f'{every} threads: {all_cores * 1e3:7.1f} ms  '\n"
        "      f'(efficiency {one / (every * all_cores):.0%})')"
    ),
    new_markdown_cell(
        "## Per-example gradients on every core\n\n"
        "`pmap` nests with `grad`, `vmap` and `jit` in any order, as in JAX. Here each "
        "example's gradient of a small MLP's loss, the parameters shared "
        "(`in_axes=(None, 0, 0)`):"
    ),
    new_code_cell(
        "def loss(params, x, y):\n"
        "    w1, w2 = params\n"
        "    h = np.tanh(x @ w1)\n"
        "    return np.sum((h @ w2 - y) ** 2)\n\n\n"
        "rng = np.random.default_rng(0)\n"
        "params = (rng.standard_normal((8, 16)) / 3.0, rng.standard_normal((16, 1)) / 4.0)\n"
        "X, Y = rng.standard_normal((512, 32, 8)), rng.standard_normal((512, 32, 1))\n"
        "per_example = nx.pmap(nx.grad(loss), in_axes=(None, 0, 0))\n"
        "g1, g2 = per_example(params, X, Y)\n"
        "one = nx.grad(loss)(params, X[7], Y[7])\n"
        "np.testing.assert_allclose(g1[7], one[0], rtol=1e-12)\n"
        "print(g1.shape, g2.shape, 'per-example gradients, example 7 checked')"
    ),
    new_markdown_cell(
        "## Collectives\n\n"
        "With an `axis_name`, the function written for one example reduces over the "
        "batch: `nx.lax.psum`, `pmean`, `pmax`, `pmin`, `all_gather`, `ppermute`, "
        "`psum_scatter`, `axis_index`. The map then runs in stages: each part between "
        "collectives on every core, each collective over the batch in between. Its "
        "gradient does the same (the derivative of a `psum` is one)."
    ),
    new_code_cell(
        "def centered_square(x):\n"
        "    return (x - nx.lax.pmean(x, 'i')) ** 2\n\n\n"
        "xs = rng.standard_normal((1000, 3))\n"
        "centered = nx.pmap(centered_square, 'i')\n"
        "np.testing.assert_allclose(centered(xs), (xs - xs.mean(0)) ** 2, rtol=1e-12)\n\n\n"
        "def spread(x):\n"
        "    return np.sum(centered(x))\n\n\n"
        "np.testing.assert_allclose(nx.grad(spread)(xs), 2.0 * (xs - xs.mean(0)), rtol=1e-10)\n"
        "print('pmean and its gradient check out')"
    ),
    new_markdown_cell(
        "`static_broadcasted_argnums` passes an argument to every example as it is "
        "(hashable; with collectives in the function, as an argument of `in_axes` None):"
    ),
    new_code_cell(
        "def scaled(x, n):\n"
        "    return x * n - nx.lax.psum(x, 'i')\n\n\n"
        "mapped = nx.pmap(scaled, 'i', in_axes=(0, None), static_broadcasted_argnums=1)\n"
        "np.testing.assert_allclose(mapped(xs, 3), 3 * xs - xs.sum(0), rtol=1e-12)\n"
        "print('static argument and psum together')"
    ),
    new_markdown_cell(
        "## More than one machine: Dask\n\n"
        "`nx.distributed.map(f, *args, client=client, in_axes=...)` is the same map on a "
        "Dask cluster (`pip install numbax[distributed]`). What travels is the generated "
        "source and its content key, never a pickled function; each worker compiles it "
        "once, or loads the machine code from a cache directory the workers share "
        "(`cache_dir=`). Work is cut into a few batches per worker thread; a worker that "
        "dies has its batches run again. Here, a cluster of two workers inside this "
        "process (on a real cluster, `Client('scheduler-address:8786')`):"
    ),
    new_code_cell(
        "try:\n"
        "    from distributed import Client, LocalCluster\n"
        "except ImportError:\n"
        "    print('Dask is not installed (pip install numbax[distributed]): skipped')\n"
        "else:\n"
        "    with LocalCluster(\n"
        "        processes=False, n_workers=2, threads_per_worker=1, dashboard_address=None\n"
        "    ) as cluster, Client(cluster) as client:\n"
        "        distributed_roots = nx.distributed.map(cube_root, a[:20_000], client=client)\n"
        "        report = nx.distributed.last_report()\n"
        "    assert np.array_equal(distributed_roots, roots[:20_000])\n"
        "    print(f'{report.examples} examples in {report.batches} batches of '\n"
        "          f'{report.batch_size}: bit-identical to pmap')"
    ),
]

notebook = new_notebook(cells=cells)
notebook.metadata["kernelspec"] = {
    "name": "python3",
    "display_name": "Python 3",
    "language": "python",
}
nbformat.write(notebook, Path(__file__).with_name("08_scale_out.ipynb"))
