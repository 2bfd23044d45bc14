"""Programs right when interpreted are right under ``nx.jit`` too: a ``vmap`` of a function
with a default (the default is not mapped, though compiled code passes it), and the
gradient of boolean-mask indexing. Values are compared with NumPy, derivatives with
central differences (float64), eager and compiled alike."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.autodiff.fd import numeric_jacobian

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 3.0, 1.0], [0.1, 0.2, 0.3]])


# -- vmap of a function with a default --------------------------------------------------
def scaled_sum(x, scale=2.0):
    return np.sum(np.sin(x)) * scale


def sum_of_batch(x):
    return np.sum(nx.vmap(scaled_sum)(x))


@pytest.fixture(scope="module")
def jit_vmap():
    return nx.jit(nx.vmap(scaled_sum))


def test_jit_vmap_leaves_a_default_unmapped(jit_vmap):
    want = np.array([scaled_sum(row) for row in X])
    np.testing.assert_allclose(nx.vmap(scaled_sum)(X), want)
    np.testing.assert_allclose(jit_vmap(X), want)
    np.testing.assert_allclose(jit_vmap(X), want)  # the second call: the fast path


def test_jit_vmap_maps_a_keyword_and_refuses_a_mapped_scalar(jit_vmap):
    scales = np.array([1.0, 2.0, 3.0, 4.0])
    want = np.array([scaled_sum(row, s) for row, s in zip(X, scales, strict=True)])
    np.testing.assert_allclose(jit_vmap(X, scale=scales), want)
    with pytest.raises(ValueError, match="axis 0"):  # as JAX: a given scalar is mapped
        jit_vmap(X, 3.0)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_grad_of_a_vmap_with_a_default_inside(mode):
    g = nx.grad(sum_of_batch)
    g = nx.jit(g) if mode == "jit" else g
    want = numeric_jacobian(sum_of_batch, (X,), 0)
    np.testing.assert_allclose(g(X), want, rtol=1e-6, atol=1e-8)


# -- gradient of boolean-mask indexing ---------------------------------------------------
def masked_squares(x):
    return np.sum(x[x > 0] ** 2)


def masked_rows(m):
    return np.sum(np.sin(m[m[:, 0] > 0, 1:]))


def test_grad_of_a_boolean_mask():
    x = X[0].copy()
    want = numeric_jacobian(masked_squares, (x,), 0)
    for g in (nx.grad(masked_squares), nx.jit(nx.grad(masked_squares))):
        np.testing.assert_allclose(g(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(nx.jit(masked_squares)(x), masked_squares(x))


def test_grad_of_a_boolean_mask_of_rows_beside_a_slice():
    want = numeric_jacobian(masked_rows, (X,), 0)
    for g in (nx.grad(masked_rows), nx.jit(nx.grad(masked_rows))):
        np.testing.assert_allclose(g(X), want, rtol=1e-6, atol=1e-8)


# -- a list of arrays of different ranks as the result -----------------------------------
def ranked_list(x):
    return [np.sum(x), x * 2.0, np.outer(x, x)]


def nested_lists(x):
    return [x, (np.sum(x), [x * 2.0, np.outer(x, x)])]


def _assert_same_tree(got, want):
    """Same containers (a list stays a list), same values at the leaves."""
    if isinstance(want, (list, tuple, dict)):
        assert type(got) is type(want), f"{type(got).__name__}, expected {type(want).__name__}"
        assert len(got) == len(want)
        if isinstance(want, dict):
            assert got.keys() == want.keys()
            got, want = list(got.values()), list(want.values())
        for g, w in zip(got, want, strict=True):
            _assert_same_tree(g, w)
    else:
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("fun", [ranked_list, nested_lists])
def test_jit_returns_a_list_of_arrays_of_different_ranks(fun):
    x = X[1].copy()
    jitted = nx.jit(fun)
    _assert_same_tree(jitted(x), fun(x))
    _assert_same_tree(jitted(x), fun(x))  # the second call: the fast path


def test_vmap_of_a_list_result_under_jit():
    want = nx.vmap(ranked_list)(X)
    _assert_same_tree(nx.jit(nx.vmap(ranked_list))(X), want)
    np.testing.assert_allclose(want[2][1], np.outer(X[1], X[1]))
