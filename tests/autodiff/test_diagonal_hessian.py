"""Hessians of sums of elementwise terms are diagonal, and ``hessian`` computes them as
one JVP of the gradient along ones (``numbax/transform/ad/separable.py``).

Each separable function here is checked against the Jacobian of its gradient column by
column (one ``nx.jvp`` per basis vector, which never takes the diagonal path) and
against central differences of the gradient, interpreted and under ``jit``; ``jacrev``
of the gradient (one VJP of ones) as well as ``jacfwd`` (one JVP along ones). Each function that
is not separable (a cross term, a product of sums, a sum along an axis...) must take
the general path: a diagonal there would be a silent wrong number. Generated programs
(hypothesis) mix both kinds.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import numbax as nx
from tests.helpers.fd import numeric_jacobian

W = np.array([[0.5, -1.0, 2.0, 0.3], [1.5, 0.2, -0.7, 1.1]])


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def weighted_softplus_mean(x, w):  # x broadcast against a matrix: still one x each
    return np.mean(np.logaddexp(0.0, x * w))


def piecewise(x):
    return np.sum(np.where(x > 0.0, x**3, -x * x)) + 1.0


def two_sums_scaled(x):
    a = np.sum(np.sin(x) * x)
    b = x.sum()
    x = np.tanh(x) * 0.5  # rebinding the argument elementwise
    return 2.0 * (a - b) / 3.0 + np.sum(x)


def of_second_argument(w, x):
    return np.sum(np.cos(w * x) + x**4)


SEPARABLE = {
    "sum_logistic": (sum_logistic, (np.linspace(-1.5, 2.0, 5),), 0),
    "softplus_mean": (weighted_softplus_mean, (np.array([0.3, -0.8, 1.2, 0.1]), W), 0),
    "piecewise": (piecewise, (np.array([0.5, -1.2, 2.0, -0.3]),), 0),
    "two_sums": (two_sums_scaled, (np.array([[0.5, -1.2, 2.0], [0.7, 0.1, -0.4]]),), 0),
    "second_argument": (of_second_argument, (W[0], np.array([0.3, -0.8, 1.2, 0.1])), 1),
    "scalar": (sum_logistic, (0.7,), 0),
}


def squared_sum(x):
    s = np.sum(np.exp(x))
    return s * s


def reversed_product(x):
    return np.sum(x * x[::-1])


def outer_sum(x):
    return np.sum(np.tanh(x[:, None] * x[None, :]))


def sum_of_row_sums_squared(x):
    return np.sum(np.sum(x * x, axis=1) ** 2)


def exp_of_sum(x):
    return np.exp(np.sum(x))


def times_an_argument(x, c):  # a scalar c: a number times a sum, but c is not a constant
    return c * np.sum(x**3)


def with_a_loop(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * x[i - 1]
    return total


def matrix_product(x):
    return np.sum(np.tanh(W @ x))


def kept_dims(x):
    return np.sum(np.sum(x**3, keepdims=True))


NOT_SEPARABLE = {
    "squared_sum": (squared_sum, (np.array([0.3, -0.8, 1.2]),), 0),
    "reversed_product": (reversed_product, (np.array([0.3, -0.8, 1.2]),), 0),
    "outer": (outer_sum, (np.array([0.3, -0.8, 1.2]),), 0),
    "row_sums": (sum_of_row_sums_squared, (np.array([[0.3, -0.8], [1.2, 0.5]]),), 0),
    "exp_of_sum": (exp_of_sum, (np.array([0.3, -0.8, 1.2]),), 0),
    "times_argument": (times_an_argument, (np.array([0.3, -0.8, 1.2]), 1.5), 0),
    "loop": (with_a_loop, (np.array([0.3, -0.8, 1.2]),), 0),
    "matrix_product": (matrix_product, (np.array([0.3, -0.8, 1.2, 0.4]),), 0),
    "kept_dims": (kept_dims, (np.array([0.3, -0.8, 1.2]),), 0),
}


def _column_by_column(gradient, args, k):
    """The Jacobian of ``gradient`` w.r.t. argument ``k``, one JVP per basis vector."""
    x = np.asarray(args[k], dtype=np.float64)
    columns = []
    for e in np.eye(x.size).reshape((x.size, *x.shape)):
        tangents = tuple(
            e if j == k else np.zeros_like(np.asarray(a, float)) for j, a in enumerate(args)
        )
        primals = tuple(np.asarray(a, float) if j == k else a for j, a in enumerate(args))
        columns.append(np.asarray(nx.jvp(gradient, primals, tangents)[1]))
    return np.moveaxis(np.asarray(columns), 0, -1).reshape(x.shape + x.shape)


def _reference(f, args, k):
    """The Jacobian of the gradient column by column (no diagonal path), checked
    against central differences of the gradient."""
    gradient = nx.grad(f, argnums=k)
    want = _column_by_column(gradient, args, k)
    numeric = numeric_jacobian(gradient, args, k)
    np.testing.assert_allclose(want, numeric, rtol=1e-6, atol=1e-7)
    return want


@pytest.mark.parametrize("case", list(SEPARABLE))
def test_a_separable_hessian_is_its_diagonal(case):
    f, args, k = SEPARABLE[case]
    hessian = nx.hessian(f, argnums=k)
    source = hessian.source
    assert "nxrt.jac_diagonal(" in source and "jac_basis_all" not in source
    assert "diagonal: " in source.splitlines()[1]  # the header says why
    want = _reference(f, args, k)
    got = hessian(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    flat = np.reshape(want, (np.size(args[k]), np.size(args[k])))
    assert np.count_nonzero(flat - np.diag(np.diag(flat))) == 0


@pytest.mark.parametrize("case", ["sum_logistic", "two_sums", "second_argument"])
def test_a_separable_hessian_under_jit(case):
    f, args, k = SEPARABLE[case]
    got = nx.jit(nx.hessian(f, argnums=k))(*args)
    np.testing.assert_allclose(got, _reference(f, args, k), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", ["sum_logistic", "softplus_mean", "scalar"])
def test_jacrev_of_the_gradient_is_one_vjp_of_ones(case):
    f, args, k = SEPARABLE[case]
    want = _reference(f, args, k)
    for jacobian in (
        nx.jacrev(nx.grad(f, argnums=k), argnums=k),
        nx.jacobian(nx.jacrev(f, argnums=k), argnums=k),
    ):
        source = jacobian.source
        assert "nxrt.jac_diagonal(" in source and "'jacrev')" in source
        assert "for _row" not in source.split("\n\n\n")[1]  # no loop over the rows
        np.testing.assert_allclose(jacobian(*args), want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(nx.jit(jacobian)(*args), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("case", list(NOT_SEPARABLE))
def test_what_is_not_separable_takes_the_whole_basis(case):
    f, args, k = NOT_SEPARABLE[case]
    hessian = nx.hessian(f, argnums=k)
    assert "jac_diagonal" not in hessian.source
    want = _reference(f, args, k)
    np.testing.assert_allclose(hessian(*args), want, rtol=1e-10, atol=1e-12)


def test_jacfwd_of_grad_is_diagonal_too_and_aux_is_not():
    x = np.array([0.3, -0.8, 1.2])
    forward = nx.jacfwd(nx.grad(sum_logistic))
    assert "nxrt.jac_diagonal(" in forward.source
    np.testing.assert_allclose(forward(x), _reference(sum_logistic, (x,), 0), rtol=1e-12)

    def with_aux(x):
        return sum_logistic(x), x

    hessian = nx.hessian(with_aux, has_aux=True)
    assert "jac_diagonal" not in hessian.source
    got, aux = hessian(x)
    np.testing.assert_allclose(got, _reference(sum_logistic, (x,), 0), rtol=1e-12)
    np.testing.assert_array_equal(aux, x)


def test_float32_stays_float32_and_empty_is_empty():
    x = np.array([0.3, -0.8, 1.2], np.float32)
    for hessian in (nx.hessian(sum_logistic), nx.jit(nx.hessian(sum_logistic))):
        got = hessian(x)
        assert got.dtype == np.float32
        want = _reference(sum_logistic, (x.astype(np.float64),), 0)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert hessian(np.zeros(0)).shape == (0, 0)


def test_derivatives_of_a_diagonal_hessian():
    """Third derivatives go through ``jac_diagonal``'s JVP and VJP."""
    x = np.array([0.3, -0.8, 1.2])
    hessian = nx.hessian(sum_logistic)
    numeric = numeric_jacobian(hessian, (x,), 0)
    for third in (nx.jacfwd(hessian), nx.jacrev(hessian)):
        np.testing.assert_allclose(third(x), numeric, rtol=1e-6, atol=1e-8)

    def trace(x):
        return np.trace(hessian(x))

    s = 1.0 / (1.0 + np.exp(-x))
    np.testing.assert_allclose(nx.grad(trace)(x), s * (1 - s) * (1 - 6 * s + 6 * s * s), rtol=1e-12)


def test_vmap_of_a_diagonal_hessian_is_per_example():
    xs = np.array([[0.3, -0.8, 1.2], [1.0, 0.5, -2.0]])
    hessian = nx.hessian(sum_logistic)
    want = np.stack([hessian(x) for x in xs])
    for batched in (nx.vmap(hessian), nx.jit(nx.vmap(hessian))):
        np.testing.assert_allclose(batched(xs), want, rtol=1e-12)


def test_the_diagonal_hessian_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x = np.linspace(-1.5, 2.0, 5)
    want = jax.hessian(lambda v: jnp.sum(1.0 / (1.0 + jnp.exp(-v))))(x)
    np.testing.assert_allclose(nx.hessian(sum_logistic)(x), want, rtol=1e-12)


# -- generated programs ----------------------------------------------------------------

_UNARY = ["np.sin({})", "np.tanh({})", "np.exp(-{} * {})", "({}) ** 3", "-({})", "np.abs({})"]
_BINARY = ["({}) + ({})", "({}) * ({})", "({}) - ({})", "0.7 * ({}) + 0.0 * ({})"]
_MIXING = ["{}[::-1]", "np.sum({}) * np.ones(3)", "np.cumsum({})", "np.sort({})"]


@st.composite
def _programs(draw):
    """``f(x, w)``: a sum (or mean) of an expression of elementwise operations of ``x``
    and the vector ``w``, sometimes with an operation that mixes ``x``'s elements, and
    sometimes a non-separable ending (the square of the sum)."""

    def expression(depth):
        choice = draw(st.integers(0, 5 if depth < 3 else 1))
        if choice == 0:
            return "x"
        if choice == 1:
            return draw(st.sampled_from(["w", "x"]))
        if choice in (2, 3):
            template = draw(st.sampled_from(_UNARY))
            return template.format(*[expression(depth + 1)] * template.count("{}"))
        if choice == 4:
            return draw(st.sampled_from(_BINARY)).format(
                expression(depth + 1), expression(depth + 1)
            )
        return draw(st.sampled_from(_MIXING)).format(expression(depth + 1))

    body = expression(0)
    reduce = draw(st.sampled_from(["np.sum", "np.mean"]))
    ending = draw(
        st.sampled_from(["    return s\n", "    return 2.0 * s - 1.0\n", "    return s * s\n"])
    )
    return f"import numpy as np\n\n\ndef f(x, w):\n    s = {reduce}({body})\n{ending}"


_counter = itertools.count()
_MODULES = Path(tempfile.mkdtemp(prefix="numbax-separable-"))


def _load(source):
    name = f"separable_{next(_counter)}"
    path = _MODULES / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


@settings(
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_programs())
def test_generated_programs_take_the_diagonal_only_when_it_is_right(source):
    f = _load(source)
    x, w = np.array([0.3, -0.8, 1.2]), np.array([0.5, 1.5, -0.4])
    want = _column_by_column(nx.grad(f), (x, w), 0)
    for jacobian in (nx.hessian(f), nx.jacrev(nx.grad(f))):
        np.testing.assert_allclose(jacobian(x, w), want, rtol=1e-10, atol=1e-12, err_msg=source)


def sum_of_squared_moduli(z):
    return np.sum(np.abs(z) ** 2)


def test_a_complex_input_raises_jaxs_error_on_the_diagonal_path_too():
    z = np.array([0.5 + 1.0j, -1.0 + 0.25j])
    hessian = nx.hessian(sum_of_squared_moduli)
    assert "nxrt.jac_diagonal(" in hessian.source
    for run in (hessian, nx.jit(hessian)):
        with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
            run(z)
