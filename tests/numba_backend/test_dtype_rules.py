"""NumPy 2's dtype rules in ``nx.jit``'s fused loops: each operation at its own dtype.

The dtype fuzz (``tests/fuzz/dtypes.py``) on a representative subset (integers and
bools of one width, int64 with uint64 and with float32, weak Python scalars), one
compiled function per program shared by its cases; ``python -m tests.fuzz.dtypes``
runs every pair of dtypes.
"""

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.np.scalars import departing_loop
from tests.fuzz import dtypes

_CASES = dtypes.ci_cases()


@pytest.mark.parametrize("name", sorted({case.program for case in _CASES}))
def test_each_program_follows_numpy_on_the_representative_dtypes(name):
    counts, failures = dtypes.run(c for c in _CASES if c.program == name)
    assert not failures, failures
    assert counts["right"] > 0


def _int8_chain(a, b):
    return a + b * a


def _compared_after_a_sum(a, b):
    return (a + b) > a


def _bools_summed(x):
    return np.sum((x > 0) + (x > 1))


def _bools_subtracted(a, b):
    c = a > 0
    return c - (b > 0)


def _inverted(a):
    return ~(a > 0)


def _divided(a, b):
    return (a // b - a % b) * np.fmod(a, b)


_JITTED = {f: nx.jit(f) for f in (_int8_chain, _compared_after_a_sum, _bools_summed, _inverted)}


def test_int8_wraps_at_each_operation():
    a, b = np.array([100, -100, 8], np.int8), np.array([1, 1, 6], np.int8)
    got = _JITTED[_int8_chain](a, b)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, _int8_chain(a, b))
    got = _JITTED[_compared_after_a_sum](a, b)
    np.testing.assert_array_equal(got, _compared_after_a_sum(a, b))


def test_bool_plus_bool_is_a_logical_or():
    x = np.array([0.5, 2.0, -1.0])
    assert _JITTED[_bools_summed](x) == _bools_summed(x) == 2


def test_invert_of_bools_is_a_logical_not():
    a = np.array([1.0, -1.0])
    np.testing.assert_array_equal(_JITTED[_inverted](a), [False, True])


def test_bool_subtraction_is_refused_as_numpy_refuses_it():
    a = np.array([1.0, -1.0])
    with pytest.raises(TypeError):
        _bools_subtracted(a, a)
    with pytest.raises(nx.CompileError, match="boolean subtract"):
        nx.jit(_bools_subtracted)(a, a)


def test_integer_division_floors_and_gives_zero_for_zero():
    a = np.array([-7, 7, 5, -128], np.int8)
    b = np.array([2, -2, 0, -1], np.int8)
    with np.errstate(all="ignore"):
        want = _divided(a, b)
    got = nx.jit(_divided)(a, b)
    assert got.dtype == want.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_a_python_int_out_of_the_arrays_range_raises_overflow_error():
    a = np.array([100, -100, 8], np.int8)
    with pytest.raises(OverflowError):
        _int8_chain(a, 1000)
    with pytest.raises(OverflowError):
        _JITTED[_int8_chain](a, 1000)
    np.testing.assert_array_equal(_JITTED[_int8_chain](a, 3), _int8_chain(a, 3))
    assert _JITTED[_int8_chain](a, 3).dtype == np.int8


def _product(a, b):
    return a * b


def _absolute_product(a, b):
    return abs(a * b)


def _floor_quotient(a, b):
    return a // b


def _summed_product(a, b):
    return np.sum(a * b)


def _mean_of_product(a, b):
    return np.mean(a * b)


@pytest.mark.parametrize(
    ("function", "a", "b"),
    [
        (_product, np.array([3, -4], np.int64), np.array([1.5, 2.25], np.float32)),
        (_absolute_product, np.array([3, -4], np.int32), np.array([1 + 2j, 2], np.complex64)),
        (_floor_quotient, np.array([-7, 7, 5, -128], np.int8), np.array([2, 0, -1, -1], np.int8)),
        (_summed_product, np.array([1.5, 2.0], np.float32), np.array([3, 2**40], np.uint64)),
        (_mean_of_product, np.array([3, 5], np.int64), np.array([1 + 2j, 2], np.complex64)),
    ],
    ids=["int64*float32", "abs(int32*complex64)", "int8//int8", "sum(float32*uint64)", "mean"],
)
def test_an_operator_alone_on_arrays_computes_at_numpys_loop(function, a, b):
    with np.errstate(all="ignore"):
        want = function(a, b)
    got = nx.jit(function)(a, b)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(
    ("function", "a", "b"),
    [
        (_product, np.array(3), np.array(2.5, np.float32)),
        (_floor_quotient, np.array(-7, np.int8), np.array(0, np.int8)),
    ],
    ids=["int64*float32", "int8//int8"],
)
def test_an_operator_alone_on_0d_arrays_gives_a_number_at_numpys_loop(function, a, b):
    """A number, as NumPy's and Numba's operators give there (not a 0-d array, which
    Numba's own ufuncs cannot give back)."""
    with np.errstate(all="ignore"):
        want = function(a, b)
    got = nx.jit(function)(a, b)
    assert np.result_type(got) == np.result_type(want)
    assert got == want


def _fmod_alone(a, b):
    return np.fmod(a, b)


def _remainder_alone(a, b):
    return np.remainder(a, b)


def _floor_divide_alone(a, b):
    return np.floor_divide(a, b)


def _divmod_alone(a, b):
    return np.divmod(a, b)


def _maximum_alone(a, b):
    return np.maximum(a, b)


_ALONE = {
    f: nx.jit(f)
    for f in (_fmod_alone, _remainder_alone, _floor_divide_alone, _divmod_alone, _maximum_alone)
}


@pytest.mark.parametrize("function", list(_ALONE)[:4], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.int8, np.int64])
def test_a_ufunc_alone_on_integers_computes_as_numpy(function, dtype):
    """Negative operands, division by 0 (0, not Numba's crash) and MIN // -1."""
    low = np.iinfo(dtype).min
    a = np.array([-7, 7, 5, low, 0, 9, -9], dtype)
    b = np.array([2, -2, 0, -1, 0, 4, 4], dtype)
    with np.errstate(all="ignore"):
        want = function(a, b)
    got = _ALONE[function](a, b)
    for g, w in zip(
        *((got, want) if function is _divmod_alone else ((got,), (want,))), strict=True
    ):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (np.array([3, -4]), np.array([1.5, -5.0], np.float32)),
        (np.array([3, -4], np.int32), np.array([1 + 2j, 2], np.complex64)),
        (np.array(3), np.array(2.5, np.float32)),
    ],
    ids=["int64,float32", "int32,complex64", "0-d"],
)
def test_a_ufunc_alone_of_mixed_dtypes_computes_at_numpys_loop(a, b):
    want = _maximum_alone(a, b)
    got = _ALONE[_maximum_alone](a, b)
    assert np.result_type(got) == np.result_type(want)
    np.testing.assert_array_equal(got, want)


def _power_alone(a, b):
    return a**b


def _power_in_a_loop(a, b):
    return np.power(a, b) * 1


_POWERS = {f: nx.jit(f) for f in (_power_alone, _power_in_a_loop)}


@pytest.mark.parametrize("function", list(_POWERS), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_powers_follow_numpy_at_zero_and_on_overflow(function, dtype):
    """0 ** z is 0 for a positive real part of z and NaN otherwise; an integer exponent
    below 100 multiplies, so an overflow is NumPy's infinity, an underflow's reciprocal
    NumPy's inf + nan j."""
    big = 3e20 if dtype == np.complex64 else 3e160
    a = np.array([0, 0, 0, 2 + 1j, big + 1j, big + 1j, 1 / big, 1 + 1j, -2 + 0.5j], dtype)
    b = np.array([1 + 1j, -1 + 1j, 0, 3, 2, 7, -5, 1 + 1j, 2.5], dtype)
    with np.errstate(all="ignore"):
        want = function(a, b)
    got = _POWERS[function](a, b)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


def _quotient_alone(a, b):
    return a / b


def _quotient_in_a_loop(a, b):
    return a / (b / a)


_QUOTIENTS = {f: nx.jit(f) for f in (_quotient_alone, _quotient_in_a_loop)}


@pytest.mark.parametrize("function", list(_QUOTIENTS), ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_division_by_zero_follows_numpy(function, dtype):
    """Each part of the dividend over +0: ``(-100 + 1j) / 0`` is ``-inf + inf j``."""
    a = np.array([100 + 1j, -100 + 1j, 1j, -3, 2 - 1j], dtype)
    b = np.array([0, 0, 0, 1 + 1j, 1e-3 + 4j], dtype)
    with np.errstate(all="ignore"):
        want = function(a, b if function is _quotient_alone else b * 0)
    got = _QUOTIENTS[function](a, b if function is _quotient_alone else b * 0)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=8 * np.finfo(dtype).eps)
    signs = np.where(np.isnan(want.real), 0, np.sign(want.real))
    np.testing.assert_array_equal(np.where(np.isnan(got.real), 0, np.sign(got.real)), signs)


def test_an_operator_alone_on_floats_of_one_dtype_is_numbas_own():
    args = (np.array([1.5, 2.0], np.float32),) * 2
    assert departing_loop(np.multiply, tuple(numba.typeof(a) for a in args)) is None
    assert (
        departing_loop(np.multiply, (numba.typeof(args[0]), numba.typeof(np.int64(1))))
        == (np.dtype(np.float64),) * 3
    )


def _negated_scalar_times(a, b):
    return -(b + 1) * a


_NEGATED = nx.jit(_negated_scalar_times)


def test_python_ints_alone_compute_as_python_then_meet_the_array_as_numpy_checks():
    unsigned = np.array([1, 2], np.uint8)
    with pytest.raises(OverflowError):
        _negated_scalar_times(unsigned, 2)
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        _NEGATED(unsigned, 2)
    signed = np.array([1, -2], np.int8)
    want = _negated_scalar_times(signed, 127)  # -128: in int8's range, not 127 + 1
    got = _NEGATED(signed, 127)
    assert got.dtype == want.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def _summed_times(a, b):
    return np.sum(a * b)


@pytest.mark.parametrize("function", [_product, _summed_times], ids=lambda f: f.__name__)
@pytest.mark.parametrize("b", [2**40, -2])
def test_a_python_int_out_of_range_meeting_an_array_alone_raises_overflow_error(function, b):
    unsigned = np.array([1, 2, 3], np.uint16)
    with pytest.raises(OverflowError):
        function(unsigned, b)
    with pytest.raises(OverflowError, match="out of bounds for uint16"):
        nx.jit(function)(unsigned, b)


def _times_a_large_power(x):
    return x * (2**40) ** 2


def test_python_ints_beyond_int64_are_refused_not_wrapped():
    x = np.array([1.0, 2.0])
    assert _times_a_large_power(x)[0] == 2.0**80
    with pytest.raises(OverflowError, match="beyond int64"):
        nx.jit(_times_a_large_power)(x)
