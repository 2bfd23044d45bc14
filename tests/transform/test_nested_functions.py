"""Nested functions, closures, ``*args`` and methods of the user's objects.

Nested ``def``s and lambdas are lifted out of the function (numbax/transform/nested.py),
methods of global objects read with their object bound (methods.py), starred arguments
of known length spelled out (normalize/starred.py). The derivatives are checked against
central differences interpreted, forward and reverse; under ``jit``, one module-scoped
program (a molecular-dynamics loop written as JAX's documentation writes it, and a
network of layer objects) covers them compiled.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian

X = np.array([0.3, -0.4, 0.5])


def assert_derivatives(f, *args, argnums=(0,), rtol=1e-6, atol=1e-8):
    """jacfwd and jacrev of ``f``, interpreted, against central differences."""
    wants = [numeric_jacobian(f, args, argnum) for argnum in argnums]
    for jacobian in (nx.jacfwd, nx.jacrev):
        gots = jacobian(f, argnums=tuple(argnums))(*args)
        for argnum, got, want in zip(argnums, gots, wants, strict=True):
            np.testing.assert_allclose(
                got, want, rtol=rtol, atol=atol, err_msg=f"{jacobian.__name__} {argnum}"
            )


# -- nested defs and lambdas ------------------------------------------------------------


def closure_in_a_loop(x, a):
    def wave(y):
        return np.sin(y) * a  # `a` as it is when wave is called

    total = 0.0
    for i in range(3):
        total = total + wave(x * (i + 1))
        a = a * 1.5  # rebound between calls
    return total


def lambda_bound_to_a_name(x, c):
    scaled = lambda y, z: c * y * z  # noqa: E731
    return scaled(x, x) + scaled(x, 2.0)


def nested_calling_nested(x, c):
    def inner(y):
        def innermost(z):
            return z * c

        return np.tanh(innermost(y)) + c

    def outer(y):
        return inner(y) * inner(2.0 * y)  # outer reads c through inner

    return outer(x)


def defaults_and_keywords(x, c):
    def power(y, p=2, scale=1.0):
        return scale * y**p * c

    return power(x) + power(x, scale=0.5) + power(p=3, y=x)


@pytest.mark.parametrize(
    "f",
    [closure_in_a_loop, lambda_bound_to_a_name, nested_calling_nested, defaults_and_keywords],
)
def test_nested_function_derivatives(f):
    assert_derivatives(f, X, 1.3, argnums=(0, 1))


def test_nested_function_under_vmap():
    xs = np.stack([X, 2 * X])
    batched = nx.vmap(closure_in_a_loop, (0, None))(xs, 1.3)
    np.testing.assert_allclose(batched, [closure_in_a_loop(x, 1.3) for x in xs])


def energy_of_springs(x, k):
    def energy(y):
        return 0.5 * k * np.sum(y**2) + 0.25 * np.sum(y**4)

    force = nx.grad(energy)  # a transformation of a nested function, built in place
    return np.sum(force(x) ** 2) + np.sum(nx.grad(energy)(2.0 * x))


def batched_nested(xs, c):
    def row_energy(y, w):
        return np.sum(c * y * w)

    return np.sum(nx.vmap(row_energy, in_axes=(0, None))(xs, xs[0]))


def test_transformations_of_nested_functions():
    assert_derivatives(energy_of_springs, X, 1.7, argnums=(0, 1))
    xs = np.array([[0.3, -0.4], [0.5, 0.2], [0.1, 0.9]])
    assert_derivatives(batched_nested, xs, 0.7, argnums=(0, 1))


def rebinding(x):
    def step(y):
        return y * x

    return step


def rebinding_nonlocal(x):
    total = x

    def add(y):
        nonlocal total
        total = total + y
        return total

    return add(x)


def passing_closure_on(x):
    def term(y):
        return y * x

    return np.sum(np.apply_along_axis(term, 0, x))


def two_definitions(x):
    def f(y):
        return y

    def f(y):  # noqa: F811
        return 2 * y

    return f(x)


@pytest.mark.parametrize(
    "f, words",
    [
        (rebinding, "as a value"),
        (rebinding_nonlocal, "nonlocal"),
        (passing_closure_on, "as a value"),
        (two_definitions, "second definition"),
    ],
)
def test_closures_that_cannot_be_lifted_are_refused(f, words):
    with pytest.raises(nx.TransformError, match=words) as info:
        nx.grad(lambda x: np.sum(f(x)))(X)
    assert info.value.filename == __file__
    assert f.__name__ in str(info.value)


# -- *args ---------------------------------------------------------------------------------


def three(a, b, c):
    return a * b + np.sin(c)


def forwards(*args):
    return three(*args)


def star_arguments(x):
    pair = (x, 2.0 * x)

    def product(*parts):
        return parts[0] * parts[1]

    return np.sum(forwards(*pair, x)) + np.sum(product(x, x))


def test_star_arguments_of_known_length():
    assert_derivatives(star_arguments, X)


# -- methods of objects --------------------------------------------------------------------


class Dense:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __call__(self, x):
        return self.activation(x @ self.w + self.b)

    def activation(self, z):
        return np.tanh(z)

    def forward(self, x, scale=1.0):
        return self(x) * scale


class Net:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:  # unrolled: one copy per layer object
            x = layer.forward(x)
        return x


_rng = np.random.default_rng(0)
LAYERS = [Dense(_rng.normal(size=(3, 3)), _rng.normal(size=3)) for _ in range(3)]
NET = Net(LAYERS)


def through_methods(x):
    h = LAYERS[0].forward(x, 0.5)
    for layer in LAYERS:
        h = layer(h)
    return np.sum(NET(h))


def test_methods_of_global_objects():
    assert_derivatives(through_methods, X)


@nx.tree_util.register_pytree_node_class
class Linear:
    def __init__(self, w):
        self.w = w

    def tree_flatten(self):
        return (self.w,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __call__(self, x):
        return np.tanh(x @ self.w)


def through_the_class(model, x):
    return np.sum(Linear.__call__(model, x))


def test_method_called_through_its_class_differentiates_the_object():
    model = Linear(_rng.normal(size=(3, 3)))
    got = nx.grad(through_the_class)(model, X)
    want = numeric_jacobian(lambda w, x: through_the_class(Linear(w), x), (model.w, X), 0)
    assert isinstance(got, Linear)
    np.testing.assert_allclose(got.w, want, rtol=1e-6, atol=1e-8)


def method_of_a_parameter(model, x):
    return np.sum(model.forward(x))


def test_method_of_a_value_is_refused_saying_what_to_write():
    with pytest.raises(nx.TransformError, match=r"through its class") as info:
        nx.grad(method_of_a_parameter, argnums=1)(LAYERS[0], X)
    assert "no derivative rule" not in str(info.value)
    assert "custom_jvp" not in str(info.value)


# -- compiled: one program ---------------------------------------------------------------------

N_PARTICLES = 5


def simulate(x0, v0, k, dt, n_steps):
    """Velocity Verlet of a chain of springs as JAX's documentation writes it: a nested
    energy function and ``force = -grad(energy)`` (only the import is numbax's)."""

    def energy(x):
        stretch = x[1:] - x[:-1] - 1.0
        return 0.5 * k * np.sum(stretch**2) + 0.25 * np.sum(x**4)

    force = lambda x: -nx.grad(energy)(x)  # noqa: E731
    x, v = x0, v0
    f = force(x)
    for _ in range(n_steps):
        v = v + 0.5 * dt * f
        x = x + dt * v
        f = force(x)
        v = v + 0.5 * dt * f
    return energy(x) + 0.5 * np.sum(v**2), x


def md_and_a_layer(x0, v0):
    total, x = simulate(x0, v0, 1.3, 0.01, 5)
    square = lambda y: y * y  # noqa: E731
    return total, x, LAYERS[0](square(x[:3]))  # a method of a global object


@pytest.fixture(scope="module")
def compiled_program():
    """The one compile of this file: the MD loop (reverse mode of a nested function
    inside) and a layer object's method."""
    return nx.jit(md_and_a_layer)


def test_compiled_program_matches_interpreted(compiled_program):
    x0 = np.arange(N_PARTICLES, dtype=np.float64) * 1.1
    v0 = np.linspace(-0.1, 0.1, N_PARTICLES)
    for got, want in zip(compiled_program(x0, v0), md_and_a_layer(x0, v0), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_molecular_dynamics_conserves_energy_interpreted():
    x0 = np.arange(N_PARTICLES, dtype=np.float64) * 1.2
    start, _ = simulate(x0, np.zeros_like(x0), 1.0, 1e-3, 0)
    end, _ = simulate(x0, np.zeros_like(x0), 1.0, 1e-3, 200)
    assert abs(end - start) < 1e-5 * abs(start)


def summed_waves(x, a):
    def wave(y):
        return np.sum(np.sin(y) * a)

    return wave(x) + wave(2.0 * x)


def test_export_writes_lifted_functions_with_their_captured_parameters(tmp_path):
    path = tmp_path / "exported.py"
    nx.export(nx.grad(summed_waves), path)
    spec = importlib.util.spec_from_file_location("exported_nested", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    want = numeric_jacobian(summed_waves, (X, 1.3), 0)
    np.testing.assert_allclose(module.grad_summed_waves(X, 1.3), want, rtol=1e-6)
