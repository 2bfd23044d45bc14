"""The AD entry points' conventions (JAX's): argnums, has_aux, value_and_grad, vjp,
jvp, linearize, Jacobian shapes, pytrees, dtypes, NumPy functions as arguments,
transformed functions called inside transformed functions, and the error table."""

from typing import NamedTuple

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def f2(x, y):
    return np.sum(x * np.sin(y)) + np.sum(x * x)


X = np.array([0.3, -0.7, 1.2])
Y = np.array([1.5, 2.0, 2.5])


def test_quickstart_gradient():
    got = nx.grad(sum_logistic)(np.arange(3.0))
    np.testing.assert_allclose(got, [0.25, 0.19661197, 0.10499357], rtol=1e-6)


def test_argnums_int_and_tuple():
    gx = nx.grad(f2)(X, Y)
    gy = nx.grad(f2, argnums=1)(X, Y)
    both = nx.grad(f2, argnums=(0, 1))(X, Y)
    only = nx.grad(f2, argnums=(1,))(X, Y)
    assert isinstance(both, tuple) and len(both) == 2
    assert isinstance(only, tuple) and len(only) == 1
    np.testing.assert_allclose(gx, np.sin(Y) + 2 * X)
    np.testing.assert_allclose(gy, X * np.cos(Y))
    np.testing.assert_allclose(both[0], gx)
    np.testing.assert_allclose(both[1], gy)
    np.testing.assert_allclose(only[0], gy)
    np.testing.assert_allclose(nx.grad(f2, argnums=-1)(X, Y), gy)


def test_value_and_grad_and_has_aux():
    value, grad = nx.value_and_grad(f2)(X, Y)
    np.testing.assert_allclose(value, f2(X, Y))
    np.testing.assert_allclose(grad, nx.grad(f2)(X, Y))

    def with_aux(x):
        y = np.sin(x)
        return np.sum(y * y), {"y": y, "n": 3}

    grad, aux = nx.grad(with_aux, has_aux=True)(X)
    np.testing.assert_allclose(grad, 2 * np.sin(X) * np.cos(X))
    np.testing.assert_allclose(aux["y"], np.sin(X))
    (value, aux), grad2 = nx.value_and_grad(with_aux, has_aux=True)(X)
    np.testing.assert_allclose(value, np.sum(np.sin(X) ** 2))
    np.testing.assert_allclose(grad2, grad)


def test_vjp_returns_one_cotangent_per_primal():
    def f(x, y):
        return x * y + np.sin(x)

    out, vjp_fun = nx.vjp(f, X, Y)
    np.testing.assert_allclose(out, f(X, Y))
    ct = np.array([1.0, 2.0, 3.0])
    cts = vjp_fun(ct)
    assert isinstance(cts, tuple) and len(cts) == 2
    np.testing.assert_allclose(cts[0], ct * (Y + np.cos(X)))
    np.testing.assert_allclose(cts[1], ct * X)
    with pytest.raises(ValueError, match="cotangent has shape"):
        vjp_fun(np.ones(2))


def test_jvp_and_linearize():
    def f(x, y):
        return x * y + np.sin(x)

    out, tangent = nx.jvp(f, (X, Y), (np.ones(3), np.zeros(3)))
    np.testing.assert_allclose(out, f(X, Y))
    np.testing.assert_allclose(tangent, Y + np.cos(X))
    out2, f_jvp = nx.linearize(f, X, Y)
    np.testing.assert_allclose(out2, out)
    np.testing.assert_allclose(f_jvp(np.ones(3), np.zeros(3)), tangent)
    with pytest.raises(ValueError, match="shape"):
        nx.jvp(f, (X, Y), (np.ones(2), np.zeros(3)))


def test_jvp_and_linearize_take_defaults_for_parameters_without_primals():
    def f(x, scale=2.0):
        return np.sin(x) * scale

    out, tangent = nx.jvp(f, (X,), (np.ones(3),))
    np.testing.assert_allclose(out, 2.0 * np.sin(X))
    np.testing.assert_allclose(tangent, 2.0 * np.cos(X))
    np.testing.assert_allclose(nx.linearize(f, X)[1](np.ones(3)), tangent)

    def g(x, y):
        return x * y

    with pytest.raises(TypeError, match="y have no default"):
        nx.jvp(g, (X,), (np.ones(3),))


def test_jacobian_shapes_follow_jax():
    def f(x):
        return np.outer(x, x)[:2]

    x = np.arange(1.0, 4.0)
    assert nx.jacfwd(f)(x).shape == (2, 3, 3)
    assert nx.jacrev(f)(x).shape == (2, 3, 3)
    assert nx.jacobian(f)(x).shape == (2, 3, 3)
    assert nx.hessian(sum_logistic)(x).shape == (3, 3)
    jac = nx.jacfwd(f2, argnums=(0, 1))(X, Y)
    assert isinstance(jac, tuple) and jac[0].shape == (3,)
    scalar = nx.jacrev(np.sin)(0.5)
    np.testing.assert_allclose(scalar, np.cos(0.5))


def test_numpy_functions_as_arguments():
    np.testing.assert_allclose(nx.grad(np.sin)(1.0), np.cos(1.0))
    np.testing.assert_allclose(nx.jacobian(np.exp)(X), np.diag(np.exp(X)))
    np.testing.assert_allclose(nx.jacfwd(np.tanh)(X), np.diag(1 - np.tanh(X) ** 2))


def test_transformed_functions_called_inside():
    model = nx.jit(lambda w, x: np.tanh(w * x))
    inner_grad = nx.grad(sum_logistic)

    def loss(w):
        return np.sum(model(w, X) ** 2) + np.sum(inner_grad(w * X))

    want = numeric_jacobian(loss, [0.7], 0)
    np.testing.assert_allclose(nx.grad(loss)(0.7), want, rtol=1e-6)
    np.testing.assert_allclose(nx.jit(nx.grad(loss))(0.7), want, rtol=1e-6)


class Params(NamedTuple):
    w: np.ndarray
    b: float


def test_pytrees_in_and_out():
    def loss(params, x):
        return np.sum(np.tanh(x @ params["w"] + params["b"]) ** 2)

    rng = np.random.default_rng(1)
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    x = rng.normal(size=(4, 3))
    grads = nx.grad(loss)(params, x)
    assert isinstance(grads, dict) and set(grads) == {"w", "b"}
    want_b = numeric_jacobian(lambda b: loss({"w": params["w"], "b": b}, x), [params["b"]], 0)
    np.testing.assert_allclose(grads["b"], want_b, rtol=1e-6)
    jitted = nx.jit(nx.grad(loss))(params, x)
    assert isinstance(jitted, dict)
    np.testing.assert_allclose(jitted["w"], grads["w"])

    def by_field(p, x):
        return np.sum(np.sin(p.w * x) + p.b * x)

    p = Params(np.array([0.5, 1.0]), 2.0)
    g = nx.grad(by_field)(p, np.array([1.0, 2.0]))
    assert isinstance(g, Params)
    np.testing.assert_allclose(g.w, np.cos(p.w * [1.0, 2.0]) * [1.0, 2.0])
    np.testing.assert_allclose(g.b, 3.0)


def test_dtypes_are_kept():
    x32 = np.array([0.1, 0.2], dtype=np.float32)
    assert nx.grad(sum_logistic)(x32).dtype == np.float32
    assert nx.jit(nx.grad(sum_logistic))(x32).dtype == np.float32
    assert nx.grad(lambda x: np.sum(x * 1.5))(x32).dtype == np.float32
    assert nx.grad(lambda x, y: np.sum(x * y), argnums=1)(x32, np.float64(2.0)).dtype == np.float64
    assert nx.jacfwd(np.sin)(x32).dtype == np.float32


# -- errors (API.md's table) -------------------------------------------------------------


def test_grad_of_non_scalar_output():
    with pytest.raises(TypeError, match=r"grad requires a scalar output.*\(3,\)"):
        nx.grad(np.sin)(X)
    with pytest.raises(TypeError, match="grad requires a scalar output"):
        nx.jit(nx.grad(np.sin))(X)


def test_grad_of_integer_input():
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs.*int64"):
        nx.grad(sum_logistic)(np.arange(3))
    assert nx.grad(lambda x: x * 2.0, allow_int=True)(3) == 2.0


def test_jit_of_grad_checks_the_input_dtype_as_grad_does():
    compiled = nx.jit(nx.grad(sum_logistic))
    floats = np.linspace(0.0, 1.0, 3)
    np.testing.assert_allclose(compiled(floats), nx.grad(sum_logistic)(floats), rtol=1e-12)
    message = "grad requires real- or complex-valued inputs.*int64"
    for _ in range(2):  # the first call, and one after a float call found its machine code
        with pytest.raises(TypeError, match=message):
            compiled(np.arange(3))
        with pytest.raises(TypeError, match="grad requires real- or complex-valued.*int"):
            compiled(3)
    assert nx.jit(nx.grad(lambda x: x * 2.0, allow_int=True))(3) == 2.0
    # with a static argument, every call takes the slow path, where the check is kept
    # per argument types and dtypes
    scaled = nx.jit(nx.grad(lambda x, n: n * sum_logistic(x)), static_argnums=1)
    for _ in range(2):
        np.testing.assert_allclose(scaled(floats, 2), 2 * compiled(floats), rtol=1e-12)
        with pytest.raises(TypeError, match=message):
            scaled(np.arange(3), 2)


def test_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"argnums=2.*valid argnums are -2 to 1"):
        nx.grad(f2, argnums=2)
    with pytest.raises(ValueError, match="argnums"):
        nx.jacfwd(f2, argnums=(0, 5))


def test_numpy_function_without_rule():
    def uses_unwrap(x):
        return np.sum(np.unwrap(x))

    with pytest.raises(nx.TransformError, match=r"numpy.unwrap has no derivative rule") as info:
        nx.grad(uses_unwrap)(X)
    message = str(info.value)
    assert "custom_jvp" in message and "uses_unwrap" in message and "test_api.py" in message


def test_constant_parts_are_not_differentiated():
    def f(x):
        n = x.shape[0]
        idx = np.argmax(x)
        return np.sum(x * np.arange(n)) + x[idx] * np.floor(x[0])

    x = np.array([0.3, 1.7, 0.9])
    np.testing.assert_allclose(nx.grad(f)(x), numeric_jacobian(f, [x], 0), atol=1e-6)


def _complex_out(x):
    return x * (1.0 + 1.0j)


def _square(z):
    return z * z


@pytest.mark.parametrize(
    "call",
    [
        lambda: nx.grad(_complex_out)(1.0),
        lambda: nx.jit(nx.grad(_complex_out))(1.0),
        lambda: nx.vmap(nx.grad(_complex_out))(np.ones(3)),
    ],
    ids=["eager", "jit", "vmap"],
)
def test_a_complex_output_needs_holomorphic_as_in_jax(call):
    """Seeding a complex output with 1 would silently give its real part's derivative."""
    with pytest.raises(TypeError, match="grad requires real-valued outputs.*holomorphic=True"):
        call()


def _positive(x):
    return x > 0.0


def _count_positive(x):
    return np.sum(x > 0.0)


@pytest.mark.parametrize(
    ("call", "dtype"),
    [
        (lambda: nx.grad(_positive)(1.0), "bool"),
        (lambda: nx.jit(nx.grad(_positive))(1.0), "bool"),
        (lambda: nx.value_and_grad(_count_positive)(np.ones(3)), "int64"),
        (lambda: nx.jit(nx.grad(_count_positive))(np.ones(3)), "int64"),
        (lambda: nx.vmap(nx.grad(_positive))(np.ones(3)), "bool"),
    ],
    ids=["bool-eager", "bool-jit", "int-eager", "int-jit", "bool-vmap"],
)
def test_an_integer_or_bool_output_is_refused_as_in_jax(call, dtype):
    """Its gradient would be zeros: JAX's TypeError instead."""
    match = f"grad requires real-valued outputs .* but got {dtype}. .* integer outputs, use nx.vjp"
    with pytest.raises(TypeError, match=match):
        call()


def test_holomorphic_grad_is_the_complex_derivative():
    z = 1.0 + 2.0j
    assert nx.grad(_square, holomorphic=True)(z) == 2 * z
    assert nx.jit(nx.grad(_square, holomorphic=True))(z) == 2 * z
    zs = np.array([1.0 + 1.0j, 0.5 - 2.0j])
    np.testing.assert_allclose(nx.vmap(nx.grad(_square, holomorphic=True))(zs), 2 * zs)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype"):
        nx.grad(_square, holomorphic=True)(1.0)
    with pytest.raises(TypeError, match="holomorphic=True requires outputs with complex dtype"):
        nx.grad(lambda z: np.abs(z), holomorphic=True)(z)
