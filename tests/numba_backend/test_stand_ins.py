"""Under jit, a value read only for its shape and dtype is not computed
(``numba_backend/stand_ins.py``): a gradient is its argument, and a user's function
whose Jacobian needs only its output's type returns a stand-in of it. The same values,
dtypes and errors as without jit, and what the value is read for decides."""

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


def total_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def mean_square(x):
    return np.mean(x * x * x)


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _stand_in_modules(name):
    """The generated modules of ``name`` with a stand-in result."""
    return [
        m.__numbax_source__
        for m in list(sys.modules.values())
        if getattr(m, "__numbax_source__", "").startswith(f"# jit of {name} (")
        and "a stand-in of them" in m.__numbax_source__
    ]


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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_hessian_reads_its_functions_output_type_from_a_stand_in(dtype):
    x = np.linspace(-1.0, 1.0, 5).astype(dtype)
    hessian = nx.hessian(total_logistic)
    compiled = nx.jit(hessian)(x)
    assert compiled.dtype == dtype
    np.testing.assert_allclose(compiled, hessian(x), rtol=1e-6 if dtype == np.float32 else 1e-12)
    body = _lowered_body("jvp_jacrev_total_logistic")
    assert "_out = _total_logistic_type(x)" in body, body
    (variant,) = {text for text in _stand_in_modules("total_logistic")}
    assert "nxrt.reduction_stand_in(_div, 'sum')" in variant, variant
    assert "nxrt.loop_stand_in(_total_logistic_line" in variant, variant


def test_a_mean_has_its_own_stand_in_and_a_vector_output_none():
    x = np.linspace(-1.0, 1.0, 5)
    for f in (mean_square, logistic):
        jacobian = nx.jacrev(f)
        np.testing.assert_allclose(nx.jit(jacobian)(x), jacobian(x), rtol=1e-12, atol=1e-15)
    (variant,) = {text for text in _stand_in_modules("mean_square")}
    assert "nxrt.reduction_stand_in(_mul_2, 'mean')" in variant, variant
    assert not _stand_in_modules("logistic")
    assert "_out = _logistic(x)" in _lowered_body("jacrev_logistic")
