"""Derivatives of shape functions, indexing, and functions without derivatives.

Every shape rule (rules/shapes.py) is checked against central finite differences, under
``nx.jit`` too, at the samples of its declaration (test_rule_table.py); here over more
signatures, interpreted, and each indexing form (under jit where marked). Then: float32 stays
float32, second derivatives (the adjoints' own rules), JAX's values, and functions that
mix differentiable code with constants (rules/constants.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.runtime import nxrt
from tests.helpers.fd import check_jacobians

rng = np.random.default_rng(20240611)
X = rng.normal(size=(2, 3, 4))  # 3-D
M = rng.normal(size=(3, 4))  # 2-D
M2 = rng.normal(size=(2, 4))
MC = rng.normal(size=(3, 2))
V = rng.normal(size=5)  # 1-D
W = rng.normal(size=3)
S = rng.normal(size=(4, 4))


def case(name, f, *args, jit=False, marks=()):
    return pytest.param(f, args, jit, id=name, marks=marks)


# Each function multiplies by a constant so that the output is a fresh array. Interpreted:
# each rule under jit is in test_rule_table.py.
SHAPES = [
    case("reshape", lambda x: np.reshape(x, (6, 4)) * 2, X),
    case("reshape-minus1", lambda x: np.reshape(x, (-1, 2)) * 2, X),
    case("reshape-method-varargs", lambda x: x.reshape(4, -1) * 2, X),
    case("reshape-method-tuple", lambda x: x.reshape((4, 6)) * 2, X),
    case("ravel", lambda x: np.ravel(x) * 2, X),
    case("ravel-of-transpose", lambda x: np.ravel(x.T) * 2, M),
    case("ravel-method", lambda x: x.ravel() * 2, X),
    case("flatten-method", lambda x: x.flatten() * 2, X),
    case("transpose", lambda x: np.transpose(x) * 2, X),
    case("transpose-axes", lambda x: np.transpose(x, (1, 2, 0)) * 2, X),
    case("transpose-negative-axes", lambda x: np.transpose(x, (-1, 0, 1)) * 2, X),
    case("transpose-method", lambda x: x.transpose() * 2, X),
    case("transpose-method-varargs", lambda x: x.transpose(2, 0, 1) * 2, X),
    case("transpose-method-tuple", lambda x: x.transpose((1, 0, 2)) * 2, X),
    case("T", lambda x: x.T * 2, M),
    case("T-3d", lambda x: x.T * 2, X),
    case("swapaxes", lambda x: np.swapaxes(x, 0, 2) * 2, X),
    case("swapaxes-method", lambda x: x.swapaxes(-1, 1) * 2, X),
    case("moveaxis", lambda x: np.moveaxis(x, 0, -1) * 2, X),
    case("moveaxis-tuples", lambda x: np.moveaxis(x, (0, 1), (2, 0)) * 2, X),
    case("expand_dims", lambda x: np.expand_dims(x, 1) * 2, M),
    case("expand_dims-negative", lambda x: np.expand_dims(x, -1) * 2, M),
    case("expand_dims-tuple", lambda x: np.expand_dims(x, (0, 2)) * 2, M),
    case("squeeze", lambda x: np.squeeze(x[:1]) * 2, X),
    case("squeeze-axis", lambda x: np.squeeze(x[:, :1], 1) * 2, X),
    case("squeeze-method", lambda x: x[:, :1].squeeze() * 2, X),
    case("concatenate", lambda a, b: np.concatenate((a, b)) * 2, M, M2),
    case("concatenate-list", lambda a, b: np.concatenate([a, b]) * 2, M, M2),
    case("concatenate-tuple-axis1", lambda a, b: np.concatenate((a, b), axis=1) * 2, M, MC),
    case("concatenate-axis-none", lambda a, b: np.concatenate((a, b), axis=None) * 2, M, V),
    case("concatenate-negative-axis", lambda a, b: np.concatenate((a, b), -2) * 2, M, M2),
    case("concatenate-same-twice", lambda a: np.concatenate((a, a, 3 * a)) * 2, V),
    case("concatenate-constant", lambda a: np.concatenate([a, np.ones(2)]) * 2, V),
    case("stack", lambda a, b: np.stack((a, b)) * 2, V, V[::-1] + 1),
    case("stack-list", lambda a, b: np.stack([a, b]) * 2, V, V[::-1] + 1),
    case("stack-axis", lambda a, b: np.stack((a, b), axis=-1) * 2, M, 2 * M),
    case("hstack-1d", lambda a, b: np.hstack((a, b)) * 2, V, W),
    case("hstack-2d", lambda a, b: np.hstack([a, b]) * 2, M, MC),
    case("vstack", lambda a, b: np.vstack((a, b)) * 2, M, M2),
    case("vstack-2d-1d", lambda a, b: np.vstack((a, b)) * 2, M, M2[0]),
    case("vstack-1d", lambda a, b: np.vstack([a, b]) * 2, V, 3 * V),
    case("ascontiguousarray", lambda x: np.ascontiguousarray(x.T) * 2, M),
    case("ascontiguousarray-scalar", lambda x: np.ascontiguousarray(x * 3.0), 0.7),
    case("broadcast_to", lambda x: np.broadcast_to(x, (2, 3, 4)) * 2, M),
    case("broadcast_to-stretch", lambda x: np.broadcast_to(x, (3, 4)) * 2, M[:1]),
    case("flip", lambda x: np.flip(x) * 2, X),
    case("flip-axis", lambda x: np.flip(x, 1) * 2, X),
    case("flip-axes", lambda x: np.flip(x, (0, 2)) * 2, X),
    case("fliplr", lambda x: np.fliplr(x) * 2, M),
    case("flipud", lambda x: np.flipud(x) * 2, M),
    case("roll", lambda x: np.roll(x, 2) * 2, X),
    case("roll-axis", lambda x: np.roll(x, -1, axis=1) * 2, X),
    case("roll-axes", lambda x: np.roll(x, (1, -2), axis=(0, 2)) * 2, X),
    case("tile", lambda x: np.tile(x, (2, 1)) * 2, M),
    case("tile-int", lambda x: np.tile(x, 3) * 2, V),
    case("tile-more-reps", lambda x: np.tile(x, (2, 1, 2)) * 2, M),
    case("repeat", lambda x: np.repeat(x, 2) * 2, M),
    case("repeat-axis", lambda x: np.repeat(x, 3, axis=1) * 2, M),
    case("repeat-counts", lambda x: np.repeat(x, np.array([1, 0, 2]), axis=0) * 2, M),
    case("repeat-method", lambda x: x.repeat(2, axis=0) * 2, M),
    case("diag-1d", lambda x: np.diag(x) * 2, V),
    case("diag-1d-k", lambda x: np.diag(x, -2) * 2, V),
    case("diag-2d", lambda x: np.diag(x) * 2, M),
    case("diag-2d-k", lambda x: np.diag(x, 1) * 2, M),
    case("triu", lambda x: np.triu(x) * 2, S),
    case("triu-k", lambda x: np.triu(x, 1) * 2, M),
    case("tril", lambda x: np.tril(x, -1) * 2, S),
    case("atleast_1d", lambda x: np.atleast_1d(x) * 2, V),
    case("atleast_1d-0d", lambda x: np.atleast_1d(x[0]) * 2, V),
    case("atleast_2d", lambda x: np.atleast_2d(x) * 2, V),
    case("astype", lambda x: x.astype(np.float64) * 2, V),
    case("astype-int-has-no-derivative", lambda x: x.astype(np.int64) * x, V * 3, jit=True),
    case("full", lambda x: np.full((3, 5), x[0]) * 2, V),
    case("full-array-fill", lambda x: np.full((2, 5), x) * 2, V),
    case("full_like", lambda x: np.full_like(x, x[1]) * x, V),
    case("linspace", lambda x: np.linspace(x[0], x[1], 4) * 2, V),
    case("linspace-no-endpoint", lambda x: np.linspace(x[0], x[1], 4, endpoint=False) * 2, V),
    case("linspace-arrays", lambda x: np.linspace(x[:2], x[2:4], 3) * 2, V),
]


@pytest.mark.parametrize(("f", "args", "jit"), SHAPES)
def test_shape_rule(f, args, jit):
    check_jacobians(f, *args, jit=jit)


# -- indexing ----------------------------------------------------------------------------
IDX = np.array([2, 0, 2, 3])  # repeated: cotangents accumulate
INDEXING = [
    case("int", lambda x: x[2] * 2, V),
    case("negative-int", lambda x: x[-1] * x[-2], V),
    case("slice", lambda x: x[1:4] * 2, V),
    case("slice-step", lambda x: x[::2] * 2, V),
    case("slice-negative-step", lambda x: x[::-2] * 2, V),
    case("slice-negative-bounds", lambda x: x[-1:0:-1] * 2, V),
    case("newaxis", lambda x: x[None] * 2, V),
    case("np-newaxis-tuple", lambda x: x[:, np.newaxis] * 2, V),
    case("int-array-repeated", lambda x: x[IDX] * 2, V, jit=True),
    case("int-array-negative", lambda x: x[np.array([-1, 0, -1])] * 2, V),
    case("int-array-2d", lambda x: x[np.array([[0, 1], [2, 2]])] * 2, V),
    case("int-list", lambda x: x[[0, 2, 2]] * 2, V),
    case("bool-mask", lambda x: x[x > 0] * 2, V),
    case(
        "bool-mask-jit",
        lambda x: x[x > 0] * 2,
        V,
        jit=True,
        marks=pytest.mark.xfail(
            reason="nxrt.index_add has no Numba implementation for boolean index arrays "
            "(overloads/tangents.py's _index_kind accepts integer arrays only)",
            strict=False,
        ),
    ),
    case("2d-int", lambda x: x[1] * 2, M),
    case("2d-int-int", lambda x: x[1, -2] * x[0, 0], M),
    case("2d-slices", lambda x: x[1:, ::2] * 2, M, jit=True),
    case("2d-slice-int-array", lambda x: x[:, IDX] * 2, M, jit=True),
    case("2d-int-array-int", lambda x: x[np.array([2, 0, 2]), 1] * 2, M),
    case("2d-int-arrays", lambda x: x[np.array([0, 2, 2]), np.array([1, 3, 1])] * 2, M),
    case("2d-newaxis-slice", lambda x: x[None, 1:, 2] * 2, M),
    case("3d-ellipsis", lambda x: x[..., 1] * 2, X, jit=True),
    case("3d-mixed", lambda x: x[1, :, IDX] * 2, X),
    case("index-twice", lambda x: x[0] * x[1:3].sum() + x[::-1] * x[4], V),
]


@pytest.mark.parametrize(("f", "args", "jit"), INDEXING)
def test_indexing(f, args, jit):
    check_jacobians(f, *args, jit=jit)


def index_tuple_variable(a, b):
    t = (a, b)
    return t[0] * t[1]


def index_tuple_then_array(a, b):
    t = (a, b)
    u = t[1]
    return u[1:] * t[0][0]


def index_tuple_argument(pair):
    return pair[0] * pair[1] + pair[0]


@pytest.mark.parametrize(
    "f", [index_tuple_variable, index_tuple_then_array], ids=["t[0]*t[1]", "t[1][1:]"]
)
def test_indexing_a_tuple_variable(f):
    check_jacobians(f, V, 2 * V + 1, jit=False)


def test_indexing_a_tuple_variable_under_jit():
    check_jacobians(index_tuple_variable, V, 2 * V + 1, jit=True)


def test_indexing_a_tuple_argument():
    pair = (V, 2 * V + 1)
    grad = nx.grad(lambda p: np.sum(index_tuple_argument(p)))(pair)
    np.testing.assert_allclose(grad[0], pair[1] + 1)
    np.testing.assert_allclose(grad[1], pair[0])


# -- functions without derivatives ------------------------------------------------------


def weighted_by_position(x):
    return np.sum(x * np.arange(x.shape[0]))


def at_argmax(x):
    return x[np.argmax(x)] * x[x.argmin()]


def with_shape_constants(x):
    n = x.size + x.ndim + len(x) + np.size(x) + np.shape(x)[0]
    z = np.zeros(x.shape) + np.ones_like(x) + np.full_like(x, 2.0) * 0
    e = np.eye(x.shape[0]) + np.identity(x.shape[0])
    return (e @ x) * n + z * x


def with_ndim(x):
    return x * np.ndim(x)


def with_rounding(x):
    return x * np.floor(x) + x * np.around(x, 1) + x * np.rint(x) + x * np.trunc(x) + np.sign(x) * x


def with_comparisons(x):
    keep = np.logical_and(np.greater(x, -0.5), np.less_equal(x, 1.5))
    keep = np.logical_or(keep, np.equal(x, x[0])) | np.logical_not(np.isfinite(x))
    keep = keep & ~np.isnan(x) & ~np.isinf(x) & np.not_equal(x, 100.0)
    keep = keep | (np.less(x, -3.0) & np.greater_equal(x, -4.0))
    return np.where(keep, x * x, 3 * x)


def with_sorting_and_counting(x):
    order = np.argsort(x)
    k = np.count_nonzero(x > 0) + np.searchsorted(np.sort(x), 0.0)
    first = np.nonzero(x > 0)[0][0]
    return x[order] * k + x[first] * (np.all(x > -10) + np.any(x > 10))


def with_dtype(x):
    return x * np.ones(x.shape, x.dtype) + x.astype(x.dtype)


def with_empty(x):
    y = np.empty_like(x)
    y[:] = 2.0
    z = np.empty(x.shape)
    z[:] = x
    return y * z + np.linspace(0.0, 1.0, x.shape[0]) * x


CONSTANTS = [
    case("x*arange(x.shape[0])", weighted_by_position, V, jit=True),
    case("x[argmax(x)]", at_argmax, V, jit=True),
    case("shape-size-ndim-zeros-eye", with_shape_constants, V, jit=True),
    case("ndim", with_ndim, V),
    case("rounding", with_rounding, V * 3),
    case("comparisons", with_comparisons, V),
    case("argsort-count-searchsorted-nonzero-all-any", with_sorting_and_counting, V),
    case("dtype-astype", with_dtype, V),
    case("empty-linspace-constants", with_empty, V),
]


@pytest.mark.parametrize(("f", "args", "jit"), CONSTANTS)
def test_functions_without_derivative(f, args, jit):
    check_jacobians(f, *args, jit=jit)


# -- float32, second order, JAX -----------------------------------------------------------
FLOAT32 = [
    case("reshape", lambda x: x.reshape(2, -1)),
    case("transpose", lambda x: np.transpose(x, (1, 0))),
    case("concatenate", lambda x: np.concatenate((x, 2 * x), axis=1)),
    case("stack", lambda x: np.stack((x, x * x))),
    case("tile", lambda x: np.tile(x, (1, 2))),
    case("repeat", lambda x: np.repeat(x, 2, axis=0)),
    case("roll", lambda x: np.roll(x, 1, axis=0)),
    case("diag", lambda x: np.diag(x, 1)),
    case("index-array", lambda x: x[:, IDX[:2]]),
    case("astype", lambda x: x.astype(np.float32) * x),
]


@pytest.mark.parametrize(("f", "args", "jit"), FLOAT32)
def test_float32_stays_float32(f, args, jit):
    x = M.astype(np.float32)
    g = nx.grad(lambda x: np.sum(f(x) * f(x)))(x)
    assert g.dtype == np.float32
    want = nx.grad(lambda x: np.sum(f(x) * f(x)))(M)
    np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-5)


SECOND_ORDER = [
    case("reshape", lambda x: np.reshape(x * x, (4, 3)), M),
    case("ravel-method", lambda x: (x * x).ravel(), M),
    case("squeeze", lambda x: np.squeeze(x[:1] * x[:1]), M),
    case("transpose-axes", lambda x: np.transpose(x * x, (1, 2, 0)), X),
    case("swapaxes", lambda x: np.swapaxes(x * x, 0, 1), M),
    case("concatenate", lambda x: np.concatenate((x * x, x), axis=1), M),
    case("hstack", lambda x: np.hstack((x * x, x[0])), V),
    case("stack", lambda x: np.stack((x * x, x), axis=1), V),
    case("flip", lambda x: np.flip(x * x), M),
    case("roll", lambda x: np.roll(x * x, 2), V),
    case("tile", lambda x: np.tile(x * x, 2), V),
    case("repeat", lambda x: np.repeat(x * x, 2), V),
    case("diag", lambda x: np.diag(x * x), V),
    case("triu", lambda x: np.triu(x * x), S),
    case("astype", lambda x: (x * x).astype(np.float64), V),
    case("index-array", lambda x: (x * x)[IDX], V),
    case("index-2d", lambda x: (x * x)[1:, IDX[:2]], M),
]


@pytest.mark.parametrize(("f", "args", "jit"), SECOND_ORDER)
def test_second_order(f, args, jit):
    check_jacobians(nx.grad(lambda x: np.sum(f(x) * f(x))), *args, jit=False)


@pytest.fixture
def jax_numpy():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, jax.numpy


def shapes_numpy(x, y):
    a = np.concatenate((x.reshape(4, 3), np.transpose(y)), axis=1)
    b = np.stack((np.flip(a, 0), np.roll(a, 1, axis=1)))
    c = np.tile(np.diag(x[0]), (2, 1)) + np.repeat(y[:, :2], 2, axis=0)[:4, :3].T.sum()
    d = np.moveaxis(b, 0, -1)[1, ::2] * np.hstack((x[:, 0], y[0, 1:]))[IDX[:2]]
    return np.sum(b * b) + np.sum(np.triu(c)) + np.sum(d)


def shapes_jax(x, y):
    import jax.numpy as jnp

    a = jnp.concatenate((x.reshape(4, 3), jnp.transpose(y)), axis=1)
    b = jnp.stack((jnp.flip(a, 0), jnp.roll(a, 1, axis=1)))
    c = jnp.tile(jnp.diag(x[0]), (2, 1)) + jnp.repeat(y[:, :2], 2, axis=0)[:4, :3].T.sum()
    d = jnp.moveaxis(b, 0, -1)[1, ::2] * jnp.hstack((x[:, 0], y[0, 1:]))[IDX[:2]]
    return jnp.sum(b * b) + jnp.sum(jnp.triu(c)) + jnp.sum(d)


def test_against_jax(jax_numpy):
    jax, _ = jax_numpy
    x, y = M, rng.normal(size=(3, 4))
    got = nx.grad(shapes_numpy, argnums=(0, 1))(x, y)
    want = jax.grad(shapes_jax, argnums=(0, 1))(x, y)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-10)


# -- the adjoint helpers themselves, interpreted and compiled ------------------------------


def test_helpers_agree_under_njit():
    """The adjoints' paths the rule tests above do not compile: lists of arrays (what
    ``np.concatenate([a, b])`` passes under jit) and ``join_like`` (second order)."""
    numba = pytest.importorskip("numba")

    @numba.njit
    def compiled(g, a, b):
        return (
            nxrt.split_like(g, [a, b], 0),
            nxrt.split_like(g.T.copy(), [a.T.copy(), b.T.copy()], -1),
            nxrt.unstack_like(np.stack((a, 2 * a)), [a, a], 0),
            nxrt.join_like((a, b), g, 0),
            nxrt.join_like([a, b], g, None),
            nxrt.uncast(g, g, np.int64),
        )

    a, b = M, M2
    g = np.concatenate((a, b))
    got = compiled(g, a, b)
    want = compiled.py_func(g, a, b)
    for k, (x, y) in enumerate(zip(got, want, strict=True)):
        assert type(x) is type(y), f"result {k}"
        for xi, yi in zip(x, y, strict=True) if isinstance(x, list) else [(x, y)]:
            np.testing.assert_allclose(xi, yi, err_msg=f"result {k}")
