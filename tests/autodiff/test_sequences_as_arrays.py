"""A list or tuple argument that operations use as the array NumPy makes of it.

``np.sin(t)`` and ``np.multiply(t, w)`` convert a tuple ``t`` implicitly, ``np.asarray(t)``
explicitly, ``a, b = t`` reads its items. Its gradient is a tuple of the same length, as
JAX gives (``jax.grad`` of ``jnp.asarray(t)``): the cotangents of each use add up item by
item, never by joining two tuples (which made ``(3, 5)`` the four items
``(2, 4, 1, 1)``), and an operand NumPy converted takes its cotangent as an array of its
shape. Values against central finite differences, interpreted: Numba compiles no ufunc
of a tuple.

Forward mode likewise: the tangent of ``np.add(t, u)`` adds the tangents of two tuples
(``np.add(_d_t, _d_u)``, where ``+`` joined them and made a mean half its value),
``np.negative(t)`` negates one, and a tuple built in the function is a tuple of tangents
that NumPy converts with it.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.runtime import tangents
from tests.helpers.fd import numeric_jacobian

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


def squared_arrays(xs):
    return np.sum(np.square(xs)[0]) + np.sum(np.maximum(xs, 0.5) * 2)


def added(t, u):
    return np.mean(np.add(t, u))


def scaled_by_an_integer(t):
    return np.mean(np.multiply(t, 2))


def negated(t):
    return np.sum(np.negative(t) * np.arange(1.0, 3.0))


def packed_inside(x, y):
    t = (x, y)
    s = [y, x]
    return np.mean(np.add(t, t)) + np.sum(np.subtract(s, t) ** 2)


CASES = [
    pytest.param(implicit_unary, ((0.3, 1.2),), id="implicit_unary"),
    pytest.param(implicit_with_a_constant, ((0.3, 1.2),), id="implicit_with_a_constant"),
    pytest.param(implicit_broadcast, ((0.3, 1.2), W), id="implicit_broadcast"),
    pytest.param(explicit_twice, ((0.3, 1.2),), id="explicit_twice"),
    pytest.param(explicit_twice, ([0.3, 1.2, -0.7],), id="explicit_twice_list"),
    pytest.param(explicit_and_implicit, ((0.3, 1.2), W), id="explicit_and_implicit"),
    pytest.param(unpacked_and_implicit, ((0.3, 1.2), W), id="unpacked_and_implicit"),
    pytest.param(stacked_twice, ([np.array([0.5, 1.0]), np.array([-1.0, 2.0])],), id="stacked"),
    pytest.param(squared_arrays, ((np.array([0.3, 1.2]), np.array([0.9, -0.4])),), id="squared"),
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


FORWARD_CASES = [
    *CASES,
    pytest.param(added, ((0.3, 1.2), (2.0, -0.4)), id="added"),
    pytest.param(scaled_by_an_integer, ((0.3, 1.2, 0.8),), id="scaled_by_an_integer"),
    pytest.param(negated, ([0.3, 1.2],), id="negated"),
    pytest.param(packed_inside, (0.3, 1.2), id="packed_inside"),
]


def _directional(f, args, tangents):
    """Central differences of ``f`` along ``tangents``, each shaped as its argument."""
    return sum(
        numeric_jacobian(f, args, i).reshape(-1) @ np.ravel(np.asarray(t, dtype=float))
        for i, t in enumerate(tangents)
    )


def _tangents_like(args):
    """A tangent per argument, in its structure: 1, 2, 3... over its items."""
    counter = iter(np.linspace(1.0, 2.0, 32))
    out = []
    for a in args:
        if type(a) in (list, tuple):
            out.append(type(a)(np.full(np.shape(i), next(counter))[()] for i in a))
        else:
            out.append(np.full(np.shape(a), next(counter))[()])
    return tuple(out)


@pytest.mark.parametrize("f, args", FORWARD_CASES)
def test_the_tangent_treats_the_sequence_as_its_array(f, args):
    tangents = _tangents_like(args)
    value, tangent = nx.jvp(f, args, tangents)
    assert value == pytest.approx(f(*args))
    assert tangent == pytest.approx(_directional(f, args, tangents), rel=1e-6, abs=1e-8)


def test_jacfwd_and_hessian_of_a_tuple_are_tuples_itemwise():
    t = (0.3, 1.2)
    jac = nx.jacfwd(added, argnums=(0, 1))(t, (2.0, -0.4))
    assert type(jac) is tuple and all(type(j) is tuple and len(j) == 2 for j in jac)
    np.testing.assert_allclose(np.asarray(jac), 0.5)
    hess = nx.hessian(implicit_unary)(t)
    assert type(hess) is tuple and all(type(row) is tuple for row in hess)
    np.testing.assert_allclose(np.asarray(hess), np.diag(-np.sin(t)), rtol=1e-12)


def test_tuples_joined_by_plus_keep_joined_tangents():
    def joined(t, u):
        return np.sum(np.asarray(t + u) * np.arange(1.0, 5.0))

    _, tangent = nx.jvp(joined, ((0.3, 1.2), (2.0, -0.4)), ((1.0, 0.0), (0.0, 1.0)))
    assert tangent == pytest.approx(1.0 + 4.0)


def test_under_jit_an_elementwise_line_of_tuples_is_refused_at_the_line():
    """Numba compiles no ufunc of a tuple: numbax's fused loop of the line declines it,
    so the error names the line (it was a TypeError from inside numbax's overload)."""

    def chosen(x, s):
        t = (np.sin(s), 2.0 * s)
        u = (s * x[1], 2.0 * s)
        r = np.where(np.asarray(t) > 0.1, t, u)
        return np.sum(r)

    for transform in (lambda f: f, nx.grad):
        with pytest.raises(nx.CompileError, match="np.where") as caught:
            nx.jit(transform(chosen))(np.array([0.3, -0.8]), 0.7)
        assert caught.value.lineno == chosen.__code__.co_firstlineno + 3


def test_tree_add_adds_an_array_to_a_sequence_item_by_item():
    assert tangents.tree_add((1.0, 2.0), np.array([10.0, 20.0])) == (11.0, 22.0)
    assert tangents.tree_add(np.array([10.0, 20.0]), [1.0, 2.0]) == [11.0, 22.0]
    with pytest.raises(ValueError, match="sequence of 2 items"):
        tangents.tree_add((1.0, 2.0), np.array([1.0, 2.0, 3.0]))
