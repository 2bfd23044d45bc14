"""numbax.example_libraries.optimizers (JAX's init/update/get_params triples over
pytrees, and the step-size schedules) and numbax.misc.optimizers (autograd's loops)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.example_libraries import optimizers
from numbax.misc import optimizers as autograd_optimizers
from tests.helpers.jax_x64 import jax_x64

TARGET = {"w": np.array([3.0, -2.0]), "b": 1.5}


def loss(p):
    return np.sum((p["w"] - np.array([3.0, -2.0])) ** 2) + (p["b"] - 1.5) ** 2


GRAD = nx.grad(loss)
START = {"w": np.zeros(2), "b": 0.0}


def run(opt, steps: int = 400):
    init, update, get_params = opt
    state = init(START)
    for i in range(steps):
        state = update(i, GRAD(get_params(state)), state)
    return get_params(state), state


@pytest.mark.parametrize(
    "opt",
    [
        optimizers.sgd(0.1),
        optimizers.momentum(0.05, mass=0.9),
        optimizers.nesterov(0.05, mass=0.9),
        optimizers.adagrad(0.5),
        optimizers.rmsprop(0.02),
        optimizers.rmsprop_momentum(0.01),
        optimizers.adam(0.1),
        optimizers.adamax(0.1),
        optimizers.sgd(optimizers.exponential_decay(0.2, 100, 0.5)),
        optimizers.sgd(optimizers.inverse_time_decay(0.2, 10, 0.5, staircase=True)),
        optimizers.sgd(optimizers.polynomial_decay(0.2, 100, 0.05)),
        optimizers.sgd(optimizers.piecewise_constant([50, 100], [0.2, 0.1, 0.05])),
    ],
    ids=[
        "sgd",
        "momentum",
        "nesterov",
        "adagrad",
        "rmsprop",
        "rmsprop_momentum",
        "adam",
        "adamax",
        "exponential_decay",
        "inverse_time_decay",
        "polynomial_decay",
        "piecewise_constant",
    ],
)
def test_optimizers_minimize_over_a_pytree(opt) -> None:
    params, state = run(opt)
    np.testing.assert_allclose(params["w"], TARGET["w"], atol=1e-2)
    np.testing.assert_allclose(params["b"], TARGET["b"], atol=1e-2)
    assert isinstance(state, optimizers.OptimizerState)
    leaves = nx.tree_util.tree_leaves(state)  # a pytree of the states' arrays
    assert all(isinstance(leaf, (np.ndarray, np.generic)) for leaf in leaves)


def test_one_adam_step_by_hand() -> None:
    init, update, get_params = optimizers.adam(0.1, b1=0.8, b2=0.9, eps=1e-8)
    x = np.array([1.0, -2.0])
    g = np.array([0.5, 4.0])
    x1 = get_params(update(0, g, init(x)))
    m, v = 0.2 * g, 0.1 * g**2
    np.testing.assert_allclose(x1, x - 0.1 * (m / 0.2) / (np.sqrt(v / 0.1) + 1e-8), rtol=1e-14)


def test_state_unpacks_like_jax_and_structure_mismatch_is_an_error() -> None:
    init, update, _ = optimizers.momentum(0.1, 0.9)
    state = init(START)
    packed, tree, subtrees = state
    assert len(packed) == 2 and len(subtrees) == 2
    assert tree == nx.tree_util.tree_structure(START)
    with pytest.raises(TypeError, match="did not match the parameter tree"):
        update(0, [np.zeros(2)], state)


def test_schedules_and_utilities() -> None:
    assert optimizers.constant(0.3)(1000) == 0.3
    np.testing.assert_allclose(optimizers.exponential_decay(1.0, 10, 0.5)(20), 0.25)
    assert optimizers.inverse_time_decay(1.0, 10, 1.0)(5) == pytest.approx(1 / 1.5)
    assert optimizers.inverse_time_decay(1.0, 10, 1.0, staircase=True)(5) == 1.0
    schedule = optimizers.piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    assert [schedule(i) for i in (0, 10, 11, 20, 21)] == [1.0, 1.0, 0.5, 0.5, 0.1]
    with pytest.raises(ValueError, match="one shorter"):
        optimizers.piecewise_constant([1, 2], [1.0])
    grads = {"a": np.array([3.0]), "b": np.array([4.0])}
    assert optimizers.l2_norm(grads) == pytest.approx(5.0)
    clipped = optimizers.clip_grads(grads, 1.0)
    assert optimizers.l2_norm(clipped) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("optimize", "options"),
    [
        (autograd_optimizers.sgd, {"step_size": 0.1, "num_iters": 500}),
        (autograd_optimizers.rmsprop, {"step_size": 0.01, "num_iters": 800}),
        (autograd_optimizers.adam, {"step_size": 0.1, "num_iters": 500}),
    ],
    ids=["sgd", "rmsprop", "adam"],
)
def test_autograd_style_optimizers(optimize, options) -> None:
    seen = []

    def callback(params, i, g):
        seen.append((i, sorted(params), sorted(g)))

    params = optimize(lambda p, i: GRAD(p), START, callback=callback, **options)
    np.testing.assert_allclose(params["w"], TARGET["w"], atol=1e-2)
    np.testing.assert_allclose(params["b"], TARGET["b"], atol=1e-2)
    assert seen[0] == (0, ["b", "w"], ["b", "w"])
    assert len(seen) == options["num_iters"]


def test_against_jax() -> None:
    """In float64 on both sides: JAX computes in float32 unless ``jax_enable_x64`` is on
    (set here, and restored, rather than left to whichever test ran before)."""
    with jax_x64():
        from jax.example_libraries import optimizers as jax_optimizers

        for name, args in [("adam", (0.1,)), ("momentum", (0.1, 0.9)), ("adagrad", (0.1,))]:
            mine = getattr(optimizers, name)(*args)
            theirs = getattr(jax_optimizers, name)(*args)
            x = np.array([1.0, -2.0])
            a, b = mine.init_fn(x), theirs.init_fn(x)
            for i in range(3):
                g = np.array([0.5, 4.0]) * (i + 1)
                a, b = mine.update_fn(i, g, a), theirs.update_fn(i, g, b)
            got, want = mine.params_fn(a), theirs.params_fn(b)
            assert want.dtype == np.float64, name
            np.testing.assert_allclose(got, want, rtol=1e-12)
