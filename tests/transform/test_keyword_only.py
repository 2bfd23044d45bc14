"""Keyword-only parameters of the user's functions, in every transformation.

A helper ``h(x, *, power=2.0)`` is called by position through its positional view
(``normalize/calls.py``), so its derivatives and its compiled code take the keyword-only
arguments after the others; the transformed function itself keeps Python's calling
convention (they are given by keyword only). Derivatives are checked against central
finite differences, interpreted; under ``jit`` one program covers the forms.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian

X = np.array([0.7, 1.3, 2.1])
Y = np.array([1.1, 0.4, 0.9])
BATCH = np.array([[0.7, 1.3], [0.2, 0.5], [1.6, 0.9]])
SCALES = np.array([1.5, -0.5, 2.0])


def powered(x, y, *, power=1.0):
    return np.sum((x * y) ** power)


def mixed(x, shift=0.5, *, weight):
    """A keyword-only parameter without default after a positional one with a default."""
    return np.sum(np.sin(x + shift) * weight)


def calls_with_keyword(x, y):
    return powered(x, y, power=2.0)


def calls_with_default(x, y):
    return powered(x, y)


def differentiates_through_keyword(x, y):
    """The keyword-only argument carries the derivative w.r.t. ``y``."""
    return mixed(x, weight=y) + mixed(y, 0.25, weight=x[0])


def scaled(x, *, scale=2.0):
    return np.sum(np.sin(x) * scale)


HELPER_CALLS = [calls_with_keyword, calls_with_default, differentiates_through_keyword]


def assert_close(got, want, label):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=label)


@pytest.mark.parametrize("f", HELPER_CALLS, ids=lambda f: f.__name__)
def test_callee_derivatives_match_finite_differences(f):
    for argnum in (0, 1):
        want = numeric_jacobian(f, (X, Y), argnum)
        for name, transform in (("grad", nx.grad), ("jacfwd", nx.jacfwd), ("jacrev", nx.jacrev)):
            assert_close(transform(f, argnums=argnum)(X, Y), want, f"{name} wrt {argnum}")
    assert_close(nx.jvp(f, (X, Y), (Y, X))[1], _directional(f), "jvp")
    out, pullback = nx.vjp(f, X, Y)
    assert_close(out, f(X, Y), "vjp value")
    assert_close(pullback(1.0)[1], numeric_jacobian(f, (X, Y), 1), "vjp")


def _directional(f):
    """d/dt f(X + t Y, Y + t X) at 0, by central differences."""
    eps = 1e-6
    return (f(X + eps * Y, Y + eps * X) - f(X - eps * Y, Y - eps * X)) / (2 * eps)


def test_hessian_through_a_keyword_only_callee():
    want = np.array(
        [numeric_jacobian(nx.grad(calls_with_keyword), (X, Y), 0)[i] for i in range(len(X))]
    )
    assert_close(nx.hessian(calls_with_keyword)(X, Y), want, "hessian")


def test_the_transformed_function_takes_its_keywords_by_name():
    want = np.cos(X) * 3.0
    assert_close(nx.grad(scaled)(X, scale=3.0), want, "grad")
    assert_close(nx.grad(scaled)(X), np.cos(X) * 2.0, "grad, default")
    assert_close(nx.jacfwd(scaled)(X, scale=3.0), want, "jacfwd")
    assert_close(nx.jacrev(scaled)(X, scale=3.0), want, "jacrev")
    assert_close(nx.hessian(scaled)(X, scale=3.0), np.diag(-np.sin(X) * 3.0), "hessian")
    assert_close(nx.jvp(scaled, (X,), (Y,))[1], np.sum(np.cos(X) * Y) * 2.0, "jvp")
    assert_close(nx.linearize(scaled, X)[1](Y), np.sum(np.cos(X) * Y) * 2.0, "linearize")
    assert_close(nx.vjp(scaled, X)[1](1.0)[0], np.cos(X) * 2.0, "vjp, default")
    with pytest.raises(TypeError):
        nx.grad(scaled)(X, 3.0)
    with pytest.raises(TypeError):
        nx.jit(scaled)(X, 3.0)


def test_mixed_defaults_keep_the_meaning_of_the_call():
    """``mixed(x, weight=y)`` passes the default shift, not ``y`` as the shift."""
    got = nx.grad(differentiates_through_keyword, argnums=1)(X, Y)
    assert_close(got, numeric_jacobian(differentiates_through_keyword, (X, Y), 1), "grad")


def test_vmap_maps_keywords_over_axis_zero_and_leaves_defaults_unmapped():
    """JAX's vmap: in_axes covers the positional arguments; a keyword argument is mapped
    over its leading axis, an omitted one keeps its default."""
    want = np.array([scaled(row, scale=s) for row, s in zip(BATCH, SCALES, strict=True)])
    assert_close(nx.vmap(scaled)(BATCH, scale=SCALES), want, "vmap")
    assert_close(nx.vmap(scaled, method="loop")(BATCH, scale=SCALES), want, "loop")
    assert_close(nx.vmap(scaled, in_axes=(1,))(BATCH.T, scale=SCALES), want, "in_axes")
    assert_close(nx.vmap(scaled)(BATCH), [scaled(row) for row in BATCH], "default")
    shared = nx.vmap(scaled, in_axes=(None,))(BATCH[0], scale=SCALES)
    assert_close(shared, [scaled(BATCH[0], scale=s) for s in SCALES], "shared x")
    with pytest.raises(ValueError, match="len\\(in_axes\\)=2"):
        nx.vmap(scaled, in_axes=(0, None))(BATCH, scale=SCALES)
    with pytest.raises(ValueError, match="rank"):
        nx.vmap(scaled)(BATCH, scale=3.0)  # a keyword is mapped, as in JAX
    with pytest.raises(TypeError):
        nx.vmap(scaled)(BATCH, SCALES)


def test_vmap_of_a_function_calling_a_keyword_only_helper():
    got = nx.vmap(calls_with_keyword, in_axes=(0, None))(BATCH, Y[:2])
    assert_close(got, [calls_with_keyword(row, Y[:2]) for row in BATCH], "vmap")


def test_derivatives_through_a_vmap_called_with_keywords():
    batched = nx.vmap(scaled)

    def loss(batch, scales):
        return np.sum(batched(batch, scale=scales))

    for argnum in (0, 1):
        want = numeric_jacobian(loss, (BATCH, SCALES), argnum)
        assert_close(nx.grad(loss, argnums=argnum)(BATCH, SCALES), want, f"grad {argnum}")
        assert_close(nx.jacfwd(loss, argnums=argnum)(BATCH, SCALES), want, f"jacfwd {argnum}")


scaled_gradient = nx.grad(scaled)
scaled_hessian = nx.hessian(scaled)


def test_transformations_called_with_keywords_inside_a_transformed_function():
    def loss(x, y):
        return np.sum(scaled_gradient(x, scale=y[0]) * y) + np.sum(scaled_hessian(x, scale=2.0))

    for argnum in (0, 1):
        want = numeric_jacobian(loss, (X, Y), argnum)
        assert_close(nx.grad(loss, argnums=argnum)(X, Y), want, f"grad {argnum}")


checkpointed = nx.checkpoint(powered)


def test_checkpoint_of_a_keyword_only_function():
    def loss(x, y):
        return checkpointed(x, y, power=3.0) + checkpointed(y, x)

    for argnum in (0, 1):
        want = numeric_jacobian(loss, (X, Y), argnum)
        assert_close(nx.grad(loss, argnums=argnum)(X, Y), want, f"grad {argnum}")


@nx.custom_jvp
def custom_scaled(x, *, scale=2.0):
    return np.sin(x) * scale


custom_scaled.defjvp(lambda primals, tangents: (custom_scaled(primals[0]), tangents[0]))


def test_custom_rules_refuse_keyword_only_parameters_as_jax_does():
    with pytest.raises(nx.TransformError, match="keyword-only parameters are not supported"):
        nx.grad(lambda x: np.sum(custom_scaled(x, scale=3.0)))(X)


def program(x, y, *, scale, square=True):
    """What the compiled test runs: callees with keyword-only parameters passed and
    omitted, one carrying the derivative, and the top level's own."""
    total = (powered(x, y, power=2.0) + powered(x, y) + mixed(x, weight=y)) * scale
    if square:
        total = total * total
    return total


@pytest.fixture(scope="module")
def compiled_program():
    return nx.jit(nx.value_and_grad(program, argnums=(0, 1)), static_argnames="square")


def test_one_compiled_program_covers_the_forms(compiled_program):
    """``scale`` is dynamic, ``square`` static (given its non-default value)."""
    value, grads = compiled_program(X, Y, scale=1.5, square=False)
    assert_close(value, program(X, Y, scale=1.5, square=False), "value under jit")
    for argnum in (0, 1):
        want = numeric_jacobian(lambda x, y: program(x, y, scale=1.5, square=False), (X, Y), argnum)
        assert_close(grads[argnum], want, f"grad {argnum} under jit")
    interpreted = nx.value_and_grad(program, argnums=(0, 1))(X, Y, scale=1.5, square=False)
    assert_close(interpreted[1][1], grads[1], "interpreted and compiled agree")
    with pytest.raises(TypeError):
        compiled_program(X, Y, 1.5)
