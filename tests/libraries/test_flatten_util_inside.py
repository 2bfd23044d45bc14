"""ravel_pytree called inside a transformed function: its flat vector and its unravel carry
derivatives (checked against central differences), batch like a loop over examples, and
compile; uses numbax cannot read are refused naming the line."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import numbax as nx
from numbax.flatten_util import ravel_pytree
from tests.helpers.fd import numeric_jacobian

TREE = {
    "w": np.linspace(-1.0, 1.0, 6).reshape(2, 3),
    "b": np.array([0.5, -1.0]),
    "layers": [0.7, (np.array([0.3, -0.2]), None)],
}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-7}


def loss(p):
    hidden = np.tanh(p["w"].T @ p["b"])
    return np.sum(hidden**2) * p["layers"][0] + np.sum(p["layers"][1][0] * p["b"])


def l2_penalty(params):
    """autograd's neural-net example's penalty (autograd's flatten is ravel_pytree)."""
    flattened, _ = ravel_pytree(params)
    return np.dot(flattened, flattened)


def sine_of_flat(params):
    return np.sum(np.sin(ravel_pytree(params)[0]) ** 2)


def loss_of_unravel(params):
    flat, unravel = ravel_pytree(params)
    return loss(unravel(np.tanh(flat) * 1.5)) + 0.25 * np.dot(flat, flat)


FUNCTIONS = [l2_penalty, sine_of_flat, loss_of_unravel]


def on_vector(f):
    """``f`` as a function of TREE's flat vector (unravel run outside numbax)."""
    unravel = ravel_pytree(TREE)[1]
    return lambda v: f(unravel(v))


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_derivatives_match_finite_differences(f) -> None:
    flat = ravel_pytree(TREE)[0]
    want = numeric_jacobian(on_vector(f), [flat], 0)
    for transformation in (nx.grad, nx.jacfwd, nx.jacrev):
        got = ravel_pytree(transformation(f)(TREE))[0]
        np.testing.assert_allclose(got, want, **TOLERANCE, err_msg=transformation.__name__)
    tangent = nx.tree_util.tree_map(lambda leaf: np.cos(leaf) + 0.5, TREE)
    value, derivative = nx.jvp(f, (TREE,), (tangent,))
    assert value == pytest.approx(f(TREE))
    assert derivative == pytest.approx(want @ ravel_pytree(tangent)[0], rel=1e-5)
    value, pullback = nx.vjp(f, TREE)
    np.testing.assert_allclose(ravel_pytree(pullback(2.0))[0], 2 * want, **TOLERANCE)


def test_hessian_through_unravel_inside_and_outside() -> None:
    flat = ravel_pytree(TREE)[0]
    f = on_vector(loss_of_unravel)
    want = numeric_jacobian(nx.grad(f), [flat], 0)
    np.testing.assert_allclose(nx.hessian(f)(flat), want, rtol=1e-5, atol=1e-6)


def test_vmap_matches_a_loop_over_examples() -> None:
    tree = {**TREE, "layers": [0.7, (np.array([0.3, -0.2]),)]}  # vmap takes no None leaf
    scales = np.array([1.0, -0.5, 2.0])
    batch = nx.tree_util.tree_map(lambda leaf: np.multiply.outer(scales, leaf), tree)
    examples = [nx.tree_util.tree_map(lambda leaf, s=s: s * np.asarray(leaf), tree) for s in scales]
    for f in (loss_of_unravel, nx.grad(l2_penalty)):
        got = nx.vmap(f)(batch)
        for k, example in enumerate(examples):
            got_k = nx.tree_util.tree_map(lambda leaf, k=k: leaf[k], got)
            np.testing.assert_allclose(
                ravel_pytree(got_k)[0], ravel_pytree(f(example))[0], rtol=1e-12
            )


class Pair(NamedTuple):
    a: np.ndarray
    b: float


@nx.tree_util.register_pytree_node_class
class Box:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def tree_flatten(self):
        return (self.x, self.y), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def cubes(params):
    flat, unravel = ravel_pytree(params)
    return np.sum(ravel_pytree(unravel(flat**2))[0] * flat)


@pytest.mark.parametrize(
    "tree", [{"p": Pair(np.array([2.0, -1.0]), 3.0)}, Box(np.arange(3.0), 2.0)]
)
def test_named_tuples_and_registered_classes(tree) -> None:
    gradient = nx.grad(cubes)(tree)
    assert nx.tree_util.tree_structure(gradient) == nx.tree_util.tree_structure(tree)
    np.testing.assert_allclose(ravel_pytree(gradient)[0], 3 * ravel_pytree(tree)[0] ** 2)


def returns_unravel(params):
    flat, unravel = ravel_pytree(params)
    return unravel


def keeps_the_pair(params):
    pair = ravel_pytree(params)
    return np.sum(pair[0])


def aliases_ravel(params):
    flatten = ravel_pytree
    return np.sum(flatten(params)[0])


def unravels_too_short(params):
    flat, unravel = ravel_pytree(params)
    return np.sum(unravel(flat[1:])["b"])


@pytest.mark.parametrize(
    ("f", "line", "message"),
    [
        (returns_unravel, 2, r"the unravel function 'unravel' used as a value .*`return unravel`"),
        (keeps_the_pair, 1, r"pair kept whole .*`pair = ravel_pytree\(params\)`"),
        (aliases_ravel, 1, r"ravel_pytree used other than called .*`flatten = ravel_pytree`"),
    ],
)
def test_uses_numbax_cannot_read_are_refused(f, line, message) -> None:
    with pytest.raises(nx.TransformError, match=message) as caught:
        nx.grad(f)(TREE)
    assert caught.value.lineno == f.__code__.co_firstlineno + line


def test_unravel_of_a_vector_of_another_length_raises() -> None:
    with pytest.raises(ValueError, match="as long as the one ravel_pytree returned"):
        nx.grad(unravels_too_short)(TREE)


def compiled_program(params):
    """Both forms of ravel_pytree and unravel in one small program: one compile."""
    flat, unravel = ravel_pytree(params)
    rebuilt = unravel(np.tanh(flat))
    return np.sum(ravel_pytree(rebuilt)[0] * flat) + np.sum(rebuilt["w"]) * rebuilt["layers"][0]


def test_jit_of_grad_matches_interpreted() -> None:
    want = nx.grad(compiled_program)(TREE)
    np.testing.assert_allclose(
        ravel_pytree(want)[0],
        numeric_jacobian(on_vector(compiled_program), [ravel_pytree(TREE)[0]], 0),
        **TOLERANCE,
    )
    got = nx.jit(nx.grad(compiled_program))(TREE)
    np.testing.assert_allclose(ravel_pytree(got)[0], ravel_pytree(want)[0], rtol=1e-12)
