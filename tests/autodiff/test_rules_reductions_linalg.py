"""Derivatives of reductions and linear algebra (rules/reductions.py, rules/linalg.py and
their helpers in numbax/runtime/reductions.py, linalg.py).

Every rule is checked against central finite differences, under ``nx.jit`` and over
the signatures that matter (``axis`` None, an int, negative, a tuple; ``keepdims``;
stacks of matrices; every kind of einsum), at the samples of its declaration, by
test_rule_table.py. Here: slogdet, and the special cases: ``prod``/``cumprod`` with
zeros (exact, no ``ans / x``), ``max``/``min`` ties (the derivative shared equally, as
JAX does), float32 staying float32, second and third derivatives, JAX's values, and the
helpers themselves (adjoint identities, Numba).

Functions are written one per line: numbax reads a lambda's source by its line.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.runtime import nxrt
from tests.helpers.fd import check_jacobians, numeric_jacobian

rng = np.random.default_rng(20240614)


def distinct(*shape, low=-2.0, high=2.0, gap=0.05):
    """Distinct values of distinct magnitudes, at least ``gap`` from 0: no ties, no kinks."""
    n = int(np.prod(shape))
    values = np.linspace(low, high, 4 * n) + 0.0137  # shifted: no two equal |values|
    values = values[np.abs(values) > gap]
    return rng.permutation(values)[:n].reshape(shape)


X = distinct(3, 4)
X3 = distinct(2, 3, 4)
V = distinct(4)
W = distinct(3)
B = distinct(4, 2)
B3 = distinct(2, 4, 2)
M = distinct(3, 3) + 4 * np.eye(3)  # well conditioned
M3 = distinct(2, 3, 3) + 4 * np.eye(3)
NEG = np.array([[0.5, 2.0, 0.3], [1.0, 0.2, 1.5], [0.1, 1.2, 0.4]])  # det < 0
SPD = M @ M.T + np.eye(3)
SPD3 = M3 @ np.swapaxes(M3, -1, -2) + np.eye(3)


def slogdet_parts(m):
    sign, logdet = np.linalg.slogdet(m)
    return sign * logdet


def test_slogdet_under_jit():
    check_jacobians(slogdet_parts, NEG, name="slogdet", jit=True)


@pytest.mark.xfail(
    reason="numba_backend/passes/fuse.py fuses np.matmul (a gufunc) into an elementwise kernel",
    strict=False,
)
def test_matmul_function_under_jit():
    check_jacobians(lambda a, b: np.matmul(a, b), X, B, name="matmul-function", jit=True)


# Each matrix function at the samples of its rule: test_rule_table.py. Here: a negative
# determinant, and slogdet's (sign, logdet) pair.
MATRIX_FUNCTIONS = [
    pytest.param(lambda m: np.linalg.det(m), (NEG,), id="det-negative"),
    pytest.param(slogdet_parts, (M3,), id="slogdet-stack"),
    pytest.param(lambda m: np.linalg.slogdet(m)[1], (NEG,), id="slogdet-index"),
]


@pytest.mark.parametrize("f, args", MATRIX_FUNCTIONS)
def test_matrix_function(request, f, args):
    check_jacobians(f, *args, name=request.node.callspec.id, jit=False)


def test_cholesky_reads_the_lower_triangle():
    """np.linalg.cholesky ignores the strict upper triangle: so do its derivatives."""
    jac = nx.jacrev(np.linalg.cholesky)(SPD)
    upper = np.triu(np.ones((3, 3)), 1).astype(bool)
    assert np.all(jac[..., upper] == 0)
    assert np.allclose(nx.jacfwd(np.linalg.cholesky)(SPD), jac)


# -- zeros and ties --------------------------------------------------------------------

ONE_ZERO = X.copy()
ONE_ZERO[1, 2] = 0.0
TWO_ZEROS = ONE_ZERO.copy()
TWO_ZEROS[1, 0] = 0.0
TWO_ZEROS[2, 3] = 0.0

ZEROS = [
    pytest.param(lambda x: np.prod(x), (ONE_ZERO,), id="prod-all-one-zero"),
    pytest.param(lambda x: np.prod(x, axis=1), (TWO_ZEROS,), id="prod-row-two-zeros"),
    pytest.param(lambda x: np.prod(x, axis=0, keepdims=True), (TWO_ZEROS,), id="prod-columns"),
    pytest.param(lambda x: np.cumprod(x), (ONE_ZERO,), id="cumprod-flat-one-zero"),
    pytest.param(lambda x: np.cumprod(x, axis=1), (TWO_ZEROS,), id="cumprod-row-two-zeros"),
    pytest.param(lambda x: np.sum(np.prod(x, axis=1) ** 2), (TWO_ZEROS,), id="prod-squared"),
]


@pytest.mark.parametrize("f, args", ZEROS)
def test_zeros_are_exact(request, f, args):
    """prod's derivative is the product of the other elements, never ans / x."""
    check_jacobians(f, *args, name=request.node.callspec.id, jit=False)


def test_prod_second_derivative_with_zeros():
    x = np.array([1.5, 0.0, -2.0, 0.7, 0.0])
    hess = nx.hessian(np.prod)(x)
    want = np.zeros((5, 5))
    for i in range(5):
        for j in range(5):
            if i != j:
                want[i, j] = np.prod(np.delete(x, [i, j]))
    np.testing.assert_array_equal(hess, want)
    one_zero = x[:4]
    check_jacobians(nx.grad(np.prod), one_zero, name="grad of prod", jit=False)


def test_max_ties_share_the_derivative():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0]])
    want = np.array([[0.0, 0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3, 0.0]])
    np.testing.assert_allclose(nx.grad(lambda x: np.sum(np.max(x, axis=1)))(x), want)
    jac = nx.jacfwd(lambda x: np.max(x, axis=1))(x)
    np.testing.assert_allclose(jac[[0, 1], [0, 1]], want)
    np.testing.assert_allclose(nx.grad(lambda x: np.min(x))(-x)[1], [1 / 3, 1 / 3, 1 / 3, 0])
    np.testing.assert_allclose(nx.grad(lambda x: np.linalg.norm(x, np.inf))(x[1]), want[1])


# -- dtypes and higher derivatives -----------------------------------------------------

F32 = (X + np.eye(3, 4) * 3).astype(np.float32)

# Each a scalar function of a (3, 4) array (one function per line, no closures: numbax
# would not tell closures of one source apart).
FLOAT32 = [
    pytest.param(lambda x: np.sum(np.sum(x, axis=0) ** 2), id="sum"),
    pytest.param(lambda x: np.sum(np.mean(x, axis=1) ** 2), id="mean"),
    pytest.param(lambda x: np.sum(np.prod(x, axis=1)), id="prod"),
    pytest.param(lambda x: np.sum(np.max(x, axis=0)), id="max"),
    pytest.param(lambda x: np.sum(np.var(x, axis=1)), id="var"),
    pytest.param(lambda x: np.std(x), id="std"),
    pytest.param(lambda x: np.sum(np.cumsum(x) ** 2), id="cumsum"),
    pytest.param(lambda x: np.sum(np.cumprod(x)), id="cumprod"),
    pytest.param(lambda x: np.sum(np.linalg.norm(x, axis=0)), id="norm"),
    pytest.param(lambda x: np.trace(x), id="trace"),
    pytest.param(lambda x: np.sum(np.einsum("ij,kj->ik", x, x)), id="einsum"),
    pytest.param(lambda x: np.sum(np.dot(x, x.T)), id="dot"),
    pytest.param(lambda x: np.sum(np.tensordot(x, x, axes=((1,), (1,)))), id="tensordot"),
    pytest.param(lambda x: np.sum(np.linalg.inv(x[:, :3])), id="inv"),
    pytest.param(lambda x: np.linalg.det(x[:, :3]), id="det"),
    pytest.param(lambda x: np.sum(np.linalg.solve(x[:, :3], x[:, 3])), id="solve"),
    pytest.param(lambda x: np.sum(np.linalg.cholesky(x @ x.T)), id="cholesky"),
]


@pytest.mark.parametrize("f", FLOAT32)
def test_float32_stays_float32(f):
    grad = nx.grad(f)
    g = grad(F32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, grad(F32.astype(np.float64)), rtol=1e-3, atol=1e-4)


def test_float32_stays_float32_under_jit():
    """The divisors of mean/var/std are scalars of a's dtype, not float64 (Numba has no
    weak scalars): one compiled gradient through several reductions."""
    grad = nx.jit(nx.grad(lambda x: np.sum(np.var(x, axis=1) * np.mean(x, axis=1))))
    g = grad(F32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, grad(F32.astype(np.float64)), rtol=1e-4, atol=1e-5)


SECOND_ORDER = [
    pytest.param(lambda x: np.sum(np.prod(x, axis=1)), X, id="prod"),
    pytest.param(lambda x: np.sum(np.max(x * x, axis=0)), X, id="max"),
    pytest.param(lambda x: np.sum(np.var(x, axis=1, ddof=1)), X, id="var"),
    pytest.param(lambda x: np.sum(np.std(x, axis=0)), X, id="std"),
    pytest.param(lambda x: np.sum(np.cumsum(x * x, axis=1)), X, id="cumsum"),
    pytest.param(lambda x: np.sum(np.cumprod(x, axis=1)), X, id="cumprod"),
    pytest.param(lambda x: np.sum(np.linalg.norm(x, axis=1)), X, id="norm"),
    pytest.param(lambda x: np.sum(np.linalg.norm(x, 3, axis=0)), X, id="norm-3"),
    pytest.param(lambda x: np.trace(x @ x.T), X, id="trace"),
    pytest.param(lambda x: np.sum(np.dot(x, B) ** 2), X, id="dot"),
    pytest.param(lambda x: np.sum(np.outer(x, x) ** 2), W, id="outer"),
    pytest.param(lambda x: np.sum(np.inner(x, x) ** 2), X, id="inner"),
    pytest.param(lambda x: np.vdot(x, x) ** 2, X, id="vdot"),
    pytest.param(lambda x: np.sum(np.tensordot(x, x, axes=((0, 1), (0, 1)))), X, id="tensordot"),
    pytest.param(lambda x: np.sum(np.einsum("ij,ik->jk", x, x) ** 2), X, id="einsum"),
    pytest.param(lambda m: np.sum(np.linalg.inv(m)), M, id="inv"),
    pytest.param(lambda m: np.linalg.det(m), M, id="det"),
    pytest.param(lambda m: np.linalg.slogdet(m)[1], M, id="slogdet"),
    pytest.param(lambda m: np.sum(np.linalg.solve(m, W) ** 2), M, id="solve"),
    pytest.param(lambda m: np.sum(np.linalg.cholesky(m @ m.T + np.eye(3))), M, id="cholesky"),
]


@pytest.mark.parametrize("f, x", SECOND_ORDER)
def test_second_derivative(request, f, x):
    check_jacobians(nx.grad(f), x, name=f"grad of {request.node.callspec.id}", jit=False)


THIRD_ORDER = [
    pytest.param(lambda x: np.sum(np.einsum("ij,jk,kl->il", x, x, x)), M, id="einsum"),
    pytest.param(lambda x: np.sum(np.cumprod(x)), V, id="cumprod"),
    pytest.param(lambda x: np.prod(x), V, id="prod"),
    pytest.param(lambda x: np.linalg.norm(x, 3), V, id="norm-3"),
    pytest.param(lambda x: np.sum(np.dot(x, x) ** 2), M, id="dot"),
]


@pytest.mark.parametrize("f, x", THIRD_ORDER)
def test_third_derivative(request, f, x):
    """Derivatives of the helpers' own rules: the Jacobian of the Hessian."""
    name = f"hessian of {request.node.callspec.id}"
    check_jacobians(nx.hessian(f), x, name=name, jit=False, rtol=1e-4, atol=1e-5)


# -- against JAX -----------------------------------------------------------------------

JAX_CASES = [
    pytest.param(lambda np: lambda x: np.max(x, axis=1), X, id="max"),
    pytest.param(lambda np: lambda x: np.prod(x, axis=0), ONE_ZERO, id="prod-zero"),
    pytest.param(lambda np: lambda x: np.cumprod(x, axis=1), TWO_ZEROS, id="cumprod-zeros"),
    pytest.param(lambda np: lambda x: np.std(x, axis=0, ddof=1), X, id="std"),
    pytest.param(lambda np: lambda x: np.linalg.norm(x, axis=0), X, id="norm"),
    pytest.param(lambda np: lambda x: np.einsum("ij,kj,k->i", x, x, x[:, 0]), X, id="einsum"),
    pytest.param(lambda np: lambda x: np.linalg.inv(x), M3, id="inv"),
    pytest.param(lambda np: lambda x: np.linalg.slogdet(x)[1], M, id="slogdet"),
    pytest.param(lambda np: lambda x: np.linalg.cholesky(x @ x.T), M, id="cholesky"),
]


@pytest.mark.parametrize("make, x", JAX_CASES)
def test_against_jax(make, x):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    ours = make(np)
    theirs = make(jax.numpy)
    np.testing.assert_allclose(nx.jacrev(ours)(x), jax.jacrev(theirs)(x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(nx.jacfwd(ours)(x), jax.jacfwd(theirs)(x), rtol=1e-9, atol=1e-12)


# -- the helpers -----------------------------------------------------------------------


def test_the_gradient_of_the_matrix_2_norm_is_the_top_singular_pair():
    u, _, vh = np.linalg.svd(X)
    got = nx.grad(lambda x: np.linalg.norm(x, 2))(X)
    np.testing.assert_allclose(got, np.outer(u[:, 0], vh[0]), rtol=1e-12, atol=1e-12)


def test_einsum_vjp_of_vjp_is_an_einsum():
    """(spec, j) is the VJP of operand j; nested, its VJPs again (adjoint identities)."""
    a, b = X, B
    ct = distinct(3, 2)
    vjp_a = nxrt.einsum_general(("ij,jk->ik", 0), ct, b, like=a)
    t = distinct(3, 4)
    assert np.isclose(np.sum(vjp_a * t), np.sum(ct * np.einsum("ij,jk->ik", t, b)))
    g = distinct(3, 4)
    vjp_b = nxrt.einsum_general((("ij,jk->ik", 0), 1), ct, g, like=b)
    s = distinct(4, 2)
    lhs = np.sum(g * nxrt.einsum_general(("ij,jk->ik", 0), ct, s, like=a))
    assert np.isclose(lhs, np.sum(vjp_b * s))


def test_helpers_under_numba():
    """The helpers the jit cases above do not reach, compiled by Numba in one function:
    a run-time axis, a nested einsum spec, tensordot's VJPs, the reverse cumulative sum,
    prod_others_jvp, prod_others_jvp2 and prod_others_jvp3; against their interpreted selves."""

    def helpers(value, a, axis, ct, g, b, p, q, c):
        spec = "ij,jk->ik", 0
        nested = spec, 1
        first = 2, 0  # as numbax's normalization writes nested tuples, so they stay
        second = 0, 2  # compile-time constants
        pairs = first, second
        return (
            nxrt.broadcast_reduced(value, a, axis, False),
            nxrt.einsum_general(nested, ct, g, like=b),
            nxrt.tensordot_vjp_a(c, p, q, pairs),
            nxrt.tensordot_vjp_b(c, p, q, pairs),
            nxrt.cumsum_reverse(a, a, axis),
            nxrt.prod_others_jvp(a, a + 1.0, (0, 2)),
            nxrt.prod_others_jvp2(a, a + 1.0, a * a, (0, 2)),
            nxrt.prod_others_jvp3(a, a + 1.0, a * a, a - 2.0, (0, 2)),
        )

    p, q = X3, distinct(4, 3, 2)
    c = distinct(3, 3)  # the shape of np.tensordot(p, q, ((2, 0), (0, 2)))
    args = (X3.sum(axis=1), X3, -2, distinct(3, 2), distinct(3, 4), B, p, q, c)
    want = helpers(*args)
    got = numba.njit(helpers)(*args)
    for w, r in zip(want, got, strict=True):
        np.testing.assert_allclose(r, w, rtol=1e-12, atol=1e-12)


def product(y):
    return np.prod(y)


def prod_third(a):
    return np.sum(nx.hessian(product)(a) * np.outer(a, a))


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "jit"])
def test_third_and_fourth_derivatives_of_prod_are_exact_with_zeros(compiled):
    # prod's derivatives are sums of products of the other elements: finite where
    # elements are 0 (rules dividing by the elements gave nan)
    # (compiled: the third derivative; the fourth compiles prod's same rules again, nested
    # once more, for about 20 s)
    grad, hessian = nx.grad(prod_third), nx.hessian(prod_third)
    if compiled:
        grad = nx.jit(grad)
    for x in (np.array([0.0, 0.0, 3.0, 2.0]), np.array([0.5, 2.0, 0.0, 1.0])):
        np.testing.assert_allclose(grad(x), numeric_jacobian(prod_third, [x], 0), atol=1e-7)
        if not compiled:
            want = numeric_jacobian(nx.grad(prod_third), [x], 0)
            np.testing.assert_allclose(hessian(x), want, atol=1e-6)
