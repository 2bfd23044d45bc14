"""A guided tour of numbax: JAX's quickstart, on plain NumPy code (``make demo``).

Run with ``python -m numbax.demo``. Each section prints what it does, the results, the
timings against NumPy, and the source numbax generated, because reading it is the point.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np

import numbax as nx


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


@partial(nx.jit, static_argnames="n")
def power_sum(x, n):
    total = np.zeros_like(x)
    term = np.ones_like(x)
    for _ in range(n):
        term = term * x
        total += term
    return total


def _median_time(fun: Callable[[], object], min_total: float = 0.3) -> float:
    """Median seconds per call over enough calls to fill ``min_total`` seconds."""
    fun()
    times: list[float] = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_total or len(times) < 5:
        t0 = time.perf_counter()
        fun()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _section(title: str) -> None:
    print(f"\n{'=' * 78}\n{title}\n{'=' * 78}")


def tour_jit() -> None:
    _section("1. NumPy code, compiled: nx.jit")
    x = np.arange(5.0)
    print("def selu(x, alpha=1.67, lmbda=1.05):")
    print("    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)\n")
    print("selu(np.arange(5.0))        =", selu(x))
    selu_jit = nx.jit(selu)
    t0 = time.perf_counter()
    print("nx.jit(selu)(np.arange(5.0)) =", selu_jit(x))
    print(f"(first call generated and compiled in {time.perf_counter() - t0:.2f} s)")

    _section("2. Timing on 1,000,000 float32 values")
    rng = np.random.default_rng(1701)
    big = rng.standard_normal(1_000_000).astype(np.float32)
    selu_jit(big)
    t_numpy = _median_time(lambda: selu(big))
    t_jit = _median_time(lambda: nx.block_until_ready(selu_jit(big)))
    print(f"NumPy      : {t_numpy * 1e3:7.3f} ms")
    print(f"nx.jit     : {t_jit * 1e3:7.3f} ms   ({t_numpy / t_jit:.1f}x faster than NumPy)")
    print(f"dtype kept : selu_jit(float32 array).dtype = {selu_jit(big).dtype}")

    _section("3. What numbax generated (nx.show)")
    print("One operation per line, each block tied to your line, the whole chain fused")
    print("into one loop; exp is numbax's SIMD-friendly version, and weak= keeps Python")
    print("floats from turning float32 arrays into float64 (NumPy 2 promotion, as in JAX).\n")
    nx.show(selu_jit)

    _section("4. Static arguments: one specialization per value")
    y = np.linspace(0.0, 1.0, 4)
    for n in (2, 3):
        print(f"power_sum(y, n={n}) =", power_sum(y, n=n))
    print("\nGenerated for n=3 (the value is baked in as a constant):\n")
    nx.show(power_sum)


def main() -> None:
    print("numbax", nx.__version__, "- JAX's transformations for plain NumPy code")
    tour_jit()


if __name__ == "__main__":
    main()
