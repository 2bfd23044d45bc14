"""Accuracy and behaviour of numbax.numba_backend.math.elementary under Numba and in Python.

Accuracy is measured in ulp against a reference that is correctly rounded for practical
purposes: NumPy in float64 for float32 inputs, NumPy in long double (64-bit mantissa on
x86-64) for float64 inputs. Where long double is no wider than double, the float64
checks compare with NumPy itself and allow one more ulp. Special-value classes (NaN,
+-inf, signed zero) must match NumPy's float result exactly.

Compiled functions are shared (one per function and argument type) to keep the number
of Numba compilations, the bulk of this file's run time, small.
"""

from __future__ import annotations

import functools
import re
import zlib

import numba
import numpy as np
import pytest

from numbax.numba_backend.math import elementary

F32, F64 = np.float32, np.float64
_LD_IS_WIDE = np.finfo(np.longdouble).nmant >= 63
UNARY = [
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "tanh",
    "sinh",
    "cosh",
    "sin",
    "cos",
    "sigmoid",
]
# Maximum error allowed, in ulp (measured maxima are 0.8-2.5; see the kernels' notes).
MAX_ULP = {name: 2.0 for name in UNARY}
MAX_ULP.update(tanh=3.0, sinh=3.0, sigmoid=3.0, power=2.0)


# ---------------------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------------------


def ulp_distance(got: np.ndarray, ref: np.ndarray, dtype: type) -> np.ndarray:
    """|got - ref| in units of the last place of ``dtype`` at ``ref`` (subnormal ulp
    below the smallest normal); ``ref`` is higher precision, both are finite."""
    finfo = np.finfo(dtype)
    mag = np.maximum(np.abs(ref), finfo.smallest_normal).astype(np.float64)
    mag = np.minimum(mag, float(finfo.max))
    exponent = np.floor(np.log2(mag)).astype(np.int64) - finfo.nmant
    ulp = np.ldexp(np.ones(ref.shape, dtype=ref.dtype), exponent)
    return np.abs(got.astype(ref.dtype) - ref) / ulp


def reference(name: str, x: np.ndarray, dtype: type) -> np.ndarray:
    """``name`` at ``x`` in more than ``dtype``'s precision."""
    wide = np.float64 if dtype == F32 else np.longdouble
    if dtype == F64 and not _LD_IS_WIDE:
        wide = np.float64
    xw = x.astype(wide)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return 1 / (1 + np.exp(-xw))
        return getattr(np, name)(xw)


def numpy_result(name: str, *args: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return elementary.sigmoid(*args)
        return getattr(np, name)(*args)


def check_accuracy(name, dtype, x, got, ref, max_ulp):
    """Finite references within ``max_ulp``; nonfinite ones exactly NumPy's class."""
    finfo = np.finfo(dtype)
    if dtype == F64 and not _LD_IS_WIDE:
        max_ulp += 1.0
    finite = np.isfinite(ref) & (np.abs(ref) <= finfo.max)
    err = ulp_distance(got[finite], ref[finite], dtype)
    if err.size:
        worst = int(np.argmax(err))
        xw, gw, rw = x[finite][worst], got[finite][worst], ref[finite][worst]
        assert err[worst] <= max_ulp, (
            f"{name}[{dtype.__name__}]: {err[worst]:.2f} ulp at x={xw!r}: got {gw!r}, want {rw!r}"
        )


def check_classes(name, dtype, x, got, want):
    """NaN-ness, infinities (with sign) and the sign of zeros equal NumPy's ``want``."""
    for what, bad in (
        ("nan", np.isnan(got) != np.isnan(want)),
        ("inf", np.isinf(got) != np.isinf(want)),
        ("inf sign", np.isinf(want) & (got != want)),
        ("zero sign", (want == 0) & (got == 0) & (np.signbit(got) != np.signbit(want))),
    ):
        if bad.any():
            i = int(np.argmax(bad))
            pytest.fail(
                f"{name}[{dtype.__name__}] {what}: x={x[i]!r}: got {got[i]!r}, numpy {want[i]!r}"
            )


@functools.cache
def compiled(name: str):
    """``elementary.<name>`` called from a jitted function (one dispatcher per name)."""
    func = getattr(elementary, name)
    if name == "power":
        return numba.njit(lambda x, y: func(x, y))
    return numba.njit(lambda x: func(x))


# ---------------------------------------------------------------------------------------
# Input grids, by region.
# ---------------------------------------------------------------------------------------


def _both_signs(pos):
    return np.concatenate([pos, -pos])


def grid(region: str, name: str, dtype: type) -> np.ndarray:
    finfo = np.finfo(dtype)
    rng = np.random.default_rng(zlib.crc32(f"{region}-{name}-{dtype.__name__}".encode()))
    if region == "logspace-whole-domain":
        tiny, big = float(finfo.smallest_subnormal), float(finfo.max)
        with np.errstate(over="ignore"):
            pos = np.geomspace(tiny, big, 200_000).astype(dtype)
        return _both_signs(pos[np.isfinite(pos)])
    if region == "uniform-core":
        lo, hi = {"log": (0, 4), "log2": (0, 4), "log10": (0, 4), "log1p": (-1, 3)}.get(
            name, (-12, 12)
        )
        return np.concatenate(
            [
                rng.uniform(lo, hi, 100_000),
                rng.uniform(-1, 1, 50_000) * 2.0 ** -rng.integers(0, 60, 50_000),
            ]
        ).astype(dtype)
    if region == "random-bits":  # float32 only: all exponents equally likely
        bits = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        return x[np.isfinite(x)]
    if region == "specials":
        return np.array(
            [
                0.0,
                -0.0,
                np.inf,
                -np.inf,
                np.nan,
                -np.nan,
                finfo.smallest_subnormal,
                -finfo.smallest_subnormal,
                finfo.smallest_normal,
                -finfo.smallest_normal,
                finfo.max,
                -finfo.max,
                finfo.eps,
                -finfo.eps,
                1.0,
                -1.0,
                0.5,
                2.0,
                np.pi,
                -np.pi / 2,
            ],
            dtype=dtype,
        )
    if region == "near-thresholds":
        # over/underflow of exp-like functions, of sinh/cosh, log1p's -1, tanh's 1.
        points = [
            np.log(finfo.max),
            np.log(finfo.smallest_subnormal),
            np.log(finfo.smallest_normal),
        ]
        points += [
            np.log(float(finfo.max)) + np.log(2),
            np.log(float(finfo.smallest_subnormal)) - np.log(2),
        ]
        points += [np.log2(float(finfo.max)), np.log2(float(finfo.smallest_subnormal)), -1.0]
        points += [9.0, 10.0, 19.0, 22.0, 0.35, 0.69]
        x = np.array(points, dtype=dtype)
        out = [x]
        up, down = x.copy(), x.copy()
        for _ in range(64):
            up = np.nextafter(up, dtype(np.inf))
            down = np.nextafter(down, dtype(-np.inf))
            out += [up, down]
        return _both_signs(np.concatenate(out))
    if region == "near-multiples-of-pi":
        k = rng.integers(1, int(float(_reduce_max(dtype)) / np.pi) - 1, 200_000)
        k = np.concatenate([np.arange(1, 20_000), k]).astype(np.longdouble)
        pi = np.longdouble("3.14159265358979323846264338327950288")
        x = np.concatenate([(k * pi).astype(dtype), ((k + 0.5) * pi).astype(dtype)])
        return _both_signs(x)
    if region == "beyond-reduction-range":  # sin/cos: the libm fallback pass
        lo = np.log2(float(_reduce_max(dtype)))
        x = np.exp2(rng.uniform(lo, np.log2(float(finfo.max)), 20_000)).astype(dtype)
        x[::2] = rng.uniform(-3, 3, x[::2].size)  # mixed with small ones
        return _both_signs(x)
    raise AssertionError(region)


def _reduce_max(dtype):
    from numbax.numba_backend.math import (
        _kernels32,
        _kernels64,
    )

    return (_kernels32 if dtype == F32 else _kernels64).REDUCE_MAX


REGIONS = ["logspace-whole-domain", "uniform-core", "random-bits", "specials", "near-thresholds"]


def _accuracy_cases():
    for name in UNARY:
        for dtype in (F32, F64):
            regions = [r for r in REGIONS if r != "random-bits" or dtype == F32]
            if name in ("sin", "cos"):
                regions += ["near-multiples-of-pi", "beyond-reduction-range"]
            for region in regions:
                yield pytest.param(name, dtype, region, id=f"{name}-{dtype.__name__}-{region}")


@pytest.mark.parametrize(("name", "dtype", "region"), list(_accuracy_cases()))
def test_accuracy(name, dtype, region):
    x = grid(region, name, dtype)
    got = compiled(name)(x)
    assert got.dtype == dtype and got.shape == x.shape
    check_classes(name, dtype, x, got, numpy_result(name, x))
    check_accuracy(name, dtype, x, got, reference(name, x, dtype), MAX_ULP[name])


# ---------------------------------------------------------------------------------------
# Named special values (exact).
# ---------------------------------------------------------------------------------------

EXACT = [
    ("exp", -np.inf, 0.0),
    ("exp", np.inf, np.inf),
    ("exp", 0.0, 1.0),
    ("exp", -0.0, 1.0),
    ("exp", 1000.0, np.inf),
    ("exp", -1000.0, 0.0),
    ("expm1", -0.0, -0.0),
    ("expm1", -np.inf, -1.0),
    ("expm1", np.inf, np.inf),
    ("log", 0.0, -np.inf),
    ("log", -0.0, -np.inf),
    ("log", -1.0, np.nan),
    ("log", 1.0, 0.0),
    ("log", np.inf, np.inf),
    ("log", -np.inf, np.nan),
    ("log2", 8.0, 3.0),
    ("log2", 0.0, -np.inf),
    ("log10", 1000.0, 3.0),
    ("log1p", -1.0, -np.inf),
    ("log1p", -2.0, np.nan),
    ("log1p", -0.0, -0.0),
    ("tanh", -0.0, -0.0),
    ("tanh", np.inf, 1.0),
    ("tanh", -np.inf, -1.0),
    ("tanh", -30.0, -1.0),
    ("sinh", -0.0, -0.0),
    ("sinh", -np.inf, -np.inf),
    ("cosh", -np.inf, np.inf),
    ("sin", -0.0, -0.0),
    ("sin", np.inf, np.nan),
    ("cos", -np.inf, np.nan),
    ("cos", 0.0, 1.0),
    ("sigmoid", -np.inf, 0.0),
    ("sigmoid", np.inf, 1.0),
    ("sigmoid", 0.0, 0.5),
    ("exp2", 10.0, 1024.0),
    ("exp2", -1074.0, 5e-324),
]


@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: d.__name__)
@pytest.mark.parametrize(("name", "x", "want"), EXACT, ids=[f"{n}({x})" for n, x, _ in EXACT])
def test_exact_special_value(name, x, want, dtype):
    if name == "exp2" and x == -1074.0 and dtype == F32:
        want = 0.0
    got = compiled(name)(np.array([x], dtype=dtype))[0]
    want = dtype(want)
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == want and np.signbit(got) == np.signbit(want), (got, want)


def test_subnormal_results_and_inputs():
    x = np.array([-745.0, -740.0, -103.0, -100.0], dtype=F64)
    got = compiled("exp")(x)
    assert got[0] == np.exp(-745.0) and got[0] > 0  # float64 subnormal (4.9e-324)
    x32 = np.array([-100.0, -103.0, -87.5], dtype=F32)
    got32 = compiled("exp")(x32)
    np.testing.assert_array_equal(got32, np.exp(x32.astype(F64)).astype(F32))
    sub = np.array([1e-45, 3e-42, 1e-39], dtype=F32)
    np.testing.assert_allclose(compiled("log")(sub), np.log(sub.astype(F64)), rtol=1e-6)
    sub64 = np.array([5e-324, 1e-310], dtype=F64)
    np.testing.assert_allclose(compiled("log")(sub64), np.log(sub64), rtol=1e-15)


# ---------------------------------------------------------------------------------------
# power.
# ---------------------------------------------------------------------------------------


def _power_grid(dtype):
    rng = np.random.default_rng(7)
    finfo = np.finfo(dtype)
    n = 300_000
    lo, hi = np.log(float(finfo.smallest_subnormal)), np.log(float(finfo.max))
    x = np.exp(rng.uniform(lo, hi, n))
    x[::3] = rng.uniform(0, 3, x[::3].size)
    x[1::7] = 1 + rng.normal(0, 1e-6, x[1::7].size)
    x[::5] *= -1
    y = rng.normal(0, 3, n)
    y[::4] = np.round(y[::4])
    y[1::6] = rng.normal(0, 1e4 if dtype == F64 else 300, y[1::6].size)
    # results spread over the whole range, including overflow and underflow
    lx = np.log(np.abs(x))
    sel = slice(3, None, 11)
    y[sel] = rng.uniform(-1.2, 1.2, y[sel].size) * hi / np.where(lx[sel] == 0, 1, lx[sel])
    return x.astype(dtype), y.astype(dtype)


@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: d.__name__)
def test_power_accuracy(dtype):
    x, y = _power_grid(dtype)
    got = compiled("power")(x, y)
    assert got.dtype == dtype
    check_classes("power", dtype, x, got, numpy_result("power", x, y))
    wide = np.float64 if dtype == F32 else np.longdouble
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(wide), y.astype(wide))
    check_accuracy("power", dtype, x, got, ref, MAX_ULP["power"])


@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: d.__name__)
def test_power_special_values(dtype):
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5]
    values += [np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e30, -1e30]
    a = np.array(values, dtype=dtype)
    x, y = (v.ravel() for v in np.meshgrid(a, a))
    got = compiled("power")(x, y)
    want = numpy_result("power", x, y)
    check_classes("power", dtype, x, got, want)
    close = np.isfinite(want) & (want != 0)
    np.testing.assert_allclose(got[close], want[close], rtol=4 * np.finfo(dtype).eps)
    # exact for small integer powers
    ints = np.arange(-20, 21, dtype=dtype)
    for p in (2, 3):
        got = compiled("power")(ints, dtype(p))
        np.testing.assert_array_equal(got, ints**p)


def test_power_shapes_and_types():
    f = compiled("power")
    a = np.linspace(0.5, 3, 12, dtype=F32).reshape(3, 4)
    np.testing.assert_allclose(f(a, a[:1, :]), np.power(a, a[:1, :]), rtol=1e-6)  # broadcast
    np.testing.assert_allclose(f(a[:, :1], a[0]), np.power(a[:, :1], a[0]), rtol=1e-6)
    np.testing.assert_allclose(f(a.T, a.T), np.power(a.T, a.T), rtol=1e-6)  # F layout
    assert f(a, F32(2)).dtype == F32
    assert f(a, 2).dtype == F32  # as Numba's np.power: the int scalar adapts
    assert f(F32(2), a).dtype == np.power(F32(2), a).dtype
    assert f(2.0, 10.0) == 1024.0
    assert f(np.array(2.0), 3.0) == 8.0  # 0-d array -> scalar, as np.power
    assert f(3, 4) == 81 and isinstance(f(3, 4), int)  # integers: Numba's np.power
    np.testing.assert_array_equal(f(np.arange(5), 2), np.arange(5) ** 2)
    c = np.array([1 + 1j, 2j])
    np.testing.assert_allclose(f(c, 2.0), np.power(c, 2.0))  # complex: Numba's np.power


# ---------------------------------------------------------------------------------------
# Shapes, layouts, dtypes, scalars, fallback, plain Python.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "sin", "sigmoid"])
def test_shapes_and_layouts(name):
    f = compiled(name)
    base = np.linspace(-4, 4, 60, dtype=F32).reshape(6, 10)
    cases = {
        "2d-C": base,
        "2d-strided": base[::2, 1::3],
        "2d-F": base.T,
        "empty": base[:0],
    }
    for label, x in cases.items():
        got = f(x)
        assert got.shape == x.shape and got.dtype == F32, label
        np.testing.assert_allclose(got, numpy_result(name, x), rtol=3e-7, atol=1e-30, err_msg=label)
    zero_d = f(np.array(0.5, dtype=F32))  # 0-d array -> scalar, as Numba's np.exp
    assert np.ndim(zero_d) == 0
    np.testing.assert_allclose(zero_d, numpy_result(name, np.float32(0.5)), rtol=3e-7)


def test_input_dtypes_follow_numpy():
    f = compiled("exp")
    assert f(np.arange(4, dtype=np.int64)).dtype == F64
    assert f(np.arange(4, dtype=np.int16)).dtype == F32
    with pytest.raises(numba.core.errors.TypingError, match="float16"):
        f(np.ones(3, dtype=np.bool_))  # NumPy computes it in float16
    np.testing.assert_allclose(f(np.arange(4)), np.exp(np.arange(4)), rtol=1e-15)
    c = np.array([1 + 2j, -1j], dtype=np.complex128)
    np.testing.assert_allclose(f(c), np.exp(c), rtol=1e-15)  # complex: Numba's np.exp


@numba.njit
def _all_scalar(x):
    e = elementary
    return (
        e.exp(x),
        e.exp2(x),
        e.expm1(x),
        e.log(x),
        e.log2(x),
        e.log10(x),
        e.log1p(x),
        e.tanh(x),
        e.sinh(x),
        e.cosh(x),
        e.sin(x),
        e.cos(x),
        e.sigmoid(x),
    )


@pytest.mark.parametrize(
    "x", [F32(0.75), F32(-3.5), F64(0.75), F64(-3.5), 2, F32(3e7), F64(5e15)], ids=repr
)
def test_scalars_under_numba(x):
    got = _all_scalar(x)
    dtype = F32 if isinstance(x, np.float32) else F64
    for name, value in zip(UNARY, got, strict=True):
        want = numpy_result(name, np.array([x], dtype=dtype))[0]
        if np.isnan(want):
            assert np.isnan(value), name
            continue
        np.testing.assert_allclose(value, want, rtol=4 * np.finfo(dtype).eps, err_msg=name)


def test_scalar_result_type():
    _all_scalar(F32(1.0))
    _all_scalar(1)
    by_arg = {sig.args[0]: sig.return_type for sig in _all_scalar.nopython_signatures}
    assert set(by_arg[numba.float32]) == {numba.float32}  # float32 stays float32
    assert set(by_arg[numba.int64]) == {numba.float64}


@pytest.mark.parametrize("name", UNARY + ["power"])
def test_plain_python_is_numpy(name):
    func = getattr(elementary, name)
    x32 = np.linspace(-3, 3, 7, dtype=F32)
    args32 = (np.abs(x32), x32) if name == "power" else (x32,)
    for args in (args32, tuple(a.astype(F64) for a in args32), tuple(a[2] for a in args32)):
        with np.errstate(all="ignore"):
            got = func(*args)
        want = numpy_result(name, *args) if name != "sigmoid" else _stable_sigmoid(args[0])
        assert type(got) is type(want)
        assert np.asarray(got).dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(got, want)
    assert func(*([0.5] * len(args32))) == numpy_result(name, *([0.5] * len(args32)))


def _stable_sigmoid(x):
    x = np.asarray(x)
    e = np.exp(-np.abs(x))
    out = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    return out[()] if out.ndim == 0 else out


def test_sigmoid_python_is_stable():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    with np.errstate(over="raise"):
        got = elementary.sigmoid(x)
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert elementary.sigmoid(np.float32(1.0)).dtype == F32


# ---------------------------------------------------------------------------------------
# Vectorization: the array loops must contain SIMD float arithmetic.
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sin", "power"])
@pytest.mark.parametrize("dtype", [F32, F64], ids=lambda d: d.__name__)
def test_array_loop_vectorizes(name, dtype):
    """The kernels' fma chains appear as vector fma (``llvm.fma.v8f32`` ...) in the
    compiled module: the loop was vectorized. (Numba's own np.exp loop has vector types
    too, from scalarized ``llvm.exp`` calls, but no vector fma.)"""
    x = np.linspace(0.5, 2, 64, dtype=dtype)
    f = compiled(name)
    args = (x, x) if name == "power" else (x,)
    f(*args)
    sig = [s for s in f.signatures if s[0] == numba.typeof(x)][0]
    llvm = f.inspect_llvm(sig)
    # power float32 computes in float64 inside.
    elem = "f64" if dtype == F64 or name == "power" else "f32"
    widths = [int(w) for w in re.findall(rf"@llvm\.fma\.v(\d+){elem}", llvm)]
    assert widths and max(widths) >= 2, f"{name}[{dtype.__name__}] array loop not vectorized"
