"""What reverse mode returns beside the cotangents — ``value_and_grad``'s value, a
``has_aux`` function's aux, ``nx.vjp``'s primal output — is the value the function
returns, although the adjoint sweep gives overwritten variables their old values back
(a loop's accumulator, a branch's rebinding, an array stored into, a list appended to).
Values against the function run by NumPy, derivatives against central differences,
interpreted and under ``jit``."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian

C = np.array([1.0, 2.0, 0.5])
X = np.array([0.3, -0.6, 1.1])


def horner(c, x):
    acc = 0.0
    for i in range(c.shape[0]):
        acc = acc * x + c[i]
    return acc


def powers(x):
    acc = x
    n = 0
    while n < 3:
        acc = acc * x + 1.0
        n = n + 1
    return acc


def branch(x):
    a = x * 2.0
    if x > 0:
        a = a * a
    return a


def nested(x):
    acc = 0.0
    for _i in range(3):
        for _j in range(2):
            acc = acc * x + 1.0
    return acc


def stored(x):
    y = np.zeros(3)
    for i in range(3):
        y[i] = y[i] * x[i] + x[i]
        y[i] = y[i] * 2.0
    return np.sum(y * y), y


def listed(x):
    terms = [x, x * 2.0]
    terms.append(x * 3.0)
    return terms[0] + terms[2], terms


def tree(x):
    acc = 1.0
    ys = np.zeros(3)
    for i in range(3):
        acc = acc * x
        ys[i] = acc
    return acc, {"acc": acc, "pair": (ys, x)}


def sine_scaled(a):
    return np.sin(a) * a


def tangent_rebound(x):
    _, t = nx.jvp(sine_scaled, (x,), (0.5,))
    t = t * x
    return t


SCALARS = [
    pytest.param(horner, (C, 1.5), 1, id="for"),
    pytest.param(powers, (1.5,), 0, id="while"),
    pytest.param(branch, (1.5,), 0, id="if-taken"),
    pytest.param(branch, (-1.5,), 0, id="if-not-taken"),
    pytest.param(nested, (1.5,), 0, id="nested-for"),
    pytest.param(tangent_rebound, (0.7,), 0, id="jvp-tangent-rebound"),
]
MODES = ["interpreted", "jit"]


def _maybe_jit(f, mode):
    return nx.jit(f) if mode == "jit" else f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "args", "argnum"), SCALARS)
def test_value_of_a_rebound_result(f, args, argnum, mode):
    value, g = _maybe_jit(nx.value_and_grad(f, argnums=argnum), mode)(*args)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert g == pytest.approx(float(numeric_jacobian(f, args, argnum)), rel=1e-6)


def test_the_readme_horner_value():
    assert nx.value_and_grad(horner, argnums=1)(np.array([1.0, 2.0, 0.5]), 1.5) == (5.75, 5.0)


@pytest.mark.parametrize("mode", MODES)
def test_aux_stored_into_in_a_loop(mode):
    (value, aux), g = _maybe_jit(nx.value_and_grad(stored, has_aux=True), mode)(X)
    want_value, want_aux = stored(X)
    assert value == pytest.approx(want_value, rel=1e-12)
    np.testing.assert_allclose(aux, want_aux, rtol=1e-12)
    np.testing.assert_allclose(g, numeric_jacobian(lambda x: stored(x)[0], (X,), 0), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_aux_list_appended_to(mode):
    g, aux = _maybe_jit(nx.grad(listed, has_aux=True), mode)(1.5)
    assert list(aux) == pytest.approx(listed(1.5)[1], rel=1e-12)
    assert g == pytest.approx(4.0)


@pytest.mark.parametrize("mode", MODES)
def test_aux_pytree_of_an_accumulator(mode):
    (value, aux), g = _maybe_jit(nx.value_and_grad(tree, has_aux=True), mode)(1.5)
    want_value, want_aux = tree(1.5)
    assert value == pytest.approx(want_value)
    assert aux["acc"] == pytest.approx(want_aux["acc"])
    np.testing.assert_allclose(aux["pair"][0], want_aux["pair"][0], rtol=1e-12)
    assert aux["pair"][1] == 1.5
    assert g == pytest.approx(3 * 1.5**2)


def hvp_of_horner(x):
    y, back = nx.vjp(lambda t: horner(C, t), x)
    return y, back(1.0)[0]


@pytest.mark.parametrize("mode", MODES)
def test_vjp_primal_output(mode):
    y, back = nx.vjp(horner, C, 1.5)
    assert y == pytest.approx(horner(C, 1.5))
    assert back(1.0)[1] == pytest.approx(5.0)
    value, ct = _maybe_jit(hvp_of_horner, mode)(1.5)
    assert (value, ct) == pytest.approx((horner(C, 1.5), 5.0))


def test_jacrev_aux_of_an_accumulator():
    jac, aux = nx.jacrev(tree, has_aux=True)(1.5)
    assert aux["acc"] == pytest.approx(1.5**3)
    np.testing.assert_allclose(aux["pair"][0], tree(1.5)[1]["pair"][0], rtol=1e-12)
    assert jac == pytest.approx(3 * 1.5**2)
