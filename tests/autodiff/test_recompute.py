"""Loops whose reverse sweep recomputes the body from taped live-in values."""

import re

import gast
import numpy as np

import numbax as nx
from numbax.transform.ad.recompute import live_in_variables
from tests.helpers.fd import check_jacobians


def _loop(source: str) -> gast.For:
    return gast.parse(source).body[0]


def test_live_in_are_the_values_read_before_written():
    loop = _loop("for i in range(n):\n    d = s * (y - x)\n    x = x + d\n    y = y * x\n")
    assert live_in_variables(loop, {"x", "y", "s", "n"}, {"x", "y", "s", "n"}, set()) == ["x", "y"]


def test_a_temporary_overwriting_a_needed_value_is_taped_too():
    loop = _loop("for i in range(n):\n    t = x * 2\n    x = t + 1\n")
    # t existed before the loop and the adjoint of earlier code reads it
    assert live_in_variables(loop, {"x", "t"}, {"x", "t"}, {"t"}) == ["t", "x"]


def test_what_cannot_be_run_twice_keeps_the_general_tape():
    before = {"x", "a", "n"}
    for body in ("a[i] = x", "x = x + 1\n    break", "s.append(x)"):
        assert (
            live_in_variables(_loop(f"for i in range(n):\n    {body}\n"), before, before, set())
            is None
        )
    # carried from one iteration to the next, but first made inside the loop
    carried = _loop("for i in range(n):\n    if i > 0:\n        x = p * 2\n    p = x\n")
    assert live_in_variables(carried, {"x", "n"}, {"x", "n"}, set()) is None


def lorenz(sigma, rho, beta):
    x, y, z = 1.0, 1.0, 1.0
    for _ in range(200):
        dx = sigma * (y - x)
        dy = x * (rho - z) - y
        dz = x * y - beta * z
        x = x + 0.005 * dx
        y = y + 0.005 * dy
        z = z + 0.005 * dz
    return x * x


def adaptive(k, y0):
    """A while loop with a branch on the error estimate (an adaptive step)."""
    t, y, h = 0.0, y0, 0.1
    while t < 1.0:
        y_half = y - 0.5 * h * k * y
        y_full = y - h * k * y_half
        y_euler = y - h * k * y
        if np.abs(y_full - y_euler) < 1e-3:
            t = t + h
            y = y_full
            h = h * 1.5
        else:
            h = h * 0.5
    return y


def nested(x):
    total = 0.0
    for i in range(3):
        acc = x
        for _ in range(i + 1):
            acc = np.sin(acc) * x
        total = total + np.sum(acc)
    return total


def test_the_tape_holds_the_state_only():
    source = nx.grad(lorenz, (0, 1, 2)).source
    assert set(re.findall(r"_tape_\w+", source)) == {"_tape_x", "_tape_y", "_tape_z"}


def test_recomputed_loops_against_finite_differences():
    check_jacobians(lorenz, 10.0, 28.0, 8 / 3, jit=False, rtol=1e-4)
    check_jacobians(adaptive, 1.3, 2.0, jit=False)
    check_jacobians(nested, np.array([0.3, -0.5]), jit=False)


def test_recomputed_loops_under_jit():
    want = nx.grad(lorenz, (0, 1, 2))(10.0, 28.0, 8 / 3)
    got = nx.jit(nx.grad(lorenz, (0, 1, 2)))(10.0, 28.0, 8 / 3)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(nx.jit(nx.grad(adaptive))(1.3, 2.0), nx.grad(adaptive)(1.3, 2.0))


def test_second_order_through_a_recomputed_loop():
    hess = nx.hessian(adaptive)(1.3, 2.0)
    eps = 1e-5
    fd = (nx.grad(adaptive)(1.3 + eps, 2.0) - nx.grad(adaptive)(1.3 - eps, 2.0)) / (2 * eps)
    np.testing.assert_allclose(hess, fd, rtol=1e-5)
    np.testing.assert_allclose(
        nx.jacrev(nx.grad(nested))(np.array([0.3, -0.5])),
        nx.jacfwd(nx.grad(nested))(np.array([0.3, -0.5])),
        rtol=1e-10,
    )
