"""Selections and order: ``np.sort``, ``np.take``, ``np.take_along_axis``,
``np.choose``, ``np.select``, ``divmod``, Python's ``sum`` of a sequence, and the
conventions at ties and bounds (``np.clip``, ``np.maximum``) and at 0 (``np.sinc``).

The rules with samples are checked by the rule table (test_rule_table.py); here, those
whose arguments are tuples (a generic call cannot write them), the values JAX gives at
ties, and one compiled program that exercises the family at once (one compile).
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_jacobian

X = np.array([0.3, -1.2, 2.5, 0.75])
Y = np.array([0.5, 0.9, -0.4, 1.1])
INDEX = np.array([[0, 2, 1, 0], [1, 1, 0, 2]])


def select_lists(x, y):
    return np.select([x > 0, x < -1], [x * y, y], 0.5 * y)


def select_tuples(x, y):
    return np.select((x > 0.5, y > 0), (x, x * x), y[0])


def choose_two(x, y):
    return np.choose(np.array([0, 1, 1, 0]), (x, y * x))


def choose_method(x, y):
    return np.array([1, 0, 0, 1]).choose((x, y * y))


def choose_clipped(x, y):
    return np.choose(INDEX + 1, (x, y, 1.5 * x[0]), mode="clip")


def divmod_builtin(x, y):
    q, r = divmod(x, y)
    return r * 2 + q


def divmod_numpy(x, y):
    q, r = np.divmod(x, 0.7)
    return r * y + q


def sum_list(x, y):
    return sum([x[0], x[1] * y[2], x[3]])


def sum_tuple_start(x, y):
    return sum((x, y), x[2])


def sort_columns(x, y):
    return np.sort(np.outer(x, y), axis=0)


def take_wrapped(x, y):
    return np.take(np.outer(x, y), np.array([5, -1, 2]), axis=1, mode="wrap")


CASES = [select_lists, select_tuples, choose_two, choose_method, choose_clipped, divmod_builtin]
CASES += [divmod_numpy, sum_list, sum_tuple_start, sort_columns, take_wrapped]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_derivatives_match_finite_differences(f):
    check_jacobians(f, X, Y, jit=False)


def squared(f):
    def loss(x, y):
        return np.sum(f(x, y) ** 2)

    return loss


@pytest.mark.parametrize(
    "f", [choose_clipped, select_lists, sum_tuple_start], ids=lambda f: f.__name__
)
def test_second_derivatives(f):
    """Differentiating the gradient differentiates the adjoints (nxrt.unchoose,
    nxrt.unselect, nxrt.spread_like) by their own rules."""
    check_jacobians(nx.grad(squared(f)), X, Y, jit=False)


def test_sort_follows_the_elements_and_is_stable_at_ties():
    """Each place's derivative is that of the element sorted into it; tied elements keep
    their order (a stable sort), as in JAX."""
    x = np.array([2.0, 1.0, 2.0, 0.5])
    jac = nx.jacrev(np.sort)(x)
    np.testing.assert_array_equal(jac, np.eye(4)[[3, 1, 0, 2]])
    np.testing.assert_array_equal(nx.jacfwd(np.sort)(x), jac)


def test_take_adds_up_repeated_indices():
    g = nx.grad(lambda x: np.sum(np.take(x, np.array([1, 1, 3]))))(X)
    np.testing.assert_array_equal(g, [0.0, 2.0, 0.0, 1.0])


def test_clip_and_maximum_split_ties_as_jax():
    """jax.grad(lambda x: jnp.clip(x, -1., 1.).sum())([-1., 0., 1., 2.]) is
    [0.5, 1., 0.5, 0.]; jnp.maximum splits its derivative evenly at a tie."""
    x = np.array([-1.0, 0.0, 1.0, 2.0])
    grad = nx.grad(lambda v: np.sum(np.clip(v, -1.0, 1.0)))(x)
    np.testing.assert_array_equal(grad, [0.5, 1.0, 0.5, 0.0])
    both = nx.grad(lambda v, w: np.sum(np.maximum(v, w)), argnums=(0, 1))(x, np.zeros(4))
    np.testing.assert_array_equal(both[0], [0.0, 0.5, 1.0, 1.0])
    np.testing.assert_array_equal(both[1], [1.0, 0.5, 0.0, 0.0])


def test_sinc_second_derivative_at_zero():
    """sinc(x) = 1 - (pi x)^2 / 6 + ...: its second derivative at 0 is -pi^2 / 3."""
    second = nx.grad(nx.grad(np.sinc))(0.0)
    assert second == pytest.approx(-(np.pi**2) / 3, rel=1e-6)
    assert nx.grad(np.sinc)(0.0) == 0.0


def test_fabs_sign_and_angle_units():
    x = np.array([-2.0, 0.5])
    np.testing.assert_array_equal(nx.grad(lambda v: np.sum(np.fabs(v)))(x), [-1.0, 1.0])
    np.testing.assert_array_equal(nx.grad(lambda v: np.sum(np.sign(v) * v))(x), [-1.0, 1.0])
    both = nx.grad(lambda v: np.sum(np.radians(v) + np.degrees(v)))(x)
    np.testing.assert_allclose(both, np.full(2, np.pi / 180 + 180 / np.pi))


def program(x, y):
    """Most of the family in one function, compiled once per mode."""
    m = np.outer(x, y)
    s = np.sort(m, axis=0)
    t = np.take(m, np.array([2, 0]), axis=1)
    u = np.take_along_axis(m, np.argsort(m, axis=1), axis=1)
    c = np.choose(np.array([0, 1, 1, 0]), (x, y * x))
    w = np.select((x > 0, x < -1), (x * y, y), 0.5)
    q, r = divmod(x, 0.7)
    z = sum((x[0], x[1], x[3]))
    v = np.clip(x, -1.0, 1.0) + abs(x) + np.fabs(y) + np.radians(x)
    return np.sum(s * s) + np.sum(t) + np.sum(u[:, 0]) + np.sum(c + w + r + v) + z * q[2]


def test_program_under_jit():
    """Reverse mode only (forward mode meets the same rules' templates in the rule
    table): one compile of the derivative, one of the function."""
    want = numeric_jacobian(program, [X, Y], 0)
    np.testing.assert_allclose(nx.jit(nx.grad(program))(X, Y), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nx.jit(program)(X, Y), program(X, Y), rtol=1e-12)
