"""numbax.random under nx.jit: the compiled functions give exactly the plain calls' numbers,
also when the samples feed further arithmetic, and reject what they cannot compile."""

import numpy as np
import pytest

import numbax as nx
from numbax import random as nr
from numbax.errors import CompileError
from tests.helpers.arrays import assert_identical

SEEDS = (0, 1, 1701, 2**31 - 1)
FLOATS = (np.float32, np.float64)


@nx.jit
def split_default(key):
    return nx.random.split(key)


@nx.jit
def split_shaped(key):
    return nx.random.split(key, (3, 4))


@nx.jit
def fold_in_pair(key, data):
    return nx.random.fold_in(key, data), nx.random.fold_in(key, -7)


@pytest.mark.parametrize("seed", SEEDS)
def test_split_and_fold_in(seed):
    key = nr.key(seed)
    assert_identical(split_default(key), nr.split(key))
    assert_identical(split_shaped(key), nr.split(key, (3, 4)))
    for data in (0, 5, 2**32 + 3):
        expected = (nr.fold_in(key, data), nr.fold_in(key, -7))
        for actual, want in zip(fold_in_pair(key, data), expected, strict=True):
            assert_identical(actual, want)


@nx.jit
def noisy(key, x):
    k1, k2 = nx.random.split(key)
    return x + nx.random.normal(k1, x.shape), 2.0 * nx.random.uniform(k2, x.shape) - 1.0


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 5)], ids=str)
def test_samples_feed_arithmetic(seed, shape):
    key = nr.key(seed)
    x = np.linspace(-1.0, 1.0, int(np.prod(shape))).reshape(shape)
    k1, k2 = nr.split(key)
    expected = (x + nr.normal(k1, x.shape), 2.0 * nr.uniform(k2, x.shape) - 1.0)
    for actual, want in zip(noisy(key, x), expected, strict=True):
        assert_identical(actual, want)


def test_generated_code_keeps_the_calls_as_written():
    """numbax.random's functions compile as the user wrote them (numbax.random registers
    their Numba implementations on the functions themselves)."""
    noisy(nr.key(0), np.zeros(3))
    assert "nx.random.split(key)" in noisy.source
    assert "nx.random.normal(k1, " in noisy.source


@nx.jit
def draws32(key):
    return (
        nx.random.normal(key, (3, 4), np.float32),
        nx.random.uniform(key, 10, dtype=np.float32, minval=-2.0, maxval=3),
    )


@nx.jit
def draws64(key, n):
    return nx.random.normal(key, n, np.float64), nx.random.uniform(key, (n, 2))


@pytest.mark.parametrize("seed", SEEDS)
def test_dtypes_and_shapes(seed):
    key = nr.key(seed)
    expected32 = (nr.normal(key, (3, 4), np.float32), nr.uniform(key, 10, np.float32, -2.0, 3))
    for actual, want in zip(draws32(key), expected32, strict=True):
        assert_identical(actual, want)
    for n in (1, 1000):
        expected64 = (nr.normal(key, n, np.float64), nr.uniform(key, (n, 2)))
        for actual, want in zip(draws64(key, n), expected64, strict=True):
            assert_identical(actual, want)


@nx.jit
def float32_noise(key, x):
    return x * nx.random.normal(key, x.shape, dtype=x.dtype)


def test_float32_samples_keep_float32():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = float32_noise(nr.key(3), x)
    assert result.dtype == np.float32
    assert_identical(result, x * nr.normal(nr.key(3), x.shape, np.float32))


@nx.jit
def all_bits(key):
    return (
        nx.random.bits(key, (4, 5)),
        nx.random.bits(key, 9, np.uint8),
        nx.random.bits(key, 9, np.uint16),
        nx.random.bits(key, (2, 3), np.uint64),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_plain_and_jitted_bits_are_bit_identical(seed):
    key = nr.key(seed)
    expected = (
        nr.bits(key, (4, 5)),
        nr.bits(key, 9, np.uint8),
        nr.bits(key, 9, np.uint16),
        nr.bits(key, (2, 3), np.uint64),
    )
    for actual, want in zip(all_bits(key), expected, strict=True):
        assert_identical(actual, want)


def test_loop_of_keys_under_jit():
    @nx.jit
    def walk(key, steps):
        total = np.zeros(3)
        for i in range(steps):
            total = total + nx.random.normal(nx.random.fold_in(key, i), 3)
        return total

    key = nr.key(11)
    expected = np.zeros(3)
    for i in range(4):
        expected = expected + nr.normal(nr.fold_in(key, i), 3)
    assert_identical(walk(key, 4), expected)


def test_unsupported_arguments_fail_to_compile():
    @nx.jit
    def float16_normal(key):
        return nx.random.normal(key, 3, np.float16)

    @nx.jit
    def signed_bits(key):
        return nx.random.bits(key, 3, np.int32)

    for fun in (float16_normal, signed_bits):
        with pytest.raises(CompileError):
            fun(nr.key(0))


@nx.jit
def scalar_bits(key):
    return nx.random.bits(nx.random.split(key, ()), (), np.uint8)


@nx.jit
def scalar_normal(key):
    return nx.random.normal(nx.random.split(key, ()), dtype=np.float32)


def test_scalar_shapes_give_scalars_with_the_plain_values():
    # Numba has no 0-d arrays to reshape to: shape () gives a scalar of the same value.
    k = nr.split(nr.key(5), ())
    assert_identical(scalar_bits(nr.key(5)), nr.bits(k, (), np.uint8))
    assert_identical(scalar_normal(nr.key(5)), nr.normal(k, (), np.float32))


@nx.jit
def uniform_array_bounds(key, lo, hi):
    return (
        nx.random.uniform(key, (3, 4), np.float32, lo, hi),
        nx.random.uniform(key, (2, 3), minval=lo[:3], maxval=5.0),
        nx.random.uniform(key, 4, minval=-1, maxval=hi[0]),
        nx.random.uniform(key, (), minval=lo[0:1].reshape(()), maxval=2.0),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_uniform_bounds_broadcast_to_the_shape(seed):
    key = nr.key(seed)
    lo = np.arange(4.0)
    hi = np.arange(3.0)[:, None] + np.array([10.0, 20.0, 30.0, 40.0])
    expected = (
        nr.uniform(key, (3, 4), np.float32, lo, hi),
        nr.uniform(key, (2, 3), minval=lo[:3], maxval=5.0),
        nr.uniform(key, 4, minval=-1, maxval=hi[0]),
        nr.uniform(key, (), minval=lo[0:1].reshape(()), maxval=2.0),
    )
    for actual, want in zip(uniform_array_bounds(key, lo, hi), expected, strict=True):
        assert_identical(actual, want)
    with pytest.raises(ValueError):  # lo[:3] of shape (3, 4) does not broadcast to (2, 3)
        uniform_array_bounds(key, np.ones((3, 4)), hi)
