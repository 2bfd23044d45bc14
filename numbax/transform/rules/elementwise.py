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
from typing import Any

import numpy as np

from numbax.runtime.elementwise import clip_share, mul_pow, sinc_derivative, xlogy
from numbax.transform.rules.batch_kinds import BatchOp, Decline, elementwise
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)

LN2 = repr(math.log(2))
LN10 = repr(math.log(10))
PI = repr(math.pi)
RAD_PER_DEG = repr(math.pi / 180)
DEG_PER_RAD = repr(180 / math.pi)


def _where(op: BatchOp) -> tuple[str, int | None]:
    """``np.where(c, x, y)`` selects elementwise; ``np.where(c)`` alone gives indices."""
    if op.is_none("x") and op.is_none("y"):
        raise Decline("np.where(condition) alone gives indices, as many as it finds")
    return elementwise(op)


def _clip_share(op: BatchOp) -> tuple[str, int | None]:
    """``nxrt.clip_share`` is elementwise in the array and its bounds; the share it
    gives (``part``) is a constant string."""
    values = [p for p in ("a", "a_min", "a_max", "min", "max") if not op.is_none(p)]
    ranks = [op.value(p).rank for p in values]
    rank = None if None in ranks else max(ranks, default=0)
    if not op.batched:
        return "", rank
    if rank is None:
        raise Decline(f"{op.name} of arguments whose ranks are not known")
    return op.replaced({p: op.lifted(p, rank) for p in values if op.is_batched(p)}), rank


def _cast(dtype: str) -> Any:
    """``np.float64(x)`` of a batch: ``astype`` (compiled code casts no array by calling
    the scalar type)."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        source, rank = elementwise(op)
        if not op.batched:
            return source, rank
        return f"np.asarray({op.text('x')}).astype({dtype})", rank

    return rule


# Each rule is checked on inputs drawn from its domain (default (-2, 2), away from 0;
# registry.py), broadcast against a row for the other parameters.
# fmt: off
#      function       params  local derivative (or jvp, and the vjp by substitution)
# -- exponentials and logarithms
define(np.exp,        "x", derivative="ans",                   domain=(-1, 1))
define(np.exp2,       "x", derivative=f"ans * {LN2}",          domain=(-1, 1))
define(np.expm1,      "x", derivative="ans + 1",               domain=(-1, 1))
define(np.log,        "x", jvp="dx / x",                       vjp=SELF_ADJOINT, batch=elementwise,
       domain=(0.5, 2))
define(np.log2,       "x", jvp=f"dx / (x * {LN2})",            vjp=SELF_ADJOINT, batch=elementwise,
       domain=(0.5, 2))
define(np.log10,      "x", jvp=f"dx / (x * {LN10})",           vjp=SELF_ADJOINT, batch=elementwise,
       domain=(0.5, 2))
define(np.log1p,      "x", jvp="dx / (1 + x)",                 vjp=SELF_ADJOINT, batch=elementwise,
       domain=(-0.5, 1))
# -- powers (x ** y and np.power: operators.py)
define(np.sqrt,       "x", jvp="dx / (2 * ans)",               vjp=SELF_ADJOINT, batch=elementwise,
       domain=(0.5, 2))
define(np.cbrt,       "x", jvp="dx / (3 * ans * ans)",         vjp=SELF_ADJOINT, batch=elementwise)
define(np.square,     "x", jvp="2 * x * dx",                   vjp=SELF_ADJOINT, batch=elementwise)
define(np.reciprocal, "x", jvp="-dx * ans * ans",              vjp=SELF_ADJOINT, batch=elementwise)
# -- trigonometric
define(np.sin,        "x", derivative="np.cos(x)")
define(np.cos,        "x", jvp="-dx * np.sin(x)",              vjp=SELF_ADJOINT, batch=elementwise)
define(np.tan,        "x", derivative="1 + ans * ans",         domain=(-1, 1))
define(np.arcsin,     "x", jvp="dx / np.sqrt(1 - x * x)",      vjp=SELF_ADJOINT, batch=elementwise,
       domain=(-0.8, 0.8))
define(np.arccos,     "x", jvp="-dx / np.sqrt(1 - x * x)",     vjp=SELF_ADJOINT, batch=elementwise,
       domain=(-0.8, 0.8))
define(np.arctan,     "x", jvp="dx / (1 + x * x)",             vjp=SELF_ADJOINT, batch=elementwise)
define(np.arctan2,    "y, x",  # the angle of the point (x, y)
       jvp={"y": "dy * x / (x * x + y * y)",   "x": "-dx * y / (x * x + y * y)"},
       vjp=SELF_ADJOINT, elementwise=True)
define(np.hypot,      "x, y", derivative={"x": "x / ans",      "y": "y / ans"}, elementwise=True)
define([np.deg2rad, np.radians], "x", derivative=RAD_PER_DEG)
define([np.rad2deg, np.degrees], "x", derivative=DEG_PER_RAD)
# sinc(x) = sin(pi x) / (pi x): its k-th derivative is nxrt.sinc_derivative(x, k), right
# at x = 0 too (Maclaurin series there, as JAX), and that one's is the (k + 1)-th.
define(np.sinc,       "x", derivative="nxrt.sinc_derivative(x, 1)", domain=(-1.5, 1.5))
# -- hyperbolic
define(np.sinh,       "x", derivative="np.cosh(x)",            domain=(-1, 1))
define(np.cosh,       "x", derivative="np.sinh(x)",            domain=(-1, 1))
define(np.tanh,       "x", derivative="1 - ans * ans",         domain=(-1, 1))
define(np.arcsinh,    "x", jvp="dx / np.sqrt(x * x + 1)",      vjp=SELF_ADJOINT, batch=elementwise)
define(np.arccosh,    "x", jvp="dx / np.sqrt((x - 1) * (x + 1))",
                           vjp=SELF_ADJOINT, batch=elementwise, domain=(1.5, 3))
define(np.arctanh,    "x", jvp="dx / (1 - x * x)",             vjp=SELF_ADJOINT, batch=elementwise,
       domain=(-0.8, 0.8))
# -- log-sum-exp of two: the weights are softmax's, exp(x - ans)
define(np.logaddexp,  "x, y",
       derivative={"x": "np.exp(x - ans)",     "y": "np.exp(y - ans)"}, elementwise=True)
define(np.logaddexp2, "x, y",
       derivative={"x": "np.exp2(x - ans)",    "y": "np.exp2(y - ans)"}, elementwise=True)
# -- absolute value: d|x| = sign(x) dx, 0 at x = 0. For complex z, d|z| = Re(conj(z) dz)
# / |z| and the cotangent g * conj(z) / |z|, as in JAX; real() and conj() are no-ops on
# real x. Written with |z| itself rather than np.sign(z) = z / |z| (a constant to the
# transformations), so that second derivatives at complex z are right too.
ABS_SLOPE = "np.conj(x) / np.where(ans == 0, 1, ans)"
define([np.abs, abs], "x", jvp=f"np.real(dx * {ABS_SLOPE})",
                           vjp=f"g * {ABS_SLOPE}", batch=elementwise)
# fabs: |x| of real x only (NumPy refuses complex), so its slope is sign(x).
define(np.fabs,       "x", derivative="np.sign(x)")
# -- selections: the derivative goes to the argument the result is. Ties split it evenly
# between both, as JAX's maximum and minimum do (so d max(x, x) = dx; JAX's fmax and
# fmin give ties to y). fmax and fmin differ only where one argument is nan: the result,
# and the derivative, is the other's. Python's max(x, y) and min(x, y) of two numbers
# are the same selections.
define([np.maximum, np.minimum, np.fmax, np.fmin, max, min], "x, y",
       jvp={"x": "np.where(x == y, 0.5 * dx, np.where(x == ans, dx, 0))",
            "y": "np.where(x == y, 0.5 * dy, np.where(y == ans, dy, 0))"},
       vjp=SELF_ADJOINT, elementwise=True)
# clip(a, lo, hi) is minimum(maximum(a, lo), hi), as in JAX, with the derivative split
# evenly at ties like maximum's and minimum's: at a == lo, half goes to a and half to lo.
# nxrt.clip_share (runtime/elementwise.py) gives the share of a and of the upper bound;
# the lower bound has the rest. None bounds are constants: their terms never appear.
# NumPy 2's min=/max= keywords are the same bounds.
CLIP_BOUNDS = "a, a_min, a_max, min, max"
CLIP_A = f"nxrt.clip_share({CLIP_BOUNDS}, 'a')"
CLIP_HIGH = f"nxrt.clip_share({CLIP_BOUNDS}, 'high')"
CLIP_LOW = f"(1 - {CLIP_A} - {CLIP_HIGH})"
define(np.clip,       "a, a_min=None, a_max=None, out=None, *, min=None, max=None",
       derivative={"a": CLIP_A, "a_min": CLIP_LOW, "a_max": CLIP_HIGH,
                   "min": CLIP_LOW, "max": CLIP_HIGH},
       elementwise=True, methods=["clip"],
       samples=["a[3, 2], a_min[2], a_max[3, 1]", "a[3, 2], min=a_min[], max=a_max[]"],
       domain={"a": (-1, 1), "a_min": (-0.7, -0.3), "a_max": (0.3, 0.7)})
# where: the condition selects and has no derivative (np.where(c) alone gives indices).
# Its zero cotangent is listed so that the adjoint also undoes broadcasting against a
# condition larger than x and y (reverse mode only counts differentiable operands).
define(np.where,      "condition, x=None, y=None",
       jvp={"x": "np.where(condition, dx, 0)", "y": "np.where(condition, 0, dy)"},
       vjp={"x": "np.where(condition, g, 0)",  "y": "np.where(condition, 0, g)",
            "condition": "nxrt.zeros_like(condition)"},
       elementwise=True, batch=_where,
       samples=["condition[3, 2], x[3, 2], y[2]"], domain={"condition": "bool"})
# -- complex parts. z = a + ib: real(z) = a, imag(z) = b, conj(z) = a - ib, and
# angle(z) = imag(log z), so d angle(z) = imag(dz / z).
define(np.real,       "x", jvp="np.real(dx)",                  vjp="nxrt.unbroadcast(g, x)",
       attributes=["real"], batch=elementwise)
define(np.imag,       "x", jvp="np.imag(dx)",                  vjp="nxrt.unbroadcast(-1j * g, x)",
       attributes=["imag"], batch=elementwise)
define([np.conj, np.conjugate], "x", linear="np.conj(x)",      vjp=SELF_ADJOINT,
       methods=["conj", "conjugate"], batch=elementwise)
define(np.angle,      "z, deg=False",
       jvp=f"np.imag(dz / z) * ({DEG_PER_RAD} if deg else 1.0)",
       vjp=f"nxrt.unbroadcast(-1j * g / z, z) * ({DEG_PER_RAD} if deg else 1.0)",
       batch=elementwise, samples=["z[3, 2]", "z[3, 2], deg=True"])
# -- casts to a floating or complex scalar type: the value, in another precision. The
# cotangent goes back in x's own dtype (the real part, for a real x).
CASTS = checked_elsewhere("tests/autodiff/test_rules_elementwise.py: float32 or complex")
define(float,         "x", linear="float(x)",                 vjp="nxrt.unbroadcast(g, x)",
       samples=["x[]"])
define(complex,       "x", linear="complex(x)",               vjp="nxrt.unbroadcast(g, x)",
       samples=CASTS)
define(np.float64,    "x", linear="np.float64(x)",            vjp="nxrt.unbroadcast(g, x)",
       batch=_cast("np.float64"), samples=["x[]"])
define(np.float32,    "x", linear="np.float32(x)",            vjp="nxrt.unbroadcast(g, x)",
       batch=_cast("np.float32"), samples=CASTS)
define(np.complex128, "x", linear="np.complex128(x)",         vjp="nxrt.unbroadcast(g, x)",
       batch=_cast("np.complex128"), samples=CASTS)
define(np.complex64,  "x", linear="np.complex64(x)",          vjp="nxrt.unbroadcast(g, x)",
       batch=_cast("np.complex64"), samples=CASTS)
# fmt: on

nondifferentiable([np.floor, np.ceil, np.round, np.sign, np.isnan, np.isfinite], batch=elementwise)
# whether an array's dtype is complex: a flag, no derivative
nondifferentiable([np.iscomplexobj, np.isrealobj])

# -- the helpers of the power rules (operators.py), closed under differentiation
# (numbax/runtime/elementwise.py): mul_pow(c, x, p) = c * x ** p and
# xlogy(x, y) = x * log(y), both exactly 0 where their first factor is.
# fmt: off
define(mul_pow,       "c, x, p",
       derivative={"c": "nxrt.mul_pow(c != 0, x, p)", "x": "nxrt.mul_pow(c * p, x, p - 1)",
                   "p": "nxrt.xlogy(ans, np.where(x == 0, 1, x))"},
       elementwise=True, domain={"c": (-2, 2), "x": (0.5, 2), "p": (-1.5, 1.5)})
define(xlogy,         "x, y",
       derivative={"x": "np.log(y)",           "y": "nxrt.mul_pow(x, y, -1)"},
       elementwise=True, domain={"x": (-2, 2), "y": (0.5, 2)})
# fmt: on

# the shares of clip's derivative: piecewise constant, without a derivative of their own
define(clip_share, "a, a_min, a_max, min, max, part", batch=_clip_share)
define(sinc_derivative, "x, k", derivative={"x": "nxrt.sinc_derivative(x, k + 1)"},
       samples=["x[3, 2], 1", "x[3, 2], 2"], domain=(-1.5, 1.5))  # fmt: skip
