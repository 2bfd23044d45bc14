"""Tests for numbax's extra samplers (numbax.random.more): shapes and dtypes, statistics,
bad input, and agreement with jax.random: bit for bit where numbax re-does JAX's
algorithm exactly, to rounding where XLA's log/erf/LAPACK differ (see the module)."""

import numpy as np
import pytest
from scipy import stats

from numbax.random import key
from numbax.random import more as nm
from tests.helpers.jax_x64 import jax_x64

F32, F64 = np.float32, np.float64
SEEDS = (0, 1701)


# -- shapes and dtypes

CASES = {
    "randint-int64": (lambda k: nm.randint(k, (3, 4), 0, 10), (3, 4), np.int64),
    "randint-int-shape": (lambda k: nm.randint(k, 5, 0, 10), (5,), np.int64),
    "randint-uint8": (lambda k: nm.randint(k, (6,), 0, 256, np.uint8), (6,), np.uint8),
    "randint-int16": (lambda k: nm.randint(k, (), -5, 5, np.int16), (), np.int16),
    "bernoulli-default": (lambda k: nm.bernoulli(k), (), np.bool_),
    "bernoulli-p-shape": (lambda k: nm.bernoulli(k, np.full(3, 0.2)), (3,), np.bool_),
    "bernoulli-shape": (lambda k: nm.bernoulli(k, 0.2, (2, 3)), (2, 3), np.bool_),
    "exponential-default": (lambda k: nm.exponential(k), (), F64),
    "exponential-float32": (lambda k: nm.exponential(k, (4,), F32), (4,), F32),
    "truncated_normal-broadcast": (
        lambda k: nm.truncated_normal(k, np.zeros(3), 1.0),
        (3,),
        F64,
    ),
    "truncated_normal-float32": (lambda k: nm.truncated_normal(k, -1, 1, 5, F32), (5,), F32),
    "categorical-batch": (lambda k: nm.categorical(k, np.zeros((4, 3))), (4,), np.int64),
    "categorical-axis0-shape": (
        lambda k: nm.categorical(k, np.zeros((4, 3)), 0, (2, 3)),
        (2, 3),
        np.int64,
    ),
    "categorical-noreplace": (
        lambda k: nm.categorical(k, np.zeros((5,)), shape=(3,), replace=False),
        (3,),
        np.int32,
    ),
    "choice-int": (lambda k: nm.choice(k, 5, (2, 3)), (2, 3), np.int64),
    "choice-array-axis1": (
        lambda k: nm.choice(k, np.ones((2, 6), F32), (4,), axis=1),
        (2, 4),
        F32,
    ),
    "choice-empty": (lambda k: nm.choice(k, 5, (0,)), (0,), np.int64),
    "permutation-int": (lambda k: nm.permutation(k, 6), (6,), np.int64),
    "permutation-array": (lambda k: nm.permutation(k, np.ones((3, 2), F32)), (3, 2), F32),
    "multivariate_normal-batch": (
        lambda k: nm.multivariate_normal(k, np.zeros(2), np.eye(2), (5,)),
        (5, 2),
        F64,
    ),
    "multivariate_normal-float32": (
        lambda k: nm.multivariate_normal(k, np.zeros(2, F32), np.eye(2, dtype=F32)),
        (2,),
        F32,
    ),
    "gamma-a-shape": (lambda k: nm.gamma(k, np.ones(3)), (3,), F64),
    "gamma-float32": (lambda k: nm.gamma(k, 2.0, (2, 2), F32), (2, 2), F32),
    "beta-broadcast": (lambda k: nm.beta(k, np.ones((2, 1)), np.ones(3)), (2, 3), F64),
}


@pytest.mark.parametrize("case", list(CASES))
def test_shape_and_dtype(case):
    fn, shape, dtype = CASES[case]
    out = fn(key(0))
    assert isinstance(out, np.ndarray) and out.shape == shape and out.dtype == dtype
    np.testing.assert_array_equal(out, fn(key(0)))  # deterministic


# -- statistics


def test_randint_uniform_and_in_range():
    x = nm.randint(key(1), 60_000, -3, 9)
    assert x.min() == -3 and x.max() == 8
    assert stats.chisquare(np.bincount(x + 3)).pvalue > 1e-3
    np.testing.assert_array_equal(nm.randint(key(1), 5, 4, 4), 4)  # empty range: minval
    assert nm.randint(key(1), 20_000, 0, 256, np.uint8).max() == 255


def test_bernoulli_mean():
    p = np.array([0.05, 0.5, 0.9])
    assert np.abs(nm.bernoulli(key(2), p, (40_000, 3)).mean(0) - p).max() < 0.01
    assert not nm.bernoulli(key(2), 0.0, 1000).any() and nm.bernoulli(key(2), 1.0, 1000).all()


def test_exponential_ks():
    assert stats.kstest(nm.exponential(key(3), 50_000), "expon").pvalue > 1e-3


def test_truncated_normal_ks_and_bounds():
    x = nm.truncated_normal(key(4), -0.5, 2.0, 50_000)
    assert x.min() > -0.5 and x.max() < 2.0
    assert stats.kstest(x, stats.truncnorm(-0.5, 2.0).cdf).pvalue > 1e-3


def test_categorical_frequencies():
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    counts = np.bincount(nm.categorical(key(5), logits, shape=(60_000,)), minlength=3)
    assert stats.chisquare(counts, 60_000 * np.array([0.1, 0.2, 0.7])).pvalue > 1e-3
    draws = nm.categorical(key(5), np.zeros((4, 6)), shape=(6, 4), replace=False)
    assert all(sorted(draws[:, j]) == list(range(6)) for j in range(4))


def test_choice_frequencies_and_without_replacement():
    p = np.array([0.5, 0.25, 0.125, 0.125])
    counts = np.bincount(nm.choice(key(6), 4, (40_000,), p=p), minlength=4)
    assert stats.chisquare(counts, 40_000 * p).pvalue > 1e-3
    for probs in (None, p):
        picks = nm.choice(key(6), 4, (4,), replace=False, p=probs)
        assert sorted(picks) == [0, 1, 2, 3]


def test_permutation_is_uniform_shuffle():
    firsts = np.array([nm.permutation(k, 5)[0] for k in nm.split(key(7), 5000)])
    assert stats.chisquare(np.bincount(firsts, minlength=5)).pvalue > 1e-3
    x = np.arange(12).reshape(3, 4)
    rows = nm.permutation(key(7), x)
    assert sorted(map(tuple, rows)) == sorted(map(tuple, x))
    ind = nm.permutation(key(7), x, axis=1, independent=True)
    np.testing.assert_array_equal(np.sort(ind, axis=1), x)


def test_multivariate_normal_moments():
    mean = np.array([1.0, -2.0])
    cov = np.array([[2.0, 0.6], [0.6, 0.5]])
    for method in ("cholesky", "svd", "eigh"):
        x = nm.multivariate_normal(key(8), mean, cov, (40_000,), method=method)
        np.testing.assert_allclose(x.mean(0), mean, atol=0.03)
        np.testing.assert_allclose(np.cov(x.T), cov, atol=0.05)


@pytest.mark.parametrize("a", [0.3, 1.0, 3.5], ids=lambda a: f"a{a}")
def test_gamma_ks(a):
    assert stats.kstest(nm.gamma(key(9), a, 20_000), stats.gamma(a).cdf).pvalue > 1e-3


def test_beta_ks():
    x = nm.beta(key(10), 0.5, 2.0, 20_000)
    assert x.min() >= 0 and x.max() <= 1
    assert stats.kstest(x, stats.beta(0.5, 2.0).cdf).pvalue > 1e-3


# -- bad input


BAD = {
    "randint-float-dtype": (TypeError, "integer dtypes", lambda: nm.randint(key(0), 3, 0, 5, F64)),
    "randint-bad-broadcast": (
        ValueError,
        "broadcast",
        lambda: nm.randint(key(0), (3,), np.zeros(4, int), 5),
    ),
    "bernoulli-int-p": (TypeError, "floating", lambda: nm.bernoulli(key(0), 1)),
    "bernoulli-mode": (ValueError, "mode", lambda: nm.bernoulli(key(0), mode="mid")),
    "exponential-int-dtype": (
        ValueError,
        "must be a float",
        lambda: nm.exponential(key(0), 3, np.int32),
    ),
    "truncated_normal-int-dtype": (
        ValueError,
        "must be a float",
        lambda: nm.truncated_normal(key(0), 0, 1, dtype=int),
    ),
    "gamma-int-dtype": (ValueError, "must be a float", lambda: nm.gamma(key(0), 1.0, dtype=int)),
    "beta-int-dtype": (ValueError, "must be a float", lambda: nm.beta(key(0), 1, 1, dtype=int)),
    "categorical-int-logits": (ValueError, "float", lambda: nm.categorical(key(0), [1, 2])),
    "categorical-too-many": (
        ValueError,
        "cannot exceed",
        lambda: nm.categorical(key(0), np.zeros(3), shape=(4,), replace=False),
    ),
    "choice-too-many": (
        ValueError,
        r"Cannot take a larger sample \(size 4\) than population \(size 3\) when 'replace=False'",
        lambda: nm.choice(key(0), 3, (4,), replace=False),
    ),
    "choice-p-shape": (ValueError, "p must be None or a 1D", lambda: nm.choice(key(0), 3, p=[1.0])),
    "choice-p-sum": (ValueError, "sum to 1", lambda: nm.choice(key(0), 3, p=[0.5, 0.2, 0.2])),
    "choice-p-negative": (
        ValueError,
        "non-negative",
        lambda: nm.choice(key(0), 2, p=[1.5, -0.5]),
    ),
    "choice-empty-population": (ValueError, "greater than 0", lambda: nm.choice(key(0), 0)),
    "permutation-float": (TypeError, "integer", lambda: nm.permutation(key(0), 3.0)),
    "multivariate_normal-cov-shape": (
        ValueError,
        "cov.shape",
        lambda: nm.multivariate_normal(key(0), np.zeros(2), np.eye(3)),
    ),
    "multivariate_normal-method": (
        ValueError,
        "method",
        lambda: nm.multivariate_normal(key(0), np.zeros(2), np.eye(2), method="qr"),
    ),
    "not-a-key": (TypeError, "key", lambda: nm.randint(np.zeros(2, np.int32), 3, 0, 5)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input(case):
    error, match, call = BAD[case]
    with pytest.raises(error, match=match):
        call()


# -- agreement with jax.random


def _both(seed, call):
    """``call(random_module, key)`` with numbax and with JAX (x64 on)."""
    ours = call(nm, key(seed))
    with jax_x64() as jax:
        theirs = np.asarray(call(jax.random, jax.random.PRNGKey(seed)))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    return ours, theirs


_P = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
_X = np.arange(24).reshape(4, 6)
_LOGITS = np.linspace(-2.0, 2.0, 12).reshape(3, 4)

EXACT = {
    "randint-int64-shape3x50": lambda r, k: r.randint(k, (3, 50), -5, 100),
    "randint-int32-shape50": lambda r, k: r.randint(k, (50,), -5, 100, np.int32),
    "randint-uint8-shape50": lambda r, k: r.randint(k, (50,), 0, 300, np.uint8),
    "randint-int16-shape50": lambda r, k: r.randint(k, (50,), -1000, 1000, np.int16),
    "randint-int64-wide-shape100": lambda r, k: r.randint(k, (100,), -(2**62), 2**62),
    "randint-int64-arraybounds-shape4x3": lambda r, k: r.randint(
        k, (4, 3), np.array([0, 10, 20]), np.array([[5], [50], [7], [8]])
    ),
    "bernoulli-float64-shape100": lambda r, k: r.bernoulli(k, 0.3, (100,)),
    "bernoulli-float32-shape100": lambda r, k: r.bernoulli(k, np.float32(0.3), (100,)),
    "bernoulli-high-shape7x3": lambda r, k: r.bernoulli(
        k, np.array([0.1, 0.5, 0.9]), (7, 3), "high"
    ),
    "permutation-int-n1": lambda r, k: r.permutation(k, 1),
    "permutation-int-n100": lambda r, k: r.permutation(k, 100),
    "permutation-int-n70000": lambda r, k: r.permutation(k, 70_000),  # two sort rounds
    "permutation-axis1-shape4x6": lambda r, k: r.permutation(k, _X, 1),
    "permutation-independent-shape4x6": lambda r, k: r.permutation(k, _X, 1, True),
    "choice-int-shape3x4": lambda r, k: r.choice(k, 10, (3, 4)),
    "choice-axis1-shape5": lambda r, k: r.choice(k, _X, (5,), axis=1),
    "choice-noreplace-shape2": lambda r, k: r.choice(k, _X, (2,), replace=False, axis=1),
    "choice-p-float64-shape100": lambda r, k: r.choice(k, 5, (100,), p=_P),
    "choice-p-float32-shape100": lambda r, k: r.choice(
        k, 1000, (100,), p=np.full(1000, 1 / 1000, np.float32)
    ),
    # Gumbel-based: the same in these checks, though not guaranteed (see the module).
    "choice-p-noreplace-shape3": lambda r, k: r.choice(k, 5, (3,), replace=False, p=_P),
    "categorical-float64-shape3": lambda r, k: r.categorical(k, _LOGITS),
    "categorical-float32-axis0-shape5x4": lambda r, k: r.categorical(
        k, _LOGITS.astype(np.float32), 0, (5, 4)
    ),
    "categorical-noreplace-shape2x3": lambda r, k: r.categorical(
        k, _LOGITS, shape=(2, 3), replace=False
    ),
}


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("case", list(EXACT))
def test_matches_jax_bit_for_bit(case, seed):
    ours, theirs = _both(seed, EXACT[case])
    np.testing.assert_array_equal(ours, theirs)


# name: (call, max ulp) or (call, rtol)
CLOSE = {
    "exponential-float32-shape1000": (lambda r, k: r.exponential(k, (1000,), F32), ("ulp", 2)),
    "exponential-float64-shape1000": (lambda r, k: r.exponential(k, (1000,), F64), ("ulp", 2)),
    "truncated_normal-float32-shape1000": (
        lambda r, k: r.truncated_normal(k, -1.0, 2.0, (1000,), F32),
        ("rtol", 1e-4),
    ),
    "truncated_normal-float64-shape1000": (
        lambda r, k: r.truncated_normal(k, -1.0, 2.0, (1000,), F64),
        ("rtol", 1e-12),
    ),
    "multivariate_normal-cholesky-shape10": (
        lambda r, k: r.multivariate_normal(
            k, np.arange(3.0), np.diag([2.0, 1.0, 0.5]) + 0.1, (10,)
        ),
        ("rtol", 1e-12),
    ),
    "multivariate_normal-eigh-shape10": (
        lambda r, k: r.multivariate_normal(
            k, np.arange(3.0), np.diag([2.0, 1.0, 0.5]) + 0.1, (10,), method="eigh"
        ),
        ("rtol", 1e-12),
    ),
    "gamma-float64-shape50x4": (
        lambda r, k: r.gamma(k, np.array([0.3, 1.0, 2.5, 10.0]), (50, 4), F64),
        ("rtol", 1e-12),
    ),
    "gamma-float32-shape50x4": (
        lambda r, k: r.gamma(k, np.array([0.3, 1.0, 2.5, 10.0], F32), (50, 4), F32),
        ("rtol", 1e-5),
    ),
    "beta-float64-shape50x3": (
        lambda r, k: r.beta(k, np.array([0.3, 1.0, 2.5]), 2.0, (50, 3), F64),
        ("rtol", 1e-12),
    ),
}


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed{s}")
@pytest.mark.parametrize("case", list(CLOSE))
def test_matches_jax_to_rounding(case, seed):
    call, (kind, tol) = CLOSE[case]
    ours, theirs = _both(seed, call)
    if kind == "ulp":
        np.testing.assert_array_max_ulp(ours, theirs, maxulp=tol)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=0)
