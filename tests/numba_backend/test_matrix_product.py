"""Matrix products lowered in place (``numbax/numba_backend/loops/matrix_product.py``): NumPy's
values for every BLAS routine it picks, both memory orders of each operand, the empty
cases and NumPy's errors; and the callers that use it (``@`` under ``nx.jit``, the
reverse-mode rules of ``@``, whose transposes BLAS now reads in place)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.loops.matrix_product import MISMATCH, is_blas_matrix_pair, matrix_product
from tests.helpers.fd import numeric_jacobian


@numba.njit
def product(a, b):
    return matrix_product(a, b)


SHAPES = [(3, 4, 5), (1, 4, 5), (3, 4, 1), (1, 4, 1), (0, 4, 5), (3, 0, 5), (3, 4, 0)]
"""(m, k, n): a matrix product, a row (gemv of the transpose), a column (gemv), one
element (dot), and the three empty products (zeros)."""


def _operand(rng: np.random.Generator, shape: tuple[int, int], dtype: type) -> np.ndarray:
    value = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        value = value + 1j * rng.standard_normal(shape)
    return value.astype(dtype)


@pytest.mark.parametrize(
    "dtype, orders",
    [
        (np.float64, "CC"),
        (np.float64, "CF"),
        (np.float64, "FC"),
        (np.float32, "FF"),
        (np.complex128, "CF"),
    ],
)
def test_products_match_numpy_for_every_routine(dtype, orders):
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        a = np.asarray(_operand(rng, (m, k), dtype), order=orders[0])
        b = np.asarray(_operand(rng, (k, n), dtype), order=orders[1])
        got = product(a, b)
        want = a @ b
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.flags.c_contiguous
        tolerance = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


def test_inner_sizes_that_differ_raise_numpys_value_error():
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        product(np.ones((2, 3)), np.ones((4, 2)))
    assert MISMATCH.startswith("matmul: ")


def test_only_contiguous_matrices_of_one_blas_dtype_are_taken():
    f64_c = numba.typeof(np.ones((2, 2)))
    f64_f = numba.typeof(np.ones((2, 2), order="F"))
    f64_strided = numba.typeof(np.ones((4, 4))[::2, ::2])
    assert is_blas_matrix_pair(f64_c, f64_f)
    assert not is_blas_matrix_pair(f64_c, f64_strided)  # Numba's np.dot copies it first
    assert not is_blas_matrix_pair(f64_c, numba.typeof(np.ones((2, 2), np.float32)))
    assert not is_blas_matrix_pair(f64_c, numba.typeof(np.ones(2)))
    assert not is_blas_matrix_pair(numba.typeof(np.ones((2, 2), np.int64)), f64_c)


def matmul_then_tanh(x, w):
    return np.tanh(x @ w)


@pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")  # the strided pair
def test_matmul_under_jit_matches_numpy_on_every_kind_of_operand():
    jitted = nx.jit(matmul_then_tanh)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((5, 3)), rng.standard_normal((3, 4))
    operands = [
        (x, w),  # matrix_product
        (np.asfortranarray(x), w),  # matrix_product, the left one transposed
        (x[:, ::-1], w[::-1]),  # strided: Numba's @
        (x, w.astype(np.float32)),  # two dtypes: promoted as NumPy does
        (x[0], w),  # a vector
    ]
    for a, b in operands:
        np.testing.assert_allclose(jitted(a, b), matmul_then_tanh(a, b), rtol=1e-12)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        jitted(x, x)


def layer_loss(x, w):
    return np.sum(np.tanh(x @ w) ** 2)


@pytest.mark.parametrize("order", ["C", "F"])
def test_gradients_of_a_product_read_the_transposes_in_place(order):
    """The rules of ``@`` multiply by ``w.T`` and ``x.T`` without copying them."""
    rng = np.random.default_rng(2)
    x = np.asarray(rng.standard_normal((4, 3)), order=order)
    w = np.asarray(rng.standard_normal((3, 2)), order=order)
    gx, gw = nx.jit(nx.grad(layer_loss, argnums=(0, 1)))(x, w)
    np.testing.assert_allclose(gx, numeric_jacobian(layer_loss, (x, w), 0), rtol=1e-6)
    np.testing.assert_allclose(gw, numeric_jacobian(layer_loss, (x, w), 1), rtol=1e-6)
