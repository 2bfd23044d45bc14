"""Under jit, a gradient whose value is read only for its shape and dtype is not
computed (``numba_backend/stand_ins.py``): the same values, dtypes and errors as
without jit, and what the value is read for decides."""

import sys

import numpy as np
import pytest

import numbax as nx


def bump(x):
    return np.sum(np.exp(-x * x))


slope = nx.grad(bump)


def total_slope(x):
    return np.sum(slope(x))


def weighted_slope(x):
    return np.sum(slope(x) * x)


def scaled_bump(a, x):
    return np.sum(a * np.exp(-x * x))


slope_in_x = nx.grad(scaled_bump, argnums=1)


def total_slope_in_x(a, x):
    return np.sum(slope_in_x(a, x))


def _lowered_body(name):
    """The body of the function named ``name`` as Numba compiled it, from the last
    module generated for it."""
    texts = [
        m.__numbax_source__
        for m in list(sys.modules.values())
        if getattr(m, "__numbax_source__", "").startswith(f"# jit of {name} (")
    ]
    assert texts, name
    return texts[-1].split(f"\ndef {name}(")[1]


def _central_difference(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_a_gradient_read_only_for_its_shape_and_dtype_is_not_computed():
    x = np.linspace(-2.0, 2.0, 9)
    curvature = nx.grad(total_slope)
    compiled = nx.jit(curvature)
    np.testing.assert_allclose(compiled(x), curvature(x), rtol=1e-12)
    np.testing.assert_allclose(compiled(x), _central_difference(slope, x), rtol=1e-7, atol=1e-9)
    body = _lowered_body("grad_total_slope")
    assert "_slope = nxrt.gradient_stand_in(x)" in body, body
    assert " slope(" not in body, body
    single = compiled(x.astype(np.float32))
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, curvature(x), rtol=1e-5, atol=1e-6)


def test_a_gradient_whose_values_are_read_is_computed():
    x = np.linspace(-2.0, 2.0, 9)
    compiled = nx.jit(nx.grad(weighted_slope))
    expected = _central_difference(lambda v: slope(v) * v, x)
    np.testing.assert_allclose(compiled(x), expected, rtol=1e-7, atol=1e-9)
    assert "gradient_stand_in" not in _lowered_body("grad_weighted_slope")


def test_the_stand_in_is_the_argument_the_gradient_is_taken_of():
    a, x = 3.0, np.linspace(-2.0, 2.0, 9)
    curvature = nx.grad(total_slope_in_x, argnums=1)
    np.testing.assert_allclose(nx.jit(curvature)(a, x), curvature(a, x), rtol=1e-12)
    body = _lowered_body("grad_total_slope_in_x")
    assert "nxrt.gradient_stand_in(x)" in body, body


def test_an_integer_argument_raises_grads_type_error_under_jit_too():
    curvature = nx.grad(total_slope)
    message = "grad requires real- or complex-valued inputs.*int64"
    with pytest.raises(TypeError, match=message):
        curvature(np.arange(3))
    with pytest.raises(TypeError, match=message):
        nx.jit(curvature)(np.arange(3))


def test_only_a_plain_gradient_of_one_real_argument_declares_its_value_like_it():
    def f(a, b):
        return np.sum(a * b)

    assert nx.grad(f).__numbax_gradient_of__() == 0
    assert nx.grad(f, argnums=1).__numbax_gradient_of__() == 1
    assert nx.grad(f, argnums=-1).__numbax_gradient_of__() == 1
    for other in [
        nx.grad(f, argnums=(0,)),
        nx.value_and_grad(f),
        nx.grad(lambda a, b: (f(a, b), a), has_aux=True),
        nx.grad(f, holomorphic=True),
        nx.grad(f, allow_int=True),
    ]:
        assert other.__numbax_gradient_of__() is None
