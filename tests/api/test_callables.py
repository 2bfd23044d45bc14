"""Every callable numbax hands out shares one base class: wrapping, method binding,
its name in cache keys."""

from functools import partial

import numpy as np
import pytest

import numbax as nx
from numbax.api.callable import NumbaxFunction
from numbax.codegen.fingerprint import callable_identity


def total(x):
    """The sum of the sines."""
    return np.sum(np.sin(x))


def spread(x, *rest):
    return x + len(rest)


MAKERS = {
    "jit": nx.jit,
    "grad": nx.grad,
    "jacfwd": nx.jacfwd,
    "vmap": nx.vmap,
    "custom_jvp": nx.custom_jvp,
    "custom_vjp": nx.custom_vjp,
    "checkpoint": nx.checkpoint,
}


@pytest.mark.parametrize("name", MAKERS)
def test_each_wraps_its_function_and_names_itself(name):
    made = MAKERS[name](total)
    assert isinstance(made, NumbaxFunction)
    assert made.__wrapped__ is total
    assert (made.__name__, made.__doc__) == ("total", total.__doc__)
    assert repr(made) == f"<numbax.{name} of 'total'>"
    assert callable_identity(made).startswith(f"{name}(")


@pytest.mark.parametrize("name", ["jit", "grad", "vmap"])
def test_a_function_taking_star_args_is_one_too(name):
    made = MAKERS[name](spread)
    assert isinstance(made, NumbaxFunction)
    assert made.__wrapped__ is spread
    assert repr(made) == f"<numbax.{name} of 'spread'>"


def test_identity_tells_apart_what_changes_the_generated_code():
    assert callable_identity(nx.grad(total)) != callable_identity(nx.grad(total, has_aux=True))
    assert callable_identity(nx.grad(total)) == callable_identity(nx.grad(total))


def test_each_binds_as_a_method():
    class Model:
        scale = 2.0

        @nx.custom_jvp
        def apply(self, x):
            return self.scale * x

    assert Model().apply(3.0) == 6.0
    assert Model.apply is Model.__dict__["apply"]


def test_numpy_functions_are_read_as_wrappers():
    made = nx.vmap(np.sin)
    assert made.fun is not np.sin and made.fun.__name__ == "sin"
    np.testing.assert_allclose(made(np.ones(3)), np.sin(np.ones(3)))


def weighted(w, x, scale=2.0, shift=0.0):
    """A function of a shape from np.broadcast_shapes (a NumPy function taking *args)."""
    shape = np.broadcast_shapes(np.shape(w), np.shape(x))
    return scale * np.sum(np.zeros(shape) + w * np.sin(x)) + shift


def test_partials_are_read_as_wrappers_of_their_bound_arguments():
    w, x = np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3])
    by_weights, by_ones = partial(weighted, w), partial(weighted, np.ones(3), scale=3.0)
    np.testing.assert_allclose(nx.grad(by_weights)(x), 2.0 * w * np.cos(x))
    np.testing.assert_allclose(nx.grad(by_ones)(x), 3.0 * np.cos(x))  # its own bound values
    np.testing.assert_allclose(nx.grad(by_weights, argnums=1)(x, 5.0), np.sum(w * np.sin(x)))
    np.testing.assert_allclose(
        nx.vmap(by_weights)(np.stack([x, 2 * x])), [by_weights(x), by_weights(2 * x)]
    )
    assert nx.jacfwd(partial(weighted, shift=1.0), argnums=1)(w, x).shape == (3,)
    bound_array = partial(weighted, x=x, shift=np.float64(1.0))  # not written as text
    np.testing.assert_allclose(nx.grad(bound_array)(w), 2.0 * np.sin(x))


def test_a_jitted_partial_compiles_its_function_with_the_bound_values():
    matrix = partial(weighted, np.ones((2, 1)), shift=1.0)
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(nx.jit(matrix)(x), matrix(x), rtol=1e-14)
