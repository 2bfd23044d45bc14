"""The functions of ``numpy.linalg`` numbax reads as compositions
(``numbax/transform/compositions/linalg.py``: ``cond`` with ``p``, ``lstsq``, ``multi_dot``,
``vector_norm``, ``tensorinv``, ``tensorsolve``), ``eigvals``, and the batching of the
decompositions on stacks: against central differences interpreted, NumPy's values and
the interpreted gradient under jit (one program, one compile), and vmap's vectorized
method against its loop."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.transform.compositions import linalg as compositions
from tests.helpers.fd import check_jacobians

RNG = np.random.default_rng(11)
SQUARE = RNG.uniform(-1, 1, (3, 3)) + 2 * np.eye(3)
TALL = RNG.uniform(-1, 1, (4, 3))
ROTATION = np.array([[0.5, -1.2, 0.1], [1.1, 0.4, 0.3], [0.2, 0.1, 2.0]])  # complex pair
SYMMETRIC = SQUARE + SQUARE.T + np.diag([0.0, 1.0, 3.0])  # real, distinct eigenvalues


def conds(a):
    return np.array(
        [
            np.linalg.cond(a, 1),
            np.linalg.cond(a, -1),
            np.linalg.cond(a, "fro"),
            np.linalg.cond(a, np.inf),
            np.linalg.cond(a, 2),
            np.linalg.cond(a, -2),
            np.linalg.cond(a, "nuc"),
        ]
    )


def least_squares(a):
    x, residuals, rank, s = np.linalg.lstsq(a, a[:, 0] * 2.0 + np.arange(4.0), rcond=None)
    return np.concatenate((x, residuals, s)) * rank


def least_squares_square(a):
    x, residuals, rank, s = np.linalg.lstsq(a, np.outer(a[0], a[1]))
    return np.sum(x**2) + np.sum(residuals) + rank


def chained(a):
    return np.linalg.multi_dot([a[0], a, a.T, a[:, 1]]) + np.sum(np.linalg.multi_dot((a, a, a)))


def chained_held(a):
    arrays = [a, a * 2.0, a]
    return np.linalg.multi_dot(arrays)


def vector_norms(a):
    return np.array(
        [
            np.linalg.vector_norm(a),
            np.linalg.vector_norm(a, ord=1),
            np.linalg.vector_norm(a, ord=np.inf),
            np.linalg.vector_norm(a, ord=-np.inf),
            np.linalg.vector_norm(a, ord=3),
            np.linalg.vector_norm(a, ord=0),
            np.sum(np.linalg.vector_norm(a, axis=0, keepdims=True)),
            np.sum(np.linalg.vector_norm(a, axis=(0, 1), ord=1.5)),
        ]
    )


def tensor_inverse(a):
    return np.linalg.tensorinv(a.reshape(2, 2, 4), ind=2)


def tensor_solve(a):
    return np.linalg.tensorsolve(a.reshape(4, 2, 2), a[0])


def tensor_solve_axes(a):
    return np.linalg.tensorsolve(a.reshape(2, 4, 2), a[0], axes=(0,))


def tensor_inverse_first_axis(a):
    return np.linalg.tensorinv(a.reshape(4, 2, 2), ind=1)


def tensor_solve_two_axes(a):
    return np.linalg.tensorsolve(a.reshape(2, 4, 2), a[0], axes=(2, 0))


def eigenvalues(a):
    w = np.linalg.eigvals(a)
    return np.real(w) * 2.0 + np.imag(w) ** 2 + np.abs(w)


SQUARE4 = RNG.uniform(-1, 1, (4, 4)) + 3 * np.eye(4)
TABLE = [
    (conds, SQUARE),
    (least_squares, TALL),
    (least_squares_square, SQUARE),
    (chained, SQUARE),
    (chained_held, SQUARE),
    (vector_norms, TALL),
    (tensor_inverse, SQUARE4),
    (tensor_solve, SQUARE4),
    (tensor_solve_axes, SQUARE4),
    (tensor_inverse_first_axis, SQUARE4),
    (tensor_solve_two_axes, SQUARE4),
    (eigenvalues, ROTATION),
    (eigenvalues, SYMMETRIC),
]


@pytest.mark.parametrize("f, a", TABLE, ids=[f"{f.__name__}{a.shape}" for f, a in TABLE])
def test_against_finite_differences(f, a):
    check_jacobians(f, a, argnums=[0], name=f.__name__, jit=False)


def test_values_are_numpys():
    # what the compositions compute, against NumPy's own functions (called here as
    # values, outside any transformation)
    b = TALL[:, 0] * 2.0 + np.arange(4.0)
    want = np.linalg.lstsq(TALL, b, rcond=None)
    got = compositions.lstsq(TALL, b)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(compositions.cond(SQUARE, 1), np.linalg.cond(SQUARE, 1))
    np.testing.assert_allclose(compositions.cond(SQUARE, -2), np.linalg.cond(SQUARE, -2))
    for ord_ in (2, 1, np.inf, -np.inf, 0, 3):
        for axis in (None, 0, (0, 1)):
            np.testing.assert_allclose(
                compositions.vector_norm(TALL, axis=axis, ord=ord_),
                np.linalg.vector_norm(TALL, axis=axis, ord=ord_),
            )
    for shape, ind in (((2, 2, 4), 2), ((4, 2, 2), 1), ((2, 2, 2, 2), 2), ((16,), 5)):
        a = SQUARE4.reshape(shape) if shape != (16,) else np.ones((1, 1))
        np.testing.assert_allclose(compositions.tensorinv(a, ind), np.linalg.tensorinv(a, ind))
    for axes in (None, (0,), (2, 0), (0, 2)):
        a, b = SQUARE4.reshape(2, 4, 2), SQUARE4[0]
        if axes is None:
            a, b = SQUARE4.reshape(2, 2, 4), SQUARE4[0].reshape(2, 2)
        np.testing.assert_allclose(
            compositions.tensorsolve(a, b, axes), np.linalg.tensorsolve(a, b, axes)
        )
    with pytest.raises(ValueError, match="Invalid ind"):
        compositions.tensorinv(SQUARE4, 0)


def compiled(a, t, r, q):
    """The compositions, and eigvals of a real matrix with complex eigenvalues, in one
    jitted program."""
    x, residuals, rank, sv = np.linalg.lstsq(t, t[:, 0] + 1.0)
    x_cut, _, rank_cut, _ = np.linalg.lstsq(t, t[:, 1], rcond=0.3)
    x_legacy = np.linalg.lstsq(t, t[:, 2], rcond=-1.0)[0]  # as -1: machine precision
    w = np.linalg.eigvals(r)
    return (
        np.sum(x) * rank
        + np.sum(residuals)
        + np.sum(x_cut) * rank_cut
        + np.sum(x_legacy**2)
        + np.sum(np.linalg.multi_dot([a[0], a, a]))
        + np.linalg.vector_norm(t, ord=3)
        + np.sum(np.real(w) * 2.0 + np.imag(w) ** 2)
        + np.sum(np.linalg.tensorinv(q.reshape(4, 2, 2), ind=1) ** 2)
        + np.sum(np.linalg.tensorsolve(q.reshape(2, 4, 2), q[0], axes=(2, 0)) * q[1, :2])
    )


def test_one_compiled_program():
    """NumPy's values under jit, in one compile (the derivatives are checked against
    finite differences above; compiling the gradient of this program takes minutes)."""
    args = (SQUARE, TALL, ROTATION, SQUARE4)
    np.testing.assert_allclose(nx.jit(compiled)(*args), compiled(*args), rtol=1e-10)


def norms_of_vectors(t):
    """``vector_norm`` with an ``ord`` of the general formula and over a tuple of axes:
    its gradient runs through the branches on ``ord``."""
    return np.linalg.vector_norm(t, ord=3) + np.sum(
        np.linalg.vector_norm(t, axis=(0, 1), ord=0.5, keepdims=True)
    )


def test_gradient_of_vector_norms_compiles():
    """The gradient of the branches on ``ord`` under jit, against the interpreted one
    (checked against finite differences above)."""
    loss = nx.grad(norms_of_vectors)
    np.testing.assert_allclose(nx.jit(loss)(TALL), loss(TALL), rtol=1e-12)
    check_jacobians(norms_of_vectors, TALL, argnums=[0], name="norms_of_vectors", jit=False)


def test_complex_eigenvalues_and_their_gradient_compile():
    """Numba's eigvals of a real matrix raises at a complex eigenvalue; numbax's returns
    them (complex, as NumPy 2.5 and JAX always do), and their derivative compiles."""
    loss = nx.grad(lambda a: np.sum(eigenvalues(a)))  # the values: in the program above
    np.testing.assert_allclose(nx.jit(loss)(ROTATION), loss(ROTATION), rtol=1e-10)


def eigenvectors(a):
    return np.sum(np.abs(np.linalg.eig(a)[1]))


def test_eig_is_refused_as_in_jax():
    # JAX defines no derivative of the eigenvectors of a general matrix; eigvals has one
    with pytest.raises(nx.TransformError, match="numpy.linalg.eig"):
        nx.grad(eigenvectors)(ROTATION)


# -- vmap: decompositions on a stack, one NumPy call for the batch -----------------------


def decompositions(a, b):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    w, v = np.linalg.eigh(a + a.T)
    q, r = np.linalg.qr(a)
    sign, logdet = np.linalg.slogdet(b)
    return (
        u * s
        + vh
        + v * w
        + q * r
        + np.linalg.pinv(a)
        + np.linalg.eigvalsh(a + a.T)
        + np.linalg.svd(a, compute_uv=False)
        + np.linalg.inv(b)
        + np.linalg.det(b)
        + sign * logdet
        + np.linalg.solve(b, a[0])
        + np.linalg.solve(b, a)
        + np.linalg.matrix_power(b, 3)
        + np.linalg.cholesky(b + b.T + 6.0 * np.eye(3))
    )


def test_decompositions_batch_as_stacks():
    a = RNG.uniform(-1, 1, (4, 3, 3)) + 2 * np.eye(3)
    b = RNG.uniform(-1, 1, (4, 3, 3)) + 3 * np.eye(3)
    for in_axes in ((0, 0), (0, None), (None, 0)):
        args = (a, b[0]) if in_axes == (0, None) else (a[0], b) if in_axes[0] is None else (a, b)
        vectorized = nx.vmap(decompositions, in_axes=in_axes, method="vectorized")
        loop = nx.vmap(decompositions, in_axes=in_axes, method="loop")
        np.testing.assert_allclose(vectorized(*args), loop(*args), rtol=1e-10, atol=1e-10)
        assert "np.linalg.svd" in vectorized.source
