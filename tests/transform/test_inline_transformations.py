"""Transformations built inside a function being transformed (``nx.vmap(model, (None,
0))(w, xs)`` in a loss), as JAX code writes them: built once from their known
arguments, then differentiated and compiled like any call."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import fd_gradient

RNG = np.random.default_rng(11)
XS = RNG.normal(size=(6, 3))
YS = RNG.normal(size=6)
W = np.array([0.1, -0.2, 0.3])


def model(w, x):
    return np.tanh(np.dot(x, w))


def loss_inline(w):
    return np.sum((nx.vmap(model, (None, 0))(w, XS) - YS) ** 2)


def loss_alias(w):
    batched = nx.vmap(model, in_axes=(None, 0))
    return np.sum((batched(w, XS) - YS) ** 2)


def gradient_norm(w):  # second order: the gradient of per-example gradients
    per_example = nx.vmap(nx.grad(model), (None, 0))(w, XS)
    return np.sum(per_example**2)


def reference(w):
    return np.sum((np.tanh(XS @ w) - YS) ** 2)


def reference_gradient_norm(w):
    t = np.tanh(XS @ w)
    return np.sum(((1 - t**2)[:, None] * XS) ** 2)


@pytest.mark.parametrize(
    "loss, ref",
    [
        (loss_inline, reference),
        (loss_alias, reference),
        (gradient_norm, reference_gradient_norm),
    ],
    ids=["inline", "alias", "vmap of grad"],
)
def test_gradient_of_a_loss_that_builds_a_transformation(loss, ref):
    want = fd_gradient(ref, W)
    np.testing.assert_allclose(loss(W), ref(W), rtol=1e-12)
    np.testing.assert_allclose(nx.grad(loss)(W), want, rtol=1e-6)
    np.testing.assert_allclose(nx.jit(nx.grad(loss))(W), want, rtol=1e-6)
    np.testing.assert_allclose(nx.jit(loss)(W), ref(W), rtol=1e-12)


def test_the_built_object_is_reused():
    first = nx.grad(loss_inline).source
    assert "_vmap_model(w, XS)" in first
    assert nx.grad(loss_inline).source == first


def test_a_transformation_of_local_values_says_what_to_do():
    def loss(w, axes):
        batched = nx.vmap(model, axes)
        return np.sum(batched(w, XS))

    with pytest.raises(nx.TransformError, match="made while it runs"):
        nx.grad(loss)(W, (None, 0))
