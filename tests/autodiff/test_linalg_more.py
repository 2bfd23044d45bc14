"""Decompositions and matrix norms beyond the rule table's generic calls: functions of
all of an ``svd``'s or ``eigh``'s outputs, second derivatives, the arguments refused,
and one jitted program that compiles several of them at once (the rule table checks
each operation's first sample under jit too)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.autodiff.fd import check_jacobians

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


def stacked(a, b):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    w, v = np.linalg.eigh(b)
    return (
        np.sum(s * u[..., 0, :]) * np.sum(vh[..., 0])
        + np.sum(np.linalg.svd(a, compute_uv=False))
        + np.sum(w) * np.sum(v[..., 0] ** 2)
        + np.sum(np.linalg.norm(a, 2, axis=(1, 2)))
        + qr_all(b)
    )


@pytest.fixture(scope="module")
def compiled_gradient():
    return nx.jit(nx.grad(stacked, argnums=(0, 1)))


def test_one_jitted_program_matches_numpy_and_finite_differences(compiled_gradient):
    """svd, svd without vectors, eigh, qr and the spectral norm, of stacks, compiled once: the gradient equals the interpreted one, which matches central
    differences."""
    a = RNG.uniform(-1, 1, (2, 3, 3))
    b = RNG.uniform(-1, 1, (2, 3, 3)) + 3 * np.eye(3)
    want = nx.grad(stacked, argnums=(0, 1))(a, b)
    got = compiled_gradient(a, b)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    check_jacobians(stacked, a, b, argnums=[0, 1], name="stacked", jit=False)
