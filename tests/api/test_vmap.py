"""``vmap``: JAX's in_axes/out_axes semantics and errors, control flow on mapped values,
and composition with jit and the derivatives (interpreted and compiled)."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.jax_x64 import jax_x64

RNG = np.random.default_rng(0)
MAT = RNG.normal(size=(15, 10))


def apply_matrix(v):
    return MAT @ v


def scale_add(x, w, b):
    return x * w + b


def loss(w, x, y):
    p = 1.0 / (1.0 + np.exp(-(x @ w)))
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


W = np.array([0.1, -0.2, 0.3])
X = RNG.normal(size=(6, 3))
Y = (X[:, 0] > 0).astype(float)
batched_loss = nx.vmap(loss, in_axes=(None, 0, 0))


def mean_loss(w):
    return np.mean(batched_loss(w, X, Y))


def per_example(f, *args, axes):
    """The loop vmap must equal: f on each example, stacked on axis 0."""
    n = next(a.shape[ax] for a, ax in zip(args, axes, strict=True) if ax is not None)
    outs = [
        f(*(a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes, strict=True)))
        for i in range(n)
    ]
    return np.stack(outs)


# -- in_axes and out_axes -----------------------------------------------------------------


def test_the_quickstart_batch():
    batch = RNG.normal(size=(4, 10))
    np.testing.assert_allclose(nx.vmap(apply_matrix)(batch), batch @ MAT.T)
    assert "for _i in range(1, _size):" in nx.vmap(apply_matrix).source


def _arrays(*shapes):
    return [RNG.normal(size=shape) for shape in shapes]


IN_AXES_CASES = [
    (0, [(4, 5), (4, 5), (4, 5)]),
    ((0, None, None), [(4, 5), (5,), (5,)]),
    ([0, 0, None], [(4, 5), (4, 5), (5,)]),
    ((1, None, 0), [(5, 4), (5,), (4, 5)]),
    ((-1, 0, None), [(5, 4), (4, 5), (5,)]),
]


@pytest.mark.parametrize("in_axes, shapes", IN_AXES_CASES, ids=[str(c[0]) for c in IN_AXES_CASES])
def test_in_axes(in_axes, shapes):
    args = _arrays(*shapes)
    axes = [in_axes] * 3 if isinstance(in_axes, int) else list(in_axes)
    axes = [a if a is None else a % len(s) for a, s in zip(axes, shapes, strict=True)]
    want = per_example(scale_add, *args, axes=axes)
    np.testing.assert_allclose(nx.vmap(scale_add, in_axes=in_axes)(*args), want)


def test_out_axes():
    x = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(nx.vmap(np.sin, out_axes=1)(x), np.sin(x).T)
    np.testing.assert_allclose(nx.vmap(np.sin, out_axes=-1)(x), np.sin(x).T)
    pair = nx.vmap(lambda v: (v * 2.0, np.sum(v)), out_axes=(1, 0))(x)
    np.testing.assert_allclose(pair[0], 2 * x.T)
    np.testing.assert_allclose(pair[1], x.sum(axis=1))
    same = nx.vmap(lambda v, c: c * 2.0, in_axes=(0, None), out_axes=None)(x, np.ones(2))
    np.testing.assert_allclose(same, 2 * np.ones(2))


def test_pytree_arguments_and_prefixes():
    params = {"w": RNG.normal(size=3), "b": np.float64(0.5)}
    batch = {"w": RNG.normal(size=(4, 3)), "b": RNG.normal(size=4)}

    def affine(p, x):
        return p["w"] @ x + p["b"]

    got = nx.vmap(affine, in_axes=({"w": 0, "b": 0}, None))(batch, X[0])
    np.testing.assert_allclose(got, batch["w"] @ X[0] + batch["b"])
    got = nx.vmap(affine, in_axes=(None, 0))(params, X)
    np.testing.assert_allclose(got, X @ params["w"] + params["b"])


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")  # axis 1
def test_none_in_a_pytree_argument_is_an_empty_subtree():
    """As in JAX, None holds no leaf: it is neither mapped nor given an axis."""
    params = {"a": np.arange(6.0).reshape(3, 2), "n": None}
    np.testing.assert_allclose(nx.vmap(lambda p: np.sum(p["a"]))(params), [1.0, 5.0, 9.0])
    same = nx.vmap(lambda p: p, in_axes=({"a": 0, "n": None},))(params)
    assert same["n"] is None
    np.testing.assert_array_equal(same["a"], params["a"])
    gradients = nx.vmap(nx.grad(lambda p: np.sum(p["a"] ** 2)))(params)
    np.testing.assert_allclose(gradients["a"], 2.0 * params["a"])
    assert gradients["n"] is None


def test_pytree_prefixes_under_jit():
    batch = {"w": RNG.normal(size=(3, 4)), "b": RNG.normal(size=4)}

    def affine(p, x):
        return {"y": p["w"] @ x + p["b"], "x": x}

    batched = nx.vmap(affine, in_axes=({"w": 1, "b": 0}, None), out_axes={"y": 0, "x": None})
    for run in (batched, nx.jit(batched)):
        got = run(batch, X[0])
        np.testing.assert_allclose(got["y"], batch["w"].T @ X[0] + batch["b"])
        np.testing.assert_allclose(got["x"], X[0])


def test_keyword_arguments_are_mapped_over_axis_0():
    x, w = RNG.normal(size=(4, 2)), RNG.normal(size=(4, 2))
    got = nx.vmap(scale_add, in_axes=(0,))(x, w=w, b=1.0 * np.ones((4, 2)))
    np.testing.assert_allclose(got, x * w + 1.0)


def test_axis_size_with_nothing_mapped():
    got = nx.vmap(lambda c: c + 1.0, in_axes=None, axis_size=3)(np.ones(2))
    np.testing.assert_allclose(got, 2 * np.ones((3, 2)))


def test_control_flow_on_mapped_values():
    def count_up(x):
        s = 0.0
        while s < x:
            s = s + 1.0
        if s > 2.0:
            s = -s
        return s

    np.testing.assert_allclose(nx.vmap(count_up)(np.array([0.5, 2.5, 3.0])), [1.0, -3.0, -3.0])


# -- errors -------------------------------------------------------------------------------


def test_inconsistent_sizes_list_each_argument():
    with pytest.raises(ValueError, match="inconsistent sizes") as err:
        nx.vmap(scale_add)(np.ones((3, 2)), np.ones((4, 2)), np.ones((3, 2)))
    assert "argument x has shape with axis 0 of size 3" in str(err.value)
    assert "argument w has shape with axis 0 of size 4" in str(err.value)


def test_axis_out_of_range():
    with pytest.raises(ValueError, match="along axis 2"):
        nx.vmap(np.sin, in_axes=2)(np.ones((3, 2)))


def test_in_axes_length_and_type():
    with pytest.raises(ValueError, match=r"len\(in_axes\)=2, len\(args\)=3"):
        nx.vmap(scale_add, in_axes=(0, 0))(np.ones(2), np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="vmap in_axes must be an int, None, or a tuple"):
        nx.vmap(scale_add, in_axes="x")


def test_nothing_mapped_needs_axis_size():
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        nx.vmap(np.sin, in_axes=None)(np.ones(2))


def test_out_axes_none_checks_the_output_is_shared():
    with pytest.raises(ValueError, match="depends on the mapped axis"):
        nx.vmap(np.sin, out_axes=None)(np.ones((3, 2)) * np.arange(3)[:, None])


def test_unknown_method_says_so():
    with pytest.raises(ValueError, match="'vectorized' or 'loop'"):
        nx.vmap(np.sin, method="vectorised")


# -- composition --------------------------------------------------------------------------


def test_vmap_of_vmap():
    outer = nx.vmap(nx.vmap(lambda a, b: a * b), in_axes=(0, None))
    a, b = RNG.normal(size=(2, 3)), RNG.normal(size=3)
    np.testing.assert_allclose(outer(a, b), a * b)


def test_per_example_gradients():
    got = nx.vmap(nx.grad(loss), in_axes=(None, 0, 0))(W, X, Y)
    want = np.stack([nx.grad(loss)(W, X[i], Y[i]) for i in range(len(X))])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_gradient_through_a_call_to_vmap():
    want = np.mean([nx.grad(loss)(W, X[i], Y[i]) for i in range(len(X))], axis=0)
    np.testing.assert_allclose(nx.grad(mean_loss)(W), want, rtol=1e-12)
    np.testing.assert_allclose(nx.jacfwd(mean_loss)(W), want, rtol=1e-12)
    eps = 1e-6
    hess_fd = np.stack(
        [
            (nx.grad(mean_loss)(W + eps * e) - nx.grad(mean_loss)(W - eps * e)) / (2 * eps)
            for e in np.eye(3)
        ]
    )
    np.testing.assert_allclose(nx.hessian(mean_loss)(W), hess_fd, rtol=1e-5, atol=1e-9)


def test_jacobian_of_a_batched_function():
    x = RNG.normal(size=(3, 2))
    jac = nx.jacrev(nx.vmap(np.sin))(x)
    np.testing.assert_allclose(jac.reshape(6, 6), np.diag(np.cos(x).ravel()), atol=1e-15)


def test_under_jit():
    batch = RNG.normal(size=(4, 10))
    np.testing.assert_allclose(nx.jit(nx.vmap(apply_matrix))(batch), batch @ MAT.T)
    per_ex = nx.jit(nx.vmap(nx.grad(loss), in_axes=(None, 0, 0)))(W, X, Y)
    np.testing.assert_allclose(per_ex, nx.vmap(nx.grad(loss), in_axes=(None, 0, 0))(W, X, Y))
    np.testing.assert_allclose(nx.jit(nx.grad(mean_loss))(W), nx.grad(mean_loss)(W), rtol=1e-12)
    pair = nx.jit(nx.vmap(lambda v: (v * 2.0, np.sum(v)), out_axes=(1, 0)))(X)
    np.testing.assert_allclose(pair[0], 2 * X.T)


def test_same_shapes_and_values_as_jax():
    with jax_x64() as jax:
        _compare_with_jax(jax)


def _compare_with_jax(jax):
    x, w, b = RNG.normal(size=(4, 5)), RNG.normal(size=(5, 4)), RNG.normal(size=5)
    for in_axes, out_axes in [((0, 1, None), 0), ((1, 0, None), 1), ((0, None, None), -1)]:
        args = (x if in_axes[0] == 0 else x.T, w if in_axes[1] == 1 else w.T, b)
        if in_axes[1] is None:
            args = (args[0], b, b)
        want = jax.vmap(scale_add, in_axes=in_axes, out_axes=out_axes)(*args)
        got = nx.vmap(scale_add, in_axes=in_axes, out_axes=out_axes)(*args)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want)


def two_layer(params, x, y):
    w, b = params
    return np.sum((np.tanh(x @ w + b) - y) ** 2)


PARAMS = (RNG.normal(size=(3, 2)), np.zeros(2))
TARGETS = RNG.normal(size=(6, 2))
batched_two_layer = nx.vmap(two_layer, in_axes=(None, 0, 0))


def mean_two_layer(params):
    return np.mean(batched_two_layer(params, X, TARGETS))


def test_shared_pytree_argument_gets_the_summed_cotangent():
    want = [
        np.mean([nx.grad(two_layer)(PARAMS, X[i], TARGETS[i])[k] for i in range(len(X))], axis=0)
        for k in range(2)
    ]
    for got in (nx.grad(mean_two_layer)(PARAMS), nx.jit(nx.grad(mean_two_layer))(PARAMS)):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12)


# Numba warns that the one-line function jit compiles around the loop has nothing to
# parallelize; the loop itself does.
@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaPerformanceWarning")
def test_parallel_jit_runs_the_batch_on_all_cores():
    """Under jit(parallel=True) the loop is a prange; the result is the same."""
    serial = nx.jit(nx.vmap(nx.grad(loss), in_axes=(None, 0, 0)))(W, X, Y)
    parallel = nx.jit(nx.vmap(nx.grad(loss), in_axes=(None, 0, 0)), parallel=True)
    np.testing.assert_array_equal(parallel(W, X, Y), serial)
    batched = nx.vmap(nx.grad(loss), in_axes=(None, 0, 0))
    compiled = batched.loop(batched._axes(3, ()), compiled={"parallel": True}).text
    assert "for _i in prange(1, _size):" in compiled
    assert "parallel=True" in compiled
