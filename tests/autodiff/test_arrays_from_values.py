"""Arrays built from values, and callables as values.

Each NumPy function of this family has a rule (rules/arrays.py, rules/shapes.py) checked
at its samples by test_rule_table.py, under jit too. Here, interpreted against central
finite differences: the forms normalization rewrites into those rules (nested literal
lists in ``np.array``, ``np.r_``/``np.c_``, ``np.block``, ufunc methods,
``functools.partial``), more signatures, vmap against its loop, and the clear refusals.
Then one compiled program exercises them all at once (one compile), against NumPy's
values and the interpreted gradient.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import numbax as nx
from numbax.errors import TransformError
from tests.helpers.fd import check_jacobians

rng = np.random.default_rng(20261201)
V = rng.permutation(np.linspace(-2.0, 2.0, 6)) + 0.01  # distinct: no ties in running maxima
M = rng.normal(size=(3, 4))


# NumPy's own np.r_['r', ...] (the finite differences call it) builds an np.matrix
_MATRIX = pytest.mark.filterwarnings("ignore:the matrix subclass")


def case(name, f, *args, marks=()):
    return pytest.param(f, args, id=name, marks=marks)


def _pair(x):
    """A helper that returns a tuple holding a list: both reach the caller's gradient."""
    return x[0] * 2.0, [x[1], x[0] * x[2]]


def from_helper(x):
    a, b = _pair(x)
    return np.array([a, b[0], b[1] * 3.0])


def _weighted(pair, weights):
    return pair[0] * weights[1] + np.sum(pair[1]) * weights[0]


def to_helper(x):
    return np.array([_weighted((x[0], x[1:3]), [x[3], 2.0]), x[4]])


def nested(x):
    return np.array([[x[0], x[1], 2.0], [x[2] * x[0], 1.0, x[3]]])


def nested_arrays(x):
    return np.array([[x[:2], x[2:4]], [x[4:], x[:2] * 3.0]])


def block(x):
    m = np.reshape(x[:4], (2, 2))
    return np.block([[m, 2.0 * m], [m[:1] ** 2, x[4:][None]]])


def block_flat(x):
    return np.block([x[:2], 1.0, x**2])


_concatenate_rows = functools.partial(np.concatenate, axis=0)
_sum_columns = functools.partial(np.sum, axis=0)


def _scaled(x, c, shift=0.0):
    return x * c + shift


def partial_numpy(m):
    return _concatenate_rows([m, m**2]) * _sum_columns(m)


def partial_user(x):
    scale = functools.partial(_scaled, c=3.0, shift=1.0)
    return scale(x) ** 2


def partial_user_positional(x):
    times = functools.partial(_scaled, 2.5)
    return times(x, shift=np.float64(0.5)) * x


FORMS = [
    case("array-of-scalars-and-a-constant", lambda x: np.array([x[0], x[1] * x[2], 2.0]), V),
    case("array-of-a-tuple-dtype", lambda x: np.array((x[0], x[3]), dtype=np.float64), V),
    case("asarray-of-a-list", lambda x: np.asarray([x[1], x[0]]) * x[:2], V),
    case("array-of-arrays", lambda x: np.array([x, x * x]), V),
    case("array-of-an-array", lambda m: np.array(m) * 2.0, M),
    case("array-nested-literals", nested, V),
    case("array-nested-arrays", nested_arrays, V),
    case("tuple-from-a-helper", from_helper, V),
    case("tuple-and-list-to-a-helper", to_helper, V),
    case("r_", lambda x: np.r_[x[:2], 0:3, x[4], x**2], V),
    case("r_-linspace", lambda x: np.r_[x, 0:1:3j] * 2.0, V),
    case("r_-rows", lambda x: np.r_["0,2", x, x**2, 0:6], V),
    case("r_-columns", lambda x: np.r_["0,2,0", x, x**2, 0:1:6j], V),
    case("r_-last-axis", lambda m: np.r_["-1", m, m**2], M),
    case("r_-3d", lambda x: np.r_["1,3,0", x[:3], x[3:] ** 2], V),
    case("r_-trans1d-negative", lambda m: np.r_["0,3,-2", m[0], m[1] ** 2], M),
    case("r_-row-matrix", lambda x: np.r_["r", x, x[:2] ** 2], V, marks=_MATRIX),
    case("r_-column-matrix", lambda x: np.r_["c", -1:1:3j, x**2], V, marks=_MATRIX),
    case("c_-directive", lambda m: np.c_["0", m, m**2], M),
    case("c_", lambda x: np.c_[x, x**2, x[::-1]], V),
    case("c_-3d", lambda m: np.c_[np.reshape(m, (2, 3, 2)), np.reshape(m, (2, 3, 2)) ** 2], M),
    case("block", block, V),
    case("block-flat", block_flat, V),
    case("array_split-unequal", lambda x: np.array_split(x, 4)[1] * np.array_split(x, 4)[3], V),
    case("split-equal", lambda m: np.split(m, 2, axis=1)[0] * np.split(m, 2, axis=1)[1], M),
    case("array_split-axis", lambda m: np.array_split(m, 2, 1)[0] ** 2, M),
    case("dsplit", lambda m: np.dsplit(np.reshape(m, (1, 3, 4)), [1, 3])[1] ** 2, M),
    case("split-indices", lambda x: np.split(x, [1, 4])[1] * 2.0, V),
    case("hsplit-2d", lambda m: np.hsplit(m, [1])[1] ** 2, M),
    case("vsplit-unequal", lambda m: np.vsplit(m, [2])[1] * 3.0, M),
    case("append-scalar", lambda x: np.append(x, x[0] * x[1]), V),
    case("insert-many", lambda x: np.insert(x, (1, 3), x[:2] ** 2), V),
    case("delete-slice", lambda m: np.delete(m, slice(0, 3, 2), axis=1) ** 2, M),
    case("pad-reflect-wide", lambda x: np.pad(x, (7, 2), mode="reflect") ** 2, V),
    case("pad-wrap-2d", lambda m: np.pad(m, ((1, 2), (0, 3)), mode="wrap") * 2.0, M),
    case("pad-symmetric", lambda m: np.pad(m, 2, mode="symmetric") ** 2, M),
    case("column_stack-of-a-list", lambda x: np.column_stack([x, x**2]), V),
    case("dstack-of-a-list", lambda m: np.dstack([m, m**2]), M),
    case(
        "row_stack",
        lambda x: np.row_stack((x, x**2)),
        V,
        marks=[
            pytest.mark.filterwarnings("ignore:`row_stack` alias is deprecated"),
            pytest.mark.skipif(not hasattr(np, "row_stack"), reason="gone from NumPy 2.5"),
        ],
    ),
    case("atleast_3d-2d", lambda m: np.atleast_3d(m) * 2.0, M),
    case("rot90-negative", lambda m: np.rot90(m, -1) ** 2, M),
    case("add-reduce", lambda m: np.add.reduce(m**2, axis=1), M),
    case("multiply-reduce", lambda m: np.multiply.reduce(m), M),
    case("maximum-reduce", lambda m: np.maximum.reduce(m, axis=1), M),
    case("minimum-reduce-keepdims", lambda m: np.minimum.reduce(m, 0, keepdims=True), M),
    case("add-accumulate", lambda m: np.add.accumulate(m, axis=1) ** 2, M),
    case("multiply-accumulate", lambda x: np.multiply.accumulate(x), V),
    case("maximum-accumulate", lambda x: np.maximum.accumulate(x), V),
    case("minimum-accumulate-axis", lambda m: np.minimum.accumulate(m, axis=1), M),
    case("multiply-outer", lambda x: np.multiply.outer(x, x[:3]), V),
    case("add-outer-2d", lambda m: np.add.outer(m, m[0]) ** 2, M),
    case("subtract-outer", lambda x: np.subtract.outer(x**2, x), V),
    case("partial-numpy", partial_numpy, M),
    case("partial-user", partial_user, V),
    case("partial-user-positional", partial_user_positional, V),
]


def check_interpreted(f, *args):
    """jacfwd and jacrev against finite differences, interpreted (nothing compiles, so
    the tests stay in the fast half)."""
    check_jacobians(f, *args, jit=False)


@pytest.mark.parametrize(("f", "args"), FORMS)
def test_derivatives_match_finite_differences(f, args):
    check_interpreted(f, *args)


@pytest.mark.parametrize("shape", [(3,), (3, 2), (2, 3, 2)], ids=["1d", "2d", "3d"])
def test_c_joins_along_the_last_axis_as_numpy(shape):
    """np.c_ makes 1-D items columns and joins along the last axis: for 3-D items that
    is not np.column_stack's axis 1."""
    a = np.arange(np.prod(shape), dtype=float).reshape(shape)

    def joined(a):
        return np.c_[a, a * 2.0]

    value, pullback = nx.vjp(joined, a)
    np.testing.assert_array_equal(value, np.c_[a, a * 2.0])
    (ct,) = pullback(np.ones_like(value))
    np.testing.assert_allclose(ct, np.full(shape, 3.0))


def loss_of_arrays(x):
    return np.sum(np.array([x, x * x]) ** 2)


def loss_of_running_maxima(x):
    return np.sum(np.maximum.accumulate(x) ** 2)


def loss_of_padding(x):
    return np.sum(np.pad(x, (7, 2), mode="reflect") ** 3)


@pytest.mark.parametrize("loss", [loss_of_arrays, loss_of_running_maxima, loss_of_padding])
def test_vmap_of_the_gradient_equals_the_loop(loss):
    batch = np.stack([V, V[::-1], 0.5 * V])
    want = np.stack([nx.grad(loss)(b) for b in batch])
    np.testing.assert_allclose(nx.vmap(nx.grad(loss))(batch), want, rtol=1e-10)


def second_order(x):
    a = np.array([[x[0], x[1] * x[2]], [x[3], 1.0]])
    p = np.pad(x, (2, 3), mode="reflect")
    d = np.delete(x, 1) * np.insert(x, 2, x[0] ** 2)[:5]
    c = np.column_stack([x, x**2])
    r = np.maximum.accumulate(x) * np.multiply.outer(x[:2], x[2:4])[1, 0]
    return np.sum(a @ a) + np.sum(p**3) + np.sum(d**2) + np.sum(np.rot90(c) ** 3) + np.sum(r**3)


def test_second_derivatives_through_the_adjoints_own_rules():
    """The Hessian differentiates the adjoints (nxrt.ungather, nxrt.unarray...) again."""
    h = 1e-5
    gradient = nx.grad(second_order)
    want = np.stack([(gradient(V + h * e) - gradient(V - h * e)) / (2 * h) for e in np.eye(6)])
    np.testing.assert_allclose(nx.hessian(second_order)(V), want, atol=1e-6)


# -- refusals --------------------------------------------------------------------------


def r_directive(x):
    return np.r_["0,2,a", x, x]


def subtract_accumulate(x):
    return np.subtract.accumulate(x)


def reduce_with_initial(x):
    return np.add.reduce(x, initial=1.0)


def pad_mean(x):
    return np.pad(x, 2, mode="mean")


@pytest.mark.parametrize(
    ("f", "words"),
    [
        (r_directive, "the directive '0,2,a' in np.r_"),
        (subtract_accumulate, "np.subtract.accumulate"),
        (reduce_with_initial, "np.add.reduce with initial="),
    ],
)
def test_forms_numbax_cannot_read_are_refused_with_the_line(f, words):
    with pytest.raises(TransformError, match=words) as info:
        nx.grad(lambda x: np.sum(f(x)))(V)
    assert info.value.lineno is not None and "test_arrays_from_values.py" in str(info.value)


def test_pad_modes_that_compute_their_padding_are_refused():
    with pytest.raises(ValueError, match="np.pad in the modes constant, edge"):
        nx.grad(lambda x: np.sum(pad_mean(x)))(V)


# -- one compiled program ----------------------------------------------------------------


def program(x, m):
    """The forms normalization rewrites and the functions Numba lacks, at once, so that
    one compile checks them under jit (each NumPy function's own rule is compiled at its
    first sample by test_rule_table.py)."""
    rows = np.array([[x[0], x[1] * x[2]], [1.0, x[3]]])
    joined = np.r_[x[:2], x[5], 0:2] * np.r_["1,3,0", x[:2], x[2:4]].ravel().sum()
    first, second = np.split(x, 2)
    parts = np.array_split(x, 4)
    padded = np.pad(m, ((1, 0), (2, 0)), mode="reflect") + np.pad(m, 1)[:4, :6]
    kept = np.delete(m, 1, axis=1) * np.hsplit(m, 2)[1][:, :1]
    built = np.block([[m[:2, :2], m[:2, :2] * 2.0]])
    running = np.maximum.accumulate(first) * np.multiply.outer(first, second)[1]
    total = np.sum(rows @ rows) + np.sum(joined**2) + np.sum(parts[1] * parts[3])
    total += np.sum(padded**2) + np.sum(kept**3) + np.sum(built**2) + np.sum(running)
    return total + np.add.reduce(_concatenate_rows([x, x**2]))


def test_one_compiled_program_matches_numpy_and_the_interpreted_gradient():
    args = (V, M)
    value, grads = nx.jit(nx.value_and_grad(program, argnums=(0, 1)))(*args)
    np.testing.assert_allclose(value, program(*args), rtol=1e-12)
    want = nx.grad(program, argnums=(0, 1))(*args)
    for got, expected in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    check_jacobians(program, *args, jit=False)
