"""Reverse (and forward) mode over lists, tuples, dicts and nested pytrees of
parameters: helpers that take the whole tree, loops over a list of layers, lists built
by ``append``, dict keys that are not identifiers, branches that index a parameter.
Every gradient is checked against central differences, interpreted and under
``nx.jit``."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import numbax as nx
from numbax import tree_util
from tests.autodiff.fd import EPS


def numeric_grad(f, args: tuple, argnum: int) -> Any:
    """d f(*args) / d args[argnum] for scalar ``f``, leaf by leaf of a pytree argument,
    by central differences."""
    leaves, treedef = tree_util.tree_flatten(args[argnum])

    def at(new_leaves: list) -> float:
        changed = list(args)
        changed[argnum] = tree_util.tree_unflatten(treedef, new_leaves)
        return float(f(*changed))

    grads = []
    for k, leaf in enumerate(leaves):
        leaf = np.asarray(leaf, dtype=np.float64)
        g = np.zeros(leaf.shape)
        for i in np.ndindex(leaf.shape):
            step = np.zeros(leaf.shape)
            step[i] = EPS
            plus, minus = list(leaves), list(leaves)
            plus[k], minus[k] = leaf + step, leaf - step
            g[i] = (at(plus) - at(minus)) / (2 * EPS)
        grads.append(g if leaf.ndim else float(g))
    return tree_util.tree_unflatten(treedef, grads)


def assert_tree_close(got: Any, want: Any, label: str) -> None:
    got_leaves, got_def = tree_util.tree_flatten(got)
    want_leaves, want_def = tree_util.tree_flatten(want)
    assert got_def == want_def, f"{label}: structure {got_def}, expected {want_def}"
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        assert np.shape(g) == np.shape(w), f"{label}, leaf {i}: shape {np.shape(g)}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{label}, leaf {i}")


def check_grad(f, *args: Any, argnum: int = 0, jit: bool = True) -> None:
    """grad of ``f`` w.r.t. ``args[argnum]`` (any pytree) agrees with central
    differences, interpreted and (``jit``) under ``nx.jit``, in the argument's
    structure."""
    want = numeric_grad(f, args, argnum)
    gradient = nx.grad(f, argnums=argnum)
    assert_tree_close(gradient(*args), want, f"grad of {f.__name__}, interpreted")
    if jit:
        got = nx.jit(gradient)(*args)
        # a list comes back from jit as a tuple (a documented limitation of jit)
        assert_tree_close(got, _lists_as_tuples(want), f"grad of {f.__name__}, under jit")


def _lists_as_tuples(tree: Any) -> Any:
    if isinstance(tree, list | tuple) and not hasattr(tree, "_fields"):
        return tuple(_lists_as_tuples(t) for t in tree)
    if isinstance(tree, dict):
        return {k: _lists_as_tuples(v) for k, v in tree.items()}
    return tree


# -- helpers that take the whole tree ----------------------------------------------------


def first_squared(ps):
    return np.sum(ps[0] ** 2)


def second_summed(ps):
    return np.sum(np.sin(ps[1]))


def two_helpers(ps):
    return first_squared(ps) + second_summed(ps)


def test_helpers_on_a_list():
    check_grad(two_helpers, [np.array([0.5, -1.0]), np.array([0.1, 0.2, 0.3])])


def test_helpers_on_a_tuple():
    check_grad(two_helpers, (np.array([0.5, -1.0]), np.array([0.1, 0.2, 0.3])))


def keyed_a(ps):
    return np.sum(ps["a"] ** 2)


def keyed_b(ps):
    return np.sum(ps["b"] * ps["c"][0])


def keyed_helpers(ps):
    return keyed_a(ps) + keyed_b(ps) + keyed_a(ps)


def test_helpers_on_a_nested_dict():
    ps = {"a": np.array([0.5, -1.0]), "b": np.array([0.1, 0.2]), "c": (1.5, np.ones(1))}
    check_grad(keyed_helpers, ps)


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def layer_w(layer):
    return np.sum(layer.w**2)


def layer_both(layer):
    return layer_w(layer) * np.sum(layer.b)


def test_helpers_on_a_named_tuple():
    check_grad(layer_both, Layer(np.array([0.5, -1.0]), np.array([0.1, 0.3])))
