"""``nx.random`` inside per-example GPU threads, on the simulator: the same draws as on
the CPU (each example its own key)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numbax as nx
from benchmarks.gpu import workloads
from numbax.numba_backend.cuda import random as random_device


def noisy_step(key, mu):
    z = nx.random.normal(key)
    u = nx.random.uniform(key, minval=-1.0, maxval=1.0)
    return mu + z * u


def test_each_thread_draws_from_its_own_key_as_the_cpu_does():
    keys = nx.random.split(nx.random.key(0), 4)
    got = nx.jit(nx.vmap(noisy_step, in_axes=(0, None)), backend="gpu")(keys, 1.0)
    want = nx.vmap(noisy_step, in_axes=(0, None))(keys, 1.0)
    np.testing.assert_array_equal(nx.device_get(got), want)


def test_a_gradient_through_a_draw():
    keys = nx.random.split(nx.random.key(1), 3)
    per_example = nx.grad(noisy_step, argnums=1)
    got = nx.jit(nx.vmap(per_example, in_axes=(0, None)), backend="gpu")(keys, 2.0)
    np.testing.assert_array_equal(nx.device_get(got), np.ones(3))


@pytest.mark.parametrize("seed", [0, 1, 1701])
def test_the_device_draws_are_the_cpus_draws(seed):
    """numba-cuda's versions of ``normal`` and ``uniform`` (what a GPU compiles, which the
    simulator does not run), compiled for the CPU: the CPU's values, ``normal`` to a few
    ulp (its ``log`` is the C library's there, libdevice's on a GPU)."""
    draws = random_device.scalar_draws(numba.njit, "cpu check")
    key = nx.random.key(seed)
    for dtype, ulps in ((np.float64, 4), (np.float32, 3)):
        got = draws["normal"][np.dtype(dtype)](key[0], key[1], 0)
        want = nx.random.normal(key, dtype=dtype)
        assert abs(got - want) <= ulps * np.spacing(np.abs(want)), (dtype, got, want)
        lo, hi = dtype(-1.0), dtype(2.5)
        got = draws["uniform"][np.dtype(dtype)](key[0], key[1], 0, lo, hi)
        assert got == nx.random.uniform(key, dtype=dtype, minval=lo, maxval=hi)


def test_keys_made_in_a_thread_draw_as_on_the_cpu():
    """fold_in and split inside each thread (tuples of two words on a GPU), exponential
    and bernoulli draws from them."""
    keys = nx.random.split(nx.random.key(7), 4)
    walk = nx.vmap(workloads.random_walk(5), in_axes=(0, None))
    got = nx.jit(walk, backend="gpu")(keys, 0.5)
    # to rounding: a GPU's exponential takes libdevice's log (equal on the simulator)
    np.testing.assert_allclose(nx.device_get(got), walk(keys, 0.5), rtol=1e-15)


@pytest.mark.parametrize("seed", [0, 3, 1701])
def test_the_device_keys_and_exponentials_are_the_cpus(seed):
    """What numba-cuda compiles for fold_in, split's keys and exponential (the simulator
    runs the CPU's functions instead), compiled for the CPU."""
    draws = random_device.scalar_draws(numba.njit, "cpu check")
    key = nx.random.key(seed)
    for data in (0, 5, 2**32 + 3, -1):
        assert draws["keys"]["fold_in"](key[0], key[1], data) == tuple(nx.random.fold_in(key, data))
    split = nx.random.split(key, 5)
    for i in range(5):
        assert draws["keys"]["split_one"](key[0], key[1], i) == tuple(split[i])
    for dtype, ulps in ((np.float64, 2), (np.float32, 2)):
        got = draws["exponential"][np.dtype(dtype)](key[0], key[1], 0)
        want = nx.random.exponential(key, dtype=dtype)
        assert abs(got - want) <= ulps * np.spacing(np.abs(want)), (dtype, got, want)


def gamma_step(key, a):
    return nx.random.gamma(key, a) * 0.5


def test_gamma_draws_in_each_thread_as_on_the_cpu():
    keys = nx.random.split(nx.random.key(11), 4)
    batched = nx.vmap(gamma_step, in_axes=(0, None))
    for a in (0.5, 3.0):
        got = nx.jit(batched, backend="gpu")(keys, a)
        np.testing.assert_allclose(nx.device_get(got), batched(keys, a), rtol=1e-13)


@pytest.mark.parametrize("seed", [0, 7, 1701])
@pytest.mark.parametrize("a", [0.3, 1.0, 2.5, 40.0])
def test_the_device_gamma_is_the_cpus(seed, a):
    """What numba-cuda compiles for ``gamma`` (Marsaglia and Tsang's loop with JAX's key
    splits), compiled for the CPU: the CPU's draw, to rounding (its ``log`` is the C
    library's here, numbax's own on the CPU)."""
    draws = random_device.scalar_draws(numba.njit, "cpu check")
    key = nx.random.key(seed)
    element = nx.random.split(key, 1)[0]
    for dtype, rtol in ((np.float64, 1e-13), (np.float32, 1e-5)):
        got = draws["gamma"][np.dtype(dtype)](element[0], element[1], dtype(a), False)
        want = nx.random.gamma(key, a, dtype=dtype)
        np.testing.assert_allclose(got, want, rtol=rtol)


def integer_draw(key, high):
    return nx.random.randint(key, (), 0, high)


def test_a_draw_with_no_version_for_a_thread_is_refused_at_its_line():
    """The simulator would run the CPU's draw, which numba-cuda cannot compile."""
    keys = nx.random.split(nx.random.key(0), 3)
    with pytest.raises(nx.CompileError, match="nx.random.randint has no version") as info:
        nx.jit(nx.vmap(integer_draw, in_axes=(0, None)), backend="gpu")(keys, 10)
    assert info.value.lineno == integer_draw.__code__.co_firstlineno + 1
