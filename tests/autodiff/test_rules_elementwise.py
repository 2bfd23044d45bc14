"""Derivatives of Python's operators and NumPy's elementwise functions.

Every rule of rules/operators.py and rules/elementwise.py is checked against central
finite differences, interpreted and under ``nx.jit``, at the samples of its declaration
(test_rule_table.py). Here, interpreted: each spelling (aliases, operators, methods,
attributes), Python scalars, broadcasting both ways and against a Python scalar. Then
the special cases of the table (powers at x <= 0, ties, clip's bounds, where's
condition, nan in fmax), float32 staying float32, second derivatives, complex inputs
and JAX's values, and the runtime helpers of the power rules (numbax/runtime/elementwise.py).
"""

from __future__ import annotations

import math
import operator

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.runtime import nxrt
from tests.helpers.fd import check_jacobians, numeric_jacobian

rng = np.random.default_rng(20240612)


@pytest.fixture(autouse=True)
def _reseed():
    """Inputs drawn inside a test do not depend on which tests ran before it."""
    rng.bit_generator.state = np.random.default_rng(20240613).bit_generator.state


def sample(low, high, shape=(3, 2), avoid=None):
    """Distinct values in [low, high], at least 0.1 away from ``avoid``."""
    values = np.asarray(rng.uniform(low, high, size=shape))
    if avoid is not None:
        near = np.abs(values - avoid) < 0.1
        values[near] = avoid + np.sign(values[near] - avoid + 1e-3) * 0.1
    return values


# Functions made by these factories are distinct closures (one per operation), so
# numbax's generated code, keyed by the function, never mixes them up.
def unary(fn):
    def f(x):
        return fn(x)

    return f


def binary(fn):
    def f(x, y):
        return fn(x, y)

    return f


def summed(fn, n=1):
    """``np.sum(fn(...))`` of ``n`` arguments, for ``grad``."""

    def f1(x):
        return np.sum(fn(x))

    def f2(x, y):
        return np.sum(fn(x, y))

    def f3(x, y, z):
        return np.sum(fn(x, y, z))

    return {1: f1, 2: f2, 3: f3}[n]


# -- unary operations -------------------------------------------------------------------


def neg(x):
    return -x


def pos(x):
    return +x


def builtin_abs(x):
    return abs(x)


def real_attribute(x):
    return x.real * 2


def imag_attribute(x):
    return x.imag + x


def conj_method(x):
    return x.conj()


def conjugate_method(x):
    return x.conjugate()


def angle_deg(x):
    return np.angle(x, deg=True) + x


# name: (function, low, high, value to stay away from)
UNARY = {
    "exp": (np.exp, -1, 1, None),
    "exp2": (np.exp2, -1, 1, None),
    "expm1": (np.expm1, -1, 1, None),
    "log": (np.log, 0.5, 2, None),
    "log2": (np.log2, 0.5, 2, None),
    "log10": (np.log10, 0.5, 2, None),
    "log1p": (np.log1p, -0.5, 1, None),
    "sqrt": (np.sqrt, 0.5, 2, None),
    "cbrt": (np.cbrt, 0.5, 2, None),
    "cbrt-negative": (np.cbrt, -2, -0.5, None),
    "square": (np.square, -1, 1, None),
    "reciprocal": (np.reciprocal, 0.5, 2, None),
    "reciprocal-negative": (np.reciprocal, -2, -0.5, None),
    "sin": (np.sin, -2, 2, None),
    "cos": (np.cos, -2, 2, None),
    "tan": (np.tan, -1, 1, None),
    "arcsin": (np.arcsin, -0.8, 0.8, None),
    "arccos": (np.arccos, -0.8, 0.8, None),
    "arctan": (np.arctan, -2, 2, None),
    "sinh": (np.sinh, -1, 1, None),
    "cosh": (np.cosh, -1, 1, None),
    "tanh": (np.tanh, -1, 1, None),
    "arcsinh": (np.arcsinh, -2, 2, None),
    "arccosh": (np.arccosh, 1.5, 3, None),
    "arctanh": (np.arctanh, -0.8, 0.8, None),
    "abs": (np.abs, -1, 1, 0.0),
    "absolute": (np.absolute, -1, 1, 0.0),
    "builtin-abs": (builtin_abs, -1, 1, 0.0),
    "sign": (np.sign, -1, 1, 0.0),
    "sinc": (np.sinc, -1.5, 1.5, None),
    "deg2rad": (np.deg2rad, -3, 3, None),
    "rad2deg": (np.rad2deg, -3, 3, None),
    "real": (np.real, -1, 1, None),
    "real-attribute": (real_attribute, -1, 1, None),
    "imag": (np.imag, -1, 1, None),
    "imag-attribute": (imag_attribute, -1, 1, None),
    "conj": (np.conj, -1, 1, None),
    "conjugate": (np.conjugate, -1, 1, None),
    "conj-method": (conj_method, -1, 1, None),
    "conjugate-method": (conjugate_method, -1, 1, None),
    "angle": (np.angle, -1, 1, 0.0),
    "angle-deg": (angle_deg, -1, 1, 0.0),
    "negative": (np.negative, -1, 1, None),
    "positive": (np.positive, -1, 1, None),
    "unary-minus": (neg, -1, 1, None),
    "unary-plus": (pos, -1, 1, None),
}
UNARY_INPUTS = {name: sample(lo, hi, avoid=avoid) for name, (_, lo, hi, avoid) in UNARY.items()}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_spellings_and_python_floats(name):
    """Each spelling (alias, operator, builtin, method, attribute) on an array, and on
    a Python float (each rule on arrays, under jit too: test_rule_table.py)."""
    fn, lo, hi, _ = UNARY[name]
    check_jacobians(unary(fn), UNARY_INPUTS[name], name=name, jit=False)
    if name == "conj-method":  # a Python float has .conjugate() but no .conj()
        return
    scalar = float(sample(lo, hi, shape=(), avoid=UNARY[name][3]))
    check_jacobians(unary(fn), scalar, name=f"{name} of a Python float", jit=False)


# -- binary operations ------------------------------------------------------------------


def floordiv(x, y):
    return x // y


# name: (function, x's range, y's range)
BINARY = {
    "add": (operator.add, (-1, 1), (-1, 1)),
    "sub": (operator.sub, (-1, 1), (-1, 1)),
    "mul": (operator.mul, (-1, 1), (-1, 1)),
    "truediv": (operator.truediv, (-1, 1), (0.5, 2)),
    "mod": (operator.mod, (-2.5, 2.5), (0.7, 0.9)),
    "mod-negative-divisor": (operator.mod, (-2.5, 2.5), (-0.9, -0.7)),
    "pow": (operator.pow, (0.5, 2), (-1.5, 1.5)),
    "np.add": (np.add, (-1, 1), (-1, 1)),
    "np.subtract": (np.subtract, (-1, 1), (-1, 1)),
    "np.multiply": (np.multiply, (-1, 1), (-1, 1)),
    "np.divide": (np.divide, (-1, 1), (0.5, 2)),
    "np.true_divide": (np.true_divide, (-1, 1), (-2, -0.5)),
    "np.mod": (np.mod, (-2.5, 2.5), (0.7, 0.9)),
    "np.remainder": (np.remainder, (-2.5, 2.5), (0.7, 0.9)),
    "np.fmod": (np.fmod, (-2.5, 2.5), (0.7, 0.9)),
    "np.power": (np.power, (0.5, 2), (-1.5, 1.5)),
    "arctan2": (np.arctan2, (-1, 1), (-1, 1)),
    "hypot": (np.hypot, (-1, 1), (-1, 1)),
    "maximum": (np.maximum, (-1, 1), (-1, 1)),
    "minimum": (np.minimum, (-1, 1), (-1, 1)),
    "fmax": (np.fmax, (-1, 1), (-1, 1)),
    "fmin": (np.fmin, (-1, 1), (-1, 1)),
    "logaddexp": (np.logaddexp, (-1, 1), (-1, 1)),
    "logaddexp2": (np.logaddexp2, (-1, 1), (-1, 1)),
    "floordiv": (floordiv, (-2.5, 2.5), (0.7, 0.9)),
    "np.floor_divide": (np.floor_divide, (-2.5, 2.5), (0.7, 0.9)),
}


def binary_inputs(name, shape_x=(3, 2), shape_y=(2,)):
    """Operands in the operation's ranges, away from 0 where a range contains it."""
    _, (xlo, xhi), (ylo, yhi) = BINARY[name]
    x = sample(xlo, xhi, shape_x, avoid=0.0 if xlo < 0 < xhi else None)
    return x, sample(ylo, yhi, shape_y, avoid=0.0 if ylo < 0 < yhi else None)


BROADCAST_SHAPES = {  # x's shape, y's shape; None for a Python float
    "same-shape": ((3, 2), (3, 2)),
    "row": ((3, 2), (2,)),
    "row-first": ((2,), (3, 2)),
    "scalar": ((3, 2), None),
    "scalar-first": (None, (3, 2)),
}


@pytest.mark.parametrize("case", list(BROADCAST_SHAPES))
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcasting(name, case):
    shape_x, shape_y = BROADCAST_SHAPES[case]
    x, y = binary_inputs(name, shape_x or (), shape_y or ())
    x = float(x) if shape_x is None else x
    y = float(y) if shape_y is None else y
    check_jacobians(binary(BINARY[name][0]), x, y, name=f"{name} ({case})", jit=False)


# -- powers -----------------------------------------------------------------------------


def square_op(x):
    return x**2


def cube_op(x):
    return x**3


def zeroth_power(x):
    return x**0


def first_power(x):
    return x**1


def float_square(x):
    return x**2.0


def np_cube(x):
    return np.power(x, 3)


POWERS = {  # function, its derivative
    "x**2": (square_op, lambda x: 2 * x),
    "x**3": (cube_op, lambda x: 3 * x**2),
    "x**0": (zeroth_power, lambda x: 0 * x),
    "x**1": (first_power, lambda x: 1 + 0 * x),
    "x**2.0": (float_square, lambda x: 2 * x),
    "np.power(x, 3)": (np_cube, lambda x: 3 * x**2),
}
AT_AND_BELOW_ZERO = np.array([0.0, -1.5, -0.5, 0.0, 2.0, -3.0])


@pytest.mark.parametrize("name", sorted(POWERS))
def test_power_with_constant_exponent_at_and_below_zero(name):
    """x ** n with a constant exponent is differentiable for x <= 0 (no log(x) is taken
    for the exponent's term, which is not there), and d(x ** 0) is 0 at x = 0."""
    f, slope = POWERS[name]
    with np.errstate(all="raise"):  # no inf, nan or log of a negative number on the way
        got = nx.jacfwd(f)(AT_AND_BELOW_ZERO)
        np.testing.assert_array_equal(np.diagonal(got), slope(AT_AND_BELOW_ZERO))
        got = nx.jacrev(f)(AT_AND_BELOW_ZERO)
        np.testing.assert_array_equal(np.diagonal(got), slope(AT_AND_BELOW_ZERO))
    check_jacobians(f, AT_AND_BELOW_ZERO[1:3], name=name, jit=False)


def test_power_at_zero_scalar_and_higher_orders():
    """x ** 0 stays constant, to every order, at x = 0 (a naive 0 * 0.0 ** -1 is nan)."""
    assert nx.grad(zeroth_power)(0.0) == 0.0
    assert nx.grad(nx.grad(zeroth_power))(0.0) == 0.0
    assert nx.grad(nx.grad(nx.grad(zeroth_power)))(0.0) == 0.0
    assert nx.grad(first_power)(0.0) == 1.0
    assert nx.grad(nx.grad(square_op))(0.0) == 2.0
    assert nx.grad(nx.grad(cube_op))(-1.0) == -6.0
    assert nx.grad(nx.grad(nx.grad(cube_op)))(0.0) == 6.0


def power_of(x, y):
    return x**y


def test_power_exponent_term_at_zero_base():
    """d(0 ** y)/dy is 0 for y > 0 (JAX: log of x replaced where x is 0)."""
    y = np.array([0.5, 1.0, 2.0, 3.5])
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(nx.grad(lambda y: np.sum(power_of(0.0, y)))(y), 0 * y)
    dx, dy = nx.grad(power_of, argnums=(0, 1))(0.0, 2.0)
    assert (dx, dy) == (0.0, 0.0)


def test_power_negative_base_integer_exponent():
    """x ** y for x < 0, y integral and both differentiated: the x-term is finite, the
    y-term nan (log of a negative number), as in JAX."""
    dx, dy = nx.grad(power_of, argnums=(0, 1))(-2.0, 3.0)
    assert dx == 12.0
    assert np.isnan(dy)
    assert nx.grad(power_of)(-2.0, 3.0) == 12.0  # y constant: no y-term, no nan


def sum_of_squares(x):
    return np.sum(x**2)


def test_power_source_reads_like_math():
    src = nx.grad(sum_of_squares).source
    assert "nxrt.mul_pow(2, x, 1)" in src  # the exponent folded
    assert "log" not in src


# -- ties, nan, clip, where -------------------------------------------------------------


def maximum(x, y):
    return np.maximum(x, y)


def minimum(x, y):
    return np.minimum(x, y)


def fmax(x, y):
    return np.fmax(x, y)


def fmin(x, y):
    return np.fmin(x, y)


@pytest.mark.parametrize("fn", [maximum, minimum, fmax, fmin], ids=lambda f: f.__name__)
def test_selection_ties_split_evenly(fn):
    """Where x == y each argument gets half the derivative (as JAX), so d max(x, x) is 1."""
    x = np.array([0.5, -0.25, 1.0])
    y = np.array([0.5, 0.75, -1.0])
    dx, dy = nx.grad(lambda a, b: np.sum(fn(a, b)), argnums=(0, 1))(x, y)
    x_wins = (fn(x, y) == x).astype(float)
    np.testing.assert_array_equal(dx, [0.5, *x_wins[1:]])
    np.testing.assert_array_equal(dy, [0.5, *(1 - x_wins[1:])])
    np.testing.assert_array_equal(nx.grad(lambda a: np.sum(fn(a, a)))(x), np.ones(3))
    t = nx.jvp(lambda a: fn(a, 0.5), (x,), (np.ones(3),))[1]
    np.testing.assert_array_equal(t, [0.5, *(fn(x[1:], 0.5) == x[1:])])


def test_fmax_fmin_take_the_number_over_nan():
    x = np.array([np.nan, 1.0, 2.0])
    y = np.array([3.0, np.nan, 1.0])
    for fn in (fmax, fmin):
        dx, dy = nx.grad(summed(fn, 2), argnums=(0, 1))(x, y)
        np.testing.assert_array_equal(dx[:2], [0.0, 1.0], err_msg=fn.__name__)
        np.testing.assert_array_equal(dy[:2], [1.0, 0.0], err_msg=fn.__name__)


def clip_scalars(x):
    return np.clip(x, -0.5, 0.5)


def clip_arrays(x, lo, hi):
    return np.clip(x, lo, hi)


def clip_row_bounds(x, lo):
    return np.clip(x, lo, lo + 0.6)


def clip_no_upper(x, lo):
    return np.clip(x, lo, None)


def clip_no_lower(x, hi):
    return np.clip(x, None, hi)


def clip_keywords(x, lo, hi):
    return np.clip(x, min=lo, max=hi)


def clip_method(x, lo, hi):
    return x.clip(lo, hi)


CLIP_X = sample(-1, 1, avoid=0.0)
CLIP_LO = np.where(sample(0, 1) > 0.5, -0.3, -0.7) + 0.05 * sample(0, 1)
CLIP_HI = -CLIP_LO + 0.01
CLIP = {
    "scalar-bounds": (clip_scalars, (CLIP_X,)),
    "array-bounds": (clip_arrays, (CLIP_X, CLIP_LO, CLIP_HI)),
    "row-bounds": (clip_row_bounds, (CLIP_X, CLIP_LO[0])),
    "scalar-lower-only": (clip_no_upper, (CLIP_X, -0.3)),
    "array-lower-only": (clip_no_upper, (CLIP_X, CLIP_LO)),
    "upper-only": (clip_no_lower, (CLIP_X, CLIP_HI)),
    "min-max-keywords": (clip_keywords, (CLIP_X, CLIP_LO, 0.4)),
    "method": (clip_method, (CLIP_X, CLIP_LO[1], CLIP_HI)),
}


@pytest.mark.parametrize("name", sorted(CLIP))
def test_clip(name):
    f, args = CLIP[name]
    check_jacobians(f, *args, name=name, jit=False)


def clip_rows(v):
    return np.clip(v[2:], v[0], v[1])


def test_clip_under_jit():
    """Array bounds, all three terms in one Jacobian."""
    v = np.array([[-0.5, -0.3], [0.4, 0.6], [-0.9, 0.1], [0.8, -0.2], [0.2, 0.7]])
    check_jacobians(clip_rows, v, name="clip", jit=True)


def test_clip_boundary_splits_as_jax():
    """At a bound, a and the bound tie in JAX's minimum(maximum(a, lo), hi): each gets
    half the derivative."""
    x = np.array([-0.5, 0.2, 0.5, 0.9])
    dx, dlo, dhi = nx.grad(summed(clip_arrays, 3), argnums=(0, 1, 2))(x, -0.5, 0.5)
    np.testing.assert_array_equal(dx, [0.5, 1.0, 0.5, 0.0])
    assert (dlo, dhi) == (0.5, 1.5)


def where_same(c, x, y):
    return np.where(c, x, y)


def where_row(x):
    return np.where(x > 0, x[0], -x)


def where_scalar_branch(x, s):
    return np.where(x > 0.1, s, x)


def where_constant_branch(x):
    return np.where(x > 0, x[0], 0.0)


def where_scalars(s, t):
    return np.where(s > t, s * t, t)


WHERE_X = sample(-1, 1, avoid=0.0)
WHERE = {
    "arrays": (where_same, (WHERE_X > 0, WHERE_X, sample(-1, 1))),
    "row-against-condition": (where_row, (WHERE_X,)),
    "scalar-branch": (where_scalar_branch, (WHERE_X, 0.3)),
    "constant-branch": (where_constant_branch, (WHERE_X,)),
    "scalars": (where_scalars, (0.8, 0.3)),
}


@pytest.mark.parametrize("name", sorted(WHERE))
def test_where(name):
    f, args = WHERE[name]
    check_jacobians(f, *args, name=name, jit=name == "row-against-condition")


def test_where_with_one_argument_is_not_differentiated():
    def count_positive(x):
        return np.sum(x * np.where(x > 0)[0].size)

    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(nx.grad(count_positive)(x), [2.0, 2.0, 2.0])


def test_sinc_at_zero():
    x = np.array([0.0, 0.5, -1.5])
    with np.errstate(all="raise"):
        slope = np.diagonal(nx.jacfwd(unary(np.sinc))(x))
    assert slope[0] == 0.0
    check_jacobians(unary(np.sinc), x[1:], name="sinc", jit=False)


def test_abs_at_zero_is_zero():
    assert nx.grad(builtin_abs)(0.0) == 0.0
    np.testing.assert_array_equal(nx.grad(lambda x: np.sum(np.abs(x)))(np.zeros(2)), [0, 0])


def comparisons(x, y):
    return (x < y) * 1.0 + (x >= y) * 2.0 + (x == y) + (x != y)


def test_floordiv_and_comparisons_have_no_derivative():
    x, y = sample(-2, 2), sample(0.5, 1)
    check_jacobians(comparisons, x, y, name="comparisons", jit=False)
    for f in (comparisons, binary(np.floor_divide), floordiv):
        dx, dy = nx.grad(summed(f, 2), argnums=(0, 1))(x, y)
        assert not dx.any() and not dy.any()


# -- dtypes -----------------------------------------------------------------------------

FLOAT32 = ["exp", "exp2", "log2", "log10", "sqrt", "cbrt", "reciprocal", "tan", "arcsin"]
FLOAT32 += ["arccosh", "abs", "sinc", "deg2rad", "real", "imag", "angle", "angle-deg"]
FLOAT32_BINARY = ["pow", "truediv", "mod", "np.fmod", "arctan2", "hypot", "maximum"]
FLOAT32_BINARY += ["fmin", "logaddexp", "logaddexp2"]


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_unary(name):
    fn = unary(UNARY[name][0])
    x = UNARY_INPUTS[name].astype(np.float32)
    out, tangent = nx.jvp(fn, (x,), (np.ones_like(x),))
    assert tangent.dtype == np.float32, f"{name}: jvp gives {tangent.dtype}"
    assert nx.grad(lambda x: np.sum(fn(x)))(x).dtype == np.float32
    assert nx.vjp(fn, x)[1](np.ones_like(out))[0].dtype == np.float32


@pytest.mark.parametrize("scalar", [False, True], ids=["row", "python-scalar"])
@pytest.mark.parametrize("name", FLOAT32_BINARY)
def test_float32_binary(name, scalar):
    """float32 operands, or a float32 array and a Python scalar, give float32 tangents."""
    fn = binary(BINARY[name][0])
    x, y = (v.astype(np.float32) for v in binary_inputs(name))
    if scalar:
        y = float(y[0])
    dy = np.float32(0.5) if scalar else np.ones_like(y)  # a float32 tangent for a weak scalar
    _, tangent = nx.jvp(fn, (x, y), (np.ones_like(x), dy))
    assert tangent.dtype == np.float32, f"{name}: jvp gives {tangent.dtype}"
    dx = nx.grad(lambda a, b: np.sum(fn(a, b)))(x, y)
    assert dx.dtype == np.float32


# -- second derivatives -----------------------------------------------------------------

SECOND_UNARY = ["exp", "exp2", "log", "log10", "sqrt", "cbrt", "reciprocal", "tan"]
SECOND_UNARY += ["arcsin", "arccos", "tanh", "arccosh", "abs", "sinc", "deg2rad", "angle"]
SECOND_BINARY = ["pow", "truediv", "mod", "np.fmod", "arctan2", "hypot", "maximum"]
SECOND_BINARY += ["fmin", "logaddexp", "logaddexp2"]


@pytest.mark.parametrize("name", SECOND_UNARY)
def test_second_order_unary(name):
    fn = unary(UNARY[name][0])

    def total(x):
        return np.sum(fn(x))

    check_jacobians(nx.grad(total), UNARY_INPUTS[name], name=f"grad of {name}", jit=False)


@pytest.mark.parametrize("name", SECOND_BINARY)
def test_second_order_binary(name):
    """The Jacobian of grad w.r.t. x, in x and in y: the mixed terms too."""
    fn = binary(BINARY[name][0])

    def total(x, y):
        return np.sum(fn(x, y))

    x, y = binary_inputs(name)
    check_jacobians(nx.grad(total), x, y, name=f"grad of {name}", jit=False)


@pytest.mark.parametrize("name", ["clip", "where", "power-constant-exponent"])
def test_second_order_selections(name):
    def total(x, y):
        if name == "clip":
            return np.sum(np.clip(x * x, y, 0.5) * y)
        if name == "where":
            return np.sum(np.where(x > 0, x * y, y**3))
        return np.sum(x**3 * y + x**0)

    x, y = sample(-1, 1, avoid=0.0), sample(0.1, 0.2, (2,))
    check_jacobians(nx.grad(total), x, y, name=f"grad of {name}", jit=False)


# -- casts whose results the finite differences of the rule table cannot take ------------


def to_float32(x):
    return np.float32(x) * 2


def to_complex64(x):
    return np.real(np.complex64(x) * (1 + 2j)) + np.imag(np.complex64(x) * (2 + 3j))


def to_complex128(x):
    return np.real(np.complex128(x) * (1 + 2j)) + np.imag(np.complex128(x) * (2 + 3j))


def to_complex(x):
    return np.abs(complex(x) * (1 + 2j))


CASTS = {  # function, its slope at x
    "float32": (to_float32, lambda x: 2.0 + 0 * x),
    "complex64": (to_complex64, lambda x: 4.0 + 0 * x),
    "complex128": (to_complex128, lambda x: 4.0 + 0 * x),
    "complex": (to_complex, lambda x: math.sqrt(5) * np.sign(x)),
}


@pytest.mark.parametrize("name", list(CASTS))
def test_casts_to_single_precision_and_complex(name):
    """A float32 or complex result (finite differences in float64 would not do): the
    slope, and a cotangent in x's own dtype."""
    fn, slope = CASTS[name]
    x = -0.7 if name == "complex" else np.array([0.7, -1.3])
    for transform in (nx.jacfwd, nx.jacrev):
        got = transform(fn)(x)
        np.testing.assert_allclose(np.diagonal(np.atleast_2d(got)), slope(x), rtol=1e-6)
    gradient = nx.grad(lambda x: np.sum(fn(x)))(x)
    assert np.result_type(gradient) == np.float64, name
    np.testing.assert_allclose(gradient, slope(x), rtol=1e-6)


# -- complex inputs and JAX -------------------------------------------------------------


@pytest.fixture
def jax_x64():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", False)


JAX_UNARY = ["exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "cbrt", "reciprocal"]
JAX_UNARY += ["tan", "arcsin", "arccos", "arctanh", "arccosh", "abs", "sinc", "deg2rad"]


@pytest.mark.parametrize("name", JAX_UNARY)
def test_unary_matches_jax(jax_x64, name):
    jnp = jax_x64.numpy
    jfn = getattr(jnp, name)
    fn = unary(UNARY[name][0])
    x = UNARY_INPUTS[name]
    want = jax_x64.grad(lambda x: jnp.sum(jfn(x) * jnp.arange(1.0, 7.0).reshape(3, 2)))(x)
    got = nx.grad(lambda x: np.sum(fn(x) * np.arange(1.0, 7.0).reshape(3, 2)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


JAX_BINARY = {  # our name: jax.numpy's
    "pow": "power",
    "arctan2": "arctan2",
    "hypot": "hypot",
    "logaddexp": "logaddexp",
    "logaddexp2": "logaddexp2",
    "mod": "remainder",
    "np.fmod": "fmod",
    "maximum": "maximum",
    "fmin": "fmin",
}


@pytest.mark.parametrize("name", sorted(JAX_BINARY))
def test_binary_matches_jax(jax_x64, name):
    jnp = jax_x64.numpy
    x, y = binary_inputs(name)
    y = y.reshape(1, 2)
    if name == "maximum":  # a tie too (JAX's fmax/fmin give ties to y, not half each)
        y = np.array([[x[0, 0], -0.2]])

    jfn = getattr(jnp, JAX_BINARY[name])

    def jf(a, b):
        return jnp.sum(jfn(a, b) * jnp.arange(1.0, 7.0).reshape(3, 2))

    fn = binary(BINARY[name][0])

    def f(a, b):
        return np.sum(fn(a, b) * np.arange(1.0, 7.0).reshape(3, 2))

    want = jax_x64.grad(jf, argnums=(0, 1))(jnp.asarray(x), jnp.asarray(y))
    got = nx.grad(f, argnums=(0, 1))(x, y)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


POWER_CASES = [(0.0, 1.0), (0.0, 2.0), (0.0, 2.5), (0.5, 0.0), (-2.0, 3.0), (-2.0, 2.0)]


@pytest.mark.parametrize("x, y", POWER_CASES, ids=[f"{x}**{y}" for x, y in POWER_CASES])
def test_power_matches_jax_at_and_below_zero(jax_x64, x, y):
    """Both arguments differentiated, and only x (JAX with an int y where y is integral:
    for a float y == 0 JAX's d(x ** y)/dx at 0 is nan, where numbax's is 0)."""
    want = jax_x64.grad(lambda a, b: a**b, argnums=(0, 1))(x, y)
    got = nx.grad(power_of, argnums=(0, 1))(x, y)
    np.testing.assert_array_equal(np.array(got), np.array(want))
    exponent = int(y) if y.is_integer() else y
    want_x = jax_x64.grad(lambda a: a**exponent)(x)
    np.testing.assert_array_equal(nx.grad(power_of)(x, y), want_x)


def test_power_at_zero_to_the_zero():
    """0 ** y jumps at y = 0: d/dy is JAX's ans * log(x), the log of 0 taken as 0."""
    dx, dy = nx.grad(power_of, argnums=(0, 1))(0.0, 0.0)
    assert (dx, dy) == (0.0, 0.0)


# JAX's second derivatives of x ** y at x = 0, from its rules: d/dx is
# select(y == 0, 0, y * x ** (y - 1)), d/dy is x ** y * log(select(x == 0, 1, x)), so at
# x = 0 the log and its derivative are 0. (d/dy of d/dx, d/dx of d/dy, d2/dy2)
POWER_AT_ZERO = {2.5: (0.0, 0.0, 0.0), 2.0: (0.0, 0.0, 0.0), 1.0: (1.0, 0.0, 0.0)}
POWER_AT_ZERO[0.0] = (0.0, 0.0, 0.0)


def _second_derivatives(mode):
    def pick(i, j):
        return mode(nx.grad(nx.grad(power_of, argnums=i), argnums=j))

    return pick(0, 1), pick(1, 0), pick(1, 1)


@pytest.mark.parametrize("mode", [lambda f: f, nx.jit], ids=["interpreted", "jit"])
def test_second_derivatives_of_power_at_zero_follow_jax(mode):
    """Once nan (0 * log 0) in y, and in x then y."""
    derivatives = _second_derivatives(mode)
    for y, want in POWER_AT_ZERO.items():
        assert tuple(float(d(0.0, y)) for d in derivatives) == want, y
    hessian = mode(nx.hessian(lambda v: v[0] ** v[1]))(np.array([0.0, 2.5]))
    np.testing.assert_array_equal(hessian, np.zeros((2, 2)))
    # away from 0, against central differences
    for (i, j), d in zip([(0, 1), (1, 0), (1, 1)], derivatives, strict=True):
        first = nx.grad(power_of, argnums=i)
        want = numeric_jacobian(first, (0.7, 2.5), j)
        np.testing.assert_allclose(d(0.7, 2.5), want, rtol=1e-6)


COMPLEX_UNARY = ["exp", "log", "sin", "cos", "tan", "sqrt", "tanh", "arcsinh", "square"]
COMPLEX_UNARY += ["reciprocal", "log1p", "abs", "real", "imag", "conj", "angle"]


@pytest.mark.parametrize("name", COMPLEX_UNARY)
def test_complex_unary_matches_jax(jax_x64, name):
    """JVP and VJP at complex inputs with JAX's conventions: no conjugate for holomorphic
    functions, complex cotangents for real-valued functions of a complex input."""
    jnp = jax_x64.numpy
    z = sample(0.3, 1.2, (4,)) + 1j * sample(-1, 1, (4,), avoid=0.0)
    dz = sample(-1, 1, (4,)) + 1j * sample(-1, 1, (4,))
    fn = unary(UNARY[name][0])
    jfn = getattr(jnp, name)
    out, tangent = nx.jvp(fn, (z,), (dz,))
    jout, jtangent = jax_x64.jvp(jfn, (z,), (dz,))
    np.testing.assert_allclose(out, jout, rtol=1e-12)
    np.testing.assert_allclose(tangent, jtangent, rtol=1e-12, atol=1e-12)
    ct = sample(-1, 1, (4,)) + (1j * sample(-1, 1, (4,)) if np.iscomplexobj(out) else 0)
    (got,) = nx.vjp(fn, z)[1](ct)
    (want,) = jax_x64.vjp(jfn, z)[1](ct)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


COMPLEX_BINARY = {"mul": operator.mul, "truediv": operator.truediv, "pow": operator.pow}


@pytest.mark.parametrize("name", sorted(COMPLEX_BINARY))
def test_complex_binary_matches_jax(jax_x64, name):
    op = COMPLEX_BINARY[name]
    z = sample(0.3, 1.2, (3,)) + 1j * sample(-1, 1, (3,))
    w = sample(0.5, 1.5, (3,)) + 1j * sample(-1, 1, (3,))
    ct = sample(-1, 1, (3,)) + 1j * sample(-1, 1, (3,))
    got = nx.vjp(binary(op), z, w)[1](ct)
    want = jax_x64.vjp(op, z, w)[1](ct)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    _, tangent = nx.jvp(binary(op), (z, w), (ct, 2 * ct))
    _, jtangent = jax_x64.jvp(op, (z, w), (ct, 2 * ct))
    np.testing.assert_allclose(tangent, jtangent, rtol=1e-12, atol=1e-12)


def test_real_part_of_complex_function_of_real_input(jax_x64):
    """A real input through complex arithmetic gets a real derivative."""
    jnp = jax_x64.numpy
    x = sample(0.2, 1.0, (3,))

    def f(x):
        z = np.exp(x * (1 + 2j))
        return np.sum(np.real(z) * np.imag(z) + np.abs(z) + np.angle(z))

    def jf(x):
        z = jnp.exp(x * (1 + 2j))
        return jnp.sum(jnp.real(z) * jnp.imag(z) + jnp.abs(z) + jnp.angle(z))

    got = nx.grad(f)(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, jax_x64.grad(jf)(x), rtol=1e-12)


# -- the helpers of the power rules (numbax/runtime/elementwise.py) --------------------


@numba.njit
def _mul_pow(c, x, p):
    return nxrt.mul_pow(c, x, p)


@numba.njit
def _xlogy(x, y):
    return nxrt.xlogy(x, y)


F32 = np.array([[0.0, 1.5], [2.0, -1.0], [0.5, 3.0]], np.float32)
HELPER_CASES = {
    "mul_pow-python-ints": (_mul_pow, nxrt.mul_pow, (2, F32, 1), np.float32),
    "mul_pow-zero-coefficient": (_mul_pow, nxrt.mul_pow, (0, F32, -1), np.float32),
    "mul_pow-arrays": (
        _mul_pow,
        nxrt.mul_pow,
        (np.array([0.0, 2.0]), F32.astype(np.float64), np.array([-1.0, 1.0])),
        np.float64,
    ),
    "mul_pow-float-exponent": (_mul_pow, nxrt.mul_pow, (F32, F32, 2.0), np.float32),
    "mul_pow-scalars": (_mul_pow, nxrt.mul_pow, (2.0, 3.0, 2), np.float64),
    "mul_pow-transposed": (_mul_pow, nxrt.mul_pow, (F32.T, F32.T, 3), np.float32),
    "xlogy-arrays": (_xlogy, nxrt.xlogy, (F32, F32), np.float32),
    "xlogy-python-float": (_xlogy, nxrt.xlogy, (F32, 2.0), np.float32),
    "xlogy-ints": (_xlogy, nxrt.xlogy, (np.array([0, 1, 2]), np.array([0, 2, 3])), None),
    "xlogy-broadcast": (_xlogy, nxrt.xlogy, (F32.T, F32.T[:, :1]), np.float32),
    "xlogy-complex-negative-real": (
        _xlogy,
        nxrt.xlogy,
        (F32.astype(np.complex128), F32),
        np.complex128,
    ),
}


def _reference(name, args):
    with np.errstate(all="ignore"):
        if name.startswith("mul_pow"):
            c, x, p = (np.asarray(a, dtype=np.result_type(*args, 1.0)) for a in args)
            return np.where(c == 0, 0, c * np.power(x, p))
        x, y = args
        dtype = np.result_type(x, y, 1.0)
        return np.where(np.asarray(x) == 0, 0, x * np.log(np.asarray(y, dtype)))


@pytest.mark.parametrize("name", sorted(HELPER_CASES))
def test_power_helpers(name):
    compiled, interpreted, args, dtype = HELPER_CASES[name]
    want = _reference(name, args)
    for how, fn in (("interpreted", interpreted), ("numba", compiled)):
        got = fn(*args)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name}, {how}")
        if dtype is not None and isinstance(got, np.ndarray):
            assert got.dtype == dtype, f"{name}, {how}: {got.dtype}"
    with np.errstate(all="raise"):  # the interpreted helpers warn about nothing
        interpreted(*args)


def test_power_helpers_exact_zeros():
    """Zero where the first factor is zero, whatever the other factor (inf, nan)."""
    x = np.array([0.0, 0.0, -1.0])
    assert not np.any(nxrt.mul_pow(0.0, x, -1.0))
    assert not np.any(_mul_pow(0.0, x, -1.0))
    assert not np.any(nxrt.xlogy(0.0, x))
    assert not np.any(_xlogy(0.0, x))
    assert nxrt.xlogy(0.0, np.nan) == 0.0
    with np.errstate(divide="ignore"):
        assert math.isinf(nxrt.mul_pow(1.0, 0.0, -1.0))


def test_builtin_min_and_max_of_two_numbers():
    def clipped(x):
        return min(x * x, 2.0) + max(x, 0.5)

    for x, want in ((1.2, 2 * 1.2 + 1.0), (0.3, 0.6), (2.0, 1.0)):
        assert nx.grad(clipped)(x) == pytest.approx(want)
        assert nx.jacfwd(clipped)(x) == pytest.approx(want)
    assert nx.grad(lambda x: max(x, 0.5, 2 * x))(1.0) == pytest.approx(2.0)


def squares_of_a_tuple(x):
    return np.sum(np.power((x[0], 3.0 * x[1]), 2))


def test_the_power_of_a_tuple_differentiates_as_of_an_array():
    """``np.power`` of a tuple: its slope ``2 * t ** 1`` is of the array, never the tuple
    repeated (``2 * t``)."""
    x = np.array([0.5, -1.5, 2.0])
    want = np.array([2 * 0.5, 2 * 9.0 * -1.5, 0.0])
    np.testing.assert_allclose(nx.grad(squares_of_a_tuple)(x), want)
