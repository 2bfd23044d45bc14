"""``nx.random`` inside per-example GPU threads, on the simulator: the same draws as on
the CPU (each example its own key)."""

from __future__ import annotations

import numpy as np

import numbax as nx


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
