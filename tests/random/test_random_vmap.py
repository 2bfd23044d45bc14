"""A batch of keys gives a batch of samples under ``vmap``: each row is what its key
gives alone, interpreted and under ``jit``, and JAX's numbers where JAX is installed."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.jax_x64 import jax_x64


@pytest.fixture(scope="module")
def keys():
    """Four keys (made by the compiled threefry kernels: at the first test that needs
    them, not at collection)."""
    return nx.random.split(nx.random.key(0), 4)


def normal_row(key):
    return nx.random.normal(key, (3,))


def uniform_from(key, low):
    return nx.random.uniform(key, (2,), minval=low, maxval=low + 1.0)


def test_each_row_is_its_key_alone(keys):
    want = np.stack([normal_row(k) for k in keys])
    np.testing.assert_array_equal(nx.vmap(normal_row)(keys), want)
    lows = np.arange(4.0)
    want = np.stack([uniform_from(k, lo) for k, lo in zip(keys, lows, strict=True)])
    np.testing.assert_array_equal(nx.vmap(uniform_from)(keys, lows), want)


def test_under_jit(keys):
    want = np.stack([normal_row(k) for k in keys])
    np.testing.assert_array_equal(nx.jit(nx.vmap(normal_row))(keys), want)


def test_same_numbers_as_jax(keys):
    with jax_x64() as jax:
        _compare_with_jax(jax, keys)


def _compare_with_jax(jax, keys):
    jax_keys = jax.random.split(jax.random.PRNGKey(0), 4)
    want = jax.vmap(lambda k: jax.random.normal(k, (3,), dtype=np.float64))(jax_keys)
    np.testing.assert_array_equal(nx.vmap(normal_row)(keys), np.asarray(want))
