"""SciPy's distributions (``scipy.stats.norm.logpdf`` and others), written with
operations that have rules: numbax reads a call of one of these methods as a call of the
composition here of the same meaning (``normalize/values.py``), which it transforms as
it transforms the user's own functions (the package's docstring says how).

Why compositions, not rules: a density is a short formula in its arguments (``x``,
``loc``, ``scale``, shape parameters), and its derivatives in each of them, of every
order, follow from the rules of ``log``, ``gammaln``, ``ndtr``... without being written
again, under ``jit`` too (the composition compiles as a helper). The price: ``vmap``
loops over a call of one (as over any call of a function) rather than vectorizing it.

Out-of-support arguments give SciPy's values (``-inf`` for a log-density, 0 for a
density), through ``np.where`` over a safe stand-in, so that no nan leaks into the
derivatives inside the support. Unlike SciPy, invalid parameters (a negative scale)
are not turned into nan.

The module is loaded the first time a call of an object of ``scipy.stats`` is read
(``compositions.composition_for``).
"""

import math

import numpy as np
import scipy.special as sp
import scipy.stats as stats

from numbax.runtime import special as special_helpers  # noqa: F401  (publishes nxrt.digamma...)
from numbax.transform.compositions import composes
from numbax.transform.rules import special as special_rules  # noqa: F401  (their rules)

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
LOG_2PI = math.log(2 * math.pi)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)

# -- the normal distribution -----------------------------------------------------------


@composes(stats.norm.logpdf)
def norm_logpdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -0.5 * z * z - np.log(scale) - LOG_SQRT_2PI


@composes(stats.norm.pdf)
def norm_pdf(x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return np.exp(-0.5 * z * z) * INV_SQRT_2PI / scale


@composes(stats.norm.cdf)
def norm_cdf(x, loc=0.0, scale=1.0):
    return sp.ndtr((x - loc) / scale)


@composes(stats.norm.logcdf)
def norm_logcdf(x, loc=0.0, scale=1.0):
    return sp.log_ndtr((x - loc) / scale)


@composes(stats.norm.sf)
def norm_sf(x, loc=0.0, scale=1.0):
    return sp.ndtr((loc - x) / scale)


@composes(stats.norm.logsf)
def norm_logsf(x, loc=0.0, scale=1.0):
    return sp.log_ndtr((loc - x) / scale)


@composes(stats.norm.ppf)
def norm_ppf(q, loc=0.0, scale=1.0):
    return loc + scale * sp.ndtri(q)


@composes(stats.norm.isf)
def norm_isf(q, loc=0.0, scale=1.0):
    return loc - scale * sp.ndtri(q)


# -- the multivariate normal distribution: x of shape (d,) or (n, d) -------------------


@composes(stats.multivariate_normal.logpdf)
def multivariate_normal_logpdf(x, mean, cov):
    # cov's Cholesky factor: like SciPy, only its lower triangle is read
    factor = np.linalg.cholesky(cov)
    whitened = np.linalg.solve(factor, (x - mean).T)
    mahalanobis = np.sum(whitened * whitened, axis=0)
    logdet = 2 * np.sum(np.log(np.diag(factor)))
    return -0.5 * (whitened.shape[0] * LOG_2PI + logdet + mahalanobis)


@composes(stats.multivariate_normal.pdf)
def multivariate_normal_pdf(x, mean, cov):
    factor = np.linalg.cholesky(cov)
    whitened = np.linalg.solve(factor, (x - mean).T)
    mahalanobis = np.sum(whitened * whitened, axis=0)
    logdet = 2 * np.sum(np.log(np.diag(factor)))
    return np.exp(-0.5 * (whitened.shape[0] * LOG_2PI + logdet + mahalanobis))


# -- Student's t ----------------------------------------------------------------------


@composes(stats.t.logpdf)
def t_logpdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    half = 0.5 * (df + 1)
    normalizer = sp.gammaln(half) - sp.gammaln(0.5 * df) - 0.5 * np.log(df * np.pi)
    return normalizer - half * np.log1p(z * z / df) - np.log(scale)


@composes(stats.t.pdf)
def t_pdf(x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    half = 0.5 * (df + 1)
    normalizer = sp.gammaln(half) - sp.gammaln(0.5 * df) - 0.5 * np.log(df * np.pi)
    return np.exp(normalizer - half * np.log1p(z * z / df)) / scale


# -- gamma and beta: -inf (0) outside their support --------------------------------------


@composes(stats.gamma.logpdf)
def gamma_logpdf(x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z >= 0
    safe = np.where(inside, z, 1.0)
    log_density = sp.xlogy(a - 1, safe) - safe - sp.gammaln(a)
    return np.where(inside, log_density, -np.inf) - np.log(scale)


@composes(stats.gamma.pdf)
def gamma_pdf(x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = z >= 0
    safe = np.where(inside, z, 1.0)
    log_density = sp.xlogy(a - 1, safe) - safe - sp.gammaln(a)
    return np.where(inside, np.exp(log_density), 0.0) / scale


@composes(stats.beta.logpdf)
def beta_logpdf(x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    safe = np.where(inside, z, 0.5)
    log_density = sp.xlogy(a - 1, safe) + sp.xlog1py(b - 1, -safe) - sp.betaln(a, b)
    return np.where(inside, log_density, -np.inf) - np.log(scale)


@composes(stats.beta.pdf)
def beta_pdf(x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    inside = (z >= 0) & (z <= 1)
    safe = np.where(inside, z, 0.5)
    log_density = sp.xlogy(a - 1, safe) + sp.xlog1py(b - 1, -safe) - sp.betaln(a, b)
    return np.where(inside, np.exp(log_density), 0.0) / scale


# -- Poisson: a distribution of integers k, differentiable in its rate mu ---------------


@composes(stats.poisson.logpmf)
def poisson_logpmf(k, mu, loc=0):
    n = k - loc
    valid = (n >= 0) & (n == np.floor(n))
    safe = np.where(valid, n, 0)
    return np.where(valid, sp.xlogy(safe, mu) - sp.gammaln(safe + 1) - mu, -np.inf)


@composes(stats.poisson.pmf)
def poisson_pmf(k, mu, loc=0):
    n = k - loc
    valid = (n >= 0) & (n == np.floor(n))
    safe = np.where(valid, n, 0)
    return np.where(valid, np.exp(sp.xlogy(safe, mu) - sp.gammaln(safe + 1) - mu), 0.0)
