"""``nx.jvp``, ``nx.linearize`` and ``nx.vjp`` called inside a function being transformed,
as JAX code writes them (the Hessian-vector product of JAX's autodiff cookbook): each
becomes a call of the generated derivative, which every transformation reads again.

Every number is float64, checked against central finite differences or a closed form.
Two programs compile (module-scoped fixtures): the HVP, and one using linearize and vjp.
"""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import EPS, fd_gradient
from tests.helpers.jax_x64 import jax_x64
from tests.helpers.source import line_of

X = np.array([0.1, 0.2, 0.3])
V = np.array([1.0, 0.5, -0.2])
B = np.array([0.4, -0.7, 1.1])
VS = np.array([[1.0, 0.0, 0.0], [0.3, -0.5, 2.0], [-1.0, 0.25, 0.5]])


def f(x):
    return np.sum(np.tanh(x) ** 2)


def grad_f(x):  # closed form: 2 tanh (1 - tanh^2)
    t = np.tanh(x)
    return 2 * t * (1 - t**2)


def hessian_diagonal(x):  # f is separable: its Hessian is diagonal
    t = np.tanh(x)
    return 2 * (1 - t**2) * (1 - 3 * t**2)


def two_args(a, b):
    return np.sum(a * np.sin(b))


# -- the functions under test (module level: numbax reads their source) ---------------


def hvp(x):
    return nx.jvp(nx.grad(f), (x,), (V,))[1]


def hvp_of(x, v):
    return nx.jvp(nx.grad(f), (x,), (v,))[1]


def hvp_norm(x):
    return np.sum(hvp(x) ** 2)


def value_plus_tangent(x):
    y, t = nx.jvp(f, (x,), (V,))
    return y + 2.0 * t


def jvp_of_two(a, b):
    return nx.jvp(two_args, (a, b), (V, 2.0 * V))


def linearized(x):
    y, f_jvp = nx.linearize(f, x)
    return y + f_jvp(V) * f_jvp(2.0 * V)


def linearized_then_moved(x):
    y, f_jvp = nx.linearize(f, x)
    x = x + 1.0  # the linearization point stays where it was taken
    return y + f_jvp(V) + np.sum(x)


def pulled_once(x):
    y, back = nx.vjp(np.tanh, x)
    (ct,) = back(V)
    return np.sum(ct**2) + np.sum(y)


def pulled_twice(a, b):
    y, back = nx.vjp(two_args, a, b)
    ga, gb = back(1.0)
    ha, hb = back(2.0)
    return y + np.sum(ga * hb) + np.sum(gb)


def combined(x):  # the compiled program: linearize and vjp together
    y, f_jvp = nx.linearize(f, x)
    z, back = nx.vjp(two_args, x, B)
    ga, gb = back(2.0)
    return y + f_jvp(V) + z + np.sum(ga * gb)


def dict_sum(p):
    return np.sum(np.tanh(p["a"]) ** 2 * p["b"])


def jvp_of_a_dict(x):
    return nx.jvp(dict_sum, ({"a": x, "b": B},), ({"a": V, "b": V},))[1]


# closed forms


def linearized_closed(x):
    return f(x) + 2.0 * np.dot(grad_f(x), V) ** 2


def pulled_once_closed(x):
    t = np.tanh(x)
    return np.sum((V * (1 - t**2)) ** 2) + np.sum(t)


def pulled_twice_closed(a, b):
    # ga = sin b, gb = a cos b; hb = 2 a cos b
    return np.sum(a * np.sin(b)) + np.sum(np.sin(b) * 2 * a * np.cos(b)) + np.sum(a * np.cos(b))


def combined_closed(x):
    # z = sum(x sin B); back(2): ga = 2 sin B, gb = 2 x cos B
    return f(x) + np.dot(grad_f(x), V) + two_args(x, B) + np.sum(4 * np.sin(B) * x * np.cos(B))


def jvp_of_a_dict_closed(x):
    t = np.tanh(x)
    return np.sum(2 * t * (1 - t**2) * V * B + t**2 * V)


@pytest.fixture(scope="module")
def jitted_hvp():
    return nx.jit(hvp)


@pytest.fixture(scope="module")
def jitted_combined():
    return nx.jit(combined)


# -- jvp ------------------------------------------------------------------------------


def test_jvp_of_a_function():
    want = f(X) + 2.0 * np.dot(grad_f(X), V)
    np.testing.assert_allclose(value_plus_tangent(X), want, rtol=1e-13)
    closed = lambda x: f(x) + 2.0 * np.dot(grad_f(x), V)  # noqa: E731
    np.testing.assert_allclose(nx.grad(value_plus_tangent)(X), fd_gradient(closed, X), rtol=1e-6)
    assert "_jvp_f(x, V)" in nx.grad(value_plus_tangent).source


def test_jvp_of_two_arguments_returns_primal_and_tangent():
    want_value = two_args(X, B)
    want_tangent = np.sum(V * np.sin(B)) + np.sum(X * np.cos(B) * 2.0 * V)
    value, tangent = nx.vmap(jvp_of_two, (0, None))(X[None], B)  # transformed
    np.testing.assert_allclose(value, [want_value], rtol=1e-13)
    np.testing.assert_allclose(tangent, [want_tangent], rtol=1e-13)
    # d tangent / d a = 2 V cos B
    got = nx.jacfwd(lambda a: jvp_of_two(a, B)[1])(X)
    np.testing.assert_allclose(got, 2.0 * V * np.cos(B), rtol=1e-12)


def test_hvp_matches_finite_differences_of_the_gradient_and_the_eager_jvp():
    fd = (grad_f(X + EPS * V) - grad_f(X - EPS * V)) / (2 * EPS)
    eager = nx.jvp(nx.grad(f), (X,), (V,))[1]
    np.testing.assert_allclose(hvp(X), fd, rtol=1e-7)
    np.testing.assert_allclose(eager, hessian_diagonal(X) * V, rtol=1e-13)
    transformed = nx.vmap(hvp_of, (None, 0))(X, V[None])[0]
    np.testing.assert_allclose(transformed, eager, rtol=1e-13)


def test_hvp_under_jit(jitted_hvp):
    np.testing.assert_allclose(jitted_hvp(X), hessian_diagonal(X) * V, rtol=1e-13)
    source = jitted_hvp.source
    assert "_jvp_grad_f(x, V)" in source
    assert "# line" in source and "nx.jvp(nx.grad(f), (x,), (V,))" in source


def test_grad_of_a_function_using_hvp():
    closed = lambda x: np.sum((hessian_diagonal(x) * V) ** 2)  # noqa: E731
    np.testing.assert_allclose(hvp_norm(X), closed(X), rtol=1e-13)
    np.testing.assert_allclose(nx.grad(hvp_norm)(X), fd_gradient(closed, X), rtol=1e-6)


def test_vmap_over_the_tangent_of_hvp():
    got = nx.vmap(hvp_of, (None, 0))(X, VS)
    np.testing.assert_allclose(got, hessian_diagonal(X) * VS, rtol=1e-13)


def test_the_source_shows_the_generated_jvp():
    source = nx.jacfwd(hvp).source
    assert "_jvp_jvp_grad_f(x, V, _d_x)" in source
    assert "def jvp_jvp_grad_f(x, _d_x, _d_x_2):" in source  # what it runs: the JVP of it
    columns = [
        (hessian_diagonal(X + e) - hessian_diagonal(X - e)) * V / (2 * EPS) for e in np.eye(3) * EPS
    ]
    np.testing.assert_allclose(nx.jacfwd(hvp)(X), np.transpose(columns), rtol=1e-6, atol=1e-9)


def test_jvp_of_a_dict_of_arrays():
    np.testing.assert_allclose(jvp_of_a_dict(X), jvp_of_a_dict_closed(X), rtol=1e-13)
    np.testing.assert_allclose(
        nx.grad(jvp_of_a_dict)(X), fd_gradient(jvp_of_a_dict_closed, X), rtol=1e-6
    )


def test_hvp_matches_jax():
    with jax_x64() as jax:
        jnp = jax.numpy

        def jf(x):
            return jnp.sum(jnp.tanh(x) ** 2)

        want = np.asarray(jax.jvp(jax.grad(jf), (X,), (V,))[1])
    assert want.dtype == np.float64
    np.testing.assert_allclose(nx.vmap(hvp_of, (None, 0))(X, V[None])[0], want, rtol=1e-13)


# -- linearize ------------------------------------------------------------------------


def test_linearize_calls_become_the_jvp():
    np.testing.assert_allclose(linearized(X), linearized_closed(X), rtol=1e-13)
    np.testing.assert_allclose(nx.grad(linearized)(X), fd_gradient(linearized_closed, X), rtol=1e-6)
    assert "_jvp_f(x, V)" in nx.grad(linearized).source


def test_linearize_keeps_its_point_when_the_name_moves():
    def closed(x):
        return f(x) + np.dot(grad_f(x), V) + np.sum(x + 1.0)

    np.testing.assert_allclose(nx.grad(linearized_then_moved)(X), fd_gradient(closed, X), rtol=1e-6)
    np.testing.assert_allclose(nx.vmap(linearized_then_moved)(X[None]), [closed(X)], rtol=1e-13)


# -- vjp ------------------------------------------------------------------------------


def test_vjp_pullback_called_once():
    np.testing.assert_allclose(nx.vmap(pulled_once)(X[None]), [pulled_once_closed(X)], rtol=1e-13)
    np.testing.assert_allclose(
        nx.grad(pulled_once)(X), fd_gradient(pulled_once_closed, X), rtol=1e-6
    )


def test_vjp_pullback_called_twice():
    np.testing.assert_allclose(pulled_twice(X, B), pulled_twice_closed(X, B), rtol=1e-13)
    ga, gb = nx.grad(pulled_twice, argnums=(0, 1))(X, B)
    np.testing.assert_allclose(ga, fd_gradient(lambda a: pulled_twice_closed(a, B), X), rtol=1e-6)
    np.testing.assert_allclose(gb, fd_gradient(lambda b: pulled_twice_closed(X, b), B), rtol=1e-6)
    source = nx.grad(pulled_twice).source
    assert "_vjp_two_args(a, b, 1.0)" in source and "_vjp_two_args(a, b, 2.0)" in source


def test_linearize_and_vjp_under_jit(jitted_combined):
    want = combined_closed(X)
    np.testing.assert_allclose(combined(X), want, rtol=1e-13)
    np.testing.assert_allclose(jitted_combined(X), want, rtol=1e-13)
    np.testing.assert_allclose(nx.grad(combined)(X), fd_gradient(combined_closed, X), rtol=1e-6)


# -- refusals -------------------------------------------------------------------------


def differentiates_a_parameter(x, g):
    return nx.jvp(g, (x,), (V,))[1]


def primals_not_a_tuple(x):
    p = (x,)
    return nx.jvp(f, p, (V,))[1]


def returns_the_pullback(x):
    y, back = nx.vjp(f, x)
    return back


def passes_the_pullback_along(x):
    y, back = nx.vjp(f, x)
    return apply_pullback(back, 1.0)


def apply_pullback(back, ct):
    return back(ct)[0]


def vjp_in_an_expression(x):
    return nx.vjp(f, x)[0]


def linearize_at_an_expression(x):
    y, f_jvp = nx.linearize(f, x * 2.0)
    return f_jvp(V)


def updates_the_point_in_place(x):
    y = x * 1.0
    out, back = nx.vjp(f, y)
    y[0] = 5.0
    return back(1.0)[0]


def jvp_with_aux(x):
    return nx.jvp(f, (x,), (V,), has_aux=True)[1]


def jvp_by_keyword(x):
    return nx.jvp(f, primals=(x,), tangents=(V,))[1]


@pytest.mark.parametrize(
    "fun, line, message",
    [
        (differentiates_a_parameter, "nx.jvp(g,", "a function made while the function runs"),
        (primals_not_a_tuple, "nx.jvp(f, p,", "write them as a tuple display"),
        (returns_the_pullback, "return back", "used other than by a call"),
        (passes_the_pullback_along, "apply_pullback(back", "used other than by a call"),
        (vjp_in_an_expression, "nx.vjp(f, x)[0]", "as a statement of its own"),
        (linearize_at_an_expression, "x * 2.0", "assign it to a name first"),
        (updates_the_point_in_place, "nx.vjp(f, y)", "pass a copy"),
        (jvp_with_aux, "has_aux=True", "has_aux=True inside a transformed function"),
        (jvp_by_keyword, "primals=(x,)", "by position"),
    ],
    ids=lambda p: p.__name__ if callable(p) else None,
)
def test_what_cannot_be_rewritten_says_where_and_what_to_do(fun, line, message):
    want = line_of(fun, line)
    args = (X, f) if fun is differentiates_a_parameter else (X,)
    with pytest.raises(nx.TransformError, match=message) as error:
        nx.jacrev(fun)(*args)
    assert error.value.filename == __file__
    assert error.value.lineno == want
    assert f"line {want}" in str(error.value)
