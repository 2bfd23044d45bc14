"""A guided tour of numbax: JAX's quickstart, on plain NumPy code (``make demo``).

Run with ``make demo`` (or ``python examples/demo.py``). Each section prints what it
does, the results, the timings against NumPy, and the source numbax generated, because
reading it is the point.
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


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def horner(c, x):
    acc = 0.0
    for i in range(c.shape[0]):
        acc = acc * x + c[i]
    return acc


def _finite_differences(f: Callable, x: np.ndarray, eps: float = 1e-3) -> np.ndarray:
    return np.array([(f(x + eps * v) - f(x - eps * v)) / (2 * eps) for v in np.eye(len(x))])


def tour_grad() -> None:
    _section("5. Derivatives: nx.grad")
    print("def sum_logistic(x):")
    print("    return np.sum(1.0 / (1.0 + np.exp(-x)))\n")
    x = np.arange(3.0)
    derivative_fn = nx.grad(sum_logistic)
    print("nx.grad(sum_logistic)(np.arange(3.0)) =", derivative_fn(x))
    print("central finite differences            =", _finite_differences(sum_logistic, x))
    print("\nThe derivative is new source: the forward sweep, then each line's adjoint.\n")
    nx.show(derivative_fn)

    _section("6. Any order, with jit anywhere in the chain")
    third = nx.grad(nx.jit(nx.grad(nx.jit(nx.grad(sum_logistic)))))
    print("nx.grad(nx.jit(nx.grad(nx.jit(nx.grad(sum_logistic)))))(1.0) =", third(1.0))
    print("nx.jacobian(np.exp)(np.arange(3.0)) =\n", nx.jacobian(np.exp)(x))
    hessian = nx.jit(nx.jacfwd(nx.jacrev(sum_logistic)))
    print("nx.jit(nx.jacfwd(nx.jacrev(sum_logistic)))(np.arange(3.0)) =\n", hessian(x))

    _section("7. Timing the gradient on 1,000,000 float64 values")
    big = np.random.default_rng(0).standard_normal(1_000_000)
    grad_jit = nx.jit(nx.grad(sum_logistic))
    grad_jit(big)
    t_numpy = _median_time(lambda: sum_logistic(big))
    t_grad = _median_time(lambda: derivative_fn(big))
    t_jit = _median_time(lambda: grad_jit(big))
    print(f"NumPy sum_logistic (no gradient) : {t_numpy * 1e3:7.3f} ms")
    print(f"nx.grad, interpreted with NumPy  : {t_grad * 1e3:7.3f} ms")
    print(f"nx.jit(nx.grad(...))             : {t_jit * 1e3:7.3f} ms")

    _section("8. Loops differentiate too: reverse mode runs them backwards")
    c = np.array([1.0, -2.0, 3.0, 0.5])
    print("def horner(c, x):\n    acc = 0.0\n    for i in range(c.shape[0]):")
    print("        acc = acc * x + c[i]\n    return acc\n")
    print("nx.grad(horner, argnums=1)(c, 0.7) =", nx.grad(horner, argnums=1)(c, 0.7))
    print("(3x^2 - 4x + 3 at 0.7 is", 3 * 0.49 - 2.8 + 3, ")\n")
    nx.show(nx.grad(horner, argnums=1))


MAT = nx.random.normal(nx.random.split(nx.random.key(1701))[0], (150, 100))


def apply_matrix(x):
    return np.dot(MAT, x)


def tour_vmap() -> None:
    _section("9. Batching: nx.vmap rewrites the function for the batch")
    batched_x = nx.random.normal(nx.random.split(nx.random.key(1701))[1], (10, 100))
    print("def apply_matrix(x):\n    return np.dot(mat, x)        # mat: 150 x 100\n")
    naive = np.stack([apply_matrix(v) for v in batched_x])
    manual = np.dot(batched_x, MAT.T)
    batched = nx.jit(nx.vmap(apply_matrix))
    np.testing.assert_allclose(naive, manual, atol=1e-12)
    np.testing.assert_allclose(batched(batched_x), manual, atol=1e-12)
    print("naive loop, by-hand batching and nx.jit(nx.vmap(apply_matrix)) agree.")
    t_naive = _median_time(lambda: np.stack([apply_matrix(v) for v in batched_x]))
    t_manual = _median_time(lambda: np.dot(batched_x, MAT.T))
    t_vmap = _median_time(lambda: batched(batched_x))
    print(f"naively batched  : {t_naive * 1e6:8.1f} us")
    print(f"manually batched : {t_manual * 1e6:8.1f} us")
    print(f"nx.jit(nx.vmap)  : {t_vmap * 1e6:8.1f} us\n")
    shown = nx.vmap(apply_matrix)
    shown(batched_x)  # generated for the ranks of its arguments
    nx.show(shown)


def main() -> None:
    print("numbax", nx.__version__, "- JAX's transformations for plain NumPy code")
    tour_jit()
    tour_grad()
    tour_vmap()


if __name__ == "__main__":
    main()
