"""Under jit, a value read only for its shape and dtype is not computed
(``numba_backend/passes/stand_ins.py``): a gradient is its argument, and a user's function
whose Jacobian needs only its output's type returns a stand-in of it. The same values,
dtypes and errors as without jit, and what the value is read for decides."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian
from tests.numba_backend.generated_sources import jit_sources


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
    return [t for t in jit_sources(name) if "a stand-in of them" in t]


def _lowered_body(name):
    """The body of the function named ``name`` as Numba compiled it, from the last
    module generated for it."""
    return jit_sources(name)[-1].split(f"\ndef {name}(")[1]


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


def dense_squared_error(w, b, x, y):
    out = x @ w + b
    return np.mean((out - y) ** 2)


def squared_error(w, y):
    return np.mean((w - y) ** 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_loss_read_only_by_its_seed_and_count_is_not_computed(dtype):
    """``jit(grad)`` of a mean squared error: the loss's values (``(out - y) ** 2``) and
    ``out`` itself, which the adjoint loop recomputes, are read only for shapes and
    dtypes: each is a ``shape_stand_in``, and neither loop is compiled or run."""
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)
    x, y = rng.standard_normal((5, 4)).astype(dtype), rng.standard_normal((5, 3)).astype(dtype)
    for argnums in (0, 1):
        gradient = nx.grad(dense_squared_error, argnums=argnums)
        compiled = nx.jit(gradient)(w, b, x, y)
        assert compiled.dtype == dtype
        tolerance = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(compiled, gradient(w, b, x, y), rtol=tolerance)
        if dtype == np.float64:
            want = numeric_jacobian(dense_squared_error, (w, b, x, y), argnums)
            np.testing.assert_allclose(compiled, want, rtol=1e-7, atol=1e-9)
    body = _lowered_body("grad_dense_squared_error")
    assert "out = nxrt.shape_stand_in(nxrt.op_add, _matmul, b)" in body, body
    assert "_pow = nxrt.shape_stand_in(_grad_dense_squared_error_line" in body, body


def test_a_stand_in_of_scalars_computes_and_of_unbroadcastable_shapes_raises():
    """On Python floats the stand-in is the operation itself; on arrays whose shapes do
    not broadcast, NumPy's ValueError, as the loop it stands for would raise."""
    compiled = nx.jit(nx.grad(squared_error))
    assert compiled(3.0, 1.0) == pytest.approx(4.0)
    assert "nxrt.shape_stand_in(" in _lowered_body("grad_squared_error")
    np.testing.assert_allclose(compiled(np.ones(3), np.zeros(3)), np.full(3, 2.0 / 3.0))
    with pytest.raises(ValueError, match="broadcast"):
        compiled(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="broadcast"):
        nx.grad(squared_error)(np.ones(3), np.ones(4))


def centered_square(x, y):
    t = np.sum(x) + np.sum(y)
    return np.mean((t - x) ** 2)


def test_a_stand_in_of_an_operator_on_scalars_is_the_operator():
    """``t``, a sum of two reductions, is read only for the shape of the mean's values
    (the adjoint loop recomputes it): its stand-in adds the two numbers (``nxrt.op_add``
    inlined on scalars)."""
    x, y = np.array([0.5, 1.0]), np.array([2.0, -1.0, 0.25])
    compiled = nx.jit(nx.grad(centered_square, argnums=(0, 1)))(x, y)
    for got, want in zip(compiled, nx.grad(centered_square, argnums=(0, 1))(x, y), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    t = np.sum(x) + np.sum(y)
    np.testing.assert_allclose(compiled[1], np.full(3, np.mean(2 * (t - x))), rtol=1e-14)
    assert "nxrt.shape_stand_in(nxrt.op_add, " in _lowered_body("grad_centered_square")
