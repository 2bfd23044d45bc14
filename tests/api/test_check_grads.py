"""``nx.test_util.check_grads``: JAX's derivative checker, passing on right derivatives
(every order, both modes, pytrees, complex numbers) and failing on a wrong rule."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx

X = np.linspace(0.1, 1.0, 4)
Y = np.array([1.0, 2.0, 3.0, 0.5])


def polynomial(x, y):
    return np.sum(np.sin(x) * y**2)


def layer(params):
    return np.tanh(params["w"]) @ params["b"]


def magnitude(z):
    return np.abs(z) ** 2


@pytest.mark.parametrize("order", [1, 2, 3])
def test_right_derivatives_pass(order):
    nx.test_util.check_grads(polynomial, (X, Y), order=order)


def test_pytrees_and_complex_numbers():
    params = {"w": np.full((2, 3), 0.3), "b": np.arange(3.0)}
    nx.test_util.check_grads(layer, (params,), order=1)
    nx.test_util.check_grads(magnitude, (np.array([1 + 2j, 0.5 - 1j]),), order=1)


@nx.custom_jvp
def sine_jvp_off(x):
    return np.sin(x)


@sine_jvp_off.defjvp
def _sine_jvp_off(primals, tangents):
    (x,), (t,) = primals, tangents
    return np.sin(x), 1.01 * np.cos(x) * t  # 1% off


@nx.custom_vjp
def sine_vjp_off(x):
    return np.sin(x)


def _sine_forward(x):
    return np.sin(x), x


def _sine_backward(x, ct):
    return (ct * np.cos(x) + 0.01,)  # off by a constant


sine_vjp_off.defvjp(_sine_forward, _sine_backward)


def test_a_wrong_forward_rule_fails():
    with pytest.raises(AssertionError, match="JVP: tangent"):
        nx.test_util.check_grads(sine_jvp_off, (X,), order=1, modes=("fwd",))


def test_a_wrong_reverse_rule_fails():
    with pytest.raises(AssertionError, match="VJP"):
        nx.test_util.check_grads(sine_vjp_off, (X,), order=1, modes=("rev",))


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="'fwd' and 'rev'"):
        nx.test_util.check_grads(polynomial, (X, Y), order=1, modes=("forward",))
    with pytest.raises(TypeError, match="bind the others"):
        nx.test_util.check_grads(lambda x, n: np.sum(x) * n, (X, 3), order=1)
