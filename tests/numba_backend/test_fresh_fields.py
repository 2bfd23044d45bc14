"""Under jit, a dict's cotangent is filled in where its entries are still zero
(``numba_backend/loops/fresh_fields.py``): the same gradients as interpreted and as central
differences, with the sum kept wherever an entry may already hold a contribution."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian
from tests.numba_backend.generated_sources import jit_sources


def mlp_loss(params, x, y):
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]
    return np.mean((out - y) ** 2)


def read_twice(params, x):
    first = np.sum(params["w"] * x)
    second = np.sum(params["w"] ** 2)
    return first + second + np.sum(params["b"])


def read_in_a_branch(params, x, c):
    y = params["w"] * x
    if c > 0:
        y = y + params["w"] * 3.0
    return np.sum(np.sin(y) + params["b"])


def read_in_a_loop(params, x):
    total = 0.0
    for i in range(3):
        total = total + np.sum(params["w"] * x * i)
    return total + np.sum(params["b"] * params["b"])


def scalar_entry(params, x):
    return np.sum(params["w"] * x) * params["s"]


def _check(fn, params, *rest):
    gradient = nx.jit(nx.grad(fn))(params, *rest)
    interpreted = nx.grad(fn)(params, *rest)
    assert gradient.keys() == params.keys()
    for key in params:

        def of_entry(value, key=key):
            return fn({**params, key: value}, *rest)

        expected = numeric_jacobian(of_entry, [params[key]], 0)
        np.testing.assert_allclose(gradient[key], expected, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gradient[key], interpreted[key], rtol=1e-12, atol=1e-14)
        assert np.asarray(gradient[key]).dtype == np.asarray(params[key]).dtype
    return gradient


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_each_entry_read_once_is_filled_in(rng, dtype):
    params = {
        "w1": (0.3 * rng.standard_normal((4, 5))).astype(dtype),
        "b1": (0.1 * rng.standard_normal(5)).astype(dtype),
        "w2": (0.3 * rng.standard_normal((5, 2))).astype(dtype),
        "b2": np.zeros(2, dtype),
    }
    x = rng.standard_normal((3, 4)).astype(dtype)
    y = rng.standard_normal((3, 2)).astype(dtype)
    if dtype == np.float64:
        _check(mlp_loss, params, x, y)
    else:
        gradient = nx.jit(nx.grad(mlp_loss))(params, x, y)
        interpreted = nx.grad(mlp_loss)(params, x, y)
        for key in params:
            np.testing.assert_allclose(gradient[key], interpreted[key], rtol=1e-4, atol=1e-6)
            assert gradient[key].dtype == np.float32
    source = jit_sources("grad_mlp_loss")[-1]
    assert source.count("nxrt.field_filled(") == 4
    assert "nxrt.index_add(" not in source


def test_an_entry_read_twice_is_added_the_second_time(rng):
    params = {"w": rng.standard_normal(4), "b": rng.standard_normal(3)}
    _check(read_twice, params, rng.standard_normal(4))
    source = jit_sources("grad_read_twice")[-1]
    assert source.count("nxrt.field_filled(") == 2  # "w" once and "b"
    assert source.count("nxrt.index_add(") == 1  # "w" again


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_an_entry_read_in_a_branch(rng, c):
    params = {"w": rng.standard_normal(4), "b": rng.standard_normal(4)}
    _check(read_in_a_branch, params, rng.standard_normal(4), c)


def test_an_entry_read_in_a_loop(rng):
    params = {"w": rng.standard_normal(4), "b": rng.standard_normal(2)}
    _check(read_in_a_loop, params, rng.standard_normal(4))


def test_a_scalar_entry_is_added(rng):
    """A scalar leaf's cotangent is no array: ``field_filled`` adds it, as
    ``index_add`` does."""
    params = {"w": rng.standard_normal(3), "s": 1.5}
    gradient = _check(scalar_entry, params, rng.standard_normal(3))
    assert np.ndim(gradient["s"]) == 0
