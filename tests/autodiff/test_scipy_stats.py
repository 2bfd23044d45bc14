"""SciPy's distributions (``scipy.stats.norm.logpdf``...), which numbax reads as
compositions of ruled operations: values against SciPy, derivatives in every argument
against central differences (forward and reverse mode, interpreted; second derivatives
for a few). Under ``jit``, ``norm.logpdf`` is compiled in the one program of
``test_scipy_special.py`` (the others are compiled the same way, as helpers made of
ruled operations; compiling each would cost the suite more than it checks)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from scipy import stats
from scipy.stats import multivariate_normal, norm

import numbax as nx
from tests.helpers.fd import check_jacobians

X = np.array([0.3, 1.2, 2.1])
P = np.array([0.1, 0.45, 0.8])

# (function of the differentiated arguments, its arguments); one per line
CASES = {
    "norm.logpdf": (lambda x, loc, scale: norm.logpdf(x, loc, scale), (X, 0.2, 1.3)),
    "norm.pdf": (lambda x, loc, scale: norm.pdf(x, loc=loc, scale=scale), (X, 0.2, 1.3)),
    "norm.cdf": (lambda x, loc, scale: stats.norm.cdf(x, loc, scale), (X, 0.2, 1.3)),
    "norm.logcdf": (lambda x, loc: scipy.stats.norm.logcdf(x, loc), (X, 0.2)),
    "norm.sf": (lambda x, scale: norm.sf(x, scale=scale), (X, 1.3)),
    "norm.ppf": (lambda q, loc, scale: norm.ppf(q, loc, scale), (P, 0.2, 1.3)),
    "t.logpdf": (lambda x, df, loc, scale: stats.t.logpdf(x, df, loc, scale), (X, 3.5, 0.2, 1.3)),
    "t.pdf": (lambda x, df: stats.t.pdf(x, df), (X, 2.5)),
    "gamma.logpdf": (lambda x, a, scale: stats.gamma.logpdf(x, a, scale=scale), (X, 2.5, 1.3)),
    "gamma.pdf": (lambda x, a, loc: stats.gamma.pdf(x, a, loc), (X, 1.5, -0.2)),
    "beta.logpdf": (lambda x, a, b: stats.beta.logpdf(x, a, b), (P, 2.0, 3.5)),
    "beta.pdf": (lambda x, a, b, scale: stats.beta.pdf(x, a, b, scale=scale), (P, 1.5, 2.5, 1.2)),
    "poisson.logpmf": (lambda mu: stats.poisson.logpmf(np.array([0, 2, 5]), mu), (1.7,)),
    "poisson.pmf": (lambda mu: stats.poisson.pmf(3, mu), (2.2,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_derivatives(name):
    f, args = CASES[name]
    want = f(*args)  # called directly, f is SciPy's; transformed, numbax's composition
    value, _ = nx.jvp(f, args, tuple(np.zeros_like(a) for a in args))
    np.testing.assert_allclose(value, want, rtol=1e-13)
    check_jacobians(f, *args, name=name, jit=False, atol=1e-6)


def test_values_match_scipy():
    """The compositions' values, called directly, are SciPy's (outside the support too)."""
    from numbax.transform.compositions import stats as compositions  # loaded on first use

    x = np.array([-0.5, 0.0, 0.3, 1.2, 2.1])
    table = [
        (compositions.norm_logpdf, stats.norm.logpdf, (x, 0.2, 1.3)),
        (compositions.norm_logsf, stats.norm.logsf, (x, 0.2, 1.3)),
        (compositions.norm_isf, stats.norm.isf, (P, 0.2, 1.3)),
        (compositions.t_pdf, stats.t.pdf, (x, 3.5, 0.2, 1.3)),
        (compositions.gamma_logpdf, stats.gamma.logpdf, (x, 2.5, -0.1, 1.3)),
        (compositions.gamma_pdf, stats.gamma.pdf, (x, 0.7)),
        (compositions.beta_logpdf, stats.beta.logpdf, (x / 2, 2.0, 3.5)),
        (compositions.beta_pdf, stats.beta.pdf, (x, 1.5, 2.5, -0.6, 3.0)),
        (compositions.poisson_pmf, stats.poisson.pmf, (np.array([-1, 0, 2, 2.5, 7]), 2.2)),
    ]
    for ours, theirs, args in table:
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(
                ours(*args), theirs(*args), rtol=1e-13, err_msg=ours.__name__
            )


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])
MEAN = np.array([0.1, -0.2, 0.4])
XS = np.array([[0.5, 0.1, -0.3], [1.0, -1.0, 0.2]])


def mvn_loss(x, mean, cov):
    return np.sum(multivariate_normal.logpdf(x, mean, cov)) + multivariate_normal.pdf(
        x[0], mean, cov
    )


def test_multivariate_normal():
    want = np.sum(stats.multivariate_normal.logpdf(XS, MEAN, COV))
    want += stats.multivariate_normal.pdf(XS[0], MEAN, COV)
    assert mvn_loss(XS, MEAN, COV) == pytest.approx(want, rel=1e-13)
    check_jacobians(mvn_loss, XS, MEAN, COV, jit=False, atol=1e-6)


def test_second_derivatives():
    """In a shape parameter and the scale of t, and in the shape of beta."""
    f, args = CASES["t.logpdf"]
    for argnum in (1, 3):
        grad = nx.grad(lambda x, df, loc, scale: np.sum(f(x, df, loc, scale)), argnums=argnum)
        check_jacobians(grad, *args, argnums=[argnum], name=f"grad t.logpdf {argnum}", jit=False)
    beta = CASES["beta.logpdf"][0]
    grad = nx.grad(lambda x, a, b: np.sum(beta(x, a, b)), argnums=1)
    check_jacobians(grad, P, 2.0, 3.5, argnums=[1], name="grad beta.logpdf", jit=False)


def test_forms_not_written_are_refused():
    with pytest.raises(nx.TransformError, match="multivariate_normal.logpdf"):
        nx.grad(lambda m: multivariate_normal.logpdf(XS, m, COV, allow_singular=True))(MEAN)
    with pytest.raises(nx.TransformError, match="entropy"):
        nx.grad(lambda s: norm.entropy(0.0, s))(1.0)
