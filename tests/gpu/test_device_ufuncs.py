"""NumPy ufuncs numba-cuda does not compile in device code (``np.sqrt``, ``np.abs``,
``np.square``, the arithmetic ones) are written as what they mean on numbers: the
simulator runs that code, equal to NumPy, and a GPU compiles it
(``python -m benchmarks.gpu.ptx`` checks)."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx


def many_ufuncs(x, y):
    a = np.sqrt(np.abs(x)) + np.square(y)
    b = np.negative(np.add(a, y)) * np.power(np.abs(y), 1.5)
    c = np.where(np.isfinite(b), np.copysign(b, x), 0.0)
    return np.true_divide(c, np.subtract(2.0, np.positive(y)))


X = np.linspace(-2.0, 2.0, 9)
Y = np.linspace(0.5, 1.5, 9)


def test_the_ufuncs_give_numpys_values():
    got = nx.device_get(nx.jit(many_ufuncs, backend="gpu")(X, Y))
    np.testing.assert_allclose(got, many_ufuncs(X, Y), rtol=1e-14)


def test_the_device_function_writes_them_as_operators_builtins_and_math():
    compiled = nx.jit(many_ufuncs, backend="gpu")
    compiled(X, Y)
    device = compiled.source.split("# gpu device function of", 1)[1]
    code = [line for line in device.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if "np." in line]
    for spelling in ("abs(x)", "nxrt.device_sqrt(", "y * y", "nxrt.device_copysign("):
        assert spelling in device, spelling


def roundings(x):
    return np.floor(x) + 2.0 * np.ceil(x) - np.trunc(x) * np.rint(x) + np.sign(x)


def test_roundings_and_sign_give_numpys_values():
    """libdevice's floor, ceil, trunc and rint on a GPU (halves to even, as NumPy)."""
    x = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 2.7, np.nan, 1e15 + 0.5])
    got = nx.device_get(nx.jit(roundings, backend="gpu")(x))
    np.testing.assert_array_equal(got, roundings(x))
    compiled = nx.jit(roundings, backend="gpu")
    compiled(x.astype(np.float32))
    assert "nxrt.device_floor(x)" in compiled.source and "nxrt.device_sign(x)" in compiled.source


def rounded(x):
    return np.fmod(x, 2.0) + 0.5


def test_a_ufunc_numba_cuda_does_not_compile_is_refused_at_its_line():
    """On the simulator too, which would run it, where a GPU would not compile it."""
    with pytest.raises(nx.CompileError, match="np.fmod is not compiled by numba-cuda") as info:
        nx.jit(rounded, backend="gpu")(X)
    assert (info.value.filename, info.value.lineno) == (
        __file__,
        rounded.__code__.co_firstlineno + 1,
    )
