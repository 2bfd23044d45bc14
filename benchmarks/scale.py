"""``python -m benchmarks.scale``: parallel efficiency of ``nx.pmap`` over the cores,
beside JAX's ``pmap`` on the same machine.

Three workloads (``kernels_scale.py``): per-example gradients of a small MLP, per-example
gradients of a 2,000-step Lorenz RK4 integration, and a ``while`` loop to a tolerance
whose cost grows along the axis (uneven examples). For each, numbax maps the examples
with ``nx.pmap`` limited to 1, 2, 4, 8... threads (``devices=nx.devices()[:p]``); the
efficiency at p threads is ``time on 1 / (p × time on p)``, from medians of repeated
calls. Before any timing, every thread count's result is checked bit for bit against
``nx.jit(nx.vmap(f, method="loop"))`` on one core, and JAX's against numbax's.

JAX runs in a child process per device count (its CPU devices are fixed when it starts:
``--xla_force_host_platform_device_count=p``), pinned to p cores, as
``jax.pmap(jax.vmap(f))`` over the examples reshaped to (p, n/p, ...). Its one-core time
is ``jax.vmap`` on one device pinned to one core.

Then the call overhead of ``nx.pmap`` on tiny inputs (median of many calls), beside
``jax.pmap``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks import kernels_scale

LORENZ_STEPS = 2_000  # lorenz_rk4's default


@dataclass(frozen=True)
class Scaled:
    """One workload: how the arguments of its function of one example (``_functions``)
    are mapped, and its inputs for ``n`` examples."""

    id: str
    description: str
    in_axes: tuple
    inputs: Callable[[int], tuple]


def _mlp_inputs(n: int) -> tuple:
    rng = np.random.default_rng(0)
    d, hidden, points = 32, 256, 256
    params = (
        rng.standard_normal((d, hidden)) / np.sqrt(d),
        np.zeros(hidden),
        rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
        np.zeros(1),
    )
    return params, rng.standard_normal((n, points, d)), rng.standard_normal((n, points, 1))


def _lorenz_inputs(n: int) -> tuple:
    rng = np.random.default_rng(1)
    base = np.array([10.0, 28.0, 8.0 / 3.0])
    return (base * (1.0 + 0.05 * rng.uniform(-1.0, 1.0, (n, 3))),)


def _newton_inputs(n: int) -> tuple:
    """Damping from 1 down to 10^-3 along the axis: the last examples iterate about
    1,000 times as long as the first, all of them at the end of the axis."""
    a = np.linspace(1.0, 2.0, n)
    return a, 10.0 ** (-3.0 * np.arange(n) / n)


WORKLOADS = [
    Scaled(
        "mlp_grad",
        "grad of a 32-256-1 tanh MLP's loss on each example's 256 points, shared parameters",
        (None, 0, 0),
        _mlp_inputs,
    ),
    Scaled(
        "lorenz_grad",
        f"grad of the Lorenz RK4 final x² w.r.t. (σ, ρ, β), {LORENZ_STEPS:,} steps each",
        (0,),
        _lorenz_inputs,
    ),
    Scaled(
        "newton_while",
        "a while loop to 1e-10 whose iterations grow 1,000-fold along the axis",
        (0, 0),
        _newton_inputs,
    ),
]


def _functions() -> dict[str, Callable]:
    """Each workload's function of one example, as numbax maps it."""
    import numbax as nx

    return {
        "mlp_grad": nx.grad(kernels_scale.mlp_loss),
        "lorenz_grad": nx.grad(kernels_scale.lorenz_rk4),
        "newton_while": kernels_scale.damped_newton,
    }


def _median_call(call: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """(median, min) seconds of ``repeat`` calls after one warm-up call."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def _same(expected: Any, got: Any) -> bool:
    import numbax as nx

    leaves_e = nx.tree_util.tree_leaves(expected)
    leaves_g = nx.tree_util.tree_leaves(got)
    return len(leaves_e) == len(leaves_g) and all(
        np.array_equal(np.asarray(e), np.asarray(g))
        for e, g in zip(leaves_e, leaves_g, strict=True)
    )


def numbax_rows(
    threads: Sequence[int], n: int, repeat: int, only: set[str], references: dict
) -> dict:
    """{workload: {threads: (median, min)}} of ``nx.pmap``, each checked first against
    the vmap loop on one core (kept in ``references``)."""
    import numbax as nx

    functions = _functions()
    results: dict[str, dict[int, tuple[float, float]]] = {}
    for workload in WORKLOADS:
        if only and workload.id not in only:
            continue
        f = functions[workload.id]
        args = workload.inputs(n)
        reference = nx.jit(nx.vmap(f, in_axes=workload.in_axes, method="loop"))(*args)
        references[workload.id] = nx.tree_util.tree_leaves(reference)
        results[workload.id] = {}
        for p in threads:
            mapped = nx.pmap(f, in_axes=workload.in_axes, devices=nx.devices()[:p])
            if not _same(reference, mapped(*args)):
                raise AssertionError(f"{workload.id}: pmap on {p} threads differs from vmap")
            results[workload.id][p] = _median_call(lambda m=mapped, a=args: m(*a), repeat)
            print(f"  numbax {workload.id} p={p}: {results[workload.id][p][0]:.4f} s", flush=True)
    return results


def numbax_overhead(repeat: int = 2_000) -> float:
    """Median seconds of a ``nx.pmap`` call on 13 one-element examples."""
    import numbax as nx

    mapped = nx.pmap(lambda x: x * 2.0)
    x = np.arange(13.0)
    mapped(x)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        mapped(x)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- JAX, one child process per device count ---------------------------------------------


def _jax_functions() -> dict[str, Callable]:
    import jax
    import jax.numpy as jnp

    def mlp_loss(params, x, y):
        w1, b1, w2, b2 = params
        error = jnp.tanh(x @ w1 + b1) @ w2 + b2 - y
        return jnp.mean(error * error)

    def lorenz_rk4(theta):
        sigma, rho, beta = theta[0], theta[1], theta[2]
        h = kernels_scale.RK4_DT

        def rates(s):
            x, y, z = s
            return jnp.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

        def step(_, s):
            k1 = rates(s)
            k2 = rates(s + 0.5 * h * k1)
            k3 = rates(s + 0.5 * h * k2)
            k4 = rates(s + h * k3)
            return s + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

        s = jax.lax.fori_loop(0, LORENZ_STEPS, step, jnp.ones(3))
        return s[0] * s[0]

    def damped_newton(a, damping):
        def residual(x):
            return x * x * x + a * x - 1.0

        def body(x):
            return x - damping * residual(x) / (3.0 * x * x + a)

        return jax.lax.while_loop(
            lambda x: jnp.abs(residual(x)) > kernels_scale.NEWTON_TOL, body, 0.0
        )

    return {
        "mlp_grad": jax.grad(mlp_loss),
        "lorenz_grad": jax.grad(lorenz_rk4),
        "newton_while": damped_newton,
    }


def jax_child(devices: int, n: int, repeat: int, only: set[str]) -> dict:
    """In a child process started with ``devices`` CPU devices: {workload: (median,
    min, result)}; one device runs ``jax.jit(jax.vmap(f))``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    functions = _jax_functions()
    out = {}
    for workload in WORKLOADS:
        if only and workload.id not in only:
            continue
        f = jax.vmap(functions[workload.id], in_axes=workload.in_axes)
        args = workload.inputs(n)
        if devices == 1:
            mapped, split = jax.jit(f), args
        else:
            mapped = jax.pmap(f, in_axes=workload.in_axes)
            split = tuple(
                a if axis is None else a.reshape(devices, n // devices, *a.shape[1:])
                for a, axis in zip(args, workload.in_axes, strict=True)
            )

        def call(m=mapped, s=split):
            return jax.block_until_ready(m(*s))

        median, least = _median_call(call, repeat)
        leaves = [np.asarray(r) for r in jax.tree_util.tree_leaves(call())]
        if devices > 1:
            leaves = [r.reshape(n, *r.shape[2:]) for r in leaves]
        out[workload.id] = (median, least, leaves)
    tiny = jax.pmap(lambda x: x * 2.0) if devices > 1 else jax.jit(lambda x: x * 2.0)
    x = np.arange(float(devices))
    out["overhead"] = _median_call(lambda: jax.block_until_ready(tiny(x)), 2_000)[0]
    return out


def jax_rows(devices: int, n: int, repeat: int, only: set[str]) -> dict | None:
    """JAX's figures with ``devices`` devices pinned to as many cores, from a child."""
    env = dict(
        os.environ,
        JAX_PLATFORMS="cpu",
        XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
    )
    cores = sorted(os.sched_getaffinity(0))[:devices]
    command = [
        sys.executable,
        "-c",
        "import os, pickle, sys; "
        f"os.sched_setaffinity(0, {cores!r}); "
        "from benchmarks.scale import jax_child; "
        f"sys.stdout.buffer.write(pickle.dumps(jax_child({devices}, {n}, {repeat}, {only!r})))",
    ]
    done = subprocess.run(command, env=env, capture_output=True, timeout=900)
    if done.returncode != 0:
        print(f"  JAX with {devices} devices failed: {done.stderr.decode()[-2000:]}", flush=True)
        return None
    import pickle

    return pickle.loads(done.stdout)


def _check_jax(workload: str, devices: int, expected: list, got: list) -> None:
    """JAX's results agree with numbax's to rounding (their operations' order differs)."""
    for e, g in zip(expected, got, strict=True):
        if not np.allclose(e, g, rtol=1e-8, atol=1e-10):
            worst = np.max(np.abs(np.asarray(e) - g))
            raise AssertionError(f"{workload}: JAX on {devices} devices differs by {worst:g}")


def _table(title: str, rows: list[list[str]]) -> str:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    lines = [title]
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__)
    cores = len(os.sched_getaffinity(0))
    default = sorted({p for p in (1, 2, 4, 8, cores) if p <= cores})
    parser.add_argument("--threads", default=",".join(map(str, default)))
    parser.add_argument("--examples", type=int, default=1_664, help="divisible by each count")
    parser.add_argument("--newton-examples", type=int, default=26_624)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated workload ids")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",")]
    only = {w for w in args.only.split(",") if w}
    sizes = {"mlp_grad": args.examples, "lorenz_grad": args.examples}
    sizes["newton_while"] = args.newton_examples

    numbax: dict = {}
    references: dict = {}
    for workload in WORKLOADS:
        if only and workload.id not in only:
            continue
        numbax.update(
            numbax_rows(threads, sizes[workload.id], args.repeat, {workload.id}, references)
        )
    overhead = numbax_overhead()
    jax: dict[int, dict] = {}
    if not args.no_jax:
        for p in (1, max(threads)):
            for workload in numbax:
                got = jax_rows(p, sizes[workload], args.repeat, {workload})
                if got is None:
                    continue
                _check_jax(workload, p, references[workload], got[workload][2])
                jax.setdefault(p, {}).update(got)

    header = ["workload", "p", "numbax s", "(min)", "efficiency", "JAX s", "JAX eff.", "JAX/numbax"]
    rows = [header]
    for workload, by_threads in numbax.items():
        one = by_threads[threads[0]][0] * threads[0]
        jax_one = jax.get(1, {}).get(workload)
        for p, (median, least) in by_threads.items():
            row = [workload, str(p), f"{median:.4f}", f"{least:.4f}", f"{one / (p * median):.0%}"]
            jax_p = jax.get(p, {}).get(workload)
            if jax_p is not None and jax_one is not None:
                row += [
                    f"{jax_p[0]:.4f}",
                    f"{jax_one[0] / (p * jax_p[0]):.0%}",
                    f"{jax_p[0] / median:.2f}",
                ]
            else:
                row += ["", "", ""]
            rows.append(row)
    print(
        _table("nx.pmap, medians of repeated calls (efficiency: time on 1 / (p x time on p))", rows)
    )
    print(f"\nnx.pmap call overhead, 13 one-element examples: {overhead * 1e6:.1f} µs (median)")
    for p, figures in sorted(jax.items()):
        if "overhead" in figures:
            print(
                f"JAX {'pmap' if p > 1 else 'jit'} on {p} devices: "
                f"{figures['overhead'] * 1e6:.1f} µs"
            )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(
                {
                    "numbax": {w: {str(p): t for p, t in v.items()} for w, v in numbax.items()},
                    "overhead_s": overhead,
                    "jax": {
                        str(p): {w: v[:2] if isinstance(v, tuple) else v for w, v in f.items()}
                        for p, f in jax.items()
                    },
                },
                out,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
