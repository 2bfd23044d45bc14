"""numbax's reductions compiled by Numba agree with NumPy: values, dtypes, shapes, errors.

Kernels are tiny ``numba.njit`` functions calling ``reductions.<name>`` with constant
``axis``/``keepdims``, as numbax's generated code does. Each is made once per source text
(``_kernel`` is cached) and each compilation is checked on several inputs of its type.

Compiling is what costs (about 0.2 s per function, axis and array type), so the grid is
representative rather than a full cross product: sum, max and var (one of each kind of
loop: pairwise sums, blocked max/min, two passes) meet ranks 0 to 4, C, Fortran and
strided layouts (negative steps included) and every form of axis, keepdims both ways; the
other reductions meet every rank and layout once; every function meets the dtypes whose
rules it has (int widening, sentinels, float results, truth values) on a whole row and on
rows accumulated.
"""

from __future__ import annotations

import builtins
import functools
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest

from numbax.numba_backend import reductions

REDUCE = ["sum", "prod", "mean", "max", "min", "var", "std", "all", "any"]
ARG = ["argmax", "argmin"]
CUMULATIVE = ["cumsum", "cumprod"]

# ---------------------------------------------------------------------------------------
# Kernels and inputs.
# ---------------------------------------------------------------------------------------


@functools.cache
def _kernel(name: str, arguments: str, params: str = "a") -> Any:
    """``@njit def kernel(<params>): return reductions.<name>(a, <arguments>)``."""
    namespace = {"reductions": reductions, "np": np}
    call = f"reductions.{name}(a{', ' if arguments else ''}{arguments})"
    exec(f"def kernel({params}):\n    return {call}\n", namespace)
    return numba.njit(namespace["kernel"])


def _arguments(**kwargs: Any) -> str:
    """Keyword arguments as source; None axes and False keepdims are left to defaults."""
    defaults = {"axis": None, "keepdims": False}
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items() if defaults.get(k, ...) != v)


def _values(name: str, dtype: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Values that keep each function's result well conditioned (prod stays near 1)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return rng.random(size) < (0.8 if name == "all" else 0.2)
    if kind in "iu":
        low = 0 if kind == "u" else -3
        return rng.integers(low, 4, size).astype(dtype)
    if name in ("prod", "cumprod"):
        real = rng.uniform(0.6, 1.4, size)
    else:
        real = rng.standard_normal(size)
    if name in ("all", "any"):
        real *= rng.random(size) < (0.97 if name == "all" else 0.03)
    if kind == "c":
        return (real + 1j * rng.standard_normal(size)).astype(dtype)
    return real.astype(dtype)


def _array(name: str, dtype: str, layout: str, shape: tuple[int, ...], seed: int = 0) -> Any:
    """An input of ``shape``: "0d", "C", "F" (Fortran order) or "A" (strided, reversed)."""
    rng = np.random.default_rng(seed)
    if layout == "A":  # every other row, last axis reversed: non-contiguous, negative step
        big = (2 * shape[0],) + shape[1:]
        return _values(name, dtype, int(np.prod(big)), rng).reshape(big)[::2, ..., ::-1]
    a = _values(name, dtype, int(np.prod(shape)), rng).reshape(shape)
    return np.asfortranarray(a) if layout == "F" else a


def _numpy(name: str, a: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # empty means, ddof > n
        return getattr(np, name)(a, **kwargs)


def _tolerance(dtype: np.dtype) -> dict[str, float]:
    if dtype in (np.float32, np.complex64):
        return {"rtol": 2e-5, "atol": 2e-5}
    return {"rtol": 1e-12, "atol": 1e-12}


def _return_type(kernel: Any, args: tuple[Any, ...]) -> Any:
    """The Numba return type of the kernel's compilation for ``args`` (literals included)."""

    def matches(ty: Any, value: Any) -> bool:
        if isinstance(ty, numba.types.Literal):
            return type(ty.literal_value) is type(value) and ty.literal_value == value
        return ty == numba.typeof(value)

    for signature in kernel.nopython_signatures:
        if builtins.all(matches(t, v) for t, v in zip(signature.args, args, strict=True)):
            return signature.return_type
    raise AssertionError(f"no compilation of {kernel} for {args}")


def _check(kernel: Any, args: tuple[Any, ...], expected: Any) -> None:
    """The kernel's result has NumPy's value, dtype, shape and scalar-ness."""
    got = kernel(*args)
    return_type = _return_type(kernel, args)
    expected_type = numba.from_dtype(np.asarray(expected).dtype)
    if isinstance(expected, np.ndarray):
        assert isinstance(got, np.ndarray), f"expected an array, got {got!r}"
        assert got.shape == expected.shape
        assert got.dtype == expected.dtype
        assert return_type.ndim == expected.ndim
    else:
        assert not isinstance(got, np.ndarray), f"expected a scalar, got an array {got!r}"
        assert return_type == expected_type, f"{return_type} != {expected_type}"
    if np.asarray(expected).dtype.kind in "fc":
        tolerance = _tolerance(np.asarray(expected).dtype)
        np.testing.assert_allclose(got, expected, **tolerance)
    else:
        np.testing.assert_array_equal(got, expected)


def _agree(name: str, kernel: Any, args: tuple[Any, ...], **kwargs: Any) -> None:
    """Same result as NumPy, or the same exception type and message."""
    try:
        expected = _numpy(name, args[0], **kwargs)
    except (ValueError, TypeError) as error:
        with pytest.raises(type(error)) as info:
            kernel(*args)
        assert str(info.value) == str(error)
        return
    _check(kernel, args, expected)


# ---------------------------------------------------------------------------------------
# The grid: (layout, shapes compiled once and checked together, [(axis, keepdims), ...]).
# ---------------------------------------------------------------------------------------

FULL = [
    ("0d", [()], [(None, False), (-1, True), (1, False)]),
    ("C", [(7,), (1,), (0,), (300,)], [(None, False), (-1, True), ((), False)]),
    (
        "C",
        [(4, 5), (1, 9), (3, 1), (16, 33)],
        [(None, True), (0, False), (1, True), ((1, 0), False), ((), True)],
    ),
    ("F", [(4, 5), (9, 2)], [(0, False), (1, True)]),
    (
        "C",
        [(3, 4, 5), (2, 1, 17)],
        [(0, False), (1, False), (2, True), ((0, 2), True), ((1, 2), False)],
    ),
    ("F", [(3, 4, 5)], [(1, False), ((0, 2), True)]),
    ("A", [(3, 4, 5), (2, 3, 20)], [(None, False), (0, True), (1, False), ((0, 2), False)]),
    ("C", [(2, 3, 2, 4)], [((1, 3), True), ((0, 2, 3), False)]),
]
BASIC = [  # every rank and layout once
    ("0d", [()], [(None, False)]),
    ("C", [(7,), (0,), (300,)], [(0, True)]),
    ("C", [(4, 5), (16, 33)], [(0, False), (1, True)]),
    ("F", [(4, 5)], [(0, False)]),
    ("C", [(3, 4, 5)], [((0, 2), True)]),
    ("A", [(3, 4, 5), (2, 3, 20)], [(None, False), (1, False), ((0, 2), False)]),
    ("C", [(2, 3, 2, 4)], [((1, 3), True)]),
]
DTYPES = [  # a whole row folded, and rows accumulated
    ("C", [(7,), (300,)], [(None, False)]),
    ("C", [(4, 5), (16, 33)], [(0, True)]),
]
ARG_FULL = [
    ("0d", [()], [(None, False), (0, True), (1, False)]),
    ("C", [(7,), (300,), (2000,)], [(None, False), (-1, True)]),
    ("C", [(4, 5), (1, 9), (16, 33)], [(None, True), (0, False), (1, True), (-2, False)]),
    ("F", [(4, 5)], [(0, False), (1, False)]),
    ("A", [(3, 4, 5), (2, 3, 20)], [(None, False), (0, False), (1, True), (2, False)]),
    ("C", [(2, 3, 2, 4)], [(2, False)]),
]
ARG_DTYPES = [
    ("C", [(7,), (2000,)], [(None, False)]),
    ("C", [(4, 5), (16, 33)], [(0, False), (1, False)]),
]
CUMULATIVE_FULL = [
    ("0d", [()], [(None, False), (0, False), (1, False)]),
    ("C", [(7,), (0,), (300,)], [(None, False), (-1, False)]),
    ("C", [(4, 5), (16, 33)], [(None, False), (0, False), (1, False), (2, False)]),
    ("F", [(4, 5)], [(0, False), (1, False)]),
    ("A", [(3, 4, 5)], [(None, False), (0, False), (2, False)]),
    ("C", [(2, 3, 2, 4)], [(1, False)]),
]
CUMULATIVE_DTYPES = [("C", [(4, 5), (16, 33)], [(None, False), (0, False)])]
INTEGERS = ["float32", "int32", "uint8", "bool", "complex128"]  # widening, sentinels
MEANS = ["float32", "int32", "bool", "complex128"]
TRUTHS = ["bool", "float32", "complex128"]

PLAN = [
    (["sum", "max", "var"], [("float64", FULL)]),
    (["prod", "mean", "min", "std", "all", "any"], [("float64", BASIC)]),
    (["sum", "prod", "max", "min"], [(d, DTYPES) for d in INTEGERS]),
    (["mean", "var", "std"], [(d, DTYPES) for d in MEANS]),
    (["all", "any"], [(d, DTYPES) for d in TRUTHS]),
    (ARG, [("float64", ARG_FULL)]),
    (ARG, [(d, ARG_DTYPES) for d in INTEGERS]),
    (CUMULATIVE, [("float64", CUMULATIVE_FULL)]),
    (CUMULATIVE, [(d, CUMULATIVE_DTYPES) for d in INTEGERS]),
]


def _shape_id(layout: str, shape: tuple[int, ...]) -> str:
    return "0d" if layout == "0d" else f"{layout}{'x'.join(map(str, shape))}"


def _grid() -> list[Any]:
    cases = []
    for names, inputs_by_dtype in PLAN:
        for name in names:
            for dtype, inputs in inputs_by_dtype:
                for layout, shapes, axes in inputs:
                    for axis, keepdims in axes:
                        ident = f"{name}-{dtype}-{_shape_id(layout, shapes[0])}-axis={axis}"
                        ident += "-keepdims" if keepdims else ""
                        case = (name, dtype, layout, tuple(shapes), axis, keepdims)
                        cases.append(pytest.param(*case, id=ident))
    return cases


@pytest.mark.parametrize("name, dtype, layout, shapes, axis, keepdims", _grid())
def test_matches_numpy(name, dtype, layout, shapes, axis, keepdims):
    kwargs = {"axis": axis} | ({"keepdims": True} if keepdims else {})
    kernel = _kernel(name, _arguments(**kwargs))
    for seed, shape in enumerate(shapes):
        a = _array(name, dtype, layout, shape, seed)
        _agree(name, kernel, (a,), **kwargs)


# ---------------------------------------------------------------------------------------
# Axes only known at run time, keepdims made literal, ddof, dtype=, scalars.
# ---------------------------------------------------------------------------------------


RUNTIME_INT = [(name, "C", False) for name in REDUCE + ARG + CUMULATIVE]
RUNTIME_INT += [("sum", "C", True), ("argmax", "C", True), ("sum", "A", False)]


@pytest.mark.parametrize(
    "name, layout, keepdims",
    RUNTIME_INT,
    ids=[f"{n}-{layout}3x4x5{'-keepdims' if k else ''}" for n, layout, k in RUNTIME_INT],
)
def test_runtime_int_axis(name, layout, keepdims):
    kernel = _kernel(name, "axis=axis" + (", keepdims=True" if keepdims else ""), "a, axis")
    extra = {"keepdims": True} if keepdims else {}
    for seed, axis in enumerate([0, 1, 2, -1, -3, 3, -4]):
        a = _array(name, "float64", layout, (3, 4, 5), seed)
        _agree(name, kernel, (a, axis), axis=axis, **extra)


RUNTIME_TUPLE = [(name, False) for name in ["sum", "mean", "max", "var", "all"]]
RUNTIME_TUPLE += [("sum", True)]


@pytest.mark.parametrize(
    "name, keepdims",
    RUNTIME_TUPLE,
    ids=[f"{n}-C3x4x5{'-keepdims' if k else ''}" for n, k in RUNTIME_TUPLE],
)
def test_runtime_tuple_axis(name, keepdims):
    kernel = _kernel(name, f"axis=(i, j), keepdims={keepdims}", "a, i, j")
    for seed, (i, j) in enumerate([(0, 1), (2, 0), (-1, 1), (0, 2), (1, 1), (0, 3), (-4, 0)]):
        a = _array(name, "float64", "C", (3, 4, 5), seed)
        _agree(name, kernel, (a, i, j), axis=(i, j), keepdims=keepdims)


@pytest.mark.parametrize("name", ["sum", "mean", "argmax", "cumsum"])
def test_runtime_axis_of_0d_array(name):
    kernel = _kernel(name, "axis=axis", "a, axis")
    for axis in [0, -1, 1, -2]:
        _agree(name, kernel, (np.array(1.5), axis), axis=axis)


def test_keepdims_from_a_variable_is_made_literal():
    kernel = _kernel("sum", "axis=1, keepdims=keepdims", "a, keepdims")
    a = _array("sum", "float64", "C", (3, 4))
    for keepdims in (True, False):
        _check(kernel, (a, keepdims), np.sum(a, axis=1, keepdims=keepdims))


@pytest.mark.parametrize("name", ["var", "std"])
def test_ddof(name):
    kernel = _kernel(name, "axis=axis, ddof=ddof", "a, axis, ddof")
    a = _array(name, "float64", "C", (4, 3))
    for axis, ddof in [(0, 0), (0, 1), (1, 2), (1, 3), (0, 5), (1, 1.5)]:
        _agree(name, kernel, (a, axis, ddof), axis=axis, ddof=ddof)


@pytest.mark.parametrize("name", ["var", "std"])
def test_variance_of_complex64_is_float32(name):
    a = _array(name, "complex64", "C", (3, 50))
    _check(_kernel(name, "axis=1, ddof=1"), (a,), _numpy(name, a, axis=1, ddof=1))


@pytest.mark.parametrize(
    "name, dtype_source, dtype",
    [
        ("sum", "np.float32", np.float32),
        ("sum", "np.int8", np.int8),
        ("sum", "float", float),
        ("mean", "np.float64", np.float64),
        ("mean", "'float32'", "float32"),
        ("var", "np.float32", np.float32),
        ("std", "np.complex128", np.complex128),
        ("prod", "np.complex128", np.complex128),
        ("cumsum", "np.float32", np.float32),
        ("cumprod", "np.int64", np.int64),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_dtype_argument(name, dtype_source, dtype):
    kernel = _kernel(name, f"axis=0, dtype={dtype_source}")
    a = _array(name, "float32" if name in ("mean", "std") else "int32", "C", (5, 4))
    _check(kernel, (a,), _numpy(name, a, axis=0, dtype=dtype))


SCALARS = [(name, 2.5) for name in REDUCE + ARG + CUMULATIVE]
SCALARS += [
    (name, v) for name in ["sum", "mean", "max", "all", "cumsum"] for v in (3, True, 1 - 2j)
]


@pytest.mark.parametrize(
    "name, value", SCALARS, ids=[f"{n}-{type(v).__name__}" for n, v in SCALARS]
)
def test_python_scalar_input(name, value):
    _check(_kernel(name, ""), (value,), _numpy(name, value))


# ---------------------------------------------------------------------------------------
# NaN, infinities, long rows (pairwise sums, blocked max/min, chunked any/argmax), empty.
# ---------------------------------------------------------------------------------------


def _special(dtype: str, shape: tuple[int, ...], places: dict[tuple[int, ...], Any]) -> Any:
    a = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(dtype)
    for index, value in places.items():
        a[index] = value
    return a


NAN_CASES = {
    "nan-early": {(0, 3): np.nan, (2, 1500): np.nan},
    "nan-late": {(1, 2999): np.nan, (1, 5): np.inf},
    "inf-only": {(0, 10): np.inf, (1, 20): -np.inf, (2, 2000): np.inf},
    "ties": {(0, 100): 5.0, (0, 2000): 5.0, (1, 7): -5.0, (1, 8): -5.0},
}


NAN_PLAN = [
    (n, d, axis)
    for n in ["max", "min"] + ARG
    for d in ["float64", "float32", "complex128"]
    for axis in (None, 1)
]
NAN_PLAN += [("max", "float64", 0), ("argmax", "float64", 0)]
NAN_PLAN += [(n, "float64", None) for n in ["sum", "any", "all"]]


@pytest.mark.parametrize(
    "name, dtype, axis", NAN_PLAN, ids=[f"{n}-{d}-C3x3000-axis={a}" for n, d, a in NAN_PLAN]
)
def test_nan_and_infinity(name, dtype, axis):
    kernel = _kernel(name, _arguments(axis=axis))
    for places in NAN_CASES.values():
        _agree(name, kernel, (_special(dtype, (3, 3000), places),), axis=axis)


def test_complex_nan_order_follows_numpy():
    a = np.array([1 + 1j, complex(np.nan, 0), complex(1, np.nan), 3, complex(np.nan, 2)])
    for name in ["max", "min", "argmax", "argmin"]:
        _agree(name, _kernel(name, ""), (a,))


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_long_sums_are_as_accurate_as_numpy(dtype):
    a = _array("sum", dtype, "C", (100_003,), seed=7) + 1000
    for name in ["sum", "mean", "var"]:
        _check(_kernel(name, ""), (a,), _numpy(name, a))


@pytest.mark.parametrize("name", REDUCE + ARG)
@pytest.mark.parametrize("axis", [None, 0])
def test_empty_inputs(name, axis):
    kernel = _kernel(name, _arguments(axis=axis))
    for shape in [(0, 3), (3, 0), (0, 0)]:
        _agree(name, kernel, (np.zeros(shape),), axis=axis)


# ---------------------------------------------------------------------------------------
# Errors, aliases, and the plain Python path.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", REDUCE + ARG + CUMULATIVE)
def test_axis_out_of_bounds_raises_numpy_axis_error(name):
    kernel = _kernel(name, "axis=3")
    with pytest.raises(np.exceptions.AxisError, match="axis 3 is out of bounds for array of dim"):
        kernel(np.ones((2, 3)))


@pytest.mark.parametrize("name", ["sum", "var"])
def test_repeated_axis_raises(name):
    kernel = _kernel(name, "axis=(0, -2)")
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        kernel(np.ones((2, 3)))


def test_invalid_axis_type_is_a_typing_error():
    with pytest.raises(numba.core.errors.TypingError, match="axis must be None or an int"):
        _kernel("argmax", "axis=(0,)")(np.ones((2, 3)))
    with pytest.raises(numba.core.errors.TypingError, match="axis must be None, an int or a"):
        _kernel("sum", "axis=1.5")(np.ones((2, 3)))


def test_unsupported_dtype_is_a_typing_error():
    with pytest.raises(numba.core.errors.TypingError, match="unsupported dtype float16"):
        _kernel("sum", "")(np.ones(3, dtype=np.float16))


def test_error_branch_not_taken_still_compiles():
    @numba.njit
    def kernel(a):
        if a.ndim == 3:
            return reductions.sum(a, axis=2)
        return reductions.sum(a, axis=0)

    np.testing.assert_array_equal(kernel(np.ones((2, 3))), np.full(3, 2.0))


def test_amax_amin_are_max_min_and_compile():
    assert reductions.amax is reductions.max and reductions.amin is reductions.min
    a = _array("max", "float64", "C", (3, 4))
    _check(_kernel("amax", "axis=0"), (a,), np.amax(a, axis=0))
    _check(_kernel("amin", "axis=(0, 1), keepdims=True"), (a,), np.amin(a, (0, 1), keepdims=True))


PYTHON_CALLS = [
    ("sum", {"axis": 1, "keepdims": True}),
    ("sum", {"dtype": np.float32}),
    ("prod", {"axis": 0}),
    ("mean", {"axis": (0, 1)}),
    ("max", {"axis": -1}),
    ("min", {"keepdims": True}),
    ("amax", {"axis": 0}),
    ("amin", {}),
    ("var", {"axis": 0, "ddof": 1}),
    ("var", {"dtype": np.float32}),
    ("std", {"axis": 1, "keepdims": True}),
    ("argmax", {"axis": 1}),
    ("argmin", {"keepdims": True}),
    ("all", {"axis": 0}),
    ("any", {}),
    ("cumsum", {"axis": 0}),
    ("cumprod", {"dtype": np.float32}),
]


@pytest.mark.parametrize(
    "name, kwargs", PYTHON_CALLS, ids=[f"{n}-{','.join(k)}" for n, k in PYTHON_CALLS]
)
def test_plain_python_calls_numpy(name, kwargs):
    a = _array(name, "float64", "C", (3, 4)) > 0 if name in ("all", "any") else None
    a = _array(name, "float64", "C", (3, 4)) if a is None else a
    got = getattr(reductions, name)(a, **kwargs)
    expected = getattr(np, name)(a, **kwargs)
    assert type(got) is type(expected)
    np.testing.assert_array_equal(got, expected)


_CACHED = """
import numba
import numpy as np
from numbax.numba_backend import reductions

@numba.njit(cache=True)
def kernel(a, axis):
    return reductions.sum(a, axis=1), reductions.var(a, axis=axis), reductions.argmax(a, 0)

a = np.arange(12.0).reshape(3, 4) ** 2
total, variance, where = kernel(a, 0)
assert np.array_equal(total, a.sum(1)) and np.allclose(variance, a.var(0))
assert np.array_equal(where, a.argmax(0))
print(kernel.stats.cache_hits.total())
"""


def test_kernels_reload_from_numba_disk_cache(tmp_path):
    """numbax compiles with ``cache=True``: a kernel reloaded from disk must still run."""
    script = tmp_path / "cached.py"
    script.write_text(_CACHED)
    root = Path(reductions.__file__).resolve().parents[2]
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(root)}
    hits = []
    for _ in range(2):
        run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        hits.append(run.stdout.split()[-1])
    assert hits == ["0", "1"]
