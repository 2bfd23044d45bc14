"""``pmap`` on the cores of this machine: bit-identical to ``jit(vmap(f, method="loop"))``
for any number of threads and axis length, pytrees, axes, static arguments, examples of
uneven cost, nested with ``jit`` and ``grad``; ``devices()`` and
``local_device_count()``."""

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import numbax as nx
from numbax import tree_util
from numbax.numba_backend.loops import threads
from tests.helpers.fd import fd_gradient

RNG = np.random.default_rng(0)
W = RNG.normal(size=(3, 4))
XS = RNG.normal(size=(13, 3))


def layer(w, x):
    """Work with a matrix product and a reduction, whose bits depend on their order."""
    h = np.tanh(x @ w)
    return h * np.sum(h * h) + np.log1p(np.abs(x).sum())


def iterations(x, tol):
    """A ``while`` to a tolerance: examples of very uneven cost."""
    y = x
    n = 0
    while np.abs(y - np.cos(y)) > tol and n < 10000 * (1 + int(abs(x) * 40) % 7):
        y = y + 1e-4 * (np.cos(y) - y)
        n += 1
    return y, n


def pair(xy, s):
    x, y = xy
    return (x * s + y, [np.sum(x * y), y])


def loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


PMAPPED = nx.pmap(layer, in_axes=(None, 0))
LOOP = nx.jit(nx.vmap(layer, in_axes=(None, 0), method="loop"))


def with_threads(n, f, *args):
    """``f(*args)`` on ``n`` threads, every example after the first on them (none run
    alone on the caller first, as small maps otherwise do)."""
    previous = numba.get_num_threads()
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    alone, threads.ALONE_NS.value = threads.ALONE_NS.value, 0
    try:
        return f(*args)
    finally:
        numba.set_num_threads(previous)
        threads.ALONE_NS.value = alone


def assert_identical(got, want):
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w, strict=True)


@pytest.mark.parametrize("size", [1, 7, 13])
@pytest.mark.parametrize("threads", [1, 2])
def test_bit_identical_to_the_vmap_loop(size, threads) -> None:
    xs = XS[:size]
    assert_identical(with_threads(threads, PMAPPED, W, xs), LOOP(W, xs))


def test_bit_identical_on_three_threads() -> None:
    """Three threads on any machine: NUMBA_NUM_THREADS and the device count set in a
    fresh process (Numba's pool is sized when it starts); a map on two of them leaves
    the caller's thread count at three."""
    program = textwrap.dedent(
        """
        import numba, numpy as np, numbax as nx
        from numbax.numba_backend.loops import threads
        from tests.api.test_pmap_threads import PMAPPED, LOOP, W, XS, iterations
        numba.set_num_threads(3)
        threads.ALONE_NS.value = 0  # every example after the first on the threads
        for size in (1, 7, 13):
            assert np.array_equal(PMAPPED(W, XS[:size]), LOOP(W, XS[:size]))
        x = np.linspace(0.0, 3.0, 13)
        got = nx.pmap(iterations, in_axes=(0, None))(x, 1e-6)
        want = nx.jit(nx.vmap(iterations, in_axes=(0, None), method="loop"))(x, 1e-6)
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        two = nx.pmap(iterations, in_axes=(0, None), devices=nx.devices()[:2])
        assert all(np.array_equal(g, w) for g, w in zip(two(x, 1e-6), want))
        assert numba.get_num_threads() == 3  # a map on two threads leaves the count as it was
        print("ok", nx.local_device_count())
        """
    )
    env = {**os.environ, "NUMBA_NUM_THREADS": "3", "JAX_NUM_CPU_DEVICES": "3"}
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", "3"]


def test_workqueue_layer_runs_the_examples_on_one_thread() -> None:
    """Numba's workqueue layer aborts the process on concurrent parallel regions: there,
    maps called from several Python threads at once run their examples serially."""
    program = textwrap.dedent(
        """
        import threading, numba, numpy as np
        from tests.api.test_pmap_threads import PMAPPED, LOOP, W, XS
        want, same = LOOP(W, XS), []
        def calls():
            same.extend(np.array_equal(PMAPPED(W, XS), want) for _ in range(50))
        threads = [threading.Thread(target=calls) for _ in range(3)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print(numba.threading_layer(), len(same), all(same))
        """
    )
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["workqueue", "150", "True"]


def test_uneven_examples_balance_and_match() -> None:
    x = np.linspace(0.0, 3.0, 7)
    got = with_threads(2, nx.pmap(iterations, in_axes=(0, None)), x, 1e-6)
    want = nx.jit(nx.vmap(iterations, in_axes=(0, None), method="loop"))(x, 1e-6)
    assert_identical(got, want)
    assert len(set(got[1].tolist())) > 3  # the examples' costs do differ


def test_pytrees_in_and_out() -> None:
    xy = (XS, XS[:, ::-1] ** 2)
    got = with_threads(2, nx.pmap(pair, in_axes=(0, None)), xy, 0.5)
    assert_identical(got, nx.jit(nx.vmap(pair, in_axes=(0, None), method="loop"))(xy, 0.5))
    assert isinstance(got, tuple) and len(got[1]) == 2


def test_in_axes_one_and_out_axes_one() -> None:
    mapped = nx.pmap(layer, in_axes=(None, 1), out_axes=1)
    loop = nx.jit(nx.vmap(layer, in_axes=(None, 1), out_axes=1, method="loop"))
    got = with_threads(2, mapped, W, XS.T)
    assert got.shape == (4, 13)
    assert_identical(got, loop(W, XS.T))
    # w mapped too, over its last axis
    ws = np.stack([W + k for k in range(5)], axis=-1)
    got = with_threads(2, nx.pmap(layer, in_axes=(2, 0)), ws, XS[:5])
    assert_identical(got, nx.jit(nx.vmap(layer, in_axes=(2, 0), method="loop"))(ws, XS[:5]))


def powers(x, n, scale):
    out = x
    for _ in range(n):
        out = out * x
    return out * scale


def test_static_broadcasted_argnums() -> None:
    mapped = nx.pmap(powers, in_axes=(0, None, 0), static_broadcasted_argnums=1)
    x = XS[:, 0]
    for n in (2, 3):
        got = with_threads(2, mapped, x, n, x + 1)
        np.testing.assert_allclose(got, x ** (n + 1) * (x + 1), rtol=1e-14)
    assert len(mapped._maps) == 2  # one compiled map per static value
    with pytest.raises(TypeError, match="hashable"):
        mapped(x, [2], x)


def test_jit_of_pmap_and_pmap_of_grad() -> None:
    xs = XS[:7]
    assert_identical(with_threads(2, nx.jit(PMAPPED), W, xs), LOOP(W, xs))
    per_example = nx.pmap(nx.grad(loss), in_axes=(None, 0))
    want = nx.jit(nx.vmap(nx.grad(loss), in_axes=(None, 0), method="loop"))(W, xs)
    assert_identical(with_threads(2, per_example, W, xs), want)
    assert_identical(with_threads(2, nx.jit(per_example), W, xs), want)
    for k in (0, 6):
        np.testing.assert_allclose(
            want[k], fd_gradient(lambda w, k=k: loss(w, xs[k]), W), rtol=1e-6, atol=1e-8
        )


def test_grad_through_pmap() -> None:
    xs = XS[:7]

    def total(w):
        return np.sum(nx.pmap(layer, in_axes=(None, 0))(w, xs))

    def reference(w):
        return np.sum(nx.vmap(layer, in_axes=(None, 0))(w, xs))

    got = with_threads(2, nx.grad(total), W)
    np.testing.assert_allclose(got, nx.grad(reference)(W), rtol=1e-12)
    np.testing.assert_allclose(got, fd_gradient(reference, W), rtol=1e-6, atol=1e-8)


def centered(x):
    return x - nx.lax.pmean(x, "i")


def test_collectives_keep_vmap_semantics() -> None:
    got = nx.pmap(centered, "i")(XS)
    np.testing.assert_allclose(got, XS - XS.mean(0))


def test_devices_are_the_cores() -> None:
    devices = nx.devices()
    assert len(devices) == nx.local_device_count() == len(os.sched_getaffinity(0))
    assert [d.id for d in devices] == list(range(len(devices)))
    assert all(d.platform == "cpu" for d in devices)
    # devices limits the threads; the results are the same
    one = nx.pmap(layer, in_axes=(None, 0), devices=devices[:1])
    assert_identical(one(W, XS), LOOP(W, XS))


@pytest.mark.parametrize(
    ("env", "count"),
    [
        ({"JAX_NUM_CPU_DEVICES": "5"}, 5),
        ({"XLA_FLAGS": "--xla_force_host_platform_device_count=6"}, 6),
        ({"JAX_NUM_CPU_DEVICES": "3", "XLA_FLAGS": "--xla_force_host_platform_device_count=6"}, 3),
    ],
)
def test_device_count_from_the_environment(env, count) -> None:
    program = "import numbax as nx; print(nx.local_device_count(), len(nx.devices()))"
    clean = {k: v for k, v in os.environ.items() if k not in ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    done = subprocess.run(
        [sys.executable, "-c", program],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(count), str(count)]


def test_errors_name_the_function() -> None:
    with pytest.raises(ValueError, match="pmap of layer.*in_axes"):
        nx.pmap(layer, in_axes=(None, 0, 0))(W, XS)
    with pytest.raises(TypeError, match="pmap of layer.*in_axes"):
        nx.pmap(layer, in_axes="x")
    with pytest.raises(ValueError, match="pmap of layer.*devices"):
        nx.pmap(layer, devices=["cpu"])


def pick(x):
    table = np.zeros(3)
    return table[int(x)]


def test_an_example_that_fails_raises_its_error() -> None:
    with pytest.raises(IndexError, match="index 5"):
        with_threads(2, nx.pmap(pick), np.array([0.0, 1.0, 2.0, 5.0, 1.0, 2.0, 0.0]))


def test_source_shows_the_threaded_map() -> None:
    mapped = nx.pmap(layer, in_axes=(None, 0))
    mapped(W, XS[:3])
    assert "run_examples(_size, (_batch, w, x)" in mapped.source
    assert "def _pmap_layer_example(_i, _batch, w, x):" in mapped.source


def test_a_function_numbax_cannot_compile_is_mapped_as_vmap_maps_it() -> None:
    namespace = {"np": np}
    exec("def unread(x):\n    return np.sin(x) * 2.0\n", namespace)  # no source to read
    xs = XS[:4]
    np.testing.assert_array_equal(nx.pmap(namespace["unread"])(xs), np.sin(xs) * 2.0)
