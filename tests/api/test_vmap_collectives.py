"""Collectives under ``vmap(..., axis_name=...)``: ``nx.lax.psum``, ``pmean``, ``pmax``,
``pmin`` and ``axis_index``, batched by both methods (vectorized, and the loop split at
each collective), interpreted and under ``jit``, differentiated, and their errors."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import fd_gradient

RNG = np.random.default_rng(3)
X = RNG.normal(size=(4, 3))
METHODS = [None, "loop"]


def collectives(x):
    total = nx.lax.psum(np.sum(x), "i")
    return (
        x / total,
        nx.lax.pmean(x, "i"),
        nx.lax.pmax(x, "i"),
        nx.lax.pmin(x, "i"),
        nx.lax.axis_index("i"),
        nx.lax.psum(2.0, "i"),  # an unmapped value: times the batch size
    )


def expected(x):
    n = len(x)
    return (
        x / np.sum(x),
        np.broadcast_to(x.mean(0), x.shape),
        np.broadcast_to(x.max(0), x.shape),
        np.broadcast_to(x.min(0), x.shape),
        np.arange(n),
        np.full(n, 2.0 * n),
    )


def branches_per_example(x):
    m = np.mean(x)
    total = nx.lax.psum(m, "i")
    if m > 0:  # control flow on a mapped value: only the loop batches it
        y = x - total
    else:
        y = x + total
    return y * nx.lax.axis_index("i")


def branches_expected(x):
    m = x.mean(1)
    y = np.where((m > 0)[:, None], x - m.sum(), x + m.sum())
    return y * np.arange(len(x))[:, None]


@pytest.mark.parametrize("method", METHODS)
def test_collectives(method):
    batched = nx.vmap(collectives, axis_name="i", method=method)
    for got, want in zip(batched(X), expected(X), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    for got, want in zip(nx.jit(batched)(X), expected(X), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert ("vectorized" in batched.source) == (method is None)


@pytest.mark.parametrize("jit", [False, True])
def test_control_flow_on_mapped_values_splits_the_loop(jit):
    batched = nx.vmap(branches_per_example, axis_name="i")
    run = nx.jit(batched) if jit else batched
    np.testing.assert_allclose(run(X), branches_expected(X), rtol=1e-12)
    assert "split at each collective" in batched.source
    assert "_branches_per_example_part1" in batched.source


def test_in_axes_and_shared_arguments():
    def scaled(x, w):
        return w * x / nx.lax.psum(x, "i")

    w = RNG.normal(size=3)
    for method in METHODS:
        got = nx.vmap(scaled, in_axes=(1, None), axis_name="i", method=method)(X.T, w)
        np.testing.assert_allclose(got, w * X / X.sum(0), rtol=1e-12)


def with_every_collective(x):
    return (
        x / nx.lax.psum(np.sum(x**2), "i")
        + nx.lax.pmax(x, "i") * nx.lax.pmean(x, "i")
        - nx.lax.pmin(x, "i") ** 2
    )


@pytest.mark.parametrize("method", METHODS)
def test_gradient_through_collectives(method):
    batched = nx.vmap(with_every_collective, axis_name="i", method=method)

    def loss(x):
        return np.sum(np.sin(batched(x)))

    want = fd_gradient(loss, X)
    np.testing.assert_allclose(nx.grad(loss)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(nx.jit(nx.grad(loss))(X), want, rtol=1e-6, atol=1e-8)


def test_same_as_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    x = X.astype(np.float32)

    def ours(x):
        return np.sum(x * nx.lax.psum(x, "i")) + nx.lax.pmean(np.sum(x), "i")

    def theirs(x):
        return jnp.sum(x * jax.lax.psum(x, "i")) + jax.lax.pmean(jnp.sum(x), "i")

    want = jax.vmap(jax.grad(theirs), axis_name="i")(x)
    for method in METHODS:
        got = nx.vmap(nx.grad(ours), axis_name="i", method=method)(x)
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5)


def test_outside_vmap_the_axis_is_unbound():
    with pytest.raises(NameError, match="unbound axis name: i"):
        nx.lax.psum(X, "i")


def test_another_axis_name_is_refused():
    def other(x):
        return x - nx.lax.pmean(x, "j")

    with pytest.raises(nx.TransformError, match="axis name of this vmap"):
        nx.vmap(other, axis_name="i")(X)


def test_a_collective_in_a_branch_on_mapped_values_is_refused():
    def nested(x):
        if np.sum(x) > 0:
            x = x - nx.lax.pmean(x, "i")
        return x

    with pytest.raises(nx.TransformError, match="inside a branch, a loop") as error:
        nx.vmap(nested, axis_name="i")(X)
    assert f"{__file__}, line " in str(error.value)


def test_the_axis_name_may_be_a_keyword():
    def centred(x):
        return x - nx.lax.pmean(x, axis_name="i")

    for method in METHODS:
        got = nx.vmap(centred, axis_name="i", method=method)(X)
        np.testing.assert_allclose(got, X - X.mean(0), rtol=1e-12)


LEFT = [(k, (k - 1) % 4) for k in range(4)]


def spread(x, w):
    """The collectives JAX added for sharded work, of an argument mapped over axis 1."""
    everyone = nx.lax.all_gather(x * 2.0, "i", axis=0, tiled=True)
    mine = nx.lax.psum_scatter(np.outer(x, w), "i", scatter_dimension=1, tiled=True)
    left = nx.lax.ppermute(x, "i", LEFT)
    return everyone, mine, left, nx.lax.axis_size("i") + nx.lax.axis_index("i")


@pytest.mark.parametrize("method", METHODS)
def test_gather_scatter_and_permute_of_an_axis_other_than_the_first(method):
    xs, w = X.T, np.arange(1.0, 9.0)  # 4 examples of shape (3,), mapped over axis 1
    got = nx.vmap(spread, in_axes=(1, None), axis_name="i", method=method)(xs, w)
    total = sum(np.outer(x, w) for x in X)
    np.testing.assert_allclose(got[0], np.tile(2.0 * X.reshape(-1), (4, 1)))
    np.testing.assert_allclose(got[1], np.stack([total[:, 2 * k : 2 * k + 2] for k in range(4)]))
    np.testing.assert_allclose(got[2], np.roll(X, -1, axis=0))
    np.testing.assert_array_equal(got[3], 4 + np.arange(4))
