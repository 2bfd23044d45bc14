"""The snippets of JAX's "External callbacks" guide ported by swapping the import
(``tests/ports/jax_callbacks.py``): the results and the printed lines are the guide's,
interpreted, under ``vmap``, ``grad`` and ``hessian``, and under ``nx.jit`` where the
guide decorates the function with ``jax.jit``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import numbax as nx
from numbax.errors import TransformError
from tests.ports import jax_callbacks as guide

X = np.arange(5.0)


def test_debug_print_in_a_jitted_function(capsys):
    assert guide.f_print(2) == 6
    assert capsys.readouterr().out == "intermediate value: 3\n"


def test_pure_callback_of_numpy_interpreted_batched_compiled():
    np.testing.assert_allclose(guide.f(X), np.sin(X))
    np.testing.assert_allclose(nx.vmap(guide.f)(X), np.sin(X))
    np.testing.assert_allclose(nx.jit(guide.f)(X), np.sin(X))
    with pytest.raises(TransformError, match="pure_callback has no derivative"):
        nx.grad(lambda x: np.sum(guide.f(x)))(X)


def test_io_callback_draws_from_the_host_generator(capsys):
    guide.global_rng = np.random.default_rng(0)
    first = guide.numpy_random_like(np.zeros(5))
    batched = nx.vmap(guide.numpy_random_like)(np.zeros(5))
    want = np.random.default_rng(0).uniform(size=10)
    np.testing.assert_allclose(first, want[:5])
    np.testing.assert_allclose(batched, want[5:])  # one scalar draw per example
    assert capsys.readouterr().out == "generating float64[5]\n" + "generating float64[]\n" * 5


def test_debug_callback_under_jit_vmap_and_grad(capsys):
    assert guide.f_log(1.0) == 1.0
    np.testing.assert_allclose(nx.vmap(guide.f_log)(X), X)
    assert nx.grad(guide.f_log)(1.0) == 1.0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["log: 1.0", *(f"log: {x}" for x in X), "log: 1.0"]


def test_bessel_function_through_custom_jvp():
    np.testing.assert_allclose(guide.j1(X), scipy.special.jv(1, X))
    np.testing.assert_allclose(nx.vmap(guide.j1)(X), scipy.special.jv(1, X))
    eps = 1e-6
    slope = (scipy.special.jv(1, 2.0 + eps) - scipy.special.jv(1, 2.0 - eps)) / (2 * eps)
    np.testing.assert_allclose(nx.grad(guide.j1)(2.0), slope, rtol=1e-7)
    d1 = nx.grad(guide.j1)
    curvature = (d1(2.0 + eps) - d1(2.0 - eps)) / (2 * eps)
    np.testing.assert_allclose(nx.hessian(guide.j1)(2.0), curvature, rtol=1e-6)
    assert pytest.approx(curvature, rel=1e-6) == scipy.special.jvp(1, 2.0, n=2)
