"""The numbers and arrays a jitted function captures are parameters of its generated
code, passed at each call as they were when it compiled (``numba_backend/passes/captured.py``):
the closures of one code share one machine code, and ``jit`` still captures values when
it compiles, as JAX does."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx

X = np.linspace(0.1, 1.0, 5)
OFFSET = 0.5


def make(k, w):
    def f(x):
        return np.sum(np.sin(x) * k + w)

    return f


def make_steps(n):
    def f(x):
        total = 0.0
        for i in range(n):
            total = total + np.sum(x) * i
        return total

    return f


def scaled_by_offset(x, y=OFFSET):
    return np.sum(x * OFFSET) + y


def dispatcher(jitted):
    return jitted._latest.dispatcher


def test_closures_of_one_code_share_machine_code():
    first, second = make(0.5, np.arange(5.0)), make(-2.0, np.ones(5))
    jit_first, jit_second = nx.jit(first), nx.jit(second)
    assert jit_first(X) == pytest.approx(first(X), rel=1e-14)
    assert jit_second(X) == pytest.approx(second(X), rel=1e-14)
    assert dispatcher(jit_first) is dispatcher(jit_second)
    grad_first, grad_second = nx.jit(nx.grad(first)), nx.jit(nx.grad(second))
    np.testing.assert_allclose(grad_first(X), 0.5 * np.cos(X), rtol=1e-14)
    np.testing.assert_allclose(grad_second(X), -2.0 * np.cos(X), rtol=1e-14)
    assert dispatcher(grad_first) is dispatcher(grad_second)


def test_the_source_takes_them_first_and_says_so():
    jitted = nx.jit(make(0.5, np.arange(5.0)))
    jitted(X)
    assert "def f(k, w, x):" in jitted.source
    assert "# captured when compiled, passed in at each call: k, w" in jitted.source


def test_values_are_those_captured_when_it_compiled():
    weights = np.arange(5.0)
    jitted = nx.jit(make(0.5, weights))
    before = jitted(X)
    weights[:] = 100.0  # written in place: not seen, as with a constant compiled in
    assert jitted(X) == before
    rebound = weights + 1.0  # another array: a new jit captures it
    assert nx.jit(make(0.5, rebound))(X) == pytest.approx(make(0.5, rebound)(X), rel=1e-14)


def test_a_rebound_global_is_seen_by_a_new_jit_only():
    global OFFSET
    jitted = nx.jit(scaled_by_offset)
    assert jitted(X) == pytest.approx(scaled_by_offset(X), rel=1e-14)
    old = scaled_by_offset(X)
    OFFSET = 3.0
    try:
        assert jitted(X) == pytest.approx(old, rel=1e-14)
        # the default still holds the value the def line read (0.5)
        assert nx.jit(scaled_by_offset)(X) == pytest.approx(scaled_by_offset(X), rel=1e-14)
    finally:
        OFFSET = 0.5


def test_integers_are_passed_too():
    three, four = nx.jit(make_steps(3)), nx.jit(make_steps(4))
    assert three(X) == pytest.approx(make_steps(3)(X), rel=1e-14)
    assert four(X) == pytest.approx(make_steps(4)(X), rel=1e-14)
    assert "def f(n, x):" in three.source
    assert dispatcher(three) is dispatcher(four)


def make_pick(i, flag):
    pair = (1.0, np.full(5, 2.0))

    def f(x):
        chosen = pair[i]  # a tuple of two types indexed: Numba needs i as a constant
        return np.sum(x * chosen) if flag else 0.0

    return f


def test_integers_a_function_needs_as_constants_and_booleans_are_compiled_in():
    first, second = nx.jit(make_pick(0, True)), nx.jit(make_pick(1, True))
    assert first(X) == pytest.approx(make_pick(0, True)(X), rel=1e-14)
    assert second(X) == pytest.approx(make_pick(1, True)(X), rel=1e-14)
    assert "def f(x):" in first.source
    assert nx.jit(make_pick(0, False))(X) == 0.0


@pytest.mark.parametrize(
    ("k", "dtype"),
    [
        (1.5, np.float32),
        (np.float64(1.5), np.float32),
        (np.float32(1.5), np.float32),
        (1.5 + 0.5j, np.float32),
        (3, np.int8),
        (np.int64(3), np.int8),
    ],
    ids=["float", "f64", "f32", "complex", "int", "i64"],
)
def test_promotion_follows_numpy(k, dtype):
    def f(x):
        return x * k

    x = np.arange(4).astype(dtype)
    got, expected = nx.jit(f)(x), f(x)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_compiled_callers_and_ahead_of_time_compiles():
    inner = nx.jit(make(0.5, np.arange(5.0)))

    @nx.jit
    def outer(x):
        return inner(x) * 2.0

    expected = 2.0 * make(0.5, np.arange(5.0))(X)
    assert outer(X) == pytest.approx(expected, rel=1e-14)
    compiled = nx.jit(make(0.5, np.arange(5.0))).lower(X).compile()
    assert compiled(X) == pytest.approx(expected / 2.0, rel=1e-14)


def test_transformations_of_closures():
    k, w = 0.75, np.linspace(-1.0, 1.0, 5)
    f = make(k, w)
    np.testing.assert_allclose(
        nx.jit(nx.vmap(f))(np.stack([X, 2 * X])), [f(X), f(2 * X)], rtol=1e-14
    )
    np.testing.assert_allclose(nx.jit(nx.hessian(f))(X), np.diag(-k * np.sin(X)), atol=1e-14)


def test_a_write_into_a_captured_array_is_refused_at_the_users_line():
    table = np.zeros(3)

    def writes(x):
        table[0] = x
        return np.sum(table)

    with pytest.raises(nx.CompileError, match="table"):
        nx.jit(writes)(1.0)
