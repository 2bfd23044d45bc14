"""``nx.distributed.map`` on a local Dask cluster: parallel efficiency, and what a worker
pays before its first batch.

The workload: per-example gradients of the Lorenz-63 system integrated by classic RK4
(``benchmarks/kernels_scale.py``'s ``lorenz_rk4``, as ``scale.py`` maps it on the cores),
2,000 steps an example, ``nx.grad`` with respect to (σ, ρ, β), mapped over
10^4 parameter sets. For each worker count the map's results are first checked
bit-identical to ``nx.jit(nx.vmap(g, method="loop"))`` on one core here; then it is
timed (best of ``--repeat``). Efficiency is (time on one worker) / (workers × time).

Each worker count starts a fresh cluster with an empty cache directory (cold: the
first worker compiles each generated function, the others wait and load it), then
restarts its workers (warm: fresh processes that load everything from that cache;
workers in this process share its one cache and compiled code, cold for the first
worker count only). The
table reports the compiles across the cluster cold and warm, and each worker's seconds
to its first batch (from the start of that task: loading or compiling the code, and
running the batch). With ``--processes``, one worker process is then killed a third of
the way through a map: its time beside the issue's bound, (1 + 1/W)·T + 5 s.

    python -m benchmarks.scale_dask --workers 1,2 --processes --examples 10000
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

from benchmarks.kernels_scale import lorenz_rk4

STEPS = 2_000


def _parameters(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.array([10.0, 28.0, 8.0 / 3.0]) * (1.0 + 0.05 * rng.standard_normal((n, 3)))


def _timed(run, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="worker counts, e.g. 1,2,4")
    parser.add_argument("--processes", action="store_true", help="worker processes")
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--batches-per-thread",
        type=int,
        default=None,
        help="batches a map makes per worker thread (default: nx.distributed's)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("NUMBAX_COMPILE_LOG", "0")
    if not args.processes:  # workers in this process use its cache: an empty one
        os.environ["NUMBAX_CACHE_DIR"] = tempfile.mkdtemp(prefix="numbax-scale-dask-")
    import numba
    from distributed import Client, LocalCluster

    import numbax as nx

    if args.batches_per_thread is not None:
        nx.distributed.BATCHES_PER_THREAD = args.batches_per_thread
    counts = [int(w) for w in args.workers.split(",")]
    ps = _parameters(args.examples)
    grad = nx.grad(lorenz_rk4)
    numba.set_num_threads(1)
    reference_map = nx.jit(nx.vmap(grad, in_axes=(0, None), method="loop"))
    reference_map(ps[:2], args.steps)  # compiled here, outside the timing
    one_core, reference = _timed(lambda: reference_map(ps, args.steps), args.repeat)
    print(
        f"# {args.examples} examples of nx.grad(lorenz_rk4), {args.steps} RK4 steps each; "
        f"{'process' if args.processes else 'in-process (thread)'} workers, one thread each; "
        f"one core, nx.jit(nx.vmap(g, method='loop')): {one_core:.3f} s; "
        f"{nx.distributed.BATCHES_PER_THREAD} batches per worker thread",
        file=sys.stderr,
    )
    rows = []
    for workers in counts:
        cache = tempfile.mkdtemp(prefix="numbax-scale-dask-")
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=args.processes,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            ) as cluster,
            Client(cluster) as client,
        ):

            def run(cache=cache, client=client):
                return nx.distributed.map(
                    grad,
                    ps,
                    args.steps,
                    in_axes=(0, None),
                    client=client,
                    cache_dir=cache if args.processes else None,
                    progress=False,
                )

            out = run()
            cold = nx.distributed.last_report()
            if not np.array_equal(out, reference):
                raise SystemExit(f"{workers} workers: results differ from the vmap loop")
            seconds, out = _timed(run, args.repeat)
            assert np.array_equal(out, reference)
            batches = nx.distributed.last_report().batches
            if args.processes:  # fresh processes (in-process workers cannot restart)
                client.restart()
                client.wait_for_workers(workers)
            run()
            warm = nx.distributed.last_report()
            killed = _killed(run, client, seconds, reference) if args.processes else None
        rows.append((workers, seconds, batches, cold, warm, killed))
    base = rows[0][1] * rows[0][0]
    print(
        "| workers | batches | time (s) | efficiency | compiles cold / warm | "
        "first batch cold (s, per worker) | first batch warm (s, per worker) | "
        "of which ready warm (s) | a worker killed: time (s) / bound (1 + 1/W)·T + 5 s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for workers, seconds, batches, cold, warm, killed in rows:
        efficiency = base / (workers * seconds)
        bound = (1 + 1 / workers) * seconds + 5
        print(
            f"| {workers} | {batches} | {seconds:.3f} | {efficiency:.0%} | "
            f"{cold.compiles} / {warm.compiles} | {_firsts(cold.first_batch_seconds)} | "
            f"{_firsts(warm.first_batch_seconds)} | {_firsts(warm.ready_seconds)} | "
            + (f"{killed:.2f} / {bound:.2f} |" if killed is not None else "- |")
        )
    return 0


def _killed(run, client, seconds: float, reference: np.ndarray) -> float | None:
    """The map's time with one worker process killed a third of the way through (its
    batches computed again elsewhere); its results checked. None with one worker."""
    pids = client.run(os.getpid)
    if len(pids) < 2:
        return None
    victim = sorted(pids)[0]
    timer = threading.Timer(seconds / 3, os.kill, (pids[victim], signal.SIGKILL))
    start = time.perf_counter()
    timer.start()
    out = run()
    elapsed = time.perf_counter() - start
    timer.join()
    if not np.array_equal(out, reference):
        raise SystemExit("a worker killed: results differ from the vmap loop")
    return elapsed


def _firsts(seconds: dict[str, float]) -> str:
    values = sorted(seconds.values())
    if not values:
        return "-"
    return ", ".join(f"{v:.2f}" for v in values) + (
        f" (median {statistics.median(values):.2f})" if len(values) > 2 else ""
    )


if __name__ == "__main__":
    sys.exit(main())
