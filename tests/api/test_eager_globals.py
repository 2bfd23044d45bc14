"""Un-jitted transformations read globals and closure cells when they run, as Python
does; ``jit`` reads them when it compiles, as JAX does."""

import numpy as np
import pytest

import numbax as nx

scale = 2.0
power = 2
table = np.array([1.0, 2.0])


def scaled(x):
    return scale * x * x


def helper(x):
    return np.sin(x)


def calls_helper(x):
    return helper(x) * 2.0


def helper_reading_scale(x):
    return scale * x


def calls_helper_reading_scale(x):
    return helper_reading_scale(x) + x


def powered(x):
    return x**power


def weighted(x):
    return np.sum(table * x)


@pytest.fixture(autouse=True)
def _restore_globals():
    saved = dict(scale=scale, power=power, table=table, helper=helper)
    yield
    globals().update(saved)


def test_grad_reads_a_rebound_global_when_it_runs():
    global scale
    g = nx.grad(scaled)
    assert g(1.0) == 4.0
    scale = 3.0
    assert g(1.0) == 6.0
    assert nx.value_and_grad(scaled)(1.0) == (3.0, 6.0)


def test_grad_reads_the_global_of_a_helper_it_differentiates():
    global scale
    g = nx.grad(calls_helper_reading_scale)
    assert g(1.0) == 3.0
    scale = 5.0
    assert g(1.0) == 6.0


def test_grad_of_grad_reads_a_rebound_global():
    global scale
    g = nx.grad(nx.grad(scaled))
    assert g(1.0) == 4.0
    scale = 0.5
    assert g(1.0) == 1.0


def test_grad_reads_a_rebound_closure_cell():
    def make():
        k = 2.0

        def f(x):
            return k * x * x

        def set_k(value):
            nonlocal k
            k = value

        return f, set_k

    f, set_k = make()
    g = nx.grad(f)
    assert g(1.0) == 4.0
    set_k(10.0)
    assert g(1.0) == 20.0


def test_closures_of_the_same_text_keep_their_own_cells():
    def make(k):
        def f(x):
            return k * x

        return f

    g2, g3 = nx.grad(make(2.0)), nx.grad(make(3.0))
    assert (g2(1.0), g3(1.0), g2(1.0)) == (2.0, 3.0, 2.0)


def test_grad_follows_a_helper_that_was_replaced():
    global helper
    g = nx.grad(calls_helper)
    np.testing.assert_allclose(g(0.5), 2.0 * np.cos(0.5))
    helper = np.exp
    np.testing.assert_allclose(g(0.5), 2.0 * np.exp(0.5))

    def cube(x):
        return x * x * x

    helper = cube
    np.testing.assert_allclose(g(0.5), 2.0 * 3.0 * 0.25)


def test_a_rebound_integer_generates_again():
    global power
    g = nx.grad(powered)
    assert g(2.0) == 4.0
    power = 3
    assert g(2.0) == 12.0


def test_a_rebound_array_is_read_when_it_runs():
    global table
    g = nx.grad(weighted)
    np.testing.assert_allclose(g(np.zeros(2)), [1.0, 2.0])
    table = np.array([5.0, 7.0])
    np.testing.assert_allclose(g(np.zeros(2)), [5.0, 7.0])
    table = np.array([[1.0], [3.0]])  # another rank: generated again
    np.testing.assert_allclose(g(np.zeros((2, 1))), [[1.0], [3.0]])


def test_a_missing_global_is_a_name_error_until_defined():
    def reads_later(x):
        return later_defined * x  # noqa: F821

    g = nx.grad(reads_later)
    with pytest.raises(NameError, match="later_defined"):
        g(1.0)
    globals()["later_defined"] = 4.0
    try:
        assert g(1.0) == 4.0
    finally:
        del globals()["later_defined"]


def test_jit_captures_globals_when_it_compiles():
    global scale
    compiled = nx.jit(scaled)
    compiled_grad = nx.jit(nx.grad(scaled))
    assert (compiled(1.0), compiled_grad(1.0)) == (2.0, 4.0)
    scale = 3.0
    assert (compiled(1.0), compiled_grad(1.0)) == (2.0, 4.0)
    assert (nx.jit(scaled)(1.0), nx.jit(nx.grad(scaled))(1.0)) == (3.0, 6.0)
