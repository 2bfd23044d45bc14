"""Functions taking ``*args`` under every transformation, as JAX transforms them: the
call's positional arguments are what ``argnums`` and ``in_axes`` count, and each number
of arguments gets its own generated code. Derivatives are checked against central
finite differences in float64, interpreted and under ``nx.jit``."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian


def product(*a):
    return a[0] * np.sin(a[1])


def scaled(x, *rest):
    """x times the product of the rest, through a loop over them."""
    s = x
    for r in rest:
        s = s * r
    return np.sum(np.tanh(s))


def helper_caller(x):
    return scaled(x, 2.0) + scaled(x, x, 3.0)


def both(transformed):
    """The transformed function interpreted and compiled."""
    return [transformed, nx.jit(transformed)]


@pytest.mark.parametrize("argnums", [0, 1, -1])
def test_grad_counts_the_call_arguments(argnums):
    for g in both(nx.grad(product, argnums=argnums)):
        np.testing.assert_allclose(
            g(2.0, 0.3), numeric_jacobian(product, (2.0, 0.3), argnums), rtol=1e-7
        )


def test_grad_of_a_lambda_taking_star_args():
    assert nx.grad(lambda *a: a[0] * a[1])(2.0, 3.0) == 3.0


def test_grad_with_a_tuple_of_argnums_and_more_arguments():
    args = (0.4, 1.3, -0.7, 0.9)
    for g in both(nx.grad(scaled, argnums=(0, 2, 3))):
        grads = g(*args)
        assert isinstance(grads, tuple) and len(grads) == 3
        for got, k in zip(grads, (0, 2, 3), strict=True):
            np.testing.assert_allclose(got, numeric_jacobian(scaled, args, k), rtol=1e-7)


def test_argnums_out_of_range_is_checked_against_the_call():
    g = nx.grad(product, argnums=2)
    with pytest.raises(ValueError, match="argnums=2 is out of range; the function takes 2"):
        g(2.0, 3.0)
    assert g(2.0, 3.0, 4.0) == 0.0  # a third argument exists in this call


def test_value_and_grad():
    value, grad = nx.value_and_grad(product, argnums=1)(2.0, 0.3)
    assert value == product(2.0, 0.3)
    np.testing.assert_allclose(grad, numeric_jacobian(product, (2.0, 0.3), 1), rtol=1e-7)


@pytest.mark.parametrize("jacobian", [nx.jacfwd, nx.jacrev])
def test_jacobians(jacobian):
    args = (np.array([0.5, -1.0]), np.array([0.2, 0.7]), np.array([1.5, 2.0]))

    def f(*a):
        return np.tanh(a[0] * a[1]) + a[2]

    for k in range(3):
        for jac in both(jacobian(f, argnums=k)):
            np.testing.assert_allclose(
                jac(*args), numeric_jacobian(f, args, k), rtol=1e-7, atol=1e-10
            )


def test_hessian():
    h = nx.hessian(product, argnums=1)(2.0, 0.3)
    np.testing.assert_allclose(h, -2.0 * np.sin(0.3), rtol=1e-9)


def test_jvp_vjp_and_linearize():
    out, tangent = nx.jvp(product, (2.0, 0.3), (1.0, 0.5))
    assert out == product(2.0, 0.3)
    expected = numeric_jacobian(product, (2.0, 0.3), 0) + 0.5 * numeric_jacobian(
        product, (2.0, 0.3), 1
    )
    np.testing.assert_allclose(tangent, expected, rtol=1e-7)
    _, pullback = nx.vjp(product, 2.0, 0.3)
    for got, k in zip(pullback(1.0), (0, 1), strict=True):
        np.testing.assert_allclose(got, numeric_jacobian(product, (2.0, 0.3), k), rtol=1e-7)
    _, f_jvp = nx.linearize(product, 2.0, 0.3)
    np.testing.assert_allclose(f_jvp(1.0, 0.5), expected, rtol=1e-7)


def test_vmap_with_in_axes_per_call_argument():
    xs, ys = np.linspace(0, 1, 4), np.linspace(1, 2, 4)
    for batched in both(nx.vmap(lambda *a: a[0] + a[1])):
        np.testing.assert_allclose(batched(xs, ys), xs + ys)
    for batched in both(nx.vmap(product, in_axes=(0, None))):
        np.testing.assert_allclose(batched(xs, 0.3), xs * np.sin(0.3))
    per_example = nx.vmap(nx.grad(scaled, argnums=1), in_axes=(0, None, 0))
    got = per_example(xs, 2.0, ys)
    expected = [numeric_jacobian(scaled, (x, 2.0, y), 1) for x, y in zip(xs, ys, strict=True)]
    np.testing.assert_allclose(got, expected, rtol=1e-7)


def test_jit_compiles_one_function_per_arity():
    f = nx.jit(scaled)
    assert f(0.5, 2.0) == pytest.approx(scaled(0.5, 2.0), rel=1e-14)
    assert f(0.5, 2.0, 3.0) == pytest.approx(scaled(0.5, 2.0, 3.0), rel=1e-14)
    assert "def scaled(x, rest_0, rest_1):" in f.source
    assert "rest = rest_0, rest_1" in f.source
    np.testing.assert_allclose(f(np.ones(3), 2.0), scaled(np.ones(3), 2.0))


def test_source_names_the_arguments_and_keeps_the_users_lines():
    g = nx.grad(scaled, argnums=1)
    with pytest.raises(ValueError, match="Call it once"):
        _ = g.source
    g(0.5, 2.0, 3.0)
    assert "def grad_scaled(x, rest_0, rest_1):" in g.source
    assert "# line" in g.source and "s = s * r" in g.source


def test_a_helper_taking_star_args_called_with_two_and_three_arguments():
    expected = numeric_jacobian(helper_caller, (0.4,), 0)
    for g in both(nx.grad(helper_caller)):
        np.testing.assert_allclose(g(0.4), expected, rtol=1e-7)
    for jac in both(nx.jacfwd(helper_caller)):
        np.testing.assert_allclose(jac(0.4), expected, rtol=1e-7)
    assert nx.jit(helper_caller)(0.4) == pytest.approx(helper_caller(0.4), rel=1e-14)


def test_keyword_arguments_after_star_args_are_passed_through():
    def f(x, *rest, scale=2.0):
        return scale * x * rest[0]

    assert nx.grad(f)(1.0, 3.0, scale=4.0) == 12.0
    assert nx.grad(f, argnums=1)(1.0, 3.0) == 2.0


def stacked(weights, *args):
    """autograd's RNN example: the ``*args`` and a column of ones, concatenated as tuples."""
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.sum(np.tanh(np.dot(cat_state, weights)))


def test_star_args_concatenated_with_a_tuple():
    rng = np.random.default_rng(0)
    weights, a, b = rng.normal(size=(4, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 1))
    args = (weights, a, b)
    for k in range(3):
        np.testing.assert_allclose(
            nx.grad(stacked, argnums=k)(*args),
            numeric_jacobian(stacked, args, k),
            rtol=1e-6,
            atol=1e-9,
        )
    jac = nx.jacfwd(stacked, argnums=1)(*args)
    np.testing.assert_allclose(jac, numeric_jacobian(stacked, args, 1), rtol=1e-6, atol=1e-9)
    batched = nx.vmap(stacked, in_axes=(None, 0, 0))(weights, np.stack([a, a]), np.stack([b, b]))
    np.testing.assert_allclose(batched, [stacked(*args)] * 2)


def test_concatenated_tuples_and_lists_of_known_items():
    def f(x):
        pair = (x, 2.0 * x)
        items = [x]
        return np.sum(np.stack(pair + (3.0 * x,))) + np.sum(np.stack(items + [x * x]))

    np.testing.assert_allclose(nx.grad(f)(np.ones(2)), [9.0, 9.0])
