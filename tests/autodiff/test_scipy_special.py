"""SciPy's special functions and ``math``'s functions of numbers: values against SciPy,
first and second derivatives against central differences in forward and reverse mode
(interpreted), the Numba versions' accuracy on grids with tails and edge values, and
under ``jit`` one compiled program for the values and one for the derivatives of all
of them (compiling is most of the time these checks take)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp
from scipy import stats
from scipy.special import erf, gammaln  # spelled as users import them

import numbax as nx
from numbax.numba_backend.math import special as kernels
from numbax.runtime import helpers
from numbax.transform.rules import missing_rules
from tests.helpers.fd import check_jacobians

# one elementwise function per line (numbax tells lambdas apart by their lines)
UNARY = {
    "erf": (lambda x: sp.erf(x), (-2, 2)),
    "erfc": (lambda x: sp.erfc(x), (-2, 2)),
    "erfinv": (lambda x: sp.erfinv(x), (-0.9, 0.9)),
    "ndtr": (lambda x: sp.ndtr(x), (-3, 3)),
    "ndtri": (lambda x: sp.ndtri(x), (0.05, 0.95)),
    "log_ndtr": (lambda x: sp.log_ndtr(x), (-5, 3)),
    "expit": (lambda x: sp.expit(x), (-3, 3)),
    "logit": (lambda x: sp.logit(x), (0.1, 0.9)),
    "gammaln": (lambda x: gammaln(x), (0.3, 4)),
    "gammaln<0": (lambda x: sp.gammaln(x), (-2.8, -2.2)),
    "gamma": (lambda x: sp.gamma(x), (0.3, 3)),
    "digamma": (lambda x: sp.digamma(x), (0.3, 4)),
    "psi": (lambda x: sp.psi(x), (-1.8, -1.2)),
    "polygamma": (lambda x: sp.polygamma(2, x), (0.5, 3)),
    "entr": (lambda x: sp.entr(x), (0.2, 2)),
    "i0": (lambda x: sp.i0(x), (-3, 3)),
    "i1": (lambda x: sp.i1(x), (-3, 3)),
    "i0e": (lambda x: sp.i0e(x), (-9, 9)),
    "i1e": (lambda x: sp.i1e(x), (-9, 9)),
    "erf as imported": (lambda x: erf(x), (-2, 2)),
}
BINARY = {
    "xlogy": (lambda x, y: sp.xlogy(x, y), (-2, 2), (0.3, 2)),
    "xlog1py": (lambda x, y: sp.xlog1py(x, y), (-2, 2), (-0.5, 2)),
    "betaln": (lambda a, b: sp.betaln(a, b), (0.5, 3), (0.5, 12)),
    "rel_entr": (lambda x, y: sp.rel_entr(x, y), (0.2, 2), (0.3, 2)),
}
MATH = {
    "exp": (lambda x: math.exp(x) * math.expm1(x), (-1, 1)),
    "log": (lambda x: math.log(x) + math.log1p(x) + math.log2(x) + math.log10(x), (0.5, 2)),
    "sqrt": (lambda x: math.sqrt(x) * math.pow(x, 1.5) + math.hypot(x, 2.0), (0.5, 2)),
    "trig": (lambda x: math.sin(x) + math.cos(x) * math.tan(x) + math.atan2(x, 1.5), (-1, 1)),
    "arcs": (lambda x: math.asin(x) + math.acos(x) + math.atan(x), (-0.8, 0.8)),
    "hyperbolic": (lambda x: math.sinh(x) * math.cosh(x) + math.tanh(x), (-1, 1)),
    "inverse hyperbolic": (lambda x: math.asinh(x) + math.atanh(x / 2), (-1, 1)),
    "acosh": (lambda x: math.acosh(x), (1.5, 3)),
    "special": (
        lambda x: math.erf(x) + math.erfc(x / 2) + math.lgamma(x) * math.gamma(x),
        (0.5, 2),
    ),
    "signs": (lambda x: math.fabs(x) * math.copysign(x, -1.0) + math.degrees(x), (0.3, 2)),
}


def _points(domain, count=2):
    low, high = domain
    return [low + (high - low) * t for t in np.linspace(0.17, 0.83, count)]


# -- values and derivatives, interpreted ----------------------------------------------


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_first_and_second_derivatives(name):
    f, domain = UNARY[name]
    for x in _points(domain):
        check_jacobians(f, x, name=name, jit=False, rtol=1e-5, atol=1e-7)
        check_jacobians(nx.grad(f), x, name=f"grad {name}", jit=False, rtol=1e-5, atol=1e-6)
    x = np.array(_points(domain, 3))
    np.testing.assert_array_equal(nx.vmap(f)(x), f(x))  # batched elementwise


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_first_and_second_derivatives(name):
    f, dx, dy = BINARY[name]
    for x, y in zip(_points(dx), _points(dy)[::-1], strict=True):
        check_jacobians(f, x, y, name=name, jit=False)
        for argnum in (0, 1):
            grad = nx.grad(f, argnums=argnum)
            check_jacobians(grad, x, y, name=f"grad {name}", jit=False, atol=1e-6)


@pytest.mark.parametrize("name", list(MATH))
def test_math_on_numbers(name):
    f, domain = MATH[name]
    for x in _points(domain):
        check_jacobians(f, x, name=name, jit=False)
        check_jacobians(nx.grad(f), x, name=f"grad {name}", jit=False, atol=1e-6)
    xs = np.array(_points(domain, 3))
    batched = nx.vmap(f, method="vectorized")(xs)  # as NumPy's functions on the batch
    np.testing.assert_allclose(batched, [f(float(x)) for x in xs], rtol=1e-14)


def test_xlogy_at_zero_follows_jax():
    """0 log y is 0 and its derivative in x is log y, in y 0 (x / y)."""
    assert sp.xlogy(0.0, 2.0) == 0.0
    dx, dy = nx.grad(lambda x, y: sp.xlogy(x, y), argnums=(0, 1))(0.0, 2.0)
    assert dx == pytest.approx(math.log(2.0)) and dy == 0.0
    assert nx.grad(lambda x: sp.i1e(x))(0.0) == 0.5
    assert nx.grad(lambda x: sp.xlog1py(x, 0.5))(0.0) == pytest.approx(math.log1p(0.5))


LOGSUMEXP = [
    (lambda a: sp.logsumexp(a), (3, 4)),
    (lambda a: sp.logsumexp(a, axis=1), (3, 4)),
    (lambda a: sp.logsumexp(a, axis=(0, 2), keepdims=True), (2, 3, 2)),
    (lambda a: sp.logsumexp(a, axis=-1, b=np.array([0.5, 2.0, 1.0])), (2, 3)),
]


@pytest.mark.parametrize("case", range(len(LOGSUMEXP)))
def test_logsumexp(case):
    f, shape = LOGSUMEXP[case]
    a = np.linspace(-1.5, 2.0, int(np.prod(shape))).reshape(shape)
    check_jacobians(f, a, jit=False)
    hessian = nx.hessian(lambda a: np.sum(f(a)))(a)
    assert hessian.shape == shape + shape
    np.testing.assert_allclose(
        hessian,
        np.swapaxes(hessian.reshape(a.size, a.size), 0, 1).reshape(hessian.shape),
        atol=1e-12,
    )


def test_logsumexp_weights_carry_derivatives():
    def f(a, b):
        return sp.logsumexp(a, axis=0, b=b)

    a = np.array([[0.2, -0.5], [1.0, 0.3], [-1.2, 0.8]])
    b = np.array([[0.5], [2.0], [1.5]])
    check_jacobians(f, a, b, jit=False)


def test_what_has_no_rule_is_refused_by_name():
    with pytest.raises(nx.TransformError, match="return_sign"):
        nx.grad(lambda a: sp.logsumexp(a, return_sign=True)[0])(np.ones(3))
    with pytest.raises(nx.TransformError, match="scipy.special.jv"):
        nx.grad(lambda x: np.sum(sp.jv(1, x)))(np.ones(3))
    with pytest.raises(nx.TransformError, match="math.log"):
        nx.grad(lambda x: math.log(x, 10))(2.0)


def test_every_special_helper_has_its_rules():
    assert missing_rules(helpers()) == []


def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jsp = pytest.importorskip("jax.scipy.special")
    x = np.array([0.3, 0.7, 1.9])
    for name, theirs in [("gammaln", jsp.gammaln), ("erfinv", jsp.erfinv), ("i1e", jsp.i1e)]:
        want = jax.vmap(jax.grad(theirs))(x / 2)
        got = nx.vmap(nx.grad(UNARY[name][0]))(x / 2)
        np.testing.assert_allclose(got, want, rtol=1e-12)


# -- the Numba versions' kernels: SciPy's values to ~1e-13 ------------------------------

GRID = np.concatenate(
    [np.linspace(-30, 30, 241), np.geomspace(1e-300, 1e3, 60), -np.geomspace(1e-300, 1e3, 60)]
)
KERNELS = [
    (kernels.erf, sp.erf, GRID),
    (kernels.erfc, sp.erfc, GRID),
    (kernels.ndtr, sp.ndtr, GRID),
    (kernels.log_ndtr, sp.log_ndtr, np.concatenate([GRID, -np.geomspace(20, 1e5, 20)])),
    (kernels.expit, sp.expit, GRID),
    (kernels.i0e, sp.i0e, GRID),
    (kernels.i1e, sp.i1e, GRID),
    (kernels.i0, sp.i0, np.linspace(-700, 700, 281)),
    (kernels.i1, sp.i1, np.linspace(-700, 700, 281)),
    (kernels.psi, sp.psi, GRID[GRID != np.round(GRID)]),
    (kernels.gammaln, sp.gammaln, GRID[(GRID > 0) | (GRID != np.round(GRID))]),
    (
        kernels.ndtri,
        sp.ndtri,
        np.concatenate([np.linspace(0.001, 0.999, 199)] + [np.geomspace(1e-300, 0.1, 40)]),
    ),
    (
        kernels.erfinv,
        sp.erfinv,
        np.concatenate([np.linspace(-0.999, 0.999, 199)] + [np.geomspace(1e-300, 1e-3, 30)]),
    ),
    (kernels.logit, sp.logit, np.linspace(0.001, 0.999, 199)),
    (kernels.entr, sp.entr, np.geomspace(1e-300, 1e3, 60)),
]


@pytest.mark.parametrize("case", range(len(KERNELS)), ids=[k[1].__name__ for k in KERNELS])
def test_kernels_match_scipy(case):
    kernel, reference, grid = KERNELS[case]
    got = np.array([kernel(float(x)) for x in grid])
    want = reference(grid)
    np.testing.assert_allclose(got, want, rtol=2e-13, atol=1e-300)


def test_kernels_of_two_arguments_match_scipy():
    x = np.concatenate([np.geomspace(1e-3, 1e4, 25), np.linspace(0.1, 30, 25)])
    n = np.arange(1, 5)[:, None]
    np.testing.assert_allclose(
        [[kernels.polygamma(float(k), float(v)) for v in x] for k in n[:, 0]],
        sp.polygamma(n, x),
        rtol=1e-13,
    )
    a, b = np.meshgrid(x, x[::3])
    # SciPy's own betaln loses digits to cancellation where one argument is large (its
    # B(3, 1e4) is off by 6e-14 relative); numbax's takes Stirling's series there, exact
    # on the identities below
    np.testing.assert_allclose(
        np.vectorize(kernels.betaln)(a, b), sp.betaln(a, b), rtol=5e-11, atol=2e-14
    )
    for big in (30.0, 1e3, 1e6):  # B(1, b) = 1 / b, B(3, b) = 2 / (b (b + 1) (b + 2))
        assert kernels.betaln(1.0, big) == pytest.approx(-math.log(big), rel=1e-15)
        exact = math.log(2) - math.log(big) - math.log(big + 1) - math.log(big + 2)
        assert kernels.betaln(3.0, big) == pytest.approx(exact, rel=1e-15)
    np.testing.assert_allclose(
        np.vectorize(kernels.rel_entr)(a, b), sp.rel_entr(a, b), rtol=1e-13, atol=1e-14
    )


# -- under jit: one program for the values, one for the derivatives ----------------------

EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, 1e-300, 1e300, 0.5, 1.0])


def special_values(x, p, y):
    """On arrays with edge values (x anywhere, p in [0, 1], y in [-1, 1]), the functions
    whose Numba versions are more than a call of the C library (the others' kernels are
    checked on grids above, and all of them compile in the loss below)."""
    return (
        sp.erfinv(y), sp.ndtri(p), sp.log_ndtr(x), sp.gamma(x), sp.psi(x),
        sp.polygamma(1, x), sp.betaln(x, 2.5), sp.i0e(x), sp.i1e(x), sp.logsumexp(y),
        sp.erf(p.astype(np.float32)),  # float32 stays float32
    )  # fmt: skip


def special_loss(x, w):
    """A scalar of all of them, of math's functions and of scipy.stats' distributions."""
    total = np.sum(sp.erf(x) * sp.erfc(w) + sp.erfinv(x / 3) + sp.ndtr(x) * sp.ndtri(w))
    total = total + np.sum(sp.log_ndtr(x) + sp.expit(x) * sp.logit(w) + gammaln(x + 2))
    total = total + np.sum(sp.gamma(w) + sp.psi(x + 2) + sp.polygamma(1, x + 2))
    total = total + np.sum(sp.betaln(w, x + 2) + sp.xlogy(x, w) + sp.xlog1py(w, x))
    total = total + np.sum(sp.entr(w) + sp.rel_entr(w, x + 2) + sp.i0(x) * sp.i1(x))
    total = total + np.sum(sp.i0e(x) * sp.i1e(x)) + sp.logsumexp(x * w)
    first = x[0]
    total = total + math.exp(first) * math.lgamma(first + 2) + math.erf(first) * math.sqrt(w[0])
    total = total + math.atan2(first, w[1]) + math.log1p(w[0]) * math.gamma(w[1])
    total = total + np.sum(stats.t.logpdf(x, 3.5, 0.2, w[1] + 1))
    total = total + np.sum(stats.gamma.logpdf(x + 2, 2.5, scale=w[2] + 1))
    total = (
        total
        + np.sum(stats.beta.logpdf(w, 2.0, x[2] + 3))
        + np.sum(stats.poisson.logpmf(np.array([0, 2, 5]), w[0] + 1))
        + stats.poisson.logpmf(3, w[1] + 1)  # a scalar count
        + stats.poisson.pmf(2, w[2] + 1)
    )
    total = total + stats.multivariate_normal.logpdf(x, w, COVARIANCE)
    return total + np.sum(stats.norm.logpdf(x, w[0], w[1] + 1))


COVARIANCE = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])


def program(x, w, edges, p, y):
    """One program for jit: the loss, and every function's values on edge cases."""
    return special_loss(x, w), special_values(edges, p, y)


@pytest.mark.jit
def test_one_program_under_jit():
    """Values (on arrays with edge values) and derivatives (of every function, of math's
    and of a distribution), in one compiled program: compiling is most of this check's
    time."""
    compiled = nx.jit(nx.value_and_grad(program, argnums=(0, 1), has_aux=True))
    x = np.array([0.3, -0.4, 0.9])
    w = np.array([0.2, 0.6, 0.45])
    rng = np.random.default_rng(3)
    edges = np.concatenate([EDGES, rng.uniform(-5, 5, 20)])
    p = np.concatenate([[0.0, 1.0, 0.5, np.nan], rng.uniform(0, 1, edges.size - 4)])
    y = np.concatenate([[-1.0, 1.0, 0.0, -0.5], rng.uniform(-1, 1, edges.size - 4)])
    (value, values), (dx, dw) = compiled(x, w, edges, p, y)
    (want_value, _), (want_dx, want_dw) = nx.value_and_grad(program, argnums=(0, 1), has_aux=True)(
        x, w, edges, p, y
    )
    assert value == pytest.approx(want_value, rel=1e-13)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-12)
    with np.errstate(all="ignore"):
        want = special_values(edges, p, y)
    for k, (got, expected) in enumerate(zip(values, want, strict=True)):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-300, err_msg=f"#{k}")
        assert np.result_type(got) == np.result_type(expected)
    check_jacobians(special_loss, x, w, jit=False, atol=1e-5)  # against differences


def counts_and_rate(mu, valid, n):
    """The Poisson pmf's numbers: an integer count picked by np.where (a 0-d array) plus
    one, and a 0-d array of the rate, each through gammaln."""
    safe = np.where(valid, n, 0)
    return sp.gammaln(safe + 1) * mu + sp.gammaln(np.array(mu))


@pytest.mark.jit
def test_unary_functions_of_0d_arrays_give_numbers():
    """As SciPy's ufuncs, a number (Numba's array expressions cannot give a 0-d array)."""
    want = counts_and_rate(1.7, True, 3)
    assert nx.jit(counts_and_rate)(1.7, True, 3) == pytest.approx(want, rel=1e-14)
    check_jacobians(counts_and_rate, 1.7, True, 3, argnums=[0])
