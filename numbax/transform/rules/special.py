"""SciPy's special functions (``scipy.special``) and the functions of ``math`` whose
derivatives are special functions (``math.erf``, ``math.erfc``, ``math.lgamma``,
``math.gamma``), with jax.scipy.special's derivative conventions.

Most are elementwise: the JVP is the tangent times the local derivative, written with
NumPy and with the special functions ``nxrt`` publishes (``runtime/special.py``:
``nxrt.digamma`` is ``scipy.special.psi`` itself), which have rules here too, so
derivatives of every order exist (``polygamma(n, x)``'s derivative is
``polygamma(n + 1, x)``). Conventions, as JAX's:

* ``xlogy(x, y)`` (``x log y``) and ``xlog1py(x, y)`` are 0 where ``x == 0``; their
  derivative in ``x`` is ``log(y)`` (``log1p(y)``) there too, in ``y`` it is ``x / y``
  (``x / (1 + y)``);
* ``i1e``'s derivative at 0 is 1/2 (the limit), ``i1``'s too;
* ``logsumexp``'s derivative is the softmax, ``b * exp(a - logsumexp)``, with ``b=``
  weights that broadcast against ``a``; ``return_sign=True`` is refused when the call
  carries a derivative (its sign has none, and JAX's convention for it is not NumPy's).

This module is loaded when the user's program has imported ``scipy.special``
(``registry.py``): SciPy's import costs half a second, which programs that never call it
should not pay.
"""

import math

import scipy.special as sp

from numbax.runtime import special as special_helpers  # noqa: F401  (publishes nxrt.digamma...)
from numbax.transform.rules.batch_kinds import elementwise_as, reduction
from numbax.transform.rules.registry import (
    OTHERWISE,
    alias,
    checked_elsewhere,
    define,
    nondifferentiable,
)

TWO_OVER_SQRT_PI = repr(2 / math.sqrt(math.pi))
SQRT_PI_OVER_2 = repr(math.sqrt(math.pi) / 2)
INV_SQRT_2PI = repr(1 / math.sqrt(2 * math.pi))
SQRT_2PI = repr(math.sqrt(2 * math.pi))

TESTED = checked_elsewhere(
    "tests/autodiff/test_scipy_special.py: values against SciPy, first and second "
    "derivatives, and one jitted program for all"
)

# fmt: off
#      function        params  local derivative
# -- the error function and the normal distribution's
define(sp.erf,         "x", derivative=f"{TWO_OVER_SQRT_PI} * np.exp(-x * x)",       samples=TESTED)
define(sp.erfc,        "x", derivative=f"-{TWO_OVER_SQRT_PI} * np.exp(-x * x)",      samples=TESTED)
define(sp.erfinv,      "x", derivative=f"{SQRT_PI_OVER_2} * np.exp(ans * ans)",      samples=TESTED)
define(sp.ndtr,        "x", derivative=f"{INV_SQRT_2PI} * np.exp(-0.5 * x * x)",     samples=TESTED)
define(sp.ndtri,       "x", derivative=f"{SQRT_2PI} * np.exp(0.5 * ans * ans)",      samples=TESTED)
# d log ndtr(x) = pdf(x) / ndtr(x), written as one exponential so that it stays right
# far in the lower tail, where both are below the smallest double
define(sp.log_ndtr,    "x", derivative=f"{INV_SQRT_2PI} * np.exp(-0.5 * x * x - ans)",
       samples=TESTED)
# -- the logistic function and its inverse
define(sp.expit,       "x", derivative="ans * (1 - ans)",                            samples=TESTED)
define(sp.logit,       "x", derivative="1 / (x * (1 - x))",                          samples=TESTED)
# -- gamma and its relatives: digamma is psi, polygamma(n, .) its n-th derivative
define(sp.gammaln,     "x", derivative="nxrt.digamma(x)",                            samples=TESTED)
define(sp.gamma,       "x", derivative="ans * nxrt.digamma(x)",                      samples=TESTED)
define(sp.psi,         "x", derivative="nxrt.polygamma(1, x)",                       samples=TESTED)
define(sp.polygamma,   "n, x", derivative={"x": "nxrt.polygamma(n + 1, x)"},
       elementwise=True, samples=TESTED)
define(sp.betaln,      "a, b",
       derivative={"a": "nxrt.digamma(a) - nxrt.digamma(a + b)",
                   "b": "nxrt.digamma(b) - nxrt.digamma(a + b)"},
       elementwise=True, samples=TESTED)
# -- x log y and relatives: 0 where x is 0, with JAX's derivatives there
define(sp.xlogy,       "x, y", derivative={"x": "np.log(y)",   "y": "x / y"},
       elementwise=True, samples=TESTED)
define(sp.xlog1py,     "x, y", derivative={"x": "np.log1p(y)", "y": "x / (1 + y)"},
       elementwise=True, samples=TESTED)
define(sp.entr,        "x", derivative="-(np.log(x) + 1)",                           samples=TESTED)
define(sp.rel_entr,    "x, y", derivative={"x": "np.log(x / y) + 1", "y": "-x / y"},
       elementwise=True, samples=TESTED)
# -- modified Bessel functions of orders 0 and 1, and their exponentially scaled forms
# (i0e(x) = exp(-|x|) i0(x)). i1(x) / x tends to 1/2 at 0, where it is written so.
I1_OVER_X = "np.where(x == 0, 0.5, ans / np.where(x == 0, 1, x))"
define(sp.i0,          "x", derivative="nxrt.i1(x)",                                 samples=TESTED)
define(sp.i1,          "x", derivative=f"nxrt.i0(x) - {I1_OVER_X}",                  samples=TESTED)
define(sp.i0e,         "x", derivative="nxrt.i1e(x) - np.sign(x) * ans",             samples=TESTED)
define(sp.i1e,         "x", derivative=f"nxrt.i0e(x) - np.sign(x) * ans - {I1_OVER_X}",
       samples=TESTED)
# fmt: on

# -- log-sum-exp: log(sum(b * exp(a))) over axis. Its derivative in a is the softmax
# b * exp(a - ans), spread back over the reduced axes; in b, exp(a - ans).
SPREAD_ANS = "nxrt.broadcast_reduced(ans, a, axis, keepdims)"
SPREAD_G = "nxrt.broadcast_reduced(g, a, axis, keepdims)"
SOFTMAX = f"np.exp(a - {SPREAD_ANS})"
KEEP = "axis=axis, keepdims=keepdims"
LOGSUMEXP = "a, axis=None, b=None, keepdims=False, return_sign=False"
NO_SIGN = {"return_sign": {False: None}}
WEIGHTED = define(
    [],
    LOGSUMEXP,
    name="scipy.special.logsumexp with b=",
    jvp={"a": f"np.sum(da * b * {SOFTMAX}, {KEEP})", "b": f"np.sum(db * {SOFTMAX}, {KEEP})"},
    vjp={"a": f"{SPREAD_G} * b * {SOFTMAX}", "b": f"nxrt.unbroadcast({SPREAD_G} * {SOFTMAX}, b)"},
    samples=TESTED,
    by_constant=NO_SIGN,
)
define(
    sp.logsumexp,
    LOGSUMEXP,
    jvp=f"np.sum(da * {SOFTMAX}, {KEEP})",
    vjp=f"{SPREAD_G} * {SOFTMAX}",
    batch=reduction(),
    samples=TESTED,
    by_constant={**NO_SIGN, "b": {None: None, OTHERWISE: WEIGHTED}},
)

# math's functions of the same meaning, on Python numbers: the same derivatives, and
# batched by vmap as SciPy's functions of arrays (nxrt.erf is scipy.special.erf).
for _function, _like in [(math.erf, sp.erf), (math.erfc, sp.erfc), (math.lgamma, sp.gammaln),
                         (math.gamma, sp.gamma)]:  # fmt: skip
    alias(_function, _like, batch=elementwise_as(f"nxrt.{_like.__name__}"))

# Functions of scipy.special that take or give integers, or are piecewise constant.
nondifferentiable([sp.round, sp.factorial, sp.comb, sp.perm])
