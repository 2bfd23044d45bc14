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
from tests.helpers.fd import numeric_jacobian


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
    # the list bound in the closure is read as a tuple under jit
    p = PARTIALS["list-and-number"]
    value, tangent, cts = nx.jit(calling_jvp_and_vjp(p))(X, Y)
    assert (value, tangent, *cts) == pytest.approx((p(X, Y), want[0] + 2 * want[1], *want))


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


def summed(a, x, s, ws, scale=1.0):
    t = np.sum(a * x) * s
    for w in ws:
        t = t + np.sum(w * x)
    return t * scale


A0 = np.array([0.3, -0.5, 0.7])
WS = [np.array([0.1, 0.2, 0.3]), np.array([0.5, -0.6, 0.7])]
BOUND_GLOBAL_ARRAY = partial(summed, A0, scale=0.7)
BOUND_GLOBAL_LIST = partial(summed, ws=WS, scale=0.5)


def calls_a_partial_of_globals(x, s, w1, w2):
    """A partial built inside from a global array, a list left free; one called whose
    bound list is a global."""
    h = partial(summed, A0, scale=0.7)
    return h(x, s, [w1, w2]) + BOUND_GLOBAL_LIST(x, x, s) + np.sum(x)


GLOBALS_POINT = (np.array([0.2, -0.4, 0.9]), 0.6, np.array([1.1, 0.5, -0.3]), WS[1])


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "jit"])
def test_partials_of_global_arrays_and_lists(compiled):
    f = calls_a_partial_of_globals
    argnums = (0, 1, 2, 3)
    want = [numeric_jacobian(f, GLOBALS_POINT, k) for k in argnums]
    grad = nx.value_and_grad(f, argnums=argnums)
    value, got = (nx.jit(grad) if compiled else grad)(*GLOBALS_POINT)
    assert value == pytest.approx(f(*GLOBALS_POINT), rel=1e-12)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
    tangents = tuple(np.ones_like(np.asarray(a)) * 0.5 for a in GLOBALS_POINT)
    tangents = (tangents[0], 0.5, *tangents[2:])
    value, tangent = nx.jvp(f, GLOBALS_POINT, tangents)
    assert value == pytest.approx(f(*GLOBALS_POINT), rel=1e-12)
    assert tangent == pytest.approx(sum(np.sum(0.5 * w) for w in want), rel=1e-6)


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "jit"])
def test_a_positional_list_left_free(compiled):
    x, s = GLOBALS_POINT[:2]
    point = (x, s, WS)
    want_x = numeric_jacobian(lambda x: BOUND_GLOBAL_ARRAY(x, s, WS), (x,), 0)
    want_w = [
        numeric_jacobian(
            lambda w, k=k: BOUND_GLOBAL_ARRAY(x, s, [w, WS[1]] if k == 0 else [WS[0], w]),
            (WS[k],),
            0,
        )
        for k in (0, 1)
    ]
    grad = nx.grad(BOUND_GLOBAL_ARRAY, argnums=(0, 2))
    got_x, got_ws = (nx.jit(grad) if compiled else grad)(*point)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-6)
    assert type(got_ws) is list and len(got_ws) == 2
    for g, w in zip(got_ws, want_w, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9)
    value, back = nx.vjp(BOUND_GLOBAL_ARRAY, *point)
    assert value == pytest.approx(BOUND_GLOBAL_ARRAY(*point), rel=1e-12)
    np.testing.assert_allclose(back(2.0)[0], 2.0 * want_x, rtol=1e-6)
