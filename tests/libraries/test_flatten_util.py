"""numbax.flatten_util.ravel_pytree: the flat vector, the tree rebuilt, and unravel
differentiated and batched inside a transformed function."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import numbax as nx
from numbax.flatten_util import ravel_pytree
from tests.helpers.fd import numeric_jacobian

PARAMS = {
    "w": np.arange(6.0).reshape(2, 3),
    "b": np.array([0.5, -1.0]),
    "layers": [np.float32(2.0), (np.ones(2, np.float32), None)],
}


def loss(p):
    hidden = np.tanh(p["w"].T @ p["b"])
    return np.sum(hidden**2) * p["layers"][0] + np.sum(p["layers"][1][0] * p["b"])


def test_flat_vector_in_flattening_order_and_common_dtype() -> None:
    flat, _ = ravel_pytree(PARAMS)
    want = np.concatenate([[0.5, -1.0], [2.0], [1.0, 1.0], np.arange(6.0)])
    np.testing.assert_array_equal(flat, want)
    assert flat.dtype == np.float64


def test_unravel_rebuilds_structure_shapes_and_dtypes() -> None:
    flat, unravel = ravel_pytree(PARAMS)
    back = unravel(flat * 2)
    assert nx.tree_util.tree_structure(back) == nx.tree_util.tree_structure(PARAMS)
    pairs = zip(nx.tree_util.tree_leaves(back), nx.tree_util.tree_leaves(PARAMS), strict=True)
    for got, was in pairs:
        assert np.shape(got) == np.shape(was)
        assert np.asarray(got).dtype == np.asarray(was).dtype
        np.testing.assert_allclose(got, np.asarray(was) * 2)


def test_unravel_is_differentiated_and_batched() -> None:
    params = nx.tree_util.tree_map(lambda leaf: np.asarray(leaf, np.float64), PARAMS)
    flat, unravel = ravel_pytree(params)
    flat_loss = lambda v: loss(unravel(v))  # noqa: E731
    want = numeric_jacobian(flat_loss, [flat], 0)
    np.testing.assert_allclose(nx.grad(flat_loss)(flat), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ravel_pytree(nx.grad(loss)(params))[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nx.jacfwd(flat_loss)(flat), want, rtol=1e-5, atol=1e-6)
    batch = np.stack([flat, 0.5 * flat])
    np.testing.assert_allclose(
        nx.vmap(flat_loss)(batch), [flat_loss(batch[0]), flat_loss(batch[1])], rtol=1e-12
    )


class Pair(NamedTuple):
    a: np.ndarray
    b: float


def test_other_node_types_round_trip_eagerly() -> None:
    tree = {"pair": Pair(np.ones((2, 2)), 3.0)}
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(flat, [1, 1, 1, 1, 3])
    back = unravel(flat)
    assert isinstance(back["pair"], Pair)
    np.testing.assert_array_equal(back["pair"].a, np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        unravel(np.zeros(4))


def test_empty_tree_and_single_array() -> None:
    flat, unravel = ravel_pytree({})
    assert flat.shape == (0,)
    assert unravel(flat) == {}
    flat, unravel = ravel_pytree(np.ones((2, 3)))
    assert flat.shape == (6,)
    assert unravel(flat).shape == (2, 3)


def test_against_jax() -> None:
    jax = pytest.importorskip("jax")
    from jax.flatten_util import ravel_pytree as jax_ravel

    tree = {"w": np.arange(6.0).reshape(2, 3), "b": np.array([0.5, -1.0])}
    np.testing.assert_array_equal(ravel_pytree(tree)[0], jax_ravel(tree)[0])
    assert jax is not None
