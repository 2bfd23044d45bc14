"""``functools.partial`` objects through every transformation: bound positional
arguments, keywords numbax writes as text (numbers) and keywords it cannot (lists,
tuples, dicts, arrays), with the remaining arguments where the call puts them. Values
against the partial run by NumPy, derivatives against central differences,
interpreted and under ``jit``."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import numbax as nx
from tests.autodiff.fd import numeric_jacobian


def model(x, y, ws, scale=1.0):
    return np.sin(x) * y * ws[0] * scale + ws[1] * x


def tabled(x, y, ws, scale=1.0, table=None):
    return model(x, y, ws, scale) + table["b"] * y * y


X, Y = 0.7, 1.3
PARTIALS = {
    "list-and-number": partial(model, ws=[2.0, 3.0], scale=0.5),
    "list-number-dict": partial(tabled, ws=[2.0, 3.0], scale=0.5, table={"b": 0.25}),
    "tuple-and-dict": partial(tabled, ws=(2.0, 3.0), table={"b": 0.25}),
    "array-and-numpy-scalar": partial(model, ws=np.array([2.0, 3.0]), scale=np.float64(0.5)),
}
COMPILED = ["list-and-number", "array-and-numpy-scalar"]


def _jacobian(p):
    return [float(numeric_jacobian(p, (X, Y), k)) for k in (0, 1)]


@pytest.mark.parametrize("name", PARTIALS)
def test_jvp_vjp_and_grad_interpreted(name):
    p = PARTIALS[name]
    want = _jacobian(p)
    assert nx.grad(p, argnums=(0, 1))(X, Y) == pytest.approx(want, rel=1e-6)
    value, tangent = nx.jvp(p, (X, Y), (1.0, 2.0))
    assert value == pytest.approx(p(X, Y), rel=1e-12)
    assert tangent == pytest.approx(want[0] + 2.0 * want[1], rel=1e-6)
    value, back = nx.vjp(p, X, Y)
    assert value == pytest.approx(p(X, Y), rel=1e-12)
    assert back(1.0) == pytest.approx(want, rel=1e-6)
    xs, ys = np.array([X, 2 * X]), np.array([Y, Y / 2])
    np.testing.assert_allclose(nx.vmap(p)(xs, ys), [p(X, Y), p(2 * X, Y / 2)], rtol=1e-12)


def calling_jvp_and_vjp(p):
    def jvp_and_vjp(x, y):
        value, tangent = nx.jvp(p, (x, y), (1.0, 2.0))
        _, back = nx.vjp(p, x, y)
        return value, tangent, back(1.0)

    return jvp_and_vjp


@pytest.mark.parametrize("name", COMPILED)
def test_under_jit(name):
    p = PARTIALS[name]
    want = _jacobian(p)
    assert nx.jit(p)(X, Y) == pytest.approx(p(X, Y), rel=1e-12)
    assert nx.jit(nx.grad(p, argnums=(0, 1)))(X, Y) == pytest.approx(want, rel=1e-6)


def test_jvp_and_vjp_of_a_partial_inside_jit():
    p = PARTIALS["array-and-numpy-scalar"]
    want = _jacobian(p)
    value, tangent, cts = nx.jit(calling_jvp_and_vjp(p))(X, Y)
    assert value == pytest.approx(p(X, Y), rel=1e-12)
    assert tangent == pytest.approx(want[0] + 2.0 * want[1], rel=1e-6)
    assert cts == pytest.approx(want, rel=1e-6)
    value, tangent, cts = calling_jvp_and_vjp(PARTIALS["list-and-number"])(X, Y)
    assert (value, tangent, *cts) == pytest.approx((p(X, Y), want[0] + 2 * want[1], *want))
    # a list bound in a closure is a value Numba cannot compile: an error at the line
    with pytest.raises(nx.CompileError, match=r"reflected list[\s\S]*line \d+"):
        nx.jit(calling_jvp_and_vjp(PARTIALS["list-and-number"]))(X, Y)


def test_bound_positional_arguments():
    p = partial(model, X, ws=(2.0, 3.0))
    want = float(numeric_jacobian(p, (Y,), 0))
    assert nx.grad(p)(Y) == pytest.approx(want, rel=1e-6)
    assert nx.jvp(p, (Y,), (1.0,)) == pytest.approx((p(Y), want), rel=1e-6)
    assert nx.vjp(p, Y)[1](1.0) == pytest.approx((want,), rel=1e-6)
    assert nx.jit(nx.grad(p))(Y) == pytest.approx(want, rel=1e-6)


def test_a_bound_keyword_given_again_at_the_call():
    p = PARTIALS["list-and-number"]
    want = p(X, Y, ws=[1.0, 1.0], scale=2.0)
    assert nx.jit(p)(X, Y, ws=[1.0, 1.0], scale=2.0) == pytest.approx(want, rel=1e-12)
