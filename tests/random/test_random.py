"""Tests for numbax.random: determinism, independence, shapes, statistics, errors, and
bit-identity with jax.random (normal: within a few ulp, see numbax.random.normal)."""

import numpy as np
import pytest
from scipy import stats

from numbax import random as nr
from tests.helpers.jax_x64 import jax_x64

SEEDS = (0, 1, 42, 1701, 2**31 - 1)
SHAPES = ((), 1, 7, (3, 4), 1000)
FLOATS = (np.float32, np.float64)
# Max ulp distance of normal() from JAX, from XLA's log/log1p differing from ours.
NORMAL_MAX_ULP = {np.float32: 3, np.float64: 4}


def _shape_tuple(shape):
    return (shape,) if isinstance(shape, int) else shape


# -- determinism, independence, shapes


def test_key_is_raw_uint32_pair():
    k = nr.key(42)
    assert k.dtype == np.uint32 and k.shape == (2,)
    np.testing.assert_array_equal(k, nr.PRNGKey(42))
    np.testing.assert_array_equal(nr.key(2**32 + 5), [1, 5])
    np.testing.assert_array_equal(nr.key(-1), [2**32 - 1, 2**32 - 1])
    assert nr.key_data(k) is not None and nr.wrap_key_data(k).shape == (2,)


@pytest.mark.parametrize("fn", [nr.bits, nr.uniform, nr.normal])
def test_deterministic(fn):
    np.testing.assert_array_equal(fn(nr.key(7), (5, 3)), fn(nr.key(7), (5, 3)))


def test_split_keys_give_different_streams():
    keys = nr.split(nr.key(0), 4)
    draws = [nr.bits(k, 64) for k in keys] + [nr.bits(nr.key(0), 64)]
    # (as in JAX, fold_in(key, i) equals split(key, n)[i], so fold in an i >= 4)
    draws.append(nr.bits(nr.fold_in(nr.key(0), 99), 64))
    assert len({d.tobytes() for d in draws}) == len(draws)


def test_split_and_fold_in_shapes():
    assert nr.split(nr.key(0)).shape == (2, 2)
    assert nr.split(nr.key(0), (3, 4)).shape == (3, 4, 2)
    assert nr.fold_in(nr.key(0), 3).shape == (2,)
    assert nr.split(nr.key(0)).dtype == nr.fold_in(nr.key(0), 3).dtype == np.uint32


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fn", [nr.uniform, nr.normal], ids=lambda f: f.__name__)
def test_float_shapes_and_dtypes(fn, dtype, shape):
    out = fn(nr.key(0), shape, dtype)
    assert isinstance(out, np.ndarray)
    assert out.shape == _shape_tuple(shape) and out.dtype == dtype


def test_defaults_are_scalar_float64_and_uint32():
    assert nr.uniform(nr.key(0)).dtype == nr.normal(nr.key(0)).dtype == np.float64
    assert nr.uniform(nr.key(0)).shape == ()
    assert nr.bits(nr.key(0), 3).dtype == np.uint32
    assert nr.bits(nr.key(0), 3, np.uint64).dtype == np.uint64


def test_uniform_range():
    u = nr.uniform(nr.key(3), 10_000, minval=-2.0, maxval=5.0)
    assert u.min() >= -2.0 and u.max() < 5.0
    u = nr.uniform(nr.key(3), (2, 3), minval=np.array([0.0, 10.0, 20.0]), maxval=30.0)
    assert np.all(u[:, 1:] >= 10.0)


# -- statistics (10^5 samples)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_uniform_statistics(dtype):
    u = nr.uniform(nr.key(11), 100_000, dtype).astype(np.float64)
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert stats.kstest(u, "uniform").pvalue > 1e-3


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_normal_statistics(dtype):
    z = nr.normal(nr.key(12), 100_000, dtype).astype(np.float64)
    assert abs(z.mean()) < 0.015 and abs(z.var() - 1.0) < 0.015
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_bits_are_balanced():
    b = nr.bits(nr.key(5), 100_000)
    ones = np.unpackbits(b.view(np.uint8)).mean()
    assert abs(ones - 0.5) < 0.001


# -- bad input


@pytest.mark.parametrize(
    "bad",
    [3, np.zeros(3, np.uint32), np.zeros(2, np.float32), np.zeros(2, np.int32),
     np.zeros((2, 2), np.uint32)],
    ids=["int", "shape3", "float32", "int32", "batched"],
)  # fmt: skip
@pytest.mark.parametrize("fn", [nr.split, nr.bits, nr.uniform, nr.normal])
def test_non_key_raises_type_error(fn, bad):
    with pytest.raises(TypeError, match="key"):
        fn(bad)


def test_batched_key_data_is_accepted_by_key_data():
    assert nr.key_data(nr.split(nr.key(0), 3)).shape == (3, 2)
    with pytest.raises(TypeError, match="uint32"):
        nr.wrap_key_data(np.zeros(2, np.int64))


@pytest.mark.parametrize("fn", [nr.uniform, nr.normal], ids=lambda f: f.__name__)
def test_integer_dtype_raises_value_error(fn):
    with pytest.raises(ValueError, match=f"dtype argument to `{fn.__name__}` must be a float"):
        fn(nr.key(0), 3, np.int32)


def test_other_bad_input():
    with pytest.raises(ValueError, match="unsigned"):
        nr.bits(nr.key(0), 3, np.int32)
    with pytest.raises(TypeError, match="seed"):
        nr.key(1.5)
    with pytest.raises(TypeError, match="scalar"):
        nr.fold_in(nr.key(0), np.arange(3))
    with pytest.raises(TypeError, match="shape"):
        nr.uniform(nr.key(0), (-1,))
    with pytest.raises(ValueError, match="broadcast"):
        nr.uniform(nr.key(0), 3, minval=np.zeros(4))


# -- bit-identity with jax.random


def _seed_id(seed):
    return f"seed{seed}"


def _shape_id(shape):
    return "shape" + "x".join(map(str, _shape_tuple(shape))) if shape != () else "scalar"


@pytest.mark.parametrize("seed", SEEDS, ids=_seed_id)
def test_keys_match_jax(seed):
    jax_random = pytest.importorskip("jax.random")
    k, jk = nr.key(seed), jax_random.PRNGKey(seed)
    np.testing.assert_array_equal(k, np.asarray(jk))
    np.testing.assert_array_equal(
        nr.key_data(k), np.asarray(jax_random.key_data(jax_random.key(seed)))
    )
    np.testing.assert_array_equal(nr.split(k), np.asarray(jax_random.split(jk)))
    np.testing.assert_array_equal(nr.split(k, (3, 4)), np.asarray(jax_random.split(jk, (3, 4))))
    for data in (0, 7, 2**31):
        np.testing.assert_array_equal(nr.fold_in(k, data), np.asarray(jax_random.fold_in(jk, data)))


@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
@pytest.mark.parametrize("seed", SEEDS, ids=_seed_id)
def test_bits_uint32_matches_jax(seed, shape):
    jax_random = pytest.importorskip("jax.random")
    expected = np.asarray(jax_random.bits(jax_random.PRNGKey(seed), shape, np.uint32))
    np.testing.assert_array_equal(nr.bits(nr.key(seed), shape, np.uint32), expected, strict=True)


def _jax_float_draw(fn_name, seed, shape, dtype):
    """JAX's draw; float64 with x64 on (else JAX would give float32), float32 with it off."""
    with jax_x64(dtype == np.float64) as jax:
        return np.asarray(getattr(jax.random, fn_name)(jax.random.PRNGKey(seed), shape, dtype))


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
@pytest.mark.parametrize("seed", SEEDS, ids=_seed_id)
def test_uniform_matches_jax(seed, shape, dtype):
    expected = _jax_float_draw("uniform", seed, shape, dtype)
    np.testing.assert_array_equal(nr.uniform(nr.key(seed), shape, dtype), expected, strict=True)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=_shape_id)
@pytest.mark.parametrize("seed", SEEDS, ids=_seed_id)
def test_normal_matches_jax_within_ulp(seed, shape, dtype):
    expected = _jax_float_draw("normal", seed, shape, dtype)
    actual = nr.normal(nr.key(seed), shape, dtype)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_array_max_ulp(actual, expected, maxulp=NORMAL_MAX_ULP[dtype])
