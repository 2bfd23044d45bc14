"""numbax.random's other samplers under nx.jit: the same numbers as the plain calls.

Bit for bit everywhere except ``multivariate_normal``, whose factorization and matrix
product are Numba's LAPACK/BLAS calls rather than NumPy's (compared to rounding).  The
float samplers are bit for bit because plain calls run the same compiled loops
(``numba_backend.random.kernels_more``).  Several samplers share one jitted function so
that the suite compiles few functions.
"""

import numpy as np
import pytest

import numbax as nx
from numbax import random as nr
from numbax.errors import CompileError
from tests.helpers.arrays import assert_identical

SEEDS = (0, 1701)
F32 = np.float32


def _all_same(actual, expected):
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected, strict=True):
        assert_identical(a, e)


@nx.jit
def integers(key, hi):
    return (
        nx.random.key(7),
        nx.random.PRNGKey(-3),
        nx.random.key_data(key),
        nx.random.wrap_key_data(nx.random.split(key, 3)),
        nx.random.randint(key, (3, 5), 0, 10),
        nx.random.randint(key, 6, -5, hi, np.int32),
        nx.random.randint(key, (4,), 0, 300, np.uint8),
        nx.random.randint(key, (), -(2**62), 2**62),
        nx.random.randint(key, (2, 6), hi - 100, 2**40, np.uint32),
    )


def plain_integers(key, hi):
    return (
        nr.key(7),
        nr.PRNGKey(-3),
        nr.key_data(key),
        nr.wrap_key_data(nr.split(key, 3)),
        nr.randint(key, (3, 5), 0, 10),
        nr.randint(key, 6, -5, hi, np.int32),
        nr.randint(key, (4,), 0, 300, np.uint8),
        nr.randint(key, (), -(2**62), 2**62),
        nr.randint(key, (2, 6), hi - 100, 2**40, np.uint32),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_keys_and_randint(seed):
    key, hi = nr.key(seed), np.array([3, 50, 7, 8, 9, 100])
    _all_same(integers(key, hi), plain_integers(key, hi))


@nx.jit
def floats(key, p, lower, a):
    return (
        nx.random.bernoulli(key, p),
        nx.random.bernoulli(key, 0.3, (4, 3)),
        nx.random.bernoulli(key, p, (7, 3), "high"),
        nx.random.exponential(key, (5, 2)),
        nx.random.exponential(key, 9, F32),
        nx.random.truncated_normal(key, lower, 2.0),
        nx.random.truncated_normal(key, -1.0, 1.5, (4,), F32),
        nx.random.gamma(key, a, (50, 4)),
        nx.random.gamma(key, 0.7, 6, F32),
        nx.random.beta(key, a, 2.0),
        nx.random.beta(key, 0.5, a.astype(F32), (3, 4), F32),
    )


def plain_floats(key, p, lower, a):
    return (
        nr.bernoulli(key, p),
        nr.bernoulli(key, 0.3, (4, 3)),
        nr.bernoulli(key, p, (7, 3), "high"),
        nr.exponential(key, (5, 2)),
        nr.exponential(key, 9, F32),
        nr.truncated_normal(key, lower, 2.0),
        nr.truncated_normal(key, -1.0, 1.5, (4,), F32),
        nr.gamma(key, a, (50, 4)),
        nr.gamma(key, 0.7, 6, F32),
        nr.beta(key, a, 2.0),
        nr.beta(key, 0.5, a.astype(F32), (3, 4), F32),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_float_samplers(seed):
    args = (
        nr.key(seed),
        np.array([0.1, 0.5, 0.9]),
        np.linspace(-3, 1, 6),
        np.array([0.3, 1.0, 2.5, 10.0]),
    )
    _all_same(floats(*args), plain_floats(*args))


LOGITS = np.linspace(-2.0, 2.0, 12).reshape(3, 4)
X = np.arange(24).reshape(4, 6)
P = np.array([0.1, 0.2, 0.3, 0.15, 0.25])


@nx.jit
def picks(key, logits, x, p):
    return (
        nx.random.categorical(key, logits),
        nx.random.categorical(key, logits.astype(np.float32), 0, (5, 4)),
        nx.random.permutation(key, 70_000),
        nx.random.permutation(key, x, 1),
        nx.random.permutation(key, x, 1, True),
        nx.random.permutation(key, x[0]),
        nx.random.choice(key, 10, (3, 4)),
        nx.random.choice(key, x, (5,), axis=1),
        nx.random.choice(key, x, (2,), replace=False, axis=1),
        nx.random.choice(key, 5, (100,), p=p),
        nx.random.choice(key, 5, (3,), replace=False, p=p),
        nx.random.choice(key, x[0]),
    )


def plain_picks(key, logits, x, p):
    return (
        nr.categorical(key, logits),
        nr.categorical(key, logits.astype(np.float32), 0, (5, 4)),
        nr.permutation(key, 70_000),  # two sort rounds
        nr.permutation(key, x, 1),
        nr.permutation(key, x, 1, True),
        nr.permutation(key, x[0]),
        nr.choice(key, 10, (3, 4)),
        nr.choice(key, x, (5,), axis=1),
        nr.choice(key, x, (2,), replace=False, axis=1),
        nr.choice(key, 5, (100,), p=p),
        nr.choice(key, 5, (3,), replace=False, p=p),
        nr.choice(key, x[0]),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_categorical_permutation_choice(seed):
    args = (nr.key(seed), LOGITS, X, P)
    _all_same(picks(*args), plain_picks(*args))


@nx.jit
def correlated(key, mean, cov):
    return (
        nx.random.multivariate_normal(key, mean, cov),
        nx.random.multivariate_normal(key, mean, cov, (10,)),
        nx.random.multivariate_normal(key, mean, cov, (2, 5), np.float32, "eigh"),
        nx.random.multivariate_normal(key, mean, cov, 4, method="svd"),
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_multivariate_normal_to_rounding(seed):
    key, mean, cov = nr.key(seed), np.arange(3.0), np.diag([2.0, 1.0, 0.5]) + 0.1
    expected = (
        nr.multivariate_normal(key, mean, cov),
        nr.multivariate_normal(key, mean, cov, (10,)),
        nr.multivariate_normal(key, mean, cov, (2, 5), np.float32, "eigh"),
        nr.multivariate_normal(key, mean, cov, 4, method="svd"),
    )
    for actual, want in zip(correlated(key, mean, cov), expected, strict=True):
        assert actual.shape == want.shape and actual.dtype == np.result_type(want.dtype, mean)
        np.testing.assert_allclose(actual, want, rtol=1e-12, atol=1e-12)


@nx.jit
def categorical_without_replacement(key, logits):
    return nx.random.categorical(key, logits, shape=(2,), replace=False)


@nx.jit
def permutation_on_a_variable_axis(key, x, axis):
    return nx.random.permutation(key, x, axis)


@nx.jit
def batched_covariances(key, mean, cov):
    return nx.random.multivariate_normal(key, mean, cov)


UNSUPPORTED = {
    "categorical-replace": (categorical_without_replacement, (LOGITS,), "replace=False"),
    "variable-axis": (permutation_on_a_variable_axis, (X, 1), "as a constant"),
    "batched-cov": (batched_covariances, (np.zeros(2), np.ones((3, 2, 2))), "2-D cov"),
}


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_unsupported_forms_name_the_function_and_the_fix(case):
    fun, args, hint = UNSUPPORTED[case]
    with pytest.raises(CompileError) as info:
        fun(nr.key(0), *args)
    message = str(info.value) + str(info.value.__cause__)
    assert hint in message and "numbax.random." in message
