"""Decompositions and matrix norms beyond the rule table's generic calls: functions of
all of an ``svd``'s or ``eigh``'s outputs, second derivatives, the arguments refused,
and one jitted program that compiles several of them at once (the rule table checks
each operation's first sample under jit too)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians

RNG = np.random.default_rng(7)
A43 = RNG.uniform(-1, 1, (4, 3))
SQUARE = RNG.uniform(-1, 1, (3, 3)) + 2 * np.eye(3)


def svd_all(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u[:, 0] * u[:, 1]) + np.sum(s * s * s) + np.sum(vh * vh[0])


def eigh_all(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * w) + np.sum(v[:, 0] ** 3) + np.sum(v[:, 2] * v[:, 1] ** 2)


def qr_all(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * q[0]) + np.sum(r[..., 0, :] ** 3)


def norms(a):
    return (
        np.linalg.norm(a, 2)
        + np.linalg.norm(a, "nuc")
        + np.linalg.norm(a, -np.inf)
        + np.linalg.norm(a, 1)
        + np.linalg.svd(a, compute_uv=False)[1]
    )


@pytest.mark.parametrize(
    "f, a",
    [
        (svd_all, A43),
        (svd_all, A43.T),
        (eigh_all, SQUARE),
        (norms, A43),
        (qr_all, A43),
        (qr_all, SQUARE),
    ],
)
def test_functions_of_decompositions_interpreted(f, a):
    check_jacobians(f, a, argnums=[0], name=f.__name__, jit=False)


def test_second_derivatives_of_singular_values_and_eigenvalues():
    """The templates are made of operations with rules, so they differentiate again."""

    def f(a):
        return np.sum(np.linalg.svd(a, compute_uv=False) ** 3) + np.linalg.eigvalsh(a)[2]

    check_jacobians(nx.grad(f), SQUARE, argnums=[0], name="hessian", jit=False)


def test_second_derivative_of_a_piecewise_linear_matrix_norm_is_zero():
    hessian = nx.hessian(lambda a: np.linalg.norm(a, np.inf))(A43)
    assert np.all(hessian == 0)


def test_second_derivative_of_the_spectral_norm_says_how_to_get_it():
    def spectral(a):
        return np.linalg.norm(a, 2)

    with pytest.raises(ValueError, match="first derivatives only"):
        nx.hessian(spectral)(A43)


def test_full_svd_of_a_non_square_matrix_has_no_derivative():
    def f(a):
        return np.sum(np.linalg.svd(a)[0])

    with pytest.raises(ValueError, match="full_matrices=False"):
        nx.grad(f)(A43)


def test_arguments_numbax_cannot_differentiate_are_refused_at_transformation():
    def upper(a):
        return np.linalg.eigh(a, UPLO="U")[0]

    def chosen(a, flag):
        return np.linalg.svd(a, compute_uv=flag)

    with pytest.raises(nx.TransformError, match="UPLO='U'"):
        nx.grad(lambda a: np.sum(upper(a)))(SQUARE)
    with pytest.raises(nx.TransformError, match="compute_uv not a constant"):
        nx.jacfwd(chosen)(SQUARE, False)


# -- operations checked here rather than one compile each in the rule table -------------


def svdvals(a):
    return np.linalg.svdvals(a)


def cond(a):
    return np.linalg.cond(a)


def eigvalsh(a):
    return np.linalg.eigvalsh(a)


def pinv(a):
    return np.linalg.pinv(a)


def cube(a):
    return np.linalg.matrix_power(a, 3)


def identity(a):
    return np.linalg.matrix_power(a, 0)


def inverse_square(a):
    return np.linalg.matrix_power(a, -2)


def cross(a, b):
    return np.cross(a, b)


def linalg_cross(a, b):
    return np.linalg.cross(a, b)


def linalg_matmul(a, b):
    return np.linalg.matmul(a, b)


def kron(a, b):
    return np.kron(a, b)


def outer(a, b):
    return np.linalg.outer(a, b)


def tensordot(a, b):
    return np.linalg.tensordot(a, b, axes=1)


def trace(x):
    return np.linalg.trace(x, offset=1)


def transpose(x):
    return np.linalg.matrix_transpose(x)


def spectral(x):
    return np.linalg.matrix_norm(x, ord=2)


def nuclear(x):
    return np.linalg.matrix_norm(x, ord="nuc", keepdims=True)


def frobenius(x):
    return np.linalg.matrix_norm(x)


TABLE = [
    (svdvals, [(3, 3)]),
    (svdvals, [(4, 2)]),
    (svdvals, [(2, 2, 3)]),
    (cond, [(3, 3)]),
    (cond, [(2, 4, 3)]),
    (eigvalsh, [(3, 3)]),
    (eigvalsh, [(2, 4, 4)]),
    (pinv, [(3, 3)]),
    (pinv, [(4, 2)]),
    (pinv, [(2, 3)]),
    (cube, [(3, 3)]),
    (cube, [(2, 3, 3)]),
    (identity, [(3, 3)]),
    (inverse_square, [(2, 2)]),
    (cross, [(3,), (3,)]),
    (cross, [(2, 3), (3,)]),
    (linalg_cross, [(2, 3), (3,)]),
    (linalg_matmul, [(2, 3, 4), (4, 2)]),
    (kron, [(2, 3), (3, 2)]),
    (kron, [(3,), (2,)]),
    (outer, [(3,), (4,)]),
    (tensordot, [(3, 4), (4, 2)]),
    (trace, [(2, 3, 3)]),
    (transpose, [(2, 3, 4)]),
    (spectral, [(2, 3, 4)]),
    (nuclear, [(3, 4)]),
    (frobenius, [(3, 4)]),
]


def _drawn(shapes, seed):
    rng = np.random.default_rng(seed)
    drawn = []
    for shape in shapes:
        x = rng.uniform(-1, 1, shape)
        if len(shape) >= 2 and shape[-1] == shape[-2]:
            x = x + 2 * np.eye(shape[-1])  # invertible, eigenvalues apart
        drawn.append(x)
    return drawn


@pytest.mark.parametrize("f, shapes", TABLE, ids=[f"{f.__name__}{shapes}" for f, shapes in TABLE])
def test_table_against_finite_differences(f, shapes):
    """jacfwd and jacrev, interpreted, against central differences."""
    args = _drawn(shapes, len(TABLE))
    check_jacobians(f, *args, argnums=list(range(len(args))), name=f.__name__, jit=False)


def decompositions(a, b, c):
    """The decompositions and the norms made of them, on stacks (a, c: two 3x3) or a
    matrix (b: 4x3): their derivative code is what is costly to compile."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    e, vectors = np.linalg.eigh(c)
    q, r = np.linalg.qr(b)
    return (
        np.sum(s * u[..., 0, :]) * np.sum(vh[..., 0])
        + np.sum(e) * np.sum(vectors[..., 0] ** 2)
        + np.sum(q * q[0])
        + np.sum(r[0] ** 3)
        + np.sum(np.linalg.norm(a, 2, axis=(1, 2)))
        + np.linalg.norm(b, "nuc")
        + np.sum(pinv(b) ** 2)
        + np.sum(cube(c))
    )


def everything(a, b, c, v, w):
    """Each operation of this file once (its value: what Numba runs for it)."""
    return (
        decompositions(a, b, c)
        + np.sum(np.linalg.svd(a, compute_uv=False))
        + np.sum(np.linalg.norm(b, 1))
        + np.sum(svdvals(b))
        + np.sum(cond(c))
        + np.sum(eigvalsh(c) ** 2)
        + np.sum(inverse_square(c[0]))
        + np.sum(cross(v, w) ** 2)
        + np.sum(linalg_cross(w, v))
        + np.sum(linalg_matmul(c, v))
        + np.sum(kron(b[:2], v) ** 2)
        + np.sum(outer(v, w) * c[1])
        + np.sum(tensordot(b, c[0]))
        + np.sum(trace(c))
        + np.sum(transpose(b) @ b)
        + np.sum(spectral(a))
        + np.sum(nuclear(b))
        + frobenius(b)
        + np.sum(np.einsum("...ij,jk", a, c[0]) ** 2)
    )


def _arguments():
    a, c = _drawn([(2, 3, 3), (2, 3, 3)], 1)
    b, v, w = _drawn([(4, 3), (3,), (3,)], 2)
    return a, b, c, v, w


def test_every_operation_compiles_to_numpys_value():
    """Every operation of this file under jit (values only: each helper their
    derivatives call is compiled by the rule table)."""
    args = _arguments()
    np.testing.assert_allclose(nx.jit(everything)(*args), everything(*args), rtol=1e-10)


def test_the_derivatives_of_the_decompositions_compile():
    """jit(grad) of the decompositions equals the interpreted gradient, which matches
    central differences. (One program: each compile of a decomposition's derivative
    costs seconds.)"""
    a, b, c, _, _ = _arguments()
    want = nx.grad(decompositions, argnums=(0, 1, 2))(a, b, c)
    got = nx.jit(nx.grad(decompositions, argnums=(0, 1, 2)))(a, b, c)
    for name, x, y in zip("abc", want, got, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-9, err_msg=name)
    check_jacobians(decompositions, a, b, c, argnums=[0, 1, 2], name="decompositions", jit=False)


def test_the_gradient_of_everything_matches_finite_differences():
    check_jacobians(everything, *_arguments(), argnums=[0, 1, 2, 3, 4], name="all", jit=False)
