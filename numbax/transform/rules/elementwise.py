"""NumPy's elementwise functions: each output element depends on the same element of
each (broadcast) input, so the JVP is a product with the local derivative and the VJP
multiplies the cotangent by it, then undoes broadcasting.

Complex numbers follow JAX's conventions. A holomorphic function's rule is the real
one (``exp``: ``g * ans``, no conjugate: the VJP is the transpose of the JVP, not its
adjoint). A real-valued function of a complex ``z`` (``abs``, ``real``, ``imag``,
``angle``) sends back a complex cotangent: ``real``'s is ``g`` as a complex number,
``imag``'s ``-1j * g``; for a real input those are cast back to real
(``nxrt.unbroadcast(value, like)`` gives like's dtype, the real part for a real like).

Constants are Python literals, not ``np.log(2)``: a NumPy float64 scalar would promote
float32 derivatives to float64, a Python float adapts to them.
"""

import math

import numpy as np

from numbax.runtime.elementwise import mul_pow, xlogy
from numbax.transform.rules.batch_kinds import BatchOp, Decline, elementwise
from numbax.transform.rules.registry import batching, define, nondifferentiable

LN2 = repr(math.log(2))
LN10 = repr(math.log(10))
PI = repr(math.pi)
RAD_PER_DEG = repr(math.pi / 180)
DEG_PER_RAD = repr(180 / math.pi)

# fmt: off
#      function       params  jvp (tangent out)                  vjp (cotangent in)
# -- exponentials and logarithms
define(np.exp,        "x", jvp="dx * ans",                     vjp="g * ans")
define(np.exp2,       "x", jvp=f"dx * ans * {LN2}",            vjp=f"g * ans * {LN2}")
define(np.expm1,      "x", jvp="dx * (ans + 1)",               vjp="g * (ans + 1)")
define(np.log,        "x", jvp="dx / x",                       vjp="g / x")
define(np.log2,       "x", jvp=f"dx / (x * {LN2})",            vjp=f"g / (x * {LN2})")
define(np.log10,      "x", jvp=f"dx / (x * {LN10})",           vjp=f"g / (x * {LN10})")
define(np.log1p,      "x", jvp="dx / (1 + x)",                 vjp="g / (1 + x)")
# -- powers (x ** y and np.power: operators.py)
define(np.sqrt,       "x", jvp="dx / (2 * ans)",               vjp="g / (2 * ans)")
define(np.cbrt,       "x", jvp="dx / (3 * ans * ans)",         vjp="g / (3 * ans * ans)")
define(np.square,     "x", jvp="2 * x * dx",                   vjp="2 * x * g")
define(np.reciprocal, "x", jvp="-dx * ans * ans",              vjp="-g * ans * ans")
# -- trigonometric
define(np.sin,        "x", jvp="dx * np.cos(x)",               vjp="g * np.cos(x)")
define(np.cos,        "x", jvp="-dx * np.sin(x)",              vjp="-g * np.sin(x)")
define(np.tan,        "x", jvp="dx * (1 + ans * ans)",         vjp="g * (1 + ans * ans)")
define(np.arcsin,     "x", jvp="dx / np.sqrt(1 - x * x)",      vjp="g / np.sqrt(1 - x * x)")
define(np.arccos,     "x", jvp="-dx / np.sqrt(1 - x * x)",     vjp="-g / np.sqrt(1 - x * x)")
define(np.arctan,     "x", jvp="dx / (1 + x * x)",             vjp="g / (1 + x * x)")
define(np.arctan2,    "y, x",  # the angle of the point (x, y)
       jvp={"y": "dy * x / (x * x + y * y)",   "x": "-dx * y / (x * x + y * y)"},
       vjp={"y": "g * x / (x * x + y * y)",    "x": "-g * y / (x * x + y * y)"},
       elementwise=True)
define(np.hypot,      "x, y",
       jvp={"x": "dx * x / ans",               "y": "dy * y / ans"},
       vjp={"x": "g * x / ans",                "y": "g * y / ans"},
       elementwise=True)
define(np.deg2rad,    "x", jvp=f"dx * {RAD_PER_DEG}",          vjp=f"g * {RAD_PER_DEG}")
define(np.rad2deg,    "x", jvp=f"dx * {DEG_PER_RAD}",          vjp=f"g * {DEG_PER_RAD}")
# sinc(x) = sin(pi x) / (pi x). Its slope's numerator vanishes at x = 0, where the slope
# is 0; the slope's own slope there (-pi**2 / 3) is not right: second derivatives at
# exactly 0 are.
define(np.sinc,       "x", jvp=f"dx * (np.cos({PI} * x) - ans) / np.where(x == 0, 1, x)",
                           vjp=f"g * (np.cos({PI} * x) - ans) / np.where(x == 0, 1, x)")
# -- hyperbolic
define(np.sinh,       "x", jvp="dx * np.cosh(x)",              vjp="g * np.cosh(x)")
define(np.cosh,       "x", jvp="dx * np.sinh(x)",              vjp="g * np.sinh(x)")
define(np.tanh,       "x", jvp="dx * (1 - ans * ans)",         vjp="g * (1 - ans * ans)")
define(np.arcsinh,    "x", jvp="dx / np.sqrt(x * x + 1)",      vjp="g / np.sqrt(x * x + 1)")
define(np.arccosh,    "x", jvp="dx / np.sqrt((x - 1) * (x + 1))",
                           vjp="g / np.sqrt((x - 1) * (x + 1))")
define(np.arctanh,    "x", jvp="dx / (1 - x * x)",             vjp="g / (1 - x * x)")
# -- log-sum-exp of two: the weights are softmax's, exp(x - ans)
define(np.logaddexp,  "x, y",
       jvp={"x": "dx * np.exp(x - ans)",       "y": "dy * np.exp(y - ans)"},
       vjp={"x": "g * np.exp(x - ans)",        "y": "g * np.exp(y - ans)"},
       elementwise=True)
define(np.logaddexp2, "x, y",
       jvp={"x": "dx * np.exp2(x - ans)",      "y": "dy * np.exp2(y - ans)"},
       vjp={"x": "g * np.exp2(x - ans)",       "y": "g * np.exp2(y - ans)"},
       elementwise=True)
# -- absolute value: d|x| = sign(x) dx, 0 at x = 0. For complex z, d|z| = Re(conj(z) dz)
# / |z| and the cotangent g * conj(z) / |z|, as in JAX (np.sign(z) is z / |z|);
# real() and conj() are no-ops on real x.
define([np.abs, abs], "x", jvp="np.real(dx * np.conj(np.sign(x)))",
                           vjp="g * np.conj(np.sign(x))")
# -- selections: the derivative goes to the argument the result is. Ties split it evenly
# between both, as JAX's maximum and minimum do (so d max(x, x) = dx; JAX's fmax and
# fmin give ties to y). fmax and fmin differ only where one argument is nan: the result,
# and the derivative, is the other's. Python's max(x, y) and min(x, y) of two numbers
# are the same selections.
define([np.maximum, np.minimum, np.fmax, np.fmin, max, min], "x, y",
       jvp={"x": "np.where(x == y, 0.5 * dx, np.where(x == ans, dx, 0))",
            "y": "np.where(x == y, 0.5 * dy, np.where(y == ans, dy, 0))"},
       vjp={"x": "np.where(x == y, 0.5 * g, np.where(x == ans, g, 0))",
            "y": "np.where(x == y, 0.5 * g, np.where(y == ans, g, 0))"},
       elementwise=True)
# clip: inside [a_min, a_max], bounds included, the result is a; below it a_min, above
# it a_max. None bounds are constants: their terms never appear. NumPy 2's min=/max=
# keywords are the same bounds.
define(np.clip,       "a, a_min=None, a_max=None, out=None, *, min=None, max=None",
       jvp={"a": "np.where(ans == a, da, 0)",
            "a_min": "np.where(a < a_min, da_min, 0)", "a_max": "np.where(a > a_max, da_max, 0)",
            "min": "np.where(a < min, dmin, 0)",       "max": "np.where(a > max, dmax, 0)"},
       vjp={"a": "np.where(ans == a, g, 0)",
            "a_min": "np.where(a < a_min, g, 0)",      "a_max": "np.where(a > a_max, g, 0)",
            "min": "np.where(a < min, g, 0)",          "max": "np.where(a > max, g, 0)"},
       elementwise=True, methods=["clip"])
# where: the condition selects and has no derivative (np.where(c) alone gives indices).
# Its zero cotangent is listed so that the adjoint also undoes broadcasting against a
# condition larger than x and y (reverse mode only counts differentiable operands).
define(np.where,      "condition, x=None, y=None",
       jvp={"x": "np.where(condition, dx, 0)", "y": "np.where(condition, 0, dy)"},
       vjp={"x": "np.where(condition, g, 0)",  "y": "np.where(condition, 0, g)",
            "condition": "nxrt.zeros_like(condition)"},
       elementwise=True)
# -- complex parts. z = a + ib: real(z) = a, imag(z) = b, conj(z) = a - ib, and
# angle(z) = imag(log z), so d angle(z) = imag(dz / z).
define(np.real,       "x", jvp="np.real(dx)",                  vjp="nxrt.unbroadcast(g, x)",
       attributes=["real"])
define(np.imag,       "x", jvp="np.imag(dx)",                  vjp="nxrt.unbroadcast(-1j * g, x)",
       attributes=["imag"])
define([np.conj, np.conjugate], "x",
                           jvp="np.conj(dx)",                  vjp="np.conj(g)",
       methods=["conj", "conjugate"])
define(np.angle,      "z, deg=False",
       jvp=f"np.imag(dz / z) * ({DEG_PER_RAD} if deg else 1.0)",
       vjp=f"nxrt.unbroadcast(-1j * g / z, z) * ({DEG_PER_RAD} if deg else 1.0)")
# -- casts to a floating or complex scalar type: the value, in another precision. The
# cotangent goes back in x's own dtype (the real part, for a real x).
define(float,         "x", jvp="float(dx)",                   vjp="nxrt.unbroadcast(g, x)")
define(complex,       "x", jvp="complex(dx)",                 vjp="nxrt.unbroadcast(g, x)")
define(np.float64,    "x", jvp="np.float64(dx)",              vjp="nxrt.unbroadcast(g, x)")
define(np.float32,    "x", jvp="np.float32(dx)",              vjp="nxrt.unbroadcast(g, x)")
define(np.complex128, "x", jvp="np.complex128(dx)",           vjp="nxrt.unbroadcast(g, x)")
define(np.complex64,  "x", jvp="np.complex64(dx)",            vjp="nxrt.unbroadcast(g, x)")
# fmt: on

nondifferentiable([np.floor, np.ceil, np.round, np.sign, np.isnan, np.isfinite])

# -- the helpers of the power rules (operators.py), closed under differentiation
# (numbax/runtime/elementwise.py): mul_pow(c, x, p) = c * x ** p and
# xlogy(x, y) = x * log(y), both exactly 0 where their first factor is.
# fmt: off
define(mul_pow,       "c, x, p",
       jvp={"c": "dc * x ** p",                "x": "dx * nxrt.mul_pow(c * p, x, p - 1)",
            "p": "dp * nxrt.xlogy(ans, x)"},
       vjp={"c": "g * x ** p",                 "x": "g * nxrt.mul_pow(c * p, x, p - 1)",
            "p": "g * nxrt.xlogy(ans, x)"},
       elementwise=True)
define(xlogy,         "x, y",
       jvp={"x": "dx * np.log(y)",             "y": "dy * nxrt.mul_pow(x, y, -1)"},
       vjp={"x": "g * np.log(y)",              "y": "g * nxrt.mul_pow(x, y, -1)"},
       elementwise=True)
# fmt: on

# -- batching (vmap's vectorized method, batch_kinds.py): all of them elementwise
batching(
    elementwise,
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p,
    np.sqrt, np.cbrt, np.square, np.reciprocal,
    np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.hypot,
    np.deg2rad, np.rad2deg, np.sinc,
    np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh,
    np.logaddexp, np.logaddexp2, np.abs, np.maximum, np.minimum, np.fmax, np.fmin,
    max, min, np.clip, np.real, np.imag, np.conj, np.angle,
    np.floor, np.ceil, np.round, np.sign, np.isnan, np.isfinite, mul_pow, xlogy,
    np.float64, np.float32, np.complex128, np.complex64,
)  # fmt: skip


def _where(op: BatchOp) -> tuple[str, int | None]:
    """``np.where(c, x, y)`` selects elementwise; ``np.where(c)`` alone gives indices."""
    if op.is_none("x") and op.is_none("y"):
        raise Decline("np.where(condition) alone gives indices, as many as it finds")
    return elementwise(op)


batching(_where, np.where)
