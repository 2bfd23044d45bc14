"""``nx.jit(f, backend="gpu")`` of a function returning a reduction of elementwise
values (``np.sum(f(x), axis=...)``): the values are made inside the reduction kernels.
On Numba's CUDA simulator (tiny arrays), equal to NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import numbax as nx
from numbax.numba_backend.cuda import reductions as cuda_reduction
from tests.helpers.source import line_of


def total(x):
    return np.sum(np.exp(-x) * x + 1.0)


def sum_over(axis, keepdims=False):
    def reduced(x, y):
        scaled = x * y
        return np.sum(np.tanh(scaled), axis=axis, keepdims=keepdims)

    return reduced


def largest(x):
    return np.max(np.sin(x), axis=-1)


def smallest(x, shift):
    return (x - shift).min(axis=0)


def average(x):
    return np.mean(x * x, axis=(0, 2))


def product(x):
    return np.prod(1.0 + x * 0.01, axis=1)


X3 = np.linspace(-2.0, 2.0, 24).reshape(2, 3, 4)
Y = np.array([0.5, -1.0, 2.0, 1.5])


def _run(function, *args):
    return nx.device_get(nx.jit(function, backend="gpu")(*args))


@pytest.mark.parametrize(
    ("axis", "keepdims"),
    [
        (None, False),
        (0, False),
        (1, True),
        (-1, False),
        ((0, 1), False),
        ((0, 2), True),
        ((), False),
    ],
)
def test_a_sum_over_any_axes_equals_numpys(axis, keepdims):
    """Neighbouring axes are one reduced axis; others are moved next to each other."""
    function = sum_over(axis, keepdims)
    got = _run(function, X3, Y)
    want = function(X3, Y)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize(
    ("function", "args"),
    [(largest, (X3,)), (smallest, (X3, 0.5)), (average, (X3,)), (product, (X3,))],
)
def test_each_reduction_equals_numpys(function, args):
    got = _run(function, *args)
    np.testing.assert_allclose(got, function(*args), rtol=1e-13)


def test_many_values_are_reduced_by_blocks_and_their_parts():
    """A full reduction, and a last axis, take a block of threads per output (and a
    second kernel combining each output's parts, when it has several)."""
    full = np.linspace(-3.0, 3.0, 300)
    rows = np.linspace(-3.0, 3.0, 2 * 1100).reshape(2, 1100)
    assert cuda_reduction.uses_blocks(1, 300, 1)
    assert cuda_reduction.parts_per_output(2, 1100) == 2
    np.testing.assert_allclose(_run(total, full), total(full), rtol=1e-13)
    np.testing.assert_allclose(_run(largest, rows), largest(rows), rtol=1e-15)
    compiled = nx.jit(largest, backend="gpu")
    compiled(rows)
    assert "launch: blocks, 2 outputs of 1,100 values each in 2 parts" in compiled.source


def test_nan_wins_in_max_and_min_as_in_numpy():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(_run(largest, x), largest(x))
    np.testing.assert_array_equal(_run(smallest, x, 0.0), smallest(x, 0.0))


def integer_sum(x):
    return np.sum(x * 2)


def count_positive(x):
    return np.sum(x > 0.0, axis=0)


def test_result_dtypes_are_numpys():
    """float32 stays float32; integers and booleans sum to int64; a mean is a float."""
    x32 = X3.astype(np.float32)
    got = _run(average, x32)
    assert got.dtype == average(x32).dtype == np.float32
    np.testing.assert_allclose(got, average(x32), rtol=1e-6)
    ints = np.arange(10, dtype=np.int32)
    assert _run(integer_sum, ints).dtype == integer_sum(ints).dtype == np.int64
    assert _run(integer_sum, ints) == integer_sum(ints)
    np.testing.assert_array_equal(_run(count_positive, X3), count_positive(X3))
    assert _run(average, np.ones((2, 3, 4), np.int32)).dtype == np.float64


def test_a_full_reduction_is_a_zero_dimensional_device_array():
    result = nx.jit(total, backend="gpu")(np.ones(5))
    assert result.shape == ()
    assert nx.device_get(result) == total(np.ones(5))


def test_empty_reductions_are_numpys():
    empty = np.zeros((3, 0))
    np.testing.assert_array_equal(_run(sum_over(1), empty, 1.0), np.zeros(3))
    assert _run(sum_over(0), empty, 1.0).shape == (0,)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        _run(largest, empty)


def test_source_shows_the_kernels_and_the_values_they_reduce():
    compiled = nx.jit(sum_over(1), backend="gpu")
    compiled(X3, Y)
    text = compiled.source
    assert "# gpu kernels: sum of the values of reduced" in text
    assert (
        "_value = reduced(x[_element], y[_broadcast_offset(_element, _shape, _strides_1)])" in text
    )
    assert "launch: rows, 8 outputs of 3 values each" in text
    assert "return nxrt.keep_dtype(_tanh)" in text  # the device function returns the values


def test_device_arrays_of_any_broadcastable_shape_are_reduced_without_a_copy():
    """Axes that are not neighbours, and an argument broadcast over some of them, are
    read through strides on the device."""
    gpu_device = nx.devices("gpu")[0]
    on_device = nx.device_put(X3, gpu_device)
    np.testing.assert_allclose(
        nx.device_get(nx.jit(average, backend="gpu")(on_device)), average(X3), rtol=1e-13
    )
    column = nx.device_put(Y[:3].reshape(3, 1), gpu_device)
    for keepdims in (False, True):
        function = sum_over((0, 2), keepdims)
        got = nx.device_get(nx.jit(function, backend="gpu")(on_device, column))
        want = function(X3, Y[:3].reshape(3, 1))
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


# -- what is refused, and how it says so ----------------------------------------------------


def with_dtype(x):
    return np.sum(x * x, dtype=np.float32)


def with_runtime_axis(x, axis):
    return np.sum(x * x, axis=axis)


def then_not_elementwise(x):
    s = np.sum(x * x, axis=0)
    return np.cumsum(s)


@pytest.mark.parametrize(
    ("function", "args", "message", "text"),
    [
        (with_dtype, (X3,), r"dtype=\.\.\.\) is not run on the GPU", "np.sum(x * x, dtype"),
        (with_runtime_axis, (X3, 1), "axis= must be a constant", "axis=axis"),
        (then_not_elementwise, (X3,), "every line is elementwise", "return np.cumsum"),
    ],
)
def test_what_the_kernels_do_not_run_is_refused_at_the_users_line(function, args, message, text):
    with pytest.raises(nx.CompileError, match=message) as info:
        nx.jit(function, backend="gpu")(*args)
    assert info.value.filename == __file__
    assert info.value.lineno == line_of(function, text)


def test_an_axis_out_of_range_is_numpys_error():
    with pytest.raises(np.exceptions.AxisError):
        _run(sum_over(3), X3, Y)


# -- generated cases: any shape, any axes, any reduction ------------------------------------

REDUCERS = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean}


def reduction_of(name, axis, keepdims):
    reduce = REDUCERS[name]

    def reduced(x, y):
        return reduce(np.sin(x) + y, axis=axis, keepdims=keepdims)

    return reduced


@st.composite
def reductions(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), max_size=len(shape)))
    axes = tuple(dict.fromkeys(a % len(shape) for a in axes))  # NumPy refuses repeats
    axis = draw(st.sampled_from([None, axes, *axes]))
    return draw(st.sampled_from(sorted(REDUCERS))), axis, draw(st.booleans()), shape


@settings(max_examples=60, deadline=None)
@given(reductions(), st.randoms(use_true_random=False))
def test_generated_reductions_equal_numpys(case, random):
    """Layouts (neighbouring axes or moved ones), keepdims and broadcasting of a
    second argument, against NumPy; the reductions of a thread each (rows)."""
    name, axis, keepdims, shape = case
    x = np.asarray([random.uniform(-2.0, 2.0) for _ in range(int(np.prod(shape)))])
    x = x.reshape(shape)
    y = np.linspace(0.5, 1.5, shape[-1])
    function = reduction_of(name, axis, keepdims)
    got = _run(function, x, y)
    want = function(x, y)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- lines after the reduction ----------------------------------------------------------------


def norms(x, eps=1e-12):
    return np.sqrt(np.sum(x * x, axis=-1) + eps)


def log_sum_exp(x, shift):
    total = np.sum(np.exp(x - shift))
    return shift + np.log(total)


def test_the_lines_after_a_reduction_run_on_each_result():
    np.testing.assert_allclose(_run(norms, X3), norms(X3), rtol=1e-14)
    np.testing.assert_allclose(_run(log_sum_exp, X3, 2.0), log_sum_exp(X3, 2.0), rtol=1e-14)
    compiled = nx.jit(norms, backend="gpu")
    compiled(np.linspace(0.0, 1.0, 300))  # blocks, then finish writes norms_after
    assert "_out[_o] = norms_after(_accumulator, x, eps)" in compiled.source
    assert "def norms_after(_sum, x, eps=1e-12):" in compiled.source


def reads_before(x):
    squares = x * x
    total = np.sum(squares)
    return total / squares


def two_reductions(x):
    return np.sum(x) / np.max(x)


def reads_an_array_after(x, scale):
    return np.sum(x * x) * scale


def ignores_its_reduction(x, c):
    unused = np.sum(x)  # noqa: F841 (the point of the test)
    return c * 2.0


def test_a_result_that_does_not_use_its_reduction_is_refused():
    with pytest.raises(nx.CompileError, match="does not use its reduction"):
        _run(ignores_its_reduction, X3, 1.5)


# -- several stages: reductions whose results later lines read --------------------------------


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def standardize(x, eps=1e-5):
    mean = np.mean(x, axis=0)
    variance = np.mean((x - mean) ** 2, axis=0)
    return (x - mean) / np.sqrt(variance + eps)


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (softmax, (X3,)),
        (standardize, (X3,)),
        (reads_before, (X3,)),
        (two_reductions, (X3 + 3.0,)),
        (reads_an_array_after, (X3, np.linspace(1.0, 2.0, 4))),
        (reads_an_array_after, (X3, 2.0)),
    ],
)
def test_functions_of_several_stages_equal_numpys(function, args):
    got = _run(function, *args)
    want = function(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def centred_total(x, scale):
    largest = np.max(x)
    total = np.sum(x - largest)
    return total * scale


def test_lines_after_the_last_reduction_are_a_stage_of_their_own_when_they_read_an_array():
    """One function, called with a number and then an array for ``scale``: finished in
    the reduction's kernels, then in a stage of its own; each its own kernels."""
    compiled = nx.jit(centred_total, backend="gpu")
    scales = (2.0, np.linspace(1.0, 2.0, 3), 3)
    for scale in scales:
        got = nx.device_get(compiled(X3, scale))
        np.testing.assert_allclose(got, centred_total(X3, scale), rtol=1e-13)


def test_each_stage_is_shown_and_reads_earlier_results_without_spreading_them():
    compiled = nx.jit(softmax, backend="gpu")
    compiled(X3)
    text = compiled.source
    for number, name in enumerate(["softmax_1_max", "softmax_2_sum", "softmax_result"], 1):
        assert f"# ---- stage {number} of 3: {name} ----" in text
    assert "def softmax_result(_max, _sum, x):" in text
    assert "_max[_broadcast_offset(_example, _shape, _strides_0)]" in text


def named_like_the_kernels(_value, _o, _shape):
    return np.sum(_value * _o + _shape, axis=0)


def test_parameters_named_like_the_kernels_own_names():
    args = (X3, Y, 2.0)
    np.testing.assert_allclose(_run(named_like_the_kernels, *args), named_like_the_kernels(*args))
