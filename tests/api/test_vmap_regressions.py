"""vmap of pytrees and of derivatives, interpreted and under nx.jit, where it once
crashed or lost the caller's structure."""

import os
import subprocess
import sys

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian
from tests.helpers.trees import assert_tree_close


def affine(d, y):
    return {"s": d["a"] * y, "t": (d["b"] + y, y)}


def _per_example(fun, d, y, shared=()):
    """The examples one by one: the reference for ``vmap``."""
    outs = [fun({k: v if k in shared else v[i] for k, v in d.items()}, y[i]) for i in range(len(y))]
    return nx.tree_util.tree_map(lambda *leaves: np.stack(leaves), *outs)


IN_AXES = [0, (0, 0), ({"a": 0, "b": 0}, 0)]


@pytest.mark.parametrize("method", ["loop", None])
@pytest.mark.parametrize("in_axes", IN_AXES, ids=["int", "tuple", "dict"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_dict_argument_and_dict_result(in_axes, method, jit):
    d, y = {"a": np.arange(3.0), "b": np.arange(3.0) * 10}, np.ones(3)
    batched = nx.vmap(affine, in_axes=in_axes, method=method)
    batched = nx.jit(batched) if jit else batched
    for _ in range(2):
        assert_tree_close(batched(d, y), _per_example(affine, d, y), rtol=1e-12, atol=0)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_dict_in_axes_with_an_unmapped_key(jit):
    d, y = {"a": np.arange(3.0), "b": np.array([2.0, -1.0])}, np.ones(3)

    def f(d, y):
        return d["a"] * y + np.sum(d["b"])

    batched = nx.vmap(f, in_axes=({"a": 0, "b": None}, 0))
    batched = nx.jit(batched) if jit else batched
    assert_tree_close(batched(d, y), _per_example(f, d, y, shared=("b",)), rtol=1e-12, atol=0)


def weighted(d, y):
    return np.sum(d["w x"] * y) + d["_b"]


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_vmap_of_grad_with_dict_in_axes(jit):
    d = {"_b": np.arange(3.0), "w x": np.arange(6.0).reshape(3, 2)}
    y = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    grads = nx.vmap(nx.grad(weighted), in_axes=({"w x": 0, "_b": 0}, 0))
    grads = nx.jit(grads) if jit else grads
    got = grads(d, y)
    assert set(got) == {"w x", "_b"}
    np.testing.assert_allclose(got["w x"], y, rtol=1e-12)
    np.testing.assert_allclose(got["_b"], np.ones(3))


def loss(w, x, y):
    return np.sum((w * x - y) ** 2)


def test_jit_vmap_grad_with_argnums_tuple_returns_a_tuple():
    rng = np.random.default_rng(0)
    w, xs, ys = rng.normal(size=3), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    per_example = nx.vmap(nx.grad(loss, argnums=(0, 1)), in_axes=(None, 0, 0))
    eager, jitted = per_example(w, xs, ys), nx.jit(per_example)(w, xs, ys)
    for got in (eager, jitted):
        assert isinstance(got, tuple) and len(got) == 2
        assert got[0].shape == got[1].shape == (4, 3)
        for i in range(4):
            for k in (0, 1):
                want = numeric_jacobian(loss, (w, xs[i], ys[i]), k)
                np.testing.assert_allclose(got[k][i], want, rtol=1e-6, atol=1e-8)


def sin_times_reversed(x):
    return np.sin(x) * x[::-1]


def test_vmap_of_jit_of_jacfwd():
    xs = np.random.default_rng(1).normal(size=(4, 3))
    jacobians = nx.vmap(nx.jit(nx.jacfwd(sin_times_reversed)))(xs)
    assert jacobians.shape == (4, 3, 3)
    for i in range(4):
        want = numeric_jacobian(sin_times_reversed, (xs[i],), 0)
        np.testing.assert_allclose(jacobians[i], want, rtol=1e-6, atol=1e-8)


_EDITED = """
import os
import subprocess
import sys

import numpy as np
import numbax as nx

def scaled(x):
    return np.sin(x) * {factor}

print(nx.jit(nx.vmap(scaled, method="loop"))(np.array([0.5, 1.0])).tolist())
"""


def test_compiled_loop_follows_an_edited_function_across_processes(tmp_path):
    """The compiled loop's machine code on disk calls the function's compiled version;
    once the function is edited, a new process must not load the loop that calls the
    old one."""
    script = tmp_path / "edited.py"
    env = {**os.environ, "NUMBAX_CACHE_DIR": str(tmp_path / "cache")}
    for factor in (2.0, 3.0, 3.0):
        script.write_text(_EDITED.format(factor=factor))
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        np.testing.assert_allclose(eval(out.stdout), np.sin([0.5, 1.0]) * factor, rtol=1e-15)


def _squared_sum_of(inner):
    def loss(x):
        return np.sum(inner(x) ** 2)

    return loss


def _twice(x):
    return x * 2.0


def _thrice(x):
    return x * 3.0


@pytest.mark.parametrize("method", [None, "loop"])
def test_closures_of_one_factory_are_told_apart(method):
    """Two closures of one factory share code, name and line; what each captured tells
    their generated modules apart (the second once got the first's gradient)."""
    x = np.ones((2, 3))
    for inner, slope in ((_twice, 2.0), (_thrice, 3.0)):
        loss = _squared_sum_of(inner)
        got = nx.vmap(nx.grad(loss), method=method)(x)
        np.testing.assert_allclose(got, np.full((2, 3), 2.0 * slope * slope))


def test_closures_of_one_factory_are_told_apart_under_jit():
    x = np.ones((2, 3))
    for inner, slope in ((_twice, 2.0), (_thrice, 3.0)):
        got = nx.jit(nx.vmap(nx.grad(_squared_sum_of(inner)), method="loop"))(x)
        np.testing.assert_allclose(got, np.full((2, 3), 2.0 * slope * slope))


def _halve_until_small(x):
    """Per-example control flow: batched by vmap's loop."""
    while np.sum(x * x) > 1.0:
        x = 0.5 * x
    return x


def test_the_loop_method_refuses_an_empty_batch_in_both_modes():
    """The loop runs the first example to allocate the batch of outputs. An empty batch
    has none: a clear error, interpreted and under jit, where the first example would be
    read out of bounds (Numba does not check indices)."""
    empty = np.zeros((0, 3))
    np.testing.assert_allclose(
        nx.vmap(_halve_until_small, method="loop")(np.full((2, 3), 4.0)),
        np.full((2, 3), 0.5),
    )
    for batched in (
        nx.vmap(_halve_until_small, method="loop"),
        nx.jit(nx.vmap(_halve_until_small, method="loop")),
    ):
        with pytest.raises(ValueError, match="loop method cannot batch an empty axis"):
            batched(empty)


def _doubled(x):
    return x * 2.0, np.sum(x)


@pytest.mark.parametrize("mode", ["interpreted", "jit"])
@pytest.mark.parametrize(
    "options",
    [
        {"out_axes": 2},
        {"out_axes": -3},
        {"out_axes": (0, 1)},  # the sum's batch has rank 1
        {"out_axes": 2, "method": "loop"},
        {"in_axes": 2},
        {"in_axes": (-3,)},
        {"in_axes": 2, "method": "loop"},
    ],
    ids=str,
)
def test_an_axis_out_of_range_raises_instead_of_wrapping(options, mode):
    """As JAX: a ValueError, not the axis taken modulo the rank."""
    mapped = nx.vmap(_doubled, **options)
    with pytest.raises(ValueError, match=r"along axis -?\d, which implies that its rank"):
        (nx.jit(mapped) if mode == "jit" else mapped)(np.ones((3, 4)))


def test_axes_in_range_still_move_the_batch_axis():
    for mode in (nx.jit, lambda f: f):
        doubled, sums = mode(nx.vmap(_doubled, in_axes=-1, out_axes=(-1, 0)))(np.ones((3, 4)))
        assert (doubled.shape, sums.shape) == ((3, 4), (4,))


def sums_a_list_per_row(x, s):
    """Each row's derivative is read from a list of per-column tangents (jacfwd batches
    the tangents: the list holds batches)."""
    rows = np.zeros_like(x)
    for i in range(3):
        terms = []
        for k in range(3):
            terms.append((x - x[k])[1] * s)
        total = 0.0
        for k in range(3):
            total = total + terms[k] * 1.5
        rows[i] += np.abs((1.0 + total * total) ** 0.5) + total
    return np.sum(rows)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_jacfwd_through_a_list_of_batched_tangents(mode):
    x, s = np.array([0.0237, 0.0337, 0.0137]), 0.7
    jacobian = nx.jacfwd(sums_a_list_per_row, argnums=(0, 1))
    got = (nx.jit(jacobian) if mode == "jit" else jacobian)(x, s)
    for i in (0, 1):
        want = numeric_jacobian(sums_a_list_per_row, (x, s), i)
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-9)


WEIGHTS = [np.linspace(1.0, 2.0, 4), np.ones(3)]  # a global list of arrays


def weighted_sum(x):
    return np.sum(x * WEIGHTS[0])


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_vmap_of_a_function_reading_a_global_list_of_arrays(mode):
    """An element of a global list read as a tuple's (it crashed the vectorizer, which
    took the list for an array whose rank is a tuple)."""
    batched = nx.vmap(weighted_sum)
    xs = np.arange(8.0).reshape(2, 4)
    got = (nx.jit(batched) if mode == "jit" else batched)(xs)
    np.testing.assert_allclose(got, [weighted_sum(row) for row in xs])
