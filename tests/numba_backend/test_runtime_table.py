"""Every NumPy function and array method numbax redirects under jit compiles and agrees
with NumPy, in value and dtype. The case list must cover the whole redirect table."""

import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend import registered as runtime
from numbax.numba_backend.math import elementary
from numbax.numba_backend.np import reductions
from numbax.numba_backend.redirects import replacements

# One lambda per line: numbax reads each one's source by its line.
# fmt: off
CASES = {
    "exp": lambda x: np.exp(x),
    "expm1": lambda x: np.expm1(x),
    "log": lambda x: np.log(np.abs(x) + 0.5),
    "log1p": lambda x: np.log1p(np.abs(x)),
    "tanh": lambda x: np.tanh(x),
    "sin": lambda x: np.sin(x),
    "cos": lambda x: np.cos(x),
    "power": lambda x: np.power(np.abs(x) + 0.5, x),
    "exp2": lambda x: np.exp2(x),
    "log2": lambda x: np.log2(np.abs(x) + 0.5),
    "log10": lambda x: np.log10(np.abs(x) + 0.5),
    "sinh": lambda x: np.sinh(x),
    "cosh": lambda x: np.cosh(x),
    "sum": lambda x: np.sum(x, axis=0),
    "mean": lambda x: np.mean(x, axis=-1, keepdims=True),
    "prod": lambda x: np.prod(x, axis=1),
    "max": lambda x: np.max(x, axis=(0, 1)),
    "min": lambda x: np.min(x),
    "amax": lambda x: np.amax(x, axis=1, keepdims=True),
    "amin": lambda x: np.amin(x, axis=0),
    "var": lambda x: np.var(x, axis=0, ddof=1),
    "std": lambda x: np.std(x, axis=1),
    "argmax": lambda x: np.argmax(x, axis=1),
    "argmin": lambda x: np.argmin(x),
    "all": lambda x: np.all(x > -1.0, axis=0),
    "any": lambda x: np.any(x > 1.0, axis=1),
    "cumsum": lambda x: np.cumsum(x, axis=0),
    "cumprod": lambda x: np.cumprod(x, axis=1),
}
METHODS = {
    "sum": lambda x: x.sum(axis=1),
    "mean": lambda x: x.mean(axis=0, keepdims=True),
    "prod": lambda x: x.prod(),
    "max": lambda x: x.max(axis=-1),
    "min": lambda x: x.min(axis=0),
    "var": lambda x: x.var(axis=1),
    "std": lambda x: x.std(ddof=1),
    "argmax": lambda x: x.argmax(axis=0),
    "argmin": lambda x: x.argmin(axis=1),
    "all": lambda x: (x > 0).all(axis=1),
    "any": lambda x: (x > 0).any(),
    "cumsum": lambda x: x.cumsum(axis=1),
    "cumprod": lambda x: x.cumprod(),
    "take": lambda x: x.take(np.array([2, 0, 2]), axis=1),
    "choose": lambda x: (x > 0).astype(np.int64).choose((x, -x)),
}
# fmt: on

X = np.random.default_rng(5).uniform(-1.5, 1.5, (3, 4))


def test_every_redirect_has_a_case():
    modules = (elementary.__name__, reductions.__name__)
    table = {name for name, fn in replacements().items() if fn.__module__ in modules}
    assert table == set(CASES)
    assert set(runtime.ARRAY_METHODS) == set(METHODS)


def _compare(fun, name, dtype):
    x = X.astype(dtype)
    jitted = nx.jit(fun)
    expected, got = fun(x), jitted(x)
    assert np.asarray(got).dtype == np.asarray(expected).dtype, name
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol, err_msg=name)
    return jitted


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_function_is_redirected_and_matches(name, dtype):
    jitted = _compare(CASES[name], name, dtype)
    assert (
        f"nxrt.{name}(" in jitted.source
        or f"nxrt.{name} " in jitted.source
        or (
            name in ("amax", "amin")  # the same functions as max and min in NumPy 2
        )
    )


@pytest.mark.parametrize("name", sorted(METHODS))
def test_array_method_is_redirected_and_matches(name):
    jitted = _compare(METHODS[name], name, np.float64)
    assert f"nxrt.{name}(" in jitted.source
