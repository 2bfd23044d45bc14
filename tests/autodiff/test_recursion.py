"""Recursive functions: each derivative calls itself, interpreted and under jit."""

import inspect

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_jacobian


def power(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * power(x, n - 1)


def horner(coefficients, x, k):
    """sum_i c[i] x**i from index k on, by recursion on k."""
    if k == len(coefficients) - 1:
        return coefficients[k] * np.ones_like(x)
    return coefficients[k] + x * horner(coefficients, x, k + 1)


def cubed(x):
    return np.sum(power(x, 3))


def polynomial(c, x):
    return np.sum(horner(c, x, 0))


X = np.array([0.5, -1.2, 2.0])
C = np.array([1.0, -2.0, 0.5, 0.25])


def test_first_order_both_modes():
    check_jacobians(cubed, X, jit=False)
    check_jacobians(polynomial, C, X, jit=False)


def test_second_order():
    np.testing.assert_allclose(nx.hessian(cubed)(X), np.diag(6 * X), rtol=1e-12)
    want = numeric_jacobian(nx.grad(polynomial, 1), [C, X], 1)
    np.testing.assert_allclose(nx.jacrev(nx.grad(polynomial, 1), 1)(C, X), want, rtol=1e-6)


def test_the_derivative_calls_itself():
    assert "_vjp_power(" in nx.grad(cubed).source
    vjp_power = nx.grad(cubed).generated().function.__globals__["_vjp_power"]
    body = inspect.getsource(vjp_power).split("\n", 1)[1]  # after the def line
    assert "= vjp_power(x, _sub, " in body


def test_under_jit():
    np.testing.assert_allclose(nx.jit(cubed)(X), cubed(X))
    np.testing.assert_allclose(nx.jit(nx.grad(cubed))(X), 3 * X**2, rtol=1e-12)
    np.testing.assert_allclose(
        nx.jit(nx.grad(polynomial, 1))(C, X), nx.grad(polynomial, 1)(C, X), rtol=1e-12
    )


def is_even(n, x):
    if n == 0:
        return x
    return is_odd(n - 1, x) * 2.0


def is_odd(n, x):
    if n == 0:
        return -x
    return is_even(n - 1, x) * 3.0


def test_mutual_recursion_is_refused_with_a_reason():
    with pytest.raises(nx.TransformError, match="mutually recursive"):
        nx.grad(lambda x: is_even(3, x))(1.0)
