"""Every callable numbax hands out shares one base class: wrapping, method binding,
its name in cache keys."""

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
