"""A helper's VJP runs its lines again; calls whose values that second run does not need
are left out when the function called is effect free (``transform/analysis/effects.py``).

Higher derivatives are where it shows: the VJP of ``grad(f)`` re-runs ``grad(f)``,
whose forward sweep calls ``vjp_f`` only for a value the VJP of ``vjp_f`` computes
itself. Kept, such calls make the ``n``-th derivative's code grow exponentially."""

from __future__ import annotations

import gast
import numpy as np
import pytest

import numbax as nx
from numbax.transform.cleanup import effect_free
from numbax.transform.normalize import normalize
from numbax.transform.source import read_function
from tests.helpers.fd import numeric_jacobian


def tanh(x):
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def sum_tanh(x):
    return np.sum(tanh(x))


def summed(derivative):
    def total(x):
        return np.sum(derivative(x))

    return total


def third_derivative():
    return nx.grad(summed(nx.grad(summed(nx.grad(sum_tanh)))))


def _texts(transformed) -> dict[str, str]:
    """Each generated function's name → its module text, for ``transformed`` and every
    generated function it calls."""
    texts = {}
    for generated in transformed.generated().with_callees():
        texts[generated.function.__name__] = generated.text
    return texts


def _calls(text: str) -> list[str]:
    return [
        node.func.id
        for node in gast.walk(gast.parse(text))
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
    ]


def test_the_third_derivative_calls_each_derivative_it_needs_only():
    texts = _texts(third_derivative())
    # the VJP of grad(sum_tanh) runs its primal again: tanh's value is needed (its shape
    # seeds the cotangent), vjp_tanh's is not (vjp_vjp_tanh computes it itself)
    assert _calls(texts["vjp_grad_sum_tanh"]) == ["tanh", "_vjp_vjp_tanh"]
    assert "_vjp_tanh" not in _calls(texts["vjp_vjp_grad_sum_tanh"])
    assert "_vjp_vjp_tanh" not in _calls(texts["vjp_vjp_grad_sum_tanh"])
    assert "_vjp_grad_sum_tanh" not in _calls(texts["vjp_grad_total"])


def test_the_third_derivative_is_right():
    x = np.linspace(-2.0, 2.0, 7)
    second = nx.grad(summed(nx.grad(sum_tanh)))
    numeric = np.diagonal(numeric_jacobian(second, [x], 0))
    np.testing.assert_allclose(third_derivative()(x), numeric, rtol=1e-6, atol=1e-8)
    t = np.tanh(x)  # d3/dx3 tanh = -2 sech^2 (1 - 3 tanh^2)
    np.testing.assert_allclose(third_derivative()(x), -2 * (1 - t**2) * (1 - 3 * t**2))


_seen = []


def writes_its_argument(a):
    a[0] = a[0] * 2.0
    return np.sum(a)


def writes_its_own_array(a):
    out = np.zeros(a.shape)
    out[0] = a[0] * 2.0
    return np.sum(out * a)


def appends_to_a_global(a):
    _seen.append(1)
    return np.sum(a)


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (tanh, True),
        (writes_its_own_array, True),
        (writes_its_argument, False),
        (appends_to_a_global, False),
    ],
)
def test_effect_free_is_proved_conservatively(function, expected):
    source = read_function(function)
    assert effect_free(normalize(source), source) is expected


def test_a_helper_with_effects_is_called_again():
    def helper(a):
        _seen.append(0)
        return np.sin(a)

    def f(x):
        return np.sum(helper(x))

    second = nx.grad(summed(nx.grad(f)))
    texts = _texts(second)
    vjp_of_grad = next(t for name, t in texts.items() if name.startswith("vjp_grad_f"))
    assert "_vjp_helper" in _calls(vjp_of_grad)  # kept: the helper may not be skipped
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(second(x), -np.sin(x))
