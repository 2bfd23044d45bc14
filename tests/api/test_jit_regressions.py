"""nx.jit agrees with eager numbax and with NumPy where it once did not.

Each case here was wrong or crashed under ``jit`` on valid code: floating-point rules,
fused kernels in branches, recursion, pytree results, composed transformations.
Derivatives are checked against central differences as well as against eager mode.
"""

import warnings

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian

# -- NumPy's floating-point rules, not Python's ----------------------------------------


def sum_sqrt(x):
    return np.sum(np.sqrt(x))


def test_derivative_at_a_pole_is_inf_not_zero_division():
    x = np.array([0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eager = nx.grad(sum_sqrt)(x)
    jitted = nx.jit(nx.grad(sum_sqrt))(x)
    np.testing.assert_array_equal(jitted, [np.inf, 0.5])
    np.testing.assert_array_equal(jitted, eager)


def divide(a, b):
    return a / b


@pytest.mark.parametrize(("a", "b"), [(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0)])
def test_scalar_float_division_by_zero_follows_numpy(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.float64(a) / np.float64(b)
    np.testing.assert_array_equal(nx.jit(divide)(a, b), expected)


def log_ratio(x):
    return np.log(1 - x) / (1 - x)


def test_fused_elementwise_chain_divides_by_zero_as_numpy():
    x = np.array([1.0, 0.5, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = log_ratio(x)
    np.testing.assert_array_equal(nx.jit(log_ratio)(x), expected)


def floor_divide(a, b):
    return a // b


def test_integer_array_division_by_zero_gives_numpys_zero():
    a, b = np.array([7, 8, -9]), np.array([2, 0, 0])
    with np.errstate(divide="ignore"):
        expected = a // b
    np.testing.assert_array_equal(nx.jit(floor_divide)(a, b), expected)


def test_explicit_error_model_is_the_users():
    with pytest.raises(ZeroDivisionError):
        nx.jit(divide, error_model="python")(1.0, 0.0)


# -- fused kernels take only what their result depends on ------------------------------


def branch_on_reduction(a, c):
    if np.mean(a) > 5.0:
        t = a
    else:
        t = np.sin(np.sum(c)) + a
    return np.sum(t)


@pytest.mark.parametrize("n", [5, 3])
def test_grad_through_branch_on_reduction(n):
    a, c = np.ones(5), np.full(n, 0.1)
    expected = numeric_jacobian(branch_on_reduction, (a, c), 1)
    grad = nx.grad(branch_on_reduction, argnums=1)
    np.testing.assert_allclose(grad(a, c), expected, rtol=1e-6)
    np.testing.assert_allclose(nx.jit(grad)(a, c), expected, rtol=1e-6)


# -- recursion ----------------------------------------------------------------------


def doubled(x, n):
    if n == 0:
        return x
    return doubled(np.sin(x) * 2.0, n - 1)


def test_jit_of_a_function_calling_itself():
    assert nx.jit(doubled)(1.0, 3) == doubled(1.0, 3)
    x = np.array([1.0, 0.5])
    np.testing.assert_allclose(nx.jit(doubled)(x, 2), doubled(x, 2), rtol=1e-15)


def sum_doubled(x):
    return np.sum(doubled(x, 2))


def test_jit_grad_of_a_recursive_function():
    x = np.array([1.0, 0.5])
    expected = numeric_jacobian(sum_doubled, (x,), 0)
    np.testing.assert_allclose(nx.grad(sum_doubled)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(nx.jit(nx.grad(sum_doubled))(x), expected, rtol=1e-6)


# -- pytree results of any nesting come back as what they were ---------------------------


def dict_of_tuples(x):
    return {"a": (x, x * 2), "b": (x * 3,)}


def tuple_of_nested_dicts(x):
    return ({"u": x, "v": {"w": x * 2}}, x)


def list_of_dicts(x):
    return [{"a": x}, {"a": x + 1}]


@pytest.mark.parametrize("fun", [dict_of_tuples, tuple_of_nested_dicts, list_of_dicts])
@pytest.mark.parametrize("x", [1.5, np.array([1.0, 2.0])])
def test_nested_pytree_results(fun, x):
    jitted = nx.jit(fun)
    for _ in range(2):  # the first call and the later, faster ones
        got = jitted(x)
        want = fun(x)
        assert nx.tree_util.tree_structure(got) == nx.tree_util.tree_structure(want)
        for g, w in zip(nx.tree_util.tree_leaves(got), nx.tree_util.tree_leaves(want), strict=True):
            np.testing.assert_array_equal(g, w)


# -- derivatives of batched functions ----------------------------------------------------


def sin_times_x(x):
    return np.sin(x) * x


@pytest.mark.parametrize("outer", [nx.jacfwd, nx.jacrev])
@pytest.mark.parametrize("inner", [nx.jacfwd, nx.jacrev])
def test_second_derivative_of_vmap(outer, inner):
    xs = np.array([0.3, 0.5])
    second = 2 * np.cos(xs) - xs * np.sin(xs)
    expected = np.zeros((2, 2, 2))
    expected[[0, 1], [0, 1], [0, 1]] = second
    hessian = outer(inner(nx.vmap(sin_times_x)))
    assert hessian(xs).shape == (2, 2, 2)  # JAX's: out.shape + x.shape + x.shape
    np.testing.assert_allclose(hessian(xs), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(nx.jit(hessian)(xs), expected, rtol=1e-12, atol=1e-15)


# -- 0-d arrays --------------------------------------------------------------------------


def sum_of_squares(x):
    return np.sum(x * x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jit_grad_of_a_zero_dimensional_array(dtype):
    x = np.array(2.0, dtype=dtype)
    eager = nx.grad(sum_of_squares)(x)
    jitted = nx.jit(nx.grad(sum_of_squares))
    for _ in range(2):
        got = jitted(x)
        assert np.shape(got) == np.shape(eager) == ()
        assert np.asarray(got).dtype == np.asarray(eager).dtype == dtype
        assert got == eager == 4.0


# -- float16 -------------------------------------------------------------------------


def sum_sin(x):
    return np.sum(np.sin(x) * 2)


def mean_of_rows(x):
    return np.mean(x, axis=0)


def doubled_entry(d):
    return d["w"] * 2


def raises_not_implemented(x):
    raise NotImplementedError("not yet")


@pytest.mark.parametrize(
    ("fun", "x", "name"),
    [
        (sum_sin, np.ones(3, np.float16), "x"),  # Numba fails in lowering
        (mean_of_rows, np.ones((2, 2), np.float16), "x"),  # Numba fails in typing
        (doubled_entry, {"w": np.ones(2, np.float16)}, "d"),
    ],
)
def test_float16_is_a_clear_error_naming_the_function_and_argument(fun, x, name):
    jitted = nx.jit(fun)
    for _ in range(2):  # the first call, then the fast path of later ones
        with pytest.raises(nx.CompileError, match=rf"{fun.__name__}.*'{name}' holds float16"):
            jitted(x)
    if isinstance(x, np.ndarray):  # float64 first: float16 then meets the fast path
        jitted = nx.jit(fun)
        np.testing.assert_allclose(jitted(x.astype(np.float64)), fun(x.astype(np.float64)))
        with pytest.raises(nx.CompileError, match="float16") as info:
            jitted(x)
        assert info.value.__cause__ is not None


def test_the_users_own_not_implemented_error_passes_through():
    with pytest.raises(NotImplementedError, match="not yet"):
        nx.jit(raises_not_implemented)(np.ones(2))
