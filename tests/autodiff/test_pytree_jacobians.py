"""jacfwd, jacrev and hessian of functions of pytrees and with pytree outputs, as JAX
gives them: the output's structure holding, at each output leaf, the input's structure,
each leaf shaped ``out_leaf.shape + in_leaf.shape``; checked against central
differences, interpreted and under ``nx.jit``."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_tree_jacobian
from tests.helpers.trees import assert_tree_close


def numeric_tree_hessian(f, args, argnum):
    def gradient(*a):  # of the scalar f, by central differences
        return numeric_tree_jacobian(f, a, argnum, eps=1e-4)

    return numeric_tree_jacobian(gradient, args, argnum, eps=1e-4)


def _of_tuple(f, args, argnums):
    """``f`` as a function of the tuple of its arguments at ``argnums`` (an int: of that
    argument), and that argument: JAX's Jacobian for a tuple ``argnums`` is the one of
    this function, the output's structure holding the tuple at each output leaf."""
    if not isinstance(argnums, tuple):
        return lambda x: f(*args[:argnums], x, *args[argnums + 1 :]), (args[argnums],)

    def of_tuple(xs):
        changed = list(args)
        for k, x in zip(argnums, xs, strict=True):
            changed[k] = x
        return f(*changed)

    return of_tuple, (tuple(args[k] for k in argnums),)


def check(f, *args, argnums=0, modes=("jacfwd", "jacrev"), jit=True):
    """Each mode agrees with central differences, interpreted and compiled; returns the
    interpreted jacfwd (or first mode's) result for structure checks."""
    want = numeric_tree_jacobian(*_of_tuple(f, args, argnums), 0)
    results = []
    for mode in modes:
        derivative = getattr(nx, mode)(f, argnums=argnums)
        got = derivative(*args)
        assert_tree_close(got, want, f"{mode} of {f.__name__}, interpreted", rtol=1e-6, atol=1e-7)
        results.append(got)
        if jit:
            compiled = nx.jit(derivative)(*args)
            assert_tree_close(compiled, want, f"{mode} of {f.__name__}, jit", rtol=1e-6, atol=1e-7)
    return results[0]


# -- functions ------------------------------------------------------------------------


def dict_loss(p):
    return np.sum(p["w"] ** 2) + np.sum(np.sin(p["b"]))


def list_product(p):
    return np.sum(p[0] ** 2) * np.sum(p[1])


def nested(p):
    a, b = p["a"]
    return np.sum(a * b) * p["c"]["s"] + np.sum(np.exp(p["c"]["v"]))


def vector_of_dict(p):
    return p["w"] * np.sum(p["b"] ** 2)


def dict_out(x):
    return {"total": np.sum(x**2), "scaled": np.sin(x) * 2.0}


def tuple_of_leaves_out(p):
    return np.sum(p["w"] * p["b"][0]), p["w"] * p["b"][1]


class Params(NamedTuple):
    w: Any
    b: Any


def named(p):
    return np.tanh(p.w) * p.b


def two_args(p, x):
    return np.sin(p["w"]) * np.sum(x**2) + np.sum(p["b"] * x)


def dict_of_two_args(p, x):
    return {"a": np.sin(p["w"]) * np.sum(x**2), "b": np.sum(p["b"] * x)}


def with_aux(p):
    value = np.sum(p["w"]) * np.sum(p["b"] ** 2)
    return value, {"w_norm": np.sum(p["w"] ** 2)}


P = {"w": np.array([0.3, -0.7]), "b": np.array([0.1, 0.5, -0.2])}


# -- tests ----------------------------------------------------------------------------


def test_dict_input_scalar_output():
    got = check(dict_loss, P)
    assert set(got) == {"w", "b"}
    assert got["w"].shape == (2,) and got["b"].shape == (3,)


def test_list_input():
    got = check(list_product, [np.array([1.0, 2.0]), np.array([0.5, -1.0, 3.0])])
    assert isinstance(got, list) and [g.shape for g in got] == [(2,), (3,)]


def test_nested_input_with_a_scalar_leaf():
    p = {"a": (np.array([0.2, 0.4]), np.array([1.5, -0.5])), "c": {"s": 0.7, "v": np.ones(2)}}
    got = check(nested, p)
    assert isinstance(got["a"], tuple) and got["a"][0].shape == (2,)
    assert np.ndim(got["c"]["s"]) == 0 and got["c"]["v"].shape == (2,)


def test_vector_output_of_dict_input():
    got = check(vector_of_dict, P)
    assert got["w"].shape == (2, 2) and got["b"].shape == (2, 3)


def test_dict_output():
    got = check(dict_out, np.array([0.3, 1.2, -0.4]))
    assert set(got) == {"total", "scaled"}
    assert got["total"].shape == (3,) and got["scaled"].shape == (3, 3)


def test_tuple_output_of_dict_input():
    p = {"w": np.array([0.3, -0.7]), "b": (np.array([0.5, 2.0]), np.array([1.0]))}
    got = check(tuple_of_leaves_out, p)
    assert isinstance(got, tuple) and len(got) == 2
    assert got[0]["w"].shape == (2,) and got[0]["b"][1].shape == (1,)
    assert got[1]["w"].shape == (2, 2) and got[1]["b"][1].shape == (2, 1)


def test_named_tuple_input():
    got = check(named, Params(np.array([0.1, 0.9]), np.array([2.0, -1.0])))
    assert type(got) is Params and got.w.shape == (2, 2)


def test_argnums_tuple():
    got = check(two_args, P, np.array([0.5, 1.5, -1.0]), argnums=(0, 1))
    assert isinstance(got, tuple) and len(got) == 2
    assert got[0]["w"].shape == (2, 2) and got[0]["b"].shape == (2, 3)
    assert got[1].shape == (2, 3)


def test_argnums_tuple_with_dict_output():
    """As in JAX: the output's structure outside, the tuple of arguments inside."""
    got = check(dict_of_two_args, P, np.array([0.5, 1.5, -1.0]), argnums=(0, 1))
    assert set(got) == {"a", "b"} and isinstance(got["a"], tuple) and len(got["a"]) == 2
    assert got["a"][0]["w"].shape == (2, 2) and got["a"][1].shape == (2, 3)
    assert got["b"][0]["b"].shape == (3,) and got["b"][1].shape == (3,)


def test_hessian_with_argnums_tuple():
    x = np.array([0.5, 1.5, -1.0])

    def loss(p, x):
        return np.sum(p["b"] * x**2) + np.sum(np.sin(p["w"]))

    of_tuple, args = _of_tuple(loss, (P, x), (0, 1))
    want = numeric_tree_hessian(of_tuple, args, 0)
    got = nx.hessian(loss, argnums=(0, 1))(P, x)
    assert_tree_close(got, want, "hessian, interpreted")
    assert got[0]["b"][1].shape == (3, 3) and got[1][0]["w"].shape == (3, 2)
    compiled = nx.jit(nx.hessian(loss, argnums=(0, 1)))(P, x)
    assert_tree_close(compiled, want, "hessian, jit")


def test_has_aux_with_dict_input():
    for mode in (nx.jacfwd, nx.jacrev):
        want = numeric_tree_jacobian(lambda p: with_aux(p)[0], (P,), 0)
        for call in (mode(with_aux, has_aux=True), nx.jit(mode(with_aux, has_aux=True))):
            jac, aux = call(P)
            assert_tree_close(jac, want, f"{mode.__name__} with aux", rtol=1e-6, atol=1e-7)
            assert set(aux) == {"w_norm"}
            np.testing.assert_allclose(aux["w_norm"], np.sum(P["w"] ** 2))


def test_hessian_of_dict_input():
    want = numeric_tree_hessian(dict_loss, (P,), 0)
    got = nx.hessian(dict_loss)(P)
    assert_tree_close(got, want, "hessian, interpreted")
    shapes = {k: {j: v.shape for j, v in row.items()} for k, row in got.items()}
    assert shapes == {"w": {"w": (2, 2), "b": (2, 3)}, "b": {"w": (3, 2), "b": (3, 3)}}
    compiled = nx.jit(nx.hessian(dict_loss))(P)
    assert_tree_close(compiled, want, "hessian, jit")


def test_jacrev_of_jacrev_of_dict_input():
    """Reverse mode through the Jacobian helpers themselves (their VJP rules)."""
    want = numeric_tree_hessian(nested_small, (P,), 0)
    twice = nx.jacrev(nx.jacrev(nested_small))
    assert_tree_close(twice(P), want, "jacrev(jacrev), interpreted")
    compiled = nx.jit(twice)(P)
    assert_tree_close(compiled, want, "jacrev(jacrev), jit")


def nested_small(p):
    return np.sum(p["w"] ** 3) * np.sum(np.cos(p["b"]))


def test_structures_match_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def as_numpy(tree):
        return jax.tree_util.tree_map(np.asarray, tree)

    cases = [
        (vector_of_dict, lambda q: q["w"] * jnp.sum(q["b"] ** 2), P),
        (dict_out, lambda x: {"total": jnp.sum(x**2), "scaled": jnp.sin(x) * 2.0}, P["b"]),
    ]
    for ours, theirs, arg in cases:
        for mode in ("jacfwd", "jacrev"):
            want = as_numpy(getattr(jax, mode)(theirs)(arg))
            assert_tree_close(
                getattr(nx, mode)(ours)(arg), want, f"{mode} against JAX", rtol=1e-6, atol=1e-7
            )
    want = as_numpy(jax.hessian(lambda q: jnp.sum(q["w"] ** 2) + jnp.sum(jnp.sin(q["b"])))(P))
    assert_tree_close(nx.hessian(dict_loss)(P), want, "hessian against JAX", rtol=1e-6, atol=1e-7)


# -- jacfwd is one vmap of the JVP over the whole basis ---------------------------------------


def sum_logistic(x):  # a sum of elementwise terms: a diagonal Hessian
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def squared_sum_logistic(x):  # not a sum of elementwise terms: a full Hessian
    s = np.sum(1.0 / (1.0 + np.exp(-x)))
    return s * s


def bins(x):  # a JVP that cannot vectorize (a store at an index x chooses): vmap loops
    y = np.zeros(3)
    for i in range(3):
        y[int(x[i] > 0)] += x[i] * x[i]
    return y


def _column_by_column(f, x):
    """The Jacobian as one JVP per basis vector (the loop method)."""
    basis = np.eye(x.size).reshape((x.size, *x.shape))
    columns = [nx.jvp(f, (x,), (e,))[1] for e in basis]
    return np.moveaxis(np.asarray(columns), 0, -1)


def test_hessian_runs_the_jvp_on_the_whole_basis_at_once():
    x = np.linspace(-1.5, 2.0, 6)
    hessian = nx.hessian(squared_sum_logistic)
    source = nx.source(hessian)
    assert "_d_x = nxrt.jac_basis_all(x)\n" in source
    assert "for _column" not in source  # no loop over the columns
    want = numeric_tree_hessian(squared_sum_logistic, (x,), 0)
    looped = _column_by_column(nx.grad(squared_sum_logistic), x)
    compiled = nx.jit(hessian)
    for label, got in (("eager", hessian(x)), ("jit", compiled(x))):
        assert got.shape == (6, 6), label
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=label)
        np.testing.assert_allclose(got, looped, rtol=1e-12, atol=1e-15, err_msg=label)
    batched = hessian.generated().function.__globals__["_vmap_jvp_jacrev_squared_sum_logistic"]
    assert "vectorized: the whole batch at once" in batched.source  # the primal runs once
    assert "nxrt.batch_repeat(_d_jac, _size)" in batched.source
    shown = nx.source(hessian)  # every function it runs, the vmapped JVPs included
    for name in ["jacfwd_jacrev_", "vmap_jvp_jacrev_", "vmap_jvp_vjp_"]:
        assert f"\ndef {name}squared_sum_logistic(" in shown, name
    assert batched.source in shown
    for name in ["jacrev_", "vjp_"]:  # derived from, not run: the gradient runs once
        assert f"\ndef {name}squared_sum_logistic(" not in shown, name
    assert " = _jacrev_squared_sum_logistic(x)" not in hessian.generated().text
    shown = nx.source(compiled)  # under jit too: its own specialization, then the rest
    assert shown.startswith("# jit of jacfwd_jacrev_squared_sum_logistic")
    for name in ["vmap_jvp_jacrev_", "vmap_jvp_vjp_"]:
        assert f"\ndef {name}squared_sum_logistic(" in shown, name


def test_before_a_call_a_jacobian_shows_the_loop_and_the_jvp_it_calls():
    """``vmap`` picks its method at the call: before one, the JVP's loop is shown, with
    the JVP it calls and what that calls in turn (a function of its own: the generated
    code, and what its ``vmap`` last ran, is shared in the process)."""

    def sum_cubes(x):  # times the sum: not separable, the basis is mapped
        return np.sum(x * x * x) * np.sum(x)

    shown = nx.source(nx.hessian(sum_cubes))
    assert "one call per example, in a loop" in shown
    for name in ["jacfwd_jacrev_", "vmap_jvp_jacrev_", "jvp_jacrev_", "jvp_vjp_"]:
        assert f"\ndef {name}sum_cubes(" in shown, name
    assert "\ndef jacrev_sum_cubes(" not in shown


def test_a_compiled_hessian_shows_the_vectorized_jvp_it_runs():
    """Only compiled: ``nx.show`` shows the batched JVP the compiled code calls, not the
    loop it would fall back to."""

    def softplus_sum(x):  # squared: not separable, the JVP runs over the basis
        s = np.sum(np.log1p(np.exp(x)))
        return s * s

    compiled = nx.jit(nx.hessian(softplus_sum), cache=False)
    x = np.linspace(-1.0, 1.0, 4)
    g = 1.0 / (1.0 + np.exp(-x))
    s = np.sum(np.log1p(np.exp(x)))
    want = 2.0 * (np.outer(g, g) + s * np.diag(g * (1.0 - g)))
    np.testing.assert_allclose(compiled(x), want, rtol=1e-12, atol=1e-15)
    shown = nx.source(compiled)
    assert "# vmap of jvp_jacrev_softplus_sum" in shown
    assert "one call per example, in a loop" not in shown
    assert "vectorized: the whole batch at once" in shown


def test_jacfwd_of_a_jvp_that_loops():
    x = np.array([0.3, -1.2, 2.0])
    jacobian = nx.jacfwd(bins)
    want = numeric_tree_jacobian(bins, (x,), 0)
    np.testing.assert_allclose(jacobian(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jacobian(x), _column_by_column(bins, x), rtol=1e-12)
    batched = jacobian.generated().function.__globals__["_vmap_jvp_bins"]
    assert "one call per example" in batched.source


def test_jacfwd_of_scalars_and_0d_arrays():
    for x in (1.5, np.array(1.5)):
        got = nx.jacfwd(sum_logistic)(x)
        s = 1.0 / (1.0 + np.exp(-1.5))
        assert np.shape(got) == ()
        np.testing.assert_allclose(got, s * (1.0 - s), rtol=1e-12)


_HESSIAN_SCRIPT = """
import numpy as np
import numbax as nx

def sum_logistic(x):  # a diagonal Hessian
    return np.sum(1.0 / (1.0 + np.exp(-x)))

def squared_sum_logistic(x):  # a full one: the JVP mapped over the basis
    s = np.sum(1.0 / (1.0 + np.exp(-x)))
    return s * s

for f in (sum_logistic, squared_sum_logistic):
    print(nx.jit(nx.hessian(f))(np.linspace(-1.0, 1.0, 4)).tolist())
"""


def test_a_later_process_loads_the_compiled_hessian_from_the_disk_cache(tmp_path):
    """The vectorized JVP that jacfwd calls is compiled per call for the arguments'
    ranks; a new process must find all of it on disk and compile nothing."""
    import os
    import subprocess
    import sys

    script = tmp_path / "hessian.py"
    script.write_text(_HESSIAN_SCRIPT)
    env = {
        **os.environ,
        "NUMBAX_CACHE_DIR": str(tmp_path / "cache"),
        "NUMBAX_COMPILE_LOG": "1",
        "NUMBAX_COMPILE_LOG_SECONDS": "0",
    }
    runs = [
        subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr[-3000:]
    assert runs[0].stdout == runs[1].stdout
    assert "numbax: compiled" in runs[0].stderr
    assert "numbax: compiled" not in runs[1].stderr, runs[1].stderr[-3000:]


def _selection(name):
    def total(x, y):
        if name == "where":
            return np.sum(np.where(x > 0, x * y, y**3))
        return np.sum(np.clip(x * x, y, 0.5) * y)

    return total


def test_jacobians_of_closures_of_one_factory_are_their_own():
    """Closures of one factory share their derivatives' text and differ in what they
    read: the vmapped JVP of one must not serve the other."""
    x, y = np.array([0.5, -0.6, 0.2]), np.array([0.1, 0.2, 0.15])
    for name in ("clip", "where", "clip"):
        grad = nx.grad(_selection(name), argnums=(0, 1))
        for k in (0, 1):
            forward, reverse = nx.jacfwd(grad, argnums=k)(x, y), nx.jacrev(grad, argnums=k)(x, y)
            for got, want in zip(forward, reverse, strict=True):
                np.testing.assert_allclose(got, want, err_msg=f"{name}, argument {k}")


def test_jacobians_of_empty_inputs_are_empty_as_in_jax():
    """A Jacobian with no columns (or rows) is ``(0, 0)`` as in JAX, and an empty leaf
    of a pytree gets empty blocks beside the others: the batch of no basis vectors
    ravels to a ``(0, size)`` matrix."""

    def sines(x):
        return np.sin(x) * 2.0

    empty = np.zeros(0)
    for transformation in (nx.jacfwd(sines), nx.jacrev(sines), nx.hessian(sum_logistic)):
        assert transformation(empty).shape == (0, 0), transformation
    assert nx.jit(nx.hessian(sum_logistic))(empty).shape == (0, 0)

    def on_dict(p):
        return np.sum(np.sin(p["a"])) + np.sum(p["b"] ** 2)

    got = nx.hessian(on_dict)({"a": empty, "b": np.array([1.0, 2.0])})
    assert {k: {j: v.shape for j, v in row.items()} for k, row in got.items()} == {
        "a": {"a": (0, 0), "b": (0, 2)},
        "b": {"a": (2, 0), "b": (2, 2)},
    }
    np.testing.assert_array_equal(got["b"]["b"], 2.0 * np.eye(2))
