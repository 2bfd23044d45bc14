"""NumPy 2's dtype rules in ``nx.jit``'s fused loops: each operation at its own dtype.

The dtype fuzz (``tests/fuzz/dtypes.py``) on a representative subset (integers and
bools of one width, int64 with uint64 and with float32, weak Python scalars), one
compiled function per program shared by its cases; ``python -m tests.fuzz.dtypes``
runs every pair of dtypes.
"""

import numpy as np
import pytest

import numbax as nx
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
