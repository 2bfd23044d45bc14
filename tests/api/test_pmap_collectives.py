"""Collectives under ``pmap``: ``all_gather``, ``psum_scatter``, ``ppermute`` and
``axis_size`` as JAX defines them (against NumPy, and JAX where installed), their
derivatives (central differences), and the map run in stages on every thread,
bit-identical to ``jit(vmap(f, method="loop"))`` for 1, 2 and 3 threads; nested in
``grad`` and ``jit``, and shown by ``nx.show``."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numbax as nx
from tests.api.test_pmap_threads import assert_identical, with_threads
from tests.helpers.fd import fd_gradient

RNG = np.random.default_rng(5)
XS = RNG.normal(size=(4, 4, 2))  # 4 examples of shape (4, 2)
PERM = [(0, 1), (1, 2), (2, 0)]  # example 3 sends nothing and receives zeros


def gathered(x):
    return (
        nx.lax.all_gather(x, "i", axis=1),
        nx.lax.all_gather(x, "i", axis=-1, tiled=True),
        nx.lax.psum_scatter(x * x, "i"),
        nx.lax.psum_scatter(x, "i", scatter_dimension=0, tiled=True),
        nx.lax.ppermute(x, "i", PERM),
        nx.lax.ppermute(2.0, "i", PERM),  # a value the batch shares
        nx.lax.axis_size("i") * 1.0,
    )


def gathered_expected(xs):
    n = len(xs)
    total, squares = xs.sum(0), (xs * xs).sum(0)
    permuted, shared = np.zeros_like(xs), np.zeros(n)
    for source, destination in PERM:
        permuted[destination], shared[destination] = xs[source], 2.0
    every = np.stack(list(xs), axis=1), np.concatenate(list(xs), axis=-1)
    return (
        *(np.broadcast_to(e, (n, *e.shape)) for e in every),
        squares,  # example i: entry i along axis 0
        total.reshape(n, 1, 2),  # example i: block i
        permuted,
        shared,
        np.full(n, float(n)),
    )


def shifted(x):
    return nx.lax.ppermute(np.sin(x), "i", PERM) - nx.lax.pmean(x * x, "i")


def mixed(x):
    g = nx.lax.all_gather(x, "i", axis=1)
    gt = nx.lax.all_gather(x, "i", axis=-1, tiled=True)
    s = nx.lax.psum_scatter(x * x, "i")
    st = nx.lax.psum_scatter(np.sin(x), "i", tiled=True)
    p = nx.lax.ppermute(x, "i", PERM)
    return np.sum(g * g, axis=1) * s + np.sum(np.cos(gt)) * st + p * x


def per_example_loss(w, x):
    h = np.tanh(x @ w)
    total = nx.lax.psum(np.sum(h * h), "i")
    sent = nx.lax.ppermute(h, "i", PERM)
    return np.sum(np.sin(h / total + sent * nx.lax.axis_index("i")))


W = RNG.normal(size=(2, 3))
GATHERED = nx.pmap(gathered, "i")
LOOP = nx.jit(nx.vmap(gathered, axis_name="i", method="loop"))


def test_semantics_are_jaxs_in_both_vmap_methods():
    for method in (None, "loop"):
        batched = nx.vmap(gathered, axis_name="i", method=method)
        for got, want in zip(batched(XS), gathered_expected(XS), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-13)
        assert ("vectorized" in batched.source) == (method is None)


@pytest.mark.parametrize("threads", [1, 2])
def test_pmap_in_stages_is_bit_identical_to_the_vmap_loop(threads):
    got = with_threads(threads, GATHERED, XS)
    assert_identical(got, LOOP(XS))
    for g, w in zip(got, gathered_expected(XS), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def test_bit_identical_on_three_threads():
    """Three threads on any machine: NUMBA_NUM_THREADS and the device count set in a
    fresh process."""
    program = textwrap.dedent(
        """
        import numba, numpy as np
        import numbax as nx
        from tests.api.test_pmap_collectives import shifted
        xs = np.linspace(-1.0, 1.0, 7 * 3).reshape(7, 3)
        want = nx.jit(nx.vmap(shifted, axis_name="i", method="loop"))(xs)
        mapped = nx.pmap(shifted, "i")
        mapped(xs)  # compiled first: compiling may leave the thread count changed
        numba.set_num_threads(3)
        print(numba.get_num_threads(), np.array_equal(mapped(xs), want))
        """
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "3", "JAX_NUM_CPU_DEVICES": "3"}
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["3", "True"]


def test_gradients_through_every_collective():
    """Interpreted, by vmap's vectorized code and by its loop (compiled: below)."""
    losses = [
        lambda x: np.sum(np.sin(nx.vmap(mixed, axis_name="i")(x))),
        lambda x: np.sum(np.sin(nx.vmap(mixed, axis_name="i", method="loop")(x))),
    ]
    want = fd_gradient(losses[0], XS)
    for loss in losses:
        np.testing.assert_allclose(nx.grad(loss)(XS), want, rtol=1e-6, atol=1e-8)


def test_pmap_of_grad_in_stages():
    """Per example, the gradient of the batch's total loss (as in JAX), compiled in
    stages, bit-identical to the vmap loop's."""
    xs = RNG.normal(size=(5, 2))
    per_example = nx.pmap(nx.grad(per_example_loss), axis_name="i", in_axes=(None, 0))
    batched = nx.vmap(nx.grad(per_example_loss), in_axes=(None, 0), axis_name="i", method="loop")
    want = nx.jit(batched)(W, xs)
    for threads in (1, 2):
        assert_identical(with_threads(threads, per_example, W, xs), want)

    def total(w):
        return np.sum(nx.vmap(per_example_loss, in_axes=(None, 0), axis_name="i")(w, xs))

    gradient = fd_gradient(total, W)
    np.testing.assert_allclose(want.sum(0), gradient, rtol=1e-6, atol=1e-8)
    # and the gradient of a loss calling pmap
    mapped = nx.pmap(per_example_loss, axis_name="i", in_axes=(None, 0))
    got = nx.grad(lambda w: np.sum(mapped(w, xs)))(W)
    np.testing.assert_allclose(got, gradient, rtol=1e-6, atol=1e-8)


def test_jit_of_pmap_and_what_nx_show_shows():
    assert_identical(with_threads(2, nx.jit(GATHERED), XS), LOOP(XS))
    shown = GATHERED.source
    assert "run_part" in shown and "(_size, (_part" in shown
    assert "def _pmap_gathered_part" in shown and "_example(_i, " in shown
    assert "nxrt.ppermuted(" in shown and "nxrt.all_gathered(" in shown


def test_same_as_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    full = [(0, 1), (1, 2), (2, 3), (3, 0)]  # jax.vmap permutes the whole axis only

    def ours(x):
        g = nx.lax.all_gather(x, "i", axis=1)
        s = nx.lax.psum_scatter(x * x, "i", tiled=True)
        return np.sum(g * g) * np.sum(s) + np.sum(nx.lax.ppermute(x, "i", full) * x)

    def theirs(x):
        g = jax.lax.all_gather(x, "i", axis=1)
        s = jax.lax.psum_scatter(x * x, "i", tiled=True)
        return jnp.sum(g * g) * jnp.sum(s) + jnp.sum(jax.lax.ppermute(x, "i", full) * x)

    np.testing.assert_allclose(
        nx.pmap(ours, "i")(XS), np.asarray(jax.vmap(theirs, axis_name="i")(XS)), rtol=1e-12
    )
    want = np.asarray(jax.vmap(jax.grad(theirs), axis_name="i")(XS))
    got = nx.pmap(nx.grad(ours), "i")(XS)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_errors():
    def unknown_perm(x, perm):
        return nx.lax.ppermute(x, "i", perm)

    with pytest.raises(nx.TransformError, match="perm must be a constant") as error:
        nx.pmap(unknown_perm, "i", in_axes=(0, None))(XS, PERM)
    assert f"{__file__}, line " in str(error.value)

    def filled(x):  # normalized into a loop filling a list
        return nx.lax.ppermute(x, "i", [(k, (k + 1) % 4) for k in range(4)])

    with pytest.raises(nx.TransformError, match="perm must be a constant"):
        nx.vmap(filled, axis_name="i", method="loop")(XS)

    def twice(x):
        return nx.lax.ppermute(x, "i", [(0, 1), (2, 1)])

    def wrong_size(x):
        return nx.lax.psum_scatter(x, "i", scatter_dimension=1)

    for f, match in [(twice, "must be unique"), (wrong_size, "must match the batch size")]:
        for method in (None, "loop"):
            with pytest.raises(ValueError, match=match):
                nx.vmap(f, axis_name="i", method=method)(XS)
    with pytest.raises(ValueError, match="must be unique"):  # raised by compiled code
        nx.pmap(twice, "i")(XS)


def scaled_less_total(x, n):
    return x * n - nx.lax.psum(x, "i")


def test_static_arguments_of_a_function_with_collectives():
    """Passed to every example as arguments of in_axes None, since numbax rewrites the
    collectives of the mapped function's own body: the vmap loop's numbers."""
    mapped = nx.pmap(scaled_less_total, "i", in_axes=(0, None), static_broadcasted_argnums=1)
    loop = nx.jit(nx.vmap(scaled_less_total, in_axes=(0, None), axis_name="i", method="loop"))
    for n in (3, 4.5):
        assert_identical(with_threads(2, mapped, XS, n), loop(XS, n))
    np.testing.assert_allclose(mapped(XS, 3), XS * 3 - XS.sum(0))


def test_the_derivative_of_a_pmap_with_collectives_runs_in_stages_on_every_thread():
    """A loss calling a pmap: its VJP maps the function's VJP as a pmap (in stages, the
    derivative of psum being one), with vmap's numbers."""
    xs = RNG.normal(size=(5, 2))
    mapped = nx.pmap(per_example_loss, axis_name="i", in_axes=(None, 0))
    derivative = mapped.__numbax_derivative__("vjp", (0,)).function.__globals__["_batched_vjp"]
    assert isinstance(derivative, type(mapped)) and derivative._collective_parts() is not None

    def total(w):
        return np.sum(nx.vmap(per_example_loss, in_axes=(None, 0), axis_name="i")(w, xs))

    got = with_threads(2, nx.grad(lambda w: np.sum(mapped(w, xs))), W)
    np.testing.assert_allclose(got, nx.grad(total)(W), rtol=1e-12)
    np.testing.assert_allclose(got, fd_gradient(total, W), rtol=1e-6, atol=1e-8)
