"""A list or tuple argument that operations use as the array NumPy makes of it.

``np.sin(t)`` and ``np.multiply(t, w)`` convert a tuple ``t`` implicitly, ``np.asarray(t)``
explicitly, ``a, b = t`` reads its items. Its gradient is a tuple of the same length, as
JAX gives (``jax.grad`` of ``jnp.asarray(t)``): the cotangents of each use add up item by
item, never by joining two tuples (which made ``(3, 5)`` the four items
``(2, 4, 1, 1)``), and an operand NumPy converted takes its cotangent as an array of its
shape. Values against central finite differences, interpreted: Numba compiles no ufunc
of a tuple.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.runtime import tangents
from tests.autodiff.fd import numeric_jacobian

W = np.array([3.0, 5.0])


def implicit_unary(t):
    return np.sum(np.sin(t))


def implicit_with_a_constant(t):
    return np.sum(np.multiply(t, 2.0))


def implicit_broadcast(t, w):
    return np.sum(np.multiply(t, w))


def explicit_twice(t):
    return np.sum(np.asarray(t)) + np.sum(np.asarray(t) ** 2)


def explicit_and_implicit(t, w):
    return np.sum(np.asarray(t)) + np.sum(np.multiply(t, w) * np.cos(t))


def unpacked_and_implicit(t, w):
    a, b = t
    return a * b + np.sum(np.multiply(t, w)) + np.sum(np.sin(t))


def stacked_twice(xs):
    return np.sum(np.stack(xs)) + np.sum(np.stack(xs) ** 2)


CASES = [
    pytest.param(implicit_unary, ((0.3, 1.2),), id="implicit_unary"),
    pytest.param(implicit_with_a_constant, ((0.3, 1.2),), id="implicit_with_a_constant"),
    pytest.param(implicit_broadcast, ((0.3, 1.2), W), id="implicit_broadcast"),
    pytest.param(explicit_twice, ((0.3, 1.2),), id="explicit_twice"),
    pytest.param(explicit_twice, ([0.3, 1.2, -0.7],), id="explicit_twice_list"),
    pytest.param(explicit_and_implicit, ((0.3, 1.2), W), id="explicit_and_implicit"),
    pytest.param(unpacked_and_implicit, ((0.3, 1.2), W), id="unpacked_and_implicit"),
    pytest.param(stacked_twice, ([np.array([0.5, 1.0]), np.array([-1.0, 2.0])],), id="stacked"),
]


@pytest.mark.parametrize("f, args", CASES)
def test_the_gradient_is_the_sequence_itemwise(f, args):
    grads = nx.grad(f)(*args)
    t = args[0]
    assert type(grads) is type(t) and len(grads) == len(t)
    for item, primal in zip(grads, t, strict=True):
        assert np.shape(item) == np.shape(primal)
        assert np.result_type(item) == np.float64
    want = numeric_jacobian(f, args, 0)
    np.testing.assert_allclose(np.asarray(grads), want, rtol=1e-6, atol=1e-8)


def test_tree_add_adds_an_array_to_a_sequence_item_by_item():
    assert tangents.tree_add((1.0, 2.0), np.array([10.0, 20.0])) == (11.0, 22.0)
    assert tangents.tree_add(np.array([10.0, 20.0]), [1.0, 2.0]) == [11.0, 22.0]
    with pytest.raises(ValueError, match="sequence of 2 items"):
        tangents.tree_add((1.0, 2.0), np.array([1.0, 2.0, 3.0]))
