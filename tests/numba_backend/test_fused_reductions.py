"""Sums fused with the loop that makes their values (``@nxrt.elementwise(summed=...)``,
``@nxrt.elementwise(unbroadcast=True)``, ``numba_backend/loops/fused_sums.py``) and reduced
values spread inside loops (``nxrt.expand_reduced``): NumPy's values, shapes and dtypes,
compiled and with the generated code run as Python, while the summed values are never
stored."""

import re

import numba
import numpy as np
import pytest

import numbax as nx
import numbax.numba_backend.registered  # noqa: F401  (the helpers' Numba versions)
from benchmarks.kernels_loops import lj_energy  # the molecular-dynamics energy
from numbax.numba_backend.loops.elementwise import elementwise
from numbax.runtime import nxrt
from tests.helpers.fd import numeric_jacobian


def sum_rows(x, y):
    return np.sum((x - y) * (x - y), axis=2)


def sum_last_kept(x, y):
    return np.sum((x - y) * (x - y), axis=-1, keepdims=True)


def sum_outer_axes(x, y):
    return np.sum(np.exp(x) * y, axis=(0, 2))


def sum_first(x, y):
    return np.sum(x * y + 1.0, axis=0)


def count_between(x, y):
    return np.sum((x > y) & (x < 1.0), axis=1)


def sum_everything(x, y):
    return np.sum(x * y, axis=(0, 1, 2))


rng = np.random.default_rng(7)
SHORT = (rng.standard_normal((4, 1, 3)), rng.standard_normal((1, 5, 3)))  # rows of 3
LONG = (rng.standard_normal((4, 1, 20)), rng.standard_normal((1, 5, 20)))  # pairwise rows


def _body(jitted, name):
    return jitted.source.split(f"def {name}(")[-1]


def _as_python(jitted, *args):
    """What the generated code computes run as Python, with the runtime's own helpers."""
    compiled, _ = jitted.specialization_for(args, {})
    return compiled.generated.function(*args)


@pytest.mark.parametrize(
    "f",
    [sum_rows, sum_last_kept, sum_outer_axes, sum_first, count_between, sum_everything],
)
@pytest.mark.parametrize("inputs", [SHORT, LONG], ids=["short-rows", "long-rows"])
def test_a_sum_over_axes_of_a_fused_loop_is_numpys(f, inputs):
    jitted = nx.jit(f)
    want = f(*inputs)
    got = jitted(*inputs)
    assert np.shape(got) == np.shape(want)
    assert np.result_type(got) == np.result_type(want)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(_as_python(jitted, *inputs), want, rtol=1e-14)
    assert "@nxrt.elementwise(summed=" in jitted.source


def test_float32_values_are_summed_in_float32():
    x, y = (a.astype(np.float32) for a in LONG)
    got = nx.jit(sum_rows)(x, y)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, sum_rows(x, y), rtol=1e-6)


def test_rows_are_summed_in_the_order_of_the_unfused_sum():
    """Row by row, pairwise from 8 values on (NumPy's order, as ``nxrt.sum`` adds):
    fusing changes no bit of a sum along the last axis."""
    for x, y in (SHORT, LONG):
        stored = np.sum((x - y) * (x - y), axis=2)  # NumPy: stored, then summed pairwise
        np.testing.assert_array_equal(nx.jit(sum_rows)(x, y), stored)


def test_an_axis_numpy_refuses_is_numpys_error():
    def bad_axis(x):
        return np.sum(x * x, axis=3)

    with pytest.raises(np.exceptions.AxisError):
        nx.jit(bad_axis)(np.ones((2, 3)))


POSITIONS = np.stack(np.meshgrid(*[np.arange(2) * 1.2] * 3, indexing="ij"), -1).reshape(-1, 3)
POSITIONS = POSITIONS + rng.uniform(-0.05, 0.05, POSITIONS.shape)


def test_the_pair_energys_gradient_stores_no_pair_array():
    """The forward sum over the coordinates and both sums of the pairs' cotangents back
    onto the particles run in the loops that make the pairs' values: no (n, n, 3) array
    is made."""
    grad = nx.jit(nx.grad(lj_energy))
    got = grad(POSITIONS)
    np.testing.assert_allclose(got, nx.grad(lj_energy)(POSITIONS), rtol=1e-12)
    np.testing.assert_allclose(got, numeric_jacobian(lj_energy, [POSITIONS], 0), rtol=1e-6)
    np.testing.assert_allclose(_as_python(grad, POSITIONS), got, rtol=1e-12)
    body = _body(grad, "grad_lj_energy")
    code = [line for line in body.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if " diff" in line or "axis=2" in line]
    kernels = grad.source.split("def grad_lj_energy(")[0]
    assert kernels.count("@nxrt.elementwise(summed=2, keepdims=False)") == 1
    # the pairs' cotangent summed onto both sides of the difference, in one loop
    assert re.search(
        r"@nxrt\.elementwise\(unbroadcast=True, also=_grad_lj_energy_line\d+\)", kernels
    )
    assert re.search(
        r"_ct_pos_at, _ct_pos_at_2 = _grad_lj_energy_line\d+_2\(_pos_at, _pos_at_2,", body
    )
    assert "nxrt.expand_reduced(" in body


def norm_loss(x):
    s = np.sum(x * x, axis=1)
    return np.sum(np.sqrt(s + 1.0) * s)


def log_sum_kept(x):
    m = np.sum(np.exp(x), axis=-1, keepdims=True)
    return np.sum(np.log(m) * x)


@pytest.mark.parametrize("f", [norm_loss, log_sum_kept])
def test_a_reduced_cotangent_is_spread_inside_the_loop(f):
    x = rng.standard_normal((4, 3))
    grad = nx.jit(nx.grad(f))
    got = grad(x)
    np.testing.assert_allclose(got, nx.grad(f)(x), rtol=1e-12)
    np.testing.assert_allclose(got, numeric_jacobian(f, [x], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_as_python(grad, x), got, rtol=1e-12)
    assert "nxrt.broadcast_reduced(" not in _body(grad, f"grad_{f.__name__}")


def squared_error_of_affine(w, x, y):
    out = x * w + 1.0
    return np.mean((out - y) ** 2)


@pytest.mark.parametrize("targets", [(3,), (4, 3)], ids=["same-shape", "broadcast-targets"])
def test_a_cotangent_into_a_value_the_loop_computes_is_unbroadcast_after_it(targets):
    """The cotangent of ``out`` in ``(out - y) ** 2``, ``out`` recomputed in the loop, is
    the loop's value unbroadcast after it (no summing loop): right whether ``y`` has
    ``out``'s shape or broadcasts it."""
    w, x, y = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(targets)
    grad = nx.jit(nx.grad(squared_error_of_affine))
    got = grad(w, x, y)
    np.testing.assert_allclose(got, nx.grad(squared_error_of_affine)(w, x, y), rtol=1e-12)
    want = numeric_jacobian(squared_error_of_affine, [w, x, y], 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(_as_python(grad, w, x, y), got, rtol=1e-12)
    kernels, body = grad.source.split("def grad_squared_error_of_affine(")
    assert re.search(r"_ct_out = nxrt\.unbroadcast\(\w+, out\)", body)
    # into w, an argument of the loop (not computed by it): summed as the values are made
    assert kernels.count("@nxrt.elementwise(unbroadcast=True)") == 1
    assert re.search(r"_ct_w = _grad_squared_error_of_affine_line\d+\(w, ", body)


def shared_square(x, y):
    sq = (x - y) * (x - y)
    return np.sum(sq, axis=1) + np.max(sq)


def test_a_value_also_read_whole_is_stored_and_summed_right():
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(nx.jit(shared_square)(x, y), shared_square(x, y), rtol=1e-14)


# -- the declarations themselves, compiled, against their Python versions ---------------


def _product(a, b):
    return a * b - b


PRODUCT_ROWS = elementwise(_product, summed=1)
PRODUCT_KEPT = elementwise(_product, summed=(0, 1), keepdims=True)
PRODUCT_FIRST = elementwise(_product, summed=-2)
PRODUCT_LIKE = elementwise(_product, unbroadcast=True)
QUOTIENT_ALSO = elementwise(lambda a, b: a / (1.0 + b * b), unbroadcast=True, also=PRODUCT_LIKE)
ROWS, COLUMNS = rng.standard_normal((4, 1)), rng.standard_normal((1, 3))


@numba.njit
def _summed_compiled(a, b):
    return PRODUCT_ROWS(a, b), PRODUCT_KEPT(a, b), PRODUCT_FIRST(a, b)


@numba.njit
def _unbroadcast_compiled(like, a, b):
    return PRODUCT_LIKE(like, a, b)


@numba.njit
def _both_compiled(like_a, like_b, a, b):
    return QUOTIENT_ALSO(like_a, like_b, a, b)


@pytest.mark.parametrize("likes", [(ROWS, COLUMNS), (COLUMNS, np.zeros((4, 3))), (ROWS, 1.0)])
def test_a_loop_declared_also_sums_both_kernels(likes):
    got = _both_compiled(*likes, ROWS, COLUMNS)
    want = QUOTIENT_ALSO(*likes, ROWS, COLUMNS)
    expected = (
        PRODUCT_LIKE(likes[0], ROWS, COLUMNS),
        nxrt.unbroadcast(ROWS / (1.0 + COLUMNS**2), likes[1]),
    )
    for g, w, e in zip(got, want, expected, strict=True):
        assert np.shape(g) == np.shape(w) == np.shape(e)
        np.testing.assert_allclose(g, w, rtol=1e-15)
        np.testing.assert_allclose(w, e, rtol=1e-15)


@numba.njit
def _expand_reduced_compiled(v):
    return nxrt.expand_reduced(v, 1, False), nxrt.expand_reduced(v, (0, -1), False)


def test_a_summed_loop_compiled_is_its_python_version():
    compiled = _summed_compiled(ROWS, COLUMNS)
    interpreted = [f(ROWS, COLUMNS) for f in (PRODUCT_ROWS, PRODUCT_KEPT, PRODUCT_FIRST)]
    for got, want in zip(compiled, interpreted, strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_allclose(interpreted[0], np.sum(ROWS * COLUMNS - COLUMNS, axis=1))


@pytest.mark.parametrize(
    "like",
    [ROWS, COLUMNS, np.zeros((4, 3)), np.zeros((2, 4, 3)), np.zeros(3), 1.0],
    ids=["rows", "columns", "same-shape", "spread", "fewer-axes", "number"],
)
def test_an_unbroadcasting_loop_compiled_is_its_python_version(like):
    got = _unbroadcast_compiled(like, ROWS, COLUMNS)
    want = PRODUCT_LIKE(like, ROWS, COLUMNS)
    assert np.shape(got) == np.shape(want) == np.shape(like)
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize(
    "like, a, b",
    [
        (np.zeros((4, 3)), ROWS, ROWS),  # the values' shape spread over the like's
        (np.zeros((4, 3), np.float32), ROWS, COLUMNS),  # the like's dtype, not the values'
        (np.zeros((4, 1)), ROWS, ROWS),  # the values' own shape and dtype: stored as is
    ],
    ids=["spread-over-equal-axes", "float32-like", "values-shape"],
)
def test_an_unbroadcasting_loop_keeps_the_likes_shape_and_dtype(like, a, b):
    got = _unbroadcast_compiled(like, a, b)
    want = nxrt.unbroadcast(a * b - b, like)
    assert got.shape == want.shape == like.shape and got.dtype == want.dtype == like.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6 if like.dtype == np.float32 else 1e-15)


def test_expand_reduced_puts_the_reduced_axes_back():
    v = rng.standard_normal((4, 3))
    for got, want in zip(
        _expand_reduced_compiled(v),
        (nxrt.expand_reduced(v, 1, False), nxrt.expand_reduced(v, (0, -1), False)),
        strict=True,
    ):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
