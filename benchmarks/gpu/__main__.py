"""numbax on the GPU against JAX on the GPU (and CuPy for SELU), in one process.

    python -m benchmarks.gpu                  # full sizes, on a machine with a GPU
    python -m benchmarks.gpu --tiny --simulator   # tiny sizes on Numba's CUDA simulator

Each row: numbax's first call (generating and compiling included), then the median and
minimum of timed calls, each waiting for the device (``nx.block_until_ready``); JAX's
the same for its jitted twin; numbax/JAX is the ratio of medians. Results are checked
first: SELU against NumPy, the per-example gradients against numbax on the CPU (interpreted) on
the first examples. SELU's row also gives the fraction of the card's device-to-device
copy bandwidth it reaches (a copy reads and writes each byte once, as SELU does).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

SIZES = {
    "full": {
        "selu": 10**8,
        "rms": (10**5, 10**3),
        "softmax": (10**5, 10**3),
        "lorenz": 10**5,
        "steps": 1000,
        "newton": 10**5,
        "mlp": 10**6,
    },
    "tiny": {
        "selu": 300,
        "rms": (3, 200),
        "softmax": (2, 130),
        "lorenz": 3,
        "steps": 20,
        "newton": 5,
        "mlp": 3,
    },
}
CHECKED = 64  # examples compared with the CPU


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (the simulator's)")
    parser.add_argument(
        "--simulator", action="store_true", help="run on Numba's CUDA simulator (no GPU)"
    )
    parser.add_argument(
        "--only", default="selu,rms,softmax,mlp,lorenz,newton", help="workloads, by name"
    )
    parser.add_argument("--repeat", type=int, default=None, help="timed calls per row")
    args = parser.parse_args(argv)
    if args.simulator:  # before Numba is imported
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    sizes = SIZES["tiny" if args.tiny else "full"]
    repeat = args.repeat or (2 if args.tiny else 20)
    rows = []
    failed = False
    for name in args.only.split(","):
        row, ok = WORKLOADS[name](sizes, repeat)
        rows.append(row)
        failed |= not ok
    _print(rows)
    return 1 if failed else 0


# -- the workloads ------------------------------------------------------------------------


def _selu(sizes: dict, repeat: int) -> tuple[dict, bool]:
    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    x = np.random.default_rng(0).standard_normal(sizes["selu"]).astype(np.float32)
    on_device = nx.device_put(x, nx.devices("gpu")[0])
    compiled = nx.jit(w.selu, backend="gpu")
    first, result = _first(lambda: compiled(on_device))
    head = min(x.size, 10**6)
    ok = _close(nx.device_get(result[:head]), w.selu(x[:head]), 1e-5)
    median, low = _timed(lambda: compiled(on_device), repeat)
    row = {"workload": f"selu, {x.size:.0e} float32", "first": first, "numbax": (median, low)}
    copy = _copy_seconds(on_device, repeat)
    if copy is not None:
        row["note"] = f"{copy / median:.0%} of the device-to-device copy bandwidth"
    row.update(_jax(lambda: w.jax_twins(0)["selu"], (x,), repeat))
    row.update(_cupy_selu(x, repeat))
    return row, ok


def _rms(sizes: dict, repeat: int) -> tuple[dict, bool]:
    """Each row's root mean square: a reduction that reads every byte once (its note
    compares its read bandwidth with a copy's, which reads and writes each byte)."""
    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    x = np.random.default_rng(3).standard_normal(sizes["rms"]).astype(np.float32)
    on_device = nx.device_put(x, nx.devices("gpu")[0])
    compiled = nx.jit(w.root_mean_square, backend="gpu")
    first, result = _first(lambda: compiled(on_device))
    ok = _close(nx.device_get(result), w.root_mean_square(x), 1e-4)
    median, low = _timed(lambda: compiled(on_device), repeat)
    rows, columns = x.shape
    row = {"workload": f"row RMS, {rows:.0e} × {columns} float32", "first": first}
    row["numbax"] = (median, low)
    copy = _copy_seconds(on_device.reshape(x.size), repeat)
    if copy is not None:
        row["note"] = f"reads at {copy / median / 2:.0%} of the copy's bandwidth"
    row.update(_jax(lambda: w.jax_twins(0)["rms"], (x,), repeat))
    return row, ok


def _softmax(sizes: dict, repeat: int) -> tuple[dict, bool]:
    """Each row's softmax: three stages (max, sum, quotient), the exponentials made
    again in the last rather than stored."""
    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    x = np.random.default_rng(4).standard_normal(sizes["softmax"]).astype(np.float32)
    on_device = nx.device_put(x, nx.devices("gpu")[0])
    compiled = nx.jit(w.softmax, backend="gpu")
    first, result = _first(lambda: compiled(on_device))
    ok = _close(nx.device_get(result), w.softmax(x), 1e-5)
    median, low = _timed(lambda: compiled(on_device), repeat)
    rows, columns = x.shape
    row = {"workload": f"row softmax, {rows:.0e} × {columns} float32", "first": first}
    row["numbax"] = (median, low)
    row.update(_jax(lambda: w.jax_twins(0)["softmax"], (x,), repeat))
    return row, ok


def _lorenz(sizes: dict, repeat: int) -> tuple[dict, bool]:
    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    n, steps = sizes["lorenz"], sizes["steps"]
    rng = np.random.default_rng(1)
    x, y, z = (rng.uniform(-10, 10, n) for _ in range(3))
    params = (10.0, 28.0, 8.0 / 3.0)
    per_example = nx.value_and_grad(w.lorenz(steps), argnums=(0, 1, 2))
    axes = (0, 0, 0, None, None, None)
    compiled = nx.jit(nx.vmap(per_example, in_axes=axes), backend="gpu")
    state = nx.device_put((x, y, z), nx.devices("gpu")[0])
    first, result = _first(lambda: compiled(*state, *params))
    k = min(n, CHECKED)
    want = nx.vmap(per_example, in_axes=axes)(x[:k], y[:k], z[:k], *params)
    ok = _close_trees(_head(nx.device_get(result), k), want, 1e-9)
    median, low = _timed(lambda: compiled(*state, *params), repeat)
    row = {
        "workload": f"Lorenz-63 value_and_grad, {n:.0e} trajectories × {steps} steps",
        "first": first,
        "numbax": (median, low),
    }
    row.update(_jax(lambda: w.jax_twins(steps)["lorenz"], (x, y, z, *params), repeat))
    return row, ok


def _newton(sizes: dict, repeat: int) -> tuple[dict, bool]:
    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    n = sizes["newton"]
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.1, 5.0, n), rng.uniform(-50.0, 50.0, n)
    per_example = nx.value_and_grad(w.newton(), argnums=(0, 1))
    compiled = nx.jit(nx.vmap(per_example), backend="gpu")
    inputs = nx.device_put((a, b), nx.devices("gpu")[0])
    first, result = _first(lambda: compiled(*inputs))
    k = min(n, CHECKED)
    want = nx.vmap(per_example)(a[:k], b[:k])
    ok = _close_trees(_head(nx.device_get(result), k), want, 1e-9)
    median, low = _timed(lambda: compiled(*inputs), repeat)
    row = {
        "workload": f"Newton solves and their gradients, {n:.0e}, own trip counts",
        "first": first,
        "numbax": (median, low),
    }
    row.update(_jax(lambda: w.jax_twins(0)["newton"], (a, b), repeat))
    return row, ok


def _mlp(sizes: dict, repeat: int) -> tuple[dict, bool]:
    import numpy as np

    import numbax as nx
    from benchmarks.gpu import workloads as w

    n = sizes["mlp"]
    rng = np.random.default_rng(3)
    params = w.mlp_parameters()
    x, y = rng.normal(size=(n, w.MLP_SIZES[0])), rng.normal(size=n)
    per_example = nx.grad(w.mlp_loss, argnums=(0, 1, 2, 3))
    axes = (None, None, None, None, 0, 0)
    compiled = nx.jit(nx.vmap(per_example, in_axes=axes), backend="gpu")
    inputs = nx.device_put((*params, x, y), nx.devices("gpu")[0])
    first, result = _first(lambda: compiled(*inputs))
    k = min(n, CHECKED)
    want = nx.vmap(per_example, in_axes=axes)(*params, x[:k], y[:k])
    ok = _close_trees(_head(nx.device_get(result), k), want, 1e-9)
    median, low = _timed(lambda: compiled(*inputs), repeat)
    inputs_, hidden = w.MLP_SIZES
    row = {
        "workload": f"per-example MLP gradients ({inputs_}-{hidden}-1, tanh), {n:.0e} examples",
        "first": first,
        "numbax": (median, low),
    }
    row.update(_jax(lambda: w.jax_twins(0)["mlp"], (*params, x, y), repeat))
    return row, ok


WORKLOADS: dict[str, Callable[[dict, int], tuple[dict, bool]]] = {
    "mlp": _mlp,
    "selu": _selu,
    "rms": _rms,
    "softmax": _softmax,
    "lorenz": _lorenz,
    "newton": _newton,
}


# -- measuring ----------------------------------------------------------------------------


def _first(call: Callable[[], Any]) -> tuple[float, Any]:
    import numbax as nx

    start = time.perf_counter()
    result = nx.block_until_ready(call())
    return time.perf_counter() - start, result


def _timed(call: Callable[[], Any], repeat: int) -> tuple[float, float]:
    import numbax as nx

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        nx.block_until_ready(call())
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def _copy_seconds(on_device: Any, repeat: int) -> float | None:
    """The median time of a device-to-device copy of ``on_device`` (None simulated)."""
    from numbax.numba_backend.cuda import target as gpu

    if gpu.simulated():
        return None
    target = gpu.empty(on_device.shape, on_device.dtype)
    return _timed(lambda: (target.copy_to_device(on_device), gpu.synchronize()), repeat)[0]


def _jax(make: Callable[[], Callable], args: tuple, repeat: int) -> dict:
    """JAX's jitted twin (``make()``) on its GPU, timed like numbax; where JAX or its GPU
    is missing, the row says why."""
    try:
        import jax

        jax.devices("gpu")  # raises without one
        function = make()  # turns on float64 first
        device_args = [jax.device_put(a) for a in args]
        first, _ = _first(lambda: function(*device_args))
        median, _ = _timed(lambda: function(*device_args), repeat)
        return {"jax": median, "jax first": first}
    except Exception as err:  # noqa: BLE001 - no JAX, or no GPU for it: said in the row
        return {"jax note": f"JAX: {type(err).__name__}: {str(err).splitlines()[0][:70]}"}


def _cupy_selu(x: Any, repeat: int) -> dict:
    try:
        import cupy as cp

        from benchmarks.gpu import workloads as w

        on_device = cp.asarray(x)
        alpha, lam = cp.float32(w.SELU_ALPHA), cp.float32(w.SELU_LAMBDA)

        def call():
            return lam * cp.where(on_device > 0, on_device, alpha * cp.exp(on_device) - alpha)

        call()
        cp.cuda.Device().synchronize()
        median, _ = _timed(lambda: (call(), cp.cuda.Device().synchronize()), repeat)
        return {"cupy": median}
    except Exception:  # noqa: BLE001 - CuPy is optional
        return {}


def _close(got: Any, want: Any, rtol: float) -> bool:
    import numpy as np

    return bool(np.allclose(got, want, rtol=rtol, atol=rtol)) and got.dtype == want.dtype


def _close_trees(got: Any, want: Any, rtol: float) -> bool:
    from numbax import tree_util

    pairs = zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want), strict=True)
    return all(_close(g, w, rtol) for g, w in pairs)


def _head(tree: Any, k: int) -> Any:
    from numbax import tree_util

    return tree_util.tree_map(lambda leaf: leaf[:k], tree)


def _print(rows: list[dict]) -> None:
    print(
        "| workload | numbax first call (s) | numbax median (min), ms | JAX median, ms "
        "| numbax/JAX | CuPy, ms | note |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        median, low = row["numbax"]
        jax = row.get("jax")
        ratio = f"{median / jax:.2f}" if jax else "–"
        note = "; ".join(str(row[k]) for k in ("note", "jax note") if k in row)
        jax_ms = f"{jax * 1e3:.3f}" if jax else "–"
        cupy_ms = f"{row['cupy'] * 1e3:.3f}" if "cupy" in row else "–"
        print(
            f"| {row['workload']} | {row['first']:.2f} | {median * 1e3:.3f} ({low * 1e3:.3f}) "
            f"| {jax_ms} | {ratio} | {cupy_ms} | {note} |"
        )


if __name__ == "__main__":
    sys.exit(main())
