"""Pytree arguments and results under nx.jit: dicts, NamedTuples, lists, registered classes."""

from typing import NamedTuple

import numpy as np
import pytest

import numbax as nx

rng = np.random.default_rng(0)
W, B, X = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 3))


class Params(NamedTuple):
    w: np.ndarray
    b: np.ndarray


@nx.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def tree_flatten(self):
        return (self.w, self.b), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def _affine(params, x):
    return np.sum((x @ params["w"] + params["b"]) ** 2)


def test_dict_argument_read_by_key():
    expected = _affine({"w": W, "b": B}, X)
    np.testing.assert_allclose(nx.jit(_affine)({"w": W, "b": B}, X), expected, rtol=1e-13)


def test_namedtuple_and_registered_class_arguments():
    @nx.jit
    def affine(p, x):
        return x @ p.w + p.b

    np.testing.assert_allclose(affine(Params(W, B), X), X @ W + B, rtol=1e-13)
    np.testing.assert_allclose(affine(Linear(W, B), X), X @ W + B, rtol=1e-13)


def test_dict_result_comes_back_as_dict():
    @nx.jit
    def step(params, lr):
        return {"w": params["w"] - lr, "b": params["b"] * 2.0}

    out = step({"w": W, "b": B}, 0.5)
    assert isinstance(out, dict) and set(out) == {"w", "b"}
    np.testing.assert_allclose(out["w"], W - 0.5)
    np.testing.assert_allclose(out["b"], B * 2.0)


def test_registered_class_result_is_rebuilt():
    @nx.jit
    def scale(layer, s):
        return layer

    out = scale(Linear(W, B), 2.0)
    assert isinstance(out, Linear)
    np.testing.assert_array_equal(out.w, W)


def test_list_of_layers_iterated_in_a_loop():
    layers = [(rng.standard_normal((3, 3)), np.zeros(3)) for _ in range(3)]

    def mlp(layers, x):
        for w, b in layers:
            x = np.tanh(x @ w + b)
        return x

    np.testing.assert_allclose(nx.jit(mlp)(layers, X), mlp(layers, X), rtol=1e-13)


def test_none_and_nested_structures():
    @nx.jit
    def pick(tree, x):
        return x * tree["inner"][1]["s"]

    tree = {"inner": (None, {"s": 3.0}), "unused": None}
    assert pick(tree, 2.0) == pytest.approx(6.0)


def test_unflattenable_object_gets_a_clear_error():
    class Opaque:
        pass

    with pytest.raises(nx.CompileError, match="argument 'obj'"):
        nx.jit(lambda obj, x: x + 1.0)(Opaque(), 1.0)
