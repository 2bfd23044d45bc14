"""Elementwise fusion under jit: same values and dtypes as NumPy, whatever the shapes."""

import numpy as np
import pytest

import numbax as nx


def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def reuse(x, y):
    a = np.exp(x) * 2.0
    b = a + y
    c = np.sin(b) - a
    return c * b + a


def interrupted(x, y):
    a = np.exp(x) * 2.0
    s = np.sum(a)
    b = a + y * s
    return np.sin(b) - a


def branchy(x, flag):
    y = x * 2.0 + 1.0
    if flag:
        z = np.tanh(y) * y
    else:
        z = np.cos(y) - y
    return z + x


def predicate(x, y):
    return (x > y) & (x * 2.0 < 3.0)


def strong_scalar(x, y):
    s = np.sum(y)
    return x * s + 1.0


def in_loop(x, n):
    for _ in range(n):
        x = np.sqrt(x * x + 1.0) - 0.5
    return x


LINE_OF_INTERRUPTED = interrupted.__code__.co_firstlineno + 1
FUNCTIONS = {
    f.__name__: (f, nx.jit(f))
    for f in (selu, reuse, interrupted, branchy, predicate, strong_scalar, in_loop)
}
rng = np.random.default_rng(3)
X = rng.standard_normal((6, 5))


def _check(name, *args):
    plain, jitted = FUNCTIONS[name]
    expected = plain(*args)
    got = jitted(*args)
    assert np.asarray(got).dtype == np.asarray(expected).dtype, (name, args)
    assert np.shape(got) == np.shape(expected), (name, args)
    tight = all(np.asarray(a).dtype != np.float32 for a in (got, *args))
    np.testing.assert_allclose(
        got, expected, rtol=1e-13 if tight else 4e-6, atol=0 if tight else 1e-6
    )


@pytest.mark.parametrize(
    "x",
    [X, X.astype(np.float32), X.T, X[::2, 1:], X[0], np.float64(0.7), X.reshape(-1)[:0]],
    ids=["c-contiguous", "float32", "transposed", "strided", "1-d", "0-d scalar", "empty"],
)
def test_fused_chain_matches_numpy_for_any_layout(x):
    _check("selu", x)


@pytest.mark.parametrize(
    "y",
    [X * 0.5, X[0], np.float32(2.0), 2.0, X.astype(np.float32)],
    ids=["same shape", "broadcast row", "numpy scalar", "python scalar", "mixed dtype"],
)
def test_values_needed_later_end_their_group(y):
    _check("reuse", X, y)
    _check("interrupted", X, y)


def test_arrays_of_one_rank_broadcast_unequal_shapes():
    # the compiled signature of the same-shape case: the shapes differ only at run time
    for y in (X[:1] * 0.5, X[:, :1] * 0.5, X[:1, :1] * 0.5):
        _check("reuse", X, y)
        _check("reuse", y, X)
    with pytest.raises(ValueError, match="broadcast"):
        FUNCTIONS["reuse"][1](X, X[:2, :2].copy())


@pytest.mark.parametrize("flag", [True, False])
def test_fusion_inside_branches(flag):
    _check("branchy", X, flag)


@pytest.mark.parametrize(
    ("x_dtype", "y_dtype"),
    [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.float32)],
)
def test_numpy_scalars_keep_their_dtype_in_promotion(x_dtype, y_dtype):
    # np.sum(y) is a NumPy scalar: strongly typed, unlike a Python float.
    _check("strong_scalar", X.astype(x_dtype), X.astype(y_dtype))


@pytest.mark.parametrize("alpha", [1.5, 2, np.float32(1.5), np.float64(1.5)])
def test_python_and_numpy_scalar_arguments(alpha):
    _check("selu", X.astype(np.float32), alpha)


def test_boolean_results():
    _check("predicate", X, X.T.copy().T * 0.9)


def test_loops_are_left_as_they_are():
    _check("in_loop", np.abs(X), 3)
    assert "@nxrt.elementwise" not in FUNCTIONS["in_loop"][1].source


def test_generated_source_fuses_each_line_once():
    assert FUNCTIONS["reuse"][1].source.count("@nxrt.elementwise") == 1
    # `a` is needed after np.sum: it is the result of one kernel and an input of the next
    text = FUNCTIONS["interrupted"][1].source
    assert text.count("@nxrt.elementwise") == 2
    assert f"a = _interrupted_line{LINE_OF_INTERRUPTED}(x)" in text
    selu_text = FUNCTIONS["selu"][1].source
    assert selu_text.count("@nxrt.elementwise") == 1
    assert "_where = x if _gt else _sub" in selu_text


def test_large_results_are_correct():
    big = rng.standard_normal(3_000_000).astype(np.float32)  # above the huge-page size
    _check("selu", big)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_generated_source_also_runs_as_plain_python(name):
    """Invariant 2 of the design: the source Numba compiles runs unchanged in CPython."""
    plain, jitted = FUNCTIONS[name]
    args = {"branchy": (X, True), "in_loop": (np.abs(X), 2), "selu": (X,)}.get(name, (X, X.T.T))
    python_function = jitted.specialize().python_function
    np.testing.assert_allclose(python_function(*args), plain(*args), rtol=1e-13)
