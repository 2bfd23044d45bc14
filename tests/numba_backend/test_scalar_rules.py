"""NumPy's scalar rules in the user's own loops under ``nx.jit`` (``scalar_rules.py``).

An element of an int8 array is an ``np.int8``, which NumPy adds at int8 and wraps;
Numba would compute in int64. Each program runs as Python on NumPy scalars (what NumPy
gives), under ``nx.jit``, and is checked against NumPy's array operations too.
"""

import re
import warnings

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.errors import CompileError
from numbax.numba_backend.np.scalar_rules import NumPyScalarsCompiler

_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.uint64]


def _binary(x, y):
    out = np.empty((10, x.shape[0]), np.float64)
    for i in range(x.shape[0]):
        out[0, i] = x[i] + y[i]
        out[1, i] = x[i] - y[i]
        out[2, i] = x[i] * y[i]
        out[3, i] = x[i] // y[i]
        out[4, i] = x[i] % y[i]
        out[5, i] = x[i] ** 3
        out[6, i] = x[i] + y[i] > 100
        out[7, i] = x[i] - y[i] < x[i]
        out[8, i] = ~x[i]
        out[9, i] = x[i] * 2 + 1
    return out


def _numpy_binary(x, y):
    rows = [x + y, x - y, x * y, x // y, x % y, x**3, x + y > 100, x - y < x, ~x, x * 2 + 1]
    return np.array([np.asarray(r, np.float64) for r in rows])


def _count_above(x, y):  # the sum is compared at the arrays' dtype
    s = 0
    for i in range(x.shape[0]):
        if x[i] + y[i] > 100:
            s += 1
    return s


def _first_sum(x, y):
    return x[0] + y[0]


def _loop_sum(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def _loop_sum_doubled(x):
    s = 0
    for i in range(x.shape[0]):
        s += x[i]
    return s * 2


def _plus_index(x):
    out = np.empty(x.shape[0], np.float64)
    for i in range(x.shape[0]):
        out[i] = x[i] + i * 100
    return out


def _bools(b, c):
    out = np.empty((5, b.shape[0]), np.float64)
    for i in range(b.shape[0]):
        out[0, i] = b[i] + c[i]
        out[1, i] = b[i] * c[i]
        out[2, i] = ~b[i]
        out[3, i] = b[i] == c[i]
        out[4, i] = b[i] + 1
    return out


def _bool_negated(b):
    return -b[0]


def _abs_and_int(x):
    out = np.empty((2, x.shape[0]), np.float64)
    total = 0
    for i in range(x.shape[0]):
        out[0, i] = abs(x[i] + x[i])
        total += int(x[i]) * 2  # a Python int: no wrapping
    out[1] = total
    return out


def _sum_of_elements(x):
    s = 0
    for _ in range(2):
        for v in x:
            s = s + v
    return s


def _float32_times_index(x):
    s = x[0]
    for i in range(x.shape[0]):
        s = s + x[i] * i
    return s


def _int8_or_int64(x, z):
    t = x[0]
    if z[0] > 0:
        t = z[0]
    return t + x[1]


def _float_loop(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * w[i % 3] + i**2
        if x[i] > 0.5:
            s -= 1
    return s


_jit_binary = nx.jit(_binary)
_jit_count = nx.jit(_count_above)


def _quiet(function, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's overflow warnings
        return function(*args)


def _operands(dtype):
    info = np.iinfo(dtype)
    x = np.array([100, 50, 1, 7, info.max, info.min], dtype)
    y = np.array([100, 60, 3, 2, 2, 5], dtype)
    return x, y


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_operators_on_elements_follow_numpy(dtype):
    x, y = _operands(dtype)
    expected = _quiet(_numpy_binary, x, y)
    np.testing.assert_array_equal(_quiet(_binary, x, y), expected)
    np.testing.assert_array_equal(_jit_binary(x, y), expected)


@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: np.dtype(d).name)
def test_a_sum_compared_wraps_at_the_dtype(dtype):
    x, y = _operands(dtype)
    expected = int(np.sum(_quiet(np.add, x, y) > 100))
    assert _quiet(_count_above, x, y) == expected
    assert _jit_count(x, y) == expected


def test_int8_elements_add_at_int8_and_mixed_widths_at_the_wider():
    x = np.array([100, 1], np.int8)
    z = np.array([100, 1], np.int64)
    jitted = nx.jit(_first_sum)
    for a, b, dtype, value in [(x, x, np.int8, -56), (x, z, np.int64, 200)]:
        result = jitted(a, b)
        assert _quiet(_first_sum, a, b) == value
        assert result == value and np.asarray(result).dtype == dtype


def test_an_accumulator_from_a_python_int_takes_the_elements_dtype():
    x = np.array([100, 50, 1], np.int8)
    expected = _quiet(_loop_sum, x)  # 100 + 50 wraps at int8
    result = nx.jit(_loop_sum)(x)
    assert result == expected == -105
    assert np.asarray(result).dtype == np.int8
    assert nx.jit(_loop_sum_doubled)(x) == _quiet(_loop_sum_doubled, x) == 46


def test_uint8_minus_one_at_zero_wraps():
    x = np.array([0, 1, 255], np.uint8)
    out = nx.jit(_binary)(x, np.ones(3, np.uint8))
    assert out[1, 0] == 255 and out[9, 2] == 255


def test_a_python_int_beyond_the_dtype_raises_overflow_error():
    x = np.ones(3, np.int8)
    np.testing.assert_array_equal(nx.jit(_plus_index)(x[:2]), _plus_index(x[:2]))
    with pytest.raises(OverflowError):
        _plus_index(x)
    with pytest.raises(OverflowError):
        nx.jit(_plus_index)(x)


def test_bool_elements_are_logical():
    b = np.array([True, True, False, False])
    c = np.array([True, False, True, False])
    expected = np.array([b | c, b & c, ~b, b == c, b.astype(np.int64) + 1], np.float64)
    np.testing.assert_array_equal(_bools(b, c), expected)
    np.testing.assert_array_equal(nx.jit(_bools)(b, c), expected)


def test_negating_a_bool_is_refused_as_numpy_refuses_it():
    b = np.array([True])
    with pytest.raises(TypeError):
        _bool_negated(b)
    with pytest.raises(CompileError, match="negative"):
        nx.jit(_bool_negated)(b)


def test_a_float64_loop_compiles_to_numbas_own_machine_code():
    x, w = np.random.default_rng(0).random(10), np.ones(3)
    plain = numba.njit(error_model="numpy")(_float_loop)
    ruled = numba.njit(error_model="numpy", pipeline_class=NumPyScalarsCompiler)(_float_loop)
    assert ruled(x, w) == plain(x, w) == _float_loop(x, w) == nx.jit(_float_loop)(x, w)

    def assembly(dispatcher):  # the function's name holds its compile's number
        return re.sub(r"B\d+v\d+B", "B", dispatcher.inspect_asm(dispatcher.signatures[0]))

    assert assembly(ruled) == assembly(plain)


@pytest.mark.parametrize(
    "x",
    [np.array([100, -100, 3], np.int8), np.array([True, False, True])],
    ids=["int8", "bool"],
)
def test_abs_and_int_of_elements(x):
    expected = _quiet(_abs_and_int, x)
    np.testing.assert_array_equal(nx.jit(_abs_and_int)(x), expected)


def test_an_accumulator_over_nested_loops_of_elements():
    x = np.array([100, 50, 1], np.uint8)
    result = nx.jit(_sum_of_elements)(x)
    assert result == _quiet(_sum_of_elements, x) == np.uint8(46)
    assert np.asarray(result).dtype == np.uint8


def test_a_float32_element_times_a_range_index_stays_float32():
    x = np.array([1.5, 2.25, 3.0], np.float32)
    result = nx.jit(_float32_times_index)(x)
    assert result == _float32_times_index(x)
    assert np.asarray(result).dtype == np.float32


def test_a_variable_of_two_integer_dtypes_by_the_path_is_refused_at_its_line():
    x, z = np.array([100, 50], np.int8), np.array([-1], np.int64)
    assert _quiet(_int8_or_int64, x, z) == np.int8(-106)  # NumPy: int8 on this path
    with pytest.raises(CompileError, match="different dtypes") as refusal:
        nx.jit(_int8_or_int64)(x, z)
    assert "t = x[0]" in str(refusal.value)
