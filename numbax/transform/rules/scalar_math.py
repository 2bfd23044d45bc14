"""The functions of Python's ``math`` module on numbers that carry derivatives: each has
the rule of the NumPy function of the same meaning (``math.exp`` is ``np.exp`` on a
Python float), and ``vmap`` batches it as that NumPy function (``math.exp`` of a batch
of numbers is ``np.exp`` of an array).

``math.erf``, ``math.erfc``, ``math.lgamma`` and ``math.gamma``, whose derivatives are
SciPy's special functions, are in ``special.py``. ``math.log(x, base)`` with a base is
not covered (write ``math.log(x) / math.log(base)``), nor ``math.hypot`` of more than
two numbers.
"""

import math

import numpy as np

from numbax.transform.rules.batch_kinds import elementwise_as
from numbax.transform.rules.registry import alias, checked_elsewhere, define, nondifferentiable

TESTED = checked_elsewhere("tests/autodiff/test_scipy_special.py: math on numbers")

SAME_AS_NUMPY = {
    math.exp: np.exp,
    math.expm1: np.expm1,
    math.log: np.log,
    math.log1p: np.log1p,
    math.log2: np.log2,
    math.log10: np.log10,
    math.sqrt: np.sqrt,
    math.sin: np.sin,
    math.cos: np.cos,
    math.tan: np.tan,
    math.asin: np.arcsin,
    math.acos: np.arccos,
    math.atan: np.arctan,
    math.atan2: np.arctan2,
    math.sinh: np.sinh,
    math.cosh: np.cosh,
    math.tanh: np.tanh,
    math.asinh: np.arcsinh,
    math.acosh: np.arccosh,
    math.atanh: np.arctanh,
    math.pow: np.power,
    math.hypot: np.hypot,
    math.fabs: np.fabs,
    math.degrees: np.degrees,
    math.radians: np.radians,
}
"""Each function of ``math`` and the NumPy function whose rule it has."""

for _function, _numpy in SAME_AS_NUMPY.items():
    alias(_function, _numpy, batch=elementwise_as(f"np.{_numpy.__name__}"), samples=TESTED)

# copysign(x, y) is |x| with y's sign, which is the result's: its slope in x is sign(x)
# times that sign (0 at x = 0, as |x|'s); y only chooses the sign, piecewise constant.
define(math.copysign, "x, y", derivative={"x": "np.sign(x) * np.sign(ans)"},
       batch=elementwise_as("np.copysign"), samples=TESTED)  # fmt: skip

# Integer and boolean results, and rounding.
nondifferentiable(
    [math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite, math.isclose]
    + [math.factorial, math.comb, math.perm, math.gcd]
)
