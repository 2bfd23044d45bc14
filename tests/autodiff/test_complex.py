"""Complex numbers with JAX's conventions: ``holomorphic=True`` for complex outputs
(``grad``, ``jacfwd``, ``jacrev``, ``hessian``), JAX's TypeError for a complex output (or
a complex ``jacfwd`` input) without it, and the cotangents of real-valued functions of
complex inputs: ``grad(f)(z)`` is ``df/dx - i df/dy`` (the conjugate of the gradient, as
JAX gives), checked against central finite differences in the real and imaginary parts.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_jacobian

Z = np.array([0.3 + 0.4j, -1.2 + 0.5j, 0.7 - 1.1j])
X = np.array([0.3, -1.2, 0.7])


def polynomial(z):
    return z * z * z + np.sin(z) * (2 - 1j)


def cubes(z):
    return np.sum(z**3)


def holomorphic_derivative(z):
    return 3 * z * z + np.cos(z) * (2 - 1j)


@pytest.mark.parametrize("transform", [nx.jacfwd, nx.jacrev], ids=["jacfwd", "jacrev"])
def test_holomorphic_jacobians_are_complex_derivatives(transform):
    got = transform(polynomial, holomorphic=True)(Z)
    np.testing.assert_allclose(got, np.diag(holomorphic_derivative(Z)), atol=1e-12)


def test_holomorphic_hessian_and_grad():
    np.testing.assert_allclose(nx.hessian(cubes, holomorphic=True)(Z), np.diag(6 * Z), atol=1e-12)
    np.testing.assert_allclose(nx.grad(cubes, holomorphic=True)(Z), 3 * Z * Z, atol=1e-12)


def real_in_complex_out(x):
    return x * (1 + 2j)


def complex_in_real_out(z):
    return np.abs(z) * np.real(z)


CASES = {
    "jacrev of a complex output": (
        lambda: nx.jacrev(real_in_complex_out)(X),
        "jacrev requires real-valued outputs",
    ),
    "jacfwd of a complex input": (
        lambda: nx.jacfwd(complex_in_real_out)(Z),
        "jacfwd requires real-valued inputs",
    ),
    "holomorphic jacfwd of a real input": (
        lambda: nx.jacfwd(polynomial, holomorphic=True)(X),
        "jacfwd with holomorphic=True requires inputs with complex dtype",
    ),
    "holomorphic jacrev of a real output": (
        lambda: nx.jacrev(complex_in_real_out, holomorphic=True)(Z),
        "jacrev with holomorphic=True requires outputs with complex dtype",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_complex_values_need_holomorphic_as_in_jax(name):
    """A basis of real vectors does not span complex values: the result would silently
    be the real part's Jacobian."""
    call, message = CASES[name]
    with pytest.raises(TypeError, match=message):
        call()


def test_allowed_complex_jacobians():
    """jacfwd of a complex output and jacrev of a complex input are defined, as in JAX."""
    np.testing.assert_allclose(nx.jacfwd(real_in_complex_out)(X), np.eye(3) * (1 + 2j))
    got = nx.jacrev(lambda z: np.sum(np.abs(z) ** 2))(Z)
    np.testing.assert_allclose(got, 2 * np.conj(Z), atol=1e-12)


def test_grad_of_a_real_function_of_complex_input_is_jax_conjugate_gradient():
    """JAX's documented example: f(z) = x**2 + y**2 at 3 + 4j has grad 6 - 8j."""

    def f(z):
        x, y = np.real(z), np.imag(z)
        return x**2 + y**2

    assert nx.grad(f)(3.0 + 4j) == 6 - 8j
    assert nx.grad(lambda z: np.abs(z) ** 2)(3.0 + 4j) == pytest.approx(6 - 8j)


# -- abs, angle, real, imag, conj and norms at complex inputs, against differences ------


def through(op):
    """op at xr + i xi, as a real function of (xr, xi): its derivatives take complex
    cotangents through op's rule."""

    def f(xr, xi):
        y = op(xr + 1j * xi)
        return np.real(y) * 1.3 - np.imag(y) * 0.7 if np.iscomplexobj(y) else y

    f.__name__ = op.__name__
    return f


def angle_deg(z):
    return np.angle(z, deg=True)


def vector_norm(z):
    return np.linalg.norm(z)


def squared_sum(z):
    return np.sum(np.abs(z) ** 2)


def z_times_conj(z):
    return z * np.conjugate(z) + z.conj() * (1 + 1j)


def imag_of_square(z):
    return np.imag(z * z) + np.real(z) * np.abs(z)


def attributes(z):
    return z.real * z.imag + np.abs(z)


OPS = [np.abs, np.angle, angle_deg, np.real, np.imag, np.conj, vector_norm, squared_sum]
OPS += [z_times_conj, imag_of_square, attributes]


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.__name__)
def test_complex_rules_match_finite_differences(op):
    f = through(op)
    check_jacobians(f, np.real(Z), np.imag(Z), jit=False)


def abs_total(xr, xi):
    return np.sum(np.abs(xr + 1j * xi) * np.array([1.0, -0.5, 2.0]))


def angle_total(xr, xi):
    return np.sum(np.angle(xr + 1j * xi) * np.array([1.0, -0.5, 2.0]))


def norm_total(xr, xi):
    z = xr + 1j * xi
    return np.sqrt(np.sum(np.abs(z) ** 2)) * np.sum(np.abs(z))


@pytest.mark.parametrize("f", [abs_total, angle_total, norm_total], ids=lambda f: f.__name__)
def test_second_derivatives_at_complex_inputs(f):
    """The slopes of abs and angle depend on z: second derivatives are right too."""
    args = (np.real(Z), np.imag(Z))
    for k in (0, 1):
        want = numeric_jacobian(nx.grad(f, argnums=k), args, k)
        np.testing.assert_allclose(nx.hessian(f, argnums=k)(*args), want, atol=1e-5)


# -- under jit: one program -----------------------------------------------------------------


def program(z):
    return (
        np.sum(np.abs(z) * np.angle(z))
        + np.linalg.norm(z)
        + np.sum(np.real(z * np.conj(z)) + np.imag(z) * z.real)
    )


def test_under_jit():
    compiled = nx.jit(nx.grad(program))
    np.testing.assert_allclose(compiled(Z), nx.grad(program)(Z), atol=1e-12)
    with pytest.raises(TypeError, match="jacrev requires real-valued outputs"):
        nx.jit(nx.jacrev(real_in_complex_out))(X)
