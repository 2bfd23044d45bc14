"""New arrays allocated in the caller's code (``numbax/numba_backend/loops/new_arrays.py``):
what ``np.empty`` and ``np.zeros`` give for every form of shape and dtype numbax's
helpers pass, and NumPy's errors for shapes that cannot be."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from numbax.numba_backend.loops import new_arrays


@numba.njit
def zeros_of(shape, like):
    return new_arrays.zeros(shape, like.dtype)


@numba.njit
def empty_then_filled(n, m):
    out = new_arrays.empty((n, np.int32(m)), np.float32)
    out[:] = 1.5
    return out


@numba.njit
def named_dtypes(n):
    return new_arrays.zeros(n, "float32"), new_arrays.empty((n, n), np.dtype("datetime64[D]"))


@numba.njit
def typed_zeros(n):
    return new_arrays.zeros(n, np.complex128), new_arrays.zeros((), np.bool_)


@pytest.mark.parametrize(
    "shape, dtype",
    [((3, 4), np.float64), ((5,), np.int64), ((2, 0, 3), np.float32), ((), np.complex64)],
)
def test_zeros_have_the_shape_dtype_and_zeros_numpy_gives(shape, dtype):
    got = zeros_of(shape, np.ones(1, dtype))
    want = np.zeros(shape, dtype)
    assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_shapes_of_any_integer_type_and_dtypes_given_as_scalar_types():
    out = empty_then_filled(2, 3)
    assert out.shape == (2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.full((2, 3), 1.5, np.float32))
    vector, flag = typed_zeros(4)
    assert vector.dtype == np.complex128 and vector.shape == (4,) and not vector.any()
    assert flag.dtype == np.bool_ and flag.shape == () and not flag


def test_a_negative_length_raises_numpys_value_error():
    with pytest.raises(ValueError, match="negative dimensions not allowed"):
        empty_then_filled(-1, 3)
    with pytest.raises(ValueError, match="negative dimensions not allowed"):
        typed_zeros(-2)


def test_dtypes_given_as_np_empty_takes_them():
    floats, dates = named_dtypes(3)
    assert floats.dtype == np.float32 and not floats.any()
    assert dates.dtype == np.dtype("datetime64[D]") and dates.shape == (3, 3)
