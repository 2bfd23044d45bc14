"""Linear algebra of complex matrices, with JAX's conventions (tests/autodiff/test_complex.py):
the JVP is the derivative along a complex direction, the VJP its transpose without a
conjugate (``grad`` of a real function of ``z`` is ``df/dx - i df/dy``). The rules once
used plain transposes where the complex formulas have conjugate transposes: the JVPs of
real-valued results (singular values, ``cond``, ``eigvalsh``) came back complex, and
VJPs conjugated (``svd``, ``cond``, ``vdot``, ``np.dot`` of a real scalar and a complex
array).

Each case is checked against central differences in real and imaginary directions
(its VJP through the pairing ``Re(sum(ct * jvp(e)))`` with each real and imaginary
basis direction ``e``), interpreted; one program of all of them under ``nx.jit``; and
against JAX where it is installed. NumPy's ``eigh``, ``eigvalsh`` and ``cholesky`` read
the lower triangle, where JAX's symmetrize their input: those are compared with JAX
along Hermitian directions only.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx

rng = np.random.default_rng(7)


def _complex(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


SQUARE = _complex(3, 3)
TALL = _complex(4, 3)
_B = _complex(3, 3)
HERMITIAN = _B @ _B.conj().T + 3 * np.eye(3)
Z = _complex(3)
Z4 = _complex(4)
W3 = _complex(3, 3)  # weights that make complex results real
W43 = _complex(4, 3)


# -- the operations, each a function of one complex array ---------------------------------
def singular_values(a):
    return np.linalg.svd(a, compute_uv=False)


def svd_function(a):
    """U f(s) Vh: the same whatever phases LAPACK gives the singular vectors."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return (u * np.sin(s)) @ vh


def svd_magnitudes(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(np.abs(u) ** 2 * np.array([1.0, 2.0, 3.0])) + np.sum(
        np.abs(vh) ** 3 * np.array([[1.0], [-1.0], [0.5]])
    )


def eigenvalues_hermitian(a):
    return np.linalg.eigvalsh(a)


def eigh_function(a):
    w, v = np.linalg.eigh(a)
    return (v * np.sin(w)) @ np.conj(v.T)


def condition(a):
    return np.linalg.cond(a)


def real_scalar_dot(x):
    return np.dot(x, Z)


def real_scalar_dot_real(x):
    return np.sum(np.real(np.dot(x, Z) * Z))


def log_abs_det(a):
    return np.linalg.slogdet(a)[1]


def sign_of_det(a):
    return np.linalg.slogdet(a)[0]


def cholesky(a):
    return np.linalg.cholesky(a)


def qr_product(a):
    q, r = np.linalg.qr(a)
    return q @ np.diag(np.array([1.0, 2.0, 3.0])) @ r


def pseudo_inverse(a):
    return np.linalg.pinv(a)


def least_squares(a):
    return np.linalg.lstsq(a, Z4, rcond=None)[0]


def residuals(a):
    return np.linalg.lstsq(a, Z4, rcond=None)[1]


def vdot_first(a):
    return np.vdot(a, Z)


def vdot_second(b):
    return np.vdot(Z, b)


def spectral_norm(a):
    return np.linalg.matrix_norm(a, ord=2)


def inverse(a):
    return np.linalg.inv(a)


CASES = [
    (singular_values, TALL),
    (singular_values, SQUARE),
    (svd_function, TALL),
    (svd_magnitudes, TALL),
    (eigenvalues_hermitian, HERMITIAN),
    (eigh_function, HERMITIAN),
    (condition, SQUARE),
    (real_scalar_dot, 0.7),
    (real_scalar_dot_real, 0.7),
    (log_abs_det, SQUARE),
    (sign_of_det, SQUARE),
    (cholesky, HERMITIAN),
    (qr_product, TALL),
    (pseudo_inverse, TALL),
    (least_squares, TALL),
    (residuals, TALL),
    (vdot_first, _complex(3)),
    (vdot_second, _complex(3)),
    (spectral_norm, SQUARE),
    (inverse, SQUARE),
]
IDS = [f"{f.__name__}-{np.shape(a)}" for f, a in CASES]
SCALARS = [svd_magnitudes, condition, real_scalar_dot_real, log_abs_det, spectral_norm]


def test_residuals_of_least_squares_are_numpys():
    """NumPy's residuals of a complex problem are real squared norms."""
    want = np.linalg.lstsq(TALL, Z4, rcond=None)[1]
    for run in (residuals, nx.jit(residuals)):
        close(run(TALL), want, 1e-12)
        assert not np.iscomplexobj(run(TALL))


EPS = 1e-6


def difference(f, a, direction):
    """The derivative of f at a along ``direction``, by central differences."""
    return (np.asarray(f(a + EPS * direction)) - np.asarray(f(a - EPS * direction))) / (2 * EPS)


def basis(a):
    """Each real direction of ``a``'s space: unit real and (complex a) imaginary ones."""
    size = np.size(a)
    for k in range(size):
        e = np.zeros(size)
        e[k] = 1.0
        e = e.reshape(np.shape(a))
        yield k, e, 1.0
        if np.iscomplexobj(a):
            yield k, 1j * e, -1j


def differences_vjp(f, a, ct):
    """JAX's VJP by differences: ``Re(sum(ct * jvp(e)))`` is the real part of the
    cotangent for a real direction e, minus its imaginary part for ``1j * e``."""
    out = np.zeros(np.size(a), complex if np.iscomplexobj(a) else float)
    for k, e, part in basis(a):
        pairing = np.real(np.sum(ct * difference(f, a, e)))
        out[k] += pairing * part if np.iscomplexobj(a) else pairing
    return out.reshape(np.shape(a)) if np.ndim(a) else out[0]


def direction_like(a):
    if np.iscomplexobj(a):
        return _complex(*np.shape(a))
    return float(rng.standard_normal()) if np.ndim(a) == 0 else rng.standard_normal(np.shape(a))


def cotangent_like(out):
    shape = np.shape(out)
    ct = rng.standard_normal(shape)
    if np.iscomplexobj(out):
        ct = ct + 1j * rng.standard_normal(shape)
    return ct


def close(got, want, tol=1e-6):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


@pytest.mark.parametrize(("f", "a"), CASES, ids=IDS)
def test_jvp_along_complex_directions_matches_differences(f, a):
    value = f(a)
    for direction in (direction_like(a), *(e for _, e, _ in basis(a))):
        out, tangent = nx.jvp(f, (a,), (direction,))
        close(out, value, 1e-12)
        close(tangent, difference(f, a, direction))
        # a real result has a real tangent
        assert np.iscomplexobj(tangent) == np.iscomplexobj(value), np.result_type(tangent)


@pytest.mark.parametrize(("f", "a"), CASES, ids=IDS)
def test_vjp_is_the_transpose_without_conjugate(f, a):
    ct = cotangent_like(f(a))
    _, back = nx.vjp(f, a)
    (got,) = back(ct)
    close(got, differences_vjp(f, a, ct))
    assert np.iscomplexobj(got) == np.iscomplexobj(a)


@pytest.mark.parametrize("f", SCALARS, ids=lambda f: f.__name__)
def test_grad_of_a_real_function_of_a_complex_matrix(f):
    a = dict(CASES)[f]
    close(nx.grad(f)(a), differences_vjp(f, a, 1.0))


# -- under jit: one real-valued program of them all, its gradient and a JVP ---------------
def program(a, t, h, x):
    """Every case, on the square matrix ``a``, the tall ``t``, the Hermitian ``h`` and the
    real scalar ``x``, made real with fixed complex weights."""
    total = np.sum(np.linalg.svd(t, compute_uv=False)) + np.linalg.cond(a)
    u, s, vh = np.linalg.svd(t, full_matrices=False)
    total = total + np.sum(np.real(W43 * ((u * np.sin(s)) @ vh)))
    total = total + np.sum(np.linalg.eigvalsh(h) * np.array([1.0, -2.0, 0.5]))
    w, v = np.linalg.eigh(h)
    total = total + np.sum(np.real(W3 * ((v * np.sin(w)) @ np.conj(v.T))))
    total = total + np.sum(np.real(np.dot(x, Z) * Z))
    sign, logdet = np.linalg.slogdet(a)
    total = total + logdet + np.real(sign * (0.3 - 0.2j))
    total = total + np.sum(np.real(W3 * np.linalg.cholesky(h)))
    q, r = np.linalg.qr(t)
    total = total + np.sum(np.real(W43 * (q @ r * 0.5 + q)))
    total = total + np.sum(np.real(W43.T * np.linalg.pinv(t)))
    total = total + np.real(np.vdot(a[0], Z) * (1 - 2j)) + np.linalg.matrix_norm(a, ord=2)
    return total


ARGS = (SQUARE, TALL, HERMITIAN, 0.7)


def test_the_gradient_under_jit_matches_differences():
    got = nx.jit(nx.grad(program, argnums=(0, 1, 2, 3)))(*ARGS)
    for k in range(4):

        def along(v, k=k):
            args = list(ARGS)
            args[k] = v
            return program(*args)

        close(got[k], differences_vjp(along, ARGS[k], 1.0), 1e-5)


def jvp_of_program(a, t, h, x, da, dt, dh, dx):
    return nx.jvp(program, (a, t, h, x), (da, dt, dh, dx))[1]


def test_the_jvp_under_jit_matches_differences():
    directions = tuple(direction_like(a) for a in ARGS)
    got = nx.jit(jvp_of_program)(*ARGS, *directions)
    want = (
        program(*(a + EPS * d for a, d in zip(ARGS, directions, strict=True)))
        - program(*(a - EPS * d for a, d in zip(ARGS, directions, strict=True)))
    ) / (2 * EPS)
    assert not np.iscomplexobj(got)
    close(got, want, 1e-5)


# -- against JAX ------------------------------------------------------------------------------
def _jax_versions(jnp):
    def svd_function_jax(a):
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
        return (u * jnp.sin(s)) @ vh

    def svd_magnitudes_jax(a):
        u, s, vh = jnp.linalg.svd(a, full_matrices=False)
        return jnp.sum(jnp.abs(u) ** 2 * jnp.array([1.0, 2.0, 3.0])) + jnp.sum(
            jnp.abs(vh) ** 3 * jnp.array([[1.0], [-1.0], [0.5]])
        )

    def eigh_function_jax(a):
        w, v = jnp.linalg.eigh(a)
        return (v * jnp.sin(w)) @ jnp.conj(v.T)

    def qr_product_jax(a):
        q, r = jnp.linalg.qr(a)
        return q @ jnp.diag(jnp.array([1.0, 2.0, 3.0])) @ r

    return {
        singular_values: lambda a: jnp.linalg.svd(a, compute_uv=False),
        svd_function: svd_function_jax,
        svd_magnitudes: svd_magnitudes_jax,
        eigenvalues_hermitian: jnp.linalg.eigvalsh,
        eigh_function: eigh_function_jax,
        condition: jnp.linalg.cond,
        real_scalar_dot: lambda x: jnp.dot(x, Z),
        real_scalar_dot_real: lambda x: jnp.sum(jnp.real(jnp.dot(x, Z) * Z)),
        log_abs_det: lambda a: jnp.linalg.slogdet(a)[1],
        sign_of_det: lambda a: jnp.linalg.slogdet(a)[0],
        cholesky: jnp.linalg.cholesky,
        qr_product: qr_product_jax,
        pseudo_inverse: jnp.linalg.pinv,
        least_squares: lambda a: jnp.linalg.lstsq(a, Z4)[0],
        residuals: lambda a: jnp.linalg.lstsq(a, Z4)[1],
        vdot_first: lambda a: jnp.vdot(a, Z),
        vdot_second: lambda b: jnp.vdot(Z, b),
        spectral_norm: lambda a: jnp.linalg.matrix_norm(a, ord=2),
        inverse: jnp.linalg.inv,
    }


LOWER_TRIANGLE = {eigenvalues_hermitian, eigh_function, cholesky}  # JAX symmetrizes


@pytest.fixture(scope="module")
def jax_functions():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, _jax_versions(jax.numpy)


@pytest.mark.parametrize(("f", "a"), CASES, ids=IDS)
def test_against_jax(f, a, jax_functions):
    jax, versions = jax_functions
    fj = versions[f]
    direction = direction_like(a)
    if f in LOWER_TRIANGLE:
        direction = direction + np.conj(direction.T)
    close(nx.jvp(f, (a,), (direction,))[1], jax.jvp(fj, (a,), (direction,))[1])
    if f in LOWER_TRIANGLE:
        return
    ct = cotangent_like(f(a))
    close(nx.vjp(f, a)[1](ct)[0], jax.vjp(fj, a)[1](ct)[0])
