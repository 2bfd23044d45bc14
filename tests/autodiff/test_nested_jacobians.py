"""Second derivatives of functions that themselves call ``nx.jacobian``, ``jacfwd``,
``jacrev``, ``grad`` or ``vmap``, in every composition (``jacfwd(jacrev)``,
``jacrev(jacfwd)``, ``jacrev(jacrev)``, ``hessian``, ``jvp(jacrev)``, ``vjp(jacfwd)``,
``grad(grad)``), against central differences, interpreted and under ``nx.jit``.

Forward mode over the code that reverse mode and the Jacobians generate meets arrays
written in place (a Jacobian's rows, a cotangent zeroed where a store's adjoint took
it): a tangent there must share memory with no other tangent its value does not share
with. It once did (the tangent of ``nxrt.owned``'s copy was its operand's, and the
Hessian of a function whose Hessian is 8·I came out 4·I); so did the user's own
``y = x + 1.0; y[0] = 0.0`` under ``jvp`` (the write reached ``x``'s tangent, the
caller's array). Those are checked at the end.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import fd_gradient, numeric_jacobian

X = np.array([0.3, -0.7, 1.1])
T = np.array([0.5, -1.0, 0.25])  # a tangent
C = np.array([-0.4, 0.8, 1.5])  # a cotangent
A = np.array([[1.0, 0.5, -0.3], [0.2, -1.0, 0.7]])


# -- inner functions, and the NumPy closed forms of what the transformations give --------
def v(x):
    return np.sin(x) * x[0]


def jacobian_of_v(x):
    jac = np.diag(np.cos(x) * x[0])
    jac[:, 0] += np.sin(x)
    return jac


def q(x):
    return np.sum(x**3) / 3.0 + x[0] * x[1]


def grad_of_q(x):
    return x**2 + np.array([x[1], x[0], 0.0])


def row(r, x):
    return np.tanh(np.dot(r, x))


def quadratic(x):
    return 4.0 * np.sum(x**2)


# -- scalar functions whose bodies call a transformation ---------------------------------
def calls_jacobian(x):
    return np.sum(np.sin(nx.jacobian(v)(x)))


def calls_jacfwd(x):
    return np.sum(nx.jacfwd(v)(x) ** 2)


def calls_jacrev(x):
    return np.sum(np.cos(nx.jacrev(v)(x)))


def calls_grad(x):
    return np.dot(nx.grad(q)(x), x)


def calls_vmap(x):
    return np.sum(nx.vmap(row, in_axes=(0, None))(A, x) ** 2)


def eight_identity(x):
    """4 * sum(x**2), through the gradient of another function: its Hessian is 8·I."""
    return 0.5 * np.dot(x, nx.jacobian(quadratic)(x))


NUMPY = {
    calls_jacobian: lambda x: np.sum(np.sin(jacobian_of_v(x))),
    calls_jacfwd: lambda x: np.sum(jacobian_of_v(x) ** 2),
    calls_jacrev: lambda x: np.sum(np.cos(jacobian_of_v(x))),
    calls_grad: lambda x: np.dot(grad_of_q(x), x),
    calls_vmap: lambda x: np.sum(np.tanh(A @ x) ** 2),
    eight_identity: lambda x: 4.0 * np.sum(x**2),
}
FUNCTIONS = list(NUMPY)
IDS = [f.__name__ for f in FUNCTIONS]

COMPOSITIONS = {
    "jacfwd(jacrev)": lambda f: nx.jacfwd(nx.jacrev(f)),
    "jacrev(jacfwd)": lambda f: nx.jacrev(nx.jacfwd(f)),
    "jacrev(jacrev)": lambda f: nx.jacrev(nx.jacrev(f)),
    "jacfwd(jacfwd)": lambda f: nx.jacfwd(nx.jacfwd(f)),
    "hessian": nx.hessian,
}


def numeric_hessian(f, x):
    return numeric_jacobian(lambda y: fd_gradient(f, y, 1e-4), [x], 0, 1e-4)


_hessians: dict = {}


def hessian_by_differences(f):
    if f not in _hessians:
        _hessians[f] = numeric_hessian(f, X)
    return _hessians[f]


def close(got, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_the_values_are_numpys(f):
    close(f(X), NUMPY[f](X), rtol=1e-12, atol=1e-12)
    close(nx.grad(f)(X), fd_gradient(NUMPY[f], X, 1e-4))


def test_the_hessian_of_8_identity_is_8_identity():
    close(numeric_hessian(NUMPY[eight_identity], X), 8.0 * np.eye(3))
    for compose in COMPOSITIONS.values():
        close(compose(eight_identity)(X), 8.0 * np.eye(3), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("composition", list(COMPOSITIONS))
@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_second_derivatives_interpreted(f, composition):
    got = COMPOSITIONS[composition](f)(X)
    assert np.shape(got) == (3, 3)
    close(got, hessian_by_differences(f))


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_hessian_vector_products_interpreted(f):
    hessian = hessian_by_differences(f)
    gradient, product = nx.jvp(nx.jacrev(f), (X,), (T,))
    close(gradient, fd_gradient(f, X, 1e-4))
    close(product, hessian @ T)
    gradient, back = nx.vjp(nx.jacfwd(f), X)
    close(gradient, fd_gradient(f, X, 1e-4))
    (pulled,) = back(C)
    close(pulled, C @ hessian)


def along(f):
    """x ↦ ∇f(x)·C, a function calling ``nx.grad`` of ``f``: its gradient is H·C."""

    def directional(x):
        return np.dot(nx.grad(f)(x), C)

    return directional


@pytest.mark.parametrize("f", FUNCTIONS, ids=IDS)
def test_grad_of_grad_interpreted(f):
    close(nx.grad(along(f))(X), hessian_by_differences(f) @ C)


def inner_scalar(t):
    return t**3 + np.cos(t)


def calls_grad_of_a_scalar(t):
    return nx.grad(inner_scalar)(t) * np.sin(t)


def test_grad_of_grad_of_a_scalar_function():
    want = numeric_hessian(lambda t: calls_grad_of_a_scalar(float(t[0])), np.array([0.7]))
    for second in (nx.grad(nx.grad(calls_grad_of_a_scalar)),):
        close(second(0.7), want[0, 0])


# -- autograd's test_jacobian_higher_order ----------------------------------------------
def outer_and_dot(x):
    return np.sin(np.outer(x, x)) + np.cos(np.dot(x, x))


def jacobian_of_outer_and_dot(x):
    return nx.jacobian(outer_and_dot)(x)


def second_jacobian_of_outer_and_dot(x):
    return nx.jacobian(nx.jacobian(outer_and_dot))(x)


def sum_sin_jacobian(x):
    return np.sum(np.sin(nx.jacobian(outer_and_dot)(x)))


def sum_sin_second_jacobian(x):
    return np.sum(np.sin(nx.jacobian(nx.jacobian(outer_and_dot))(x)))


Y = np.array([0.4, -1.3])


def test_jacobians_of_jacobians_as_autograd_checks_them():
    first = jacobian_of_outer_and_dot(Y)
    assert first.shape == (2, 2, 2)
    close(first, numeric_jacobian(outer_and_dot, [Y], 0))
    second = second_jacobian_of_outer_and_dot(Y)
    assert second.shape == (2, 2, 2, 2)
    close(second, numeric_jacobian(jacobian_of_outer_and_dot, [Y], 0))
    for f in (sum_sin_jacobian, sum_sin_second_jacobian):
        close(nx.grad(f)(Y), numeric_jacobian(f, [Y], 0))
        close(nx.jacfwd(f)(Y), numeric_jacobian(f, [Y], 0))


# -- under jit: a compiled program for each way forward and reverse mode meet, over the
# functions in turn (hessian is jacfwd(jacrev); each of these compiles for a minute) ------
def hvp_of_calls_jacfwd(x, t):
    return nx.jvp(nx.jacrev(calls_jacfwd), (x,), (t,))[1]


def vjp_of_jacfwd_of_calls_vmap(x, c):
    _, back = nx.vjp(nx.jacfwd(calls_vmap), x)
    return back(c)[0]


JITTED = [
    ("hessian", eight_identity, lambda: nx.jit(nx.hessian(eight_identity))(X)),
    ("jvp(jacrev)", calls_jacfwd, lambda: nx.jit(hvp_of_calls_jacfwd)(X, T)),
    ("vjp(jacfwd)", calls_vmap, lambda: nx.jit(vjp_of_jacfwd_of_calls_vmap)(X, C)),
    ("grad(grad)", calls_grad, lambda: nx.jit(nx.grad(along(calls_grad)))(X)),
]


@pytest.mark.parametrize(("composition", "f", "run"), JITTED, ids=[c for c, _, _ in JITTED])
def test_second_derivatives_under_jit(composition, f, run):
    hessian = hessian_by_differences(f)
    want = {"jvp(jacrev)": hessian @ T, "vjp(jacfwd)": C @ hessian, "grad(grad)": hessian @ C}
    close(run(), want.get(composition, hessian))


# -- tangents written in place share memory only where their values do ------------------
def writes_into_a_sum(x):
    y = x + 1.0  # a new array, whose tangent was x's own
    y[0] = 0.0
    return np.sum(y) + np.sum(x * x)


def plus_one(x):
    return x + 1.0


def writes_into_a_helpers_result(x):
    y = plus_one(x)
    y[1] = 0.0
    return np.sum(y * x)


def writes_into_the_operand(x):
    z = x * 2.0
    y = z + 1.0  # a new array: the write into z below does not reach it
    z[0] = 0.0
    return np.sum(y * y) + np.sum(z)


def writes_into_a_copy_of_a_sum(x):
    y = x + 1.0
    w = y  # the same array as y
    w[2] = 5.0
    return np.sum(w * x)


def writes_in_a_loop(x):
    y = x + 0.0
    for i in range(3):
        y[i] = y[i] * x[i]
    return np.sum(y) + np.sum(x**3)


def writes_into_an_element_of_a_tuple(x):
    t = (x + 0.0, x * 2.0)
    a, b = t
    a[1] = 7.0
    return np.sum(a * x) + np.sum(b)


IN_PLACE = [
    writes_into_a_sum,
    writes_into_the_operand,
    writes_into_a_copy_of_a_sum,
    writes_in_a_loop,
    writes_into_an_element_of_a_tuple,
]


@pytest.mark.parametrize("f", IN_PLACE, ids=[f.__name__ for f in IN_PLACE])
def test_a_write_reaches_only_the_tangents_it_should(f):
    want = numeric_jacobian(f, [X.copy()], 0)
    tangent = T.copy()
    value, derivative = nx.jvp(f, (X.copy(),), (tangent,))
    close(derivative, want @ T)
    np.testing.assert_array_equal(tangent, T)  # the caller's tangent is untouched
    close(nx.jacfwd(f)(X.copy()), want)
    close(nx.grad(f)(X.copy()), want)


def test_a_write_into_a_helpers_result_is_refused_at_its_line():
    # the result may be a view of the argument: numbax does not read into the helper
    line = inspect.getsourcelines(writes_into_a_helpers_result)[1] + 2  # y[1] = 0.0
    with pytest.raises(nx.TransformError, match=rf"line {line}: `y\[1\] = 0\.0`"):
        nx.jvp(writes_into_a_helpers_result, (X.copy(),), (T.copy(),))


def jvp_of_writes_into_a_sum(x, t):
    return nx.jvp(writes_into_a_sum, (x,), (t,))[1]


def test_a_write_into_a_sum_under_jit():
    tangent = T.copy()
    want = numeric_jacobian(writes_into_a_sum, [X.copy()], 0)
    close(nx.jit(jvp_of_writes_into_a_sum)(X.copy(), tangent), want @ T)
    np.testing.assert_array_equal(tangent, T)
