"""Python's operators: ``+ - * / // % ** @``, unary ``-``/``+``, comparisons, and the
NumPy functions that are the same operations (``np.add``...), and ``divmod``. ``abs`` is
with ``np.abs`` in elementwise.py.

``normalize`` leaves one operator per statement; the transformations look each up by
the function of the ``operator`` module it stands for (``x * y`` is ``operator.mul``).
"""

import operator

import gast
import numpy as np

from numbax.transform.rules.batch_kinds import elementwise, product
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)

BINARY: dict[type, object] = {
    gast.Add: operator.add,
    gast.Sub: operator.sub,
    gast.Mult: operator.mul,
    gast.Div: operator.truediv,
    gast.FloorDiv: operator.floordiv,
    gast.Mod: operator.mod,
    gast.Pow: operator.pow,
    gast.MatMult: operator.matmul,
    gast.LShift: operator.lshift,
    gast.RShift: operator.rshift,
    gast.BitAnd: operator.and_,
    gast.BitOr: operator.or_,
    gast.BitXor: operator.xor,
}
UNARY: dict[type, object] = {
    gast.USub: operator.neg,
    gast.UAdd: operator.pos,
    gast.Not: operator.not_,
    gast.Invert: operator.invert,
}
COMPARE: dict[type, object] = {
    gast.Eq: operator.eq,
    gast.NotEq: operator.ne,
    gast.Lt: operator.lt,
    gast.LtE: operator.le,
    gast.Gt: operator.gt,
    gast.GtE: operator.ge,
    gast.Is: operator.is_,
    gast.IsNot: operator.is_not,
    gast.In: operator.contains,
    gast.NotIn: operator.contains,
}

# fmt: off
#      operation                     jvp (tangent out), the vjp by substitution
define([operator.add, np.add], "x, y",
       jvp={"x": "dx",                   "y": "dy"},                    vjp=SELF_ADJOINT,
       elementwise=True)
define([operator.sub, np.subtract], "x, y",
       jvp={"x": "dx",                   "y": "-dy"},                   vjp=SELF_ADJOINT,
       elementwise=True)
define([operator.mul, np.multiply], "x, y",
       jvp={"x": "dx * y",               "y": "x * dy"},                vjp=SELF_ADJOINT,
       elementwise=True)
define([operator.truediv, np.divide, np.true_divide], "x, y",
       jvp={"x": "dx / y",               "y": "-dy * ans / y"},         vjp=SELF_ADJOINT,
       elementwise=True, domain={"x": (-2, 2), "y": (0.5, 2)})
# x % y = x - floor(x / y) * y (Python's and NumPy's sign convention); np.fmod truncates.
define([operator.mod, np.mod, np.remainder], "x, y",
       jvp={"x": "dx",                   "y": "-dy * np.floor_divide(x, y)"}, vjp=SELF_ADJOINT,
       elementwise=True, domain={"x": (-2.5, 2.5), "y": (0.7, 0.9)})
# divmod(x, y) = (x // y, x % y): the quotient is piecewise constant, the remainder as %.
define([divmod, np.divmod], "x, y",
       jvp={"x": "(nxrt.zeros_like(ans[0]), nxrt.broadcast_like(dx, ans[1]))",
            "y": "(nxrt.zeros_like(ans[0]), -dy * ans[0])"},
       vjp={"x": "nxrt.unbroadcast(g[1], x)", "y": "nxrt.unbroadcast(-g[1] * ans[0], y)"},
       combine="nxrt.tree_add", samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: a (quotient, remainder) pair"))
define(np.fmod, "x, y",
       jvp={"x": "dx",                   "y": "-dy * np.trunc(x / y)"}, vjp=SELF_ADJOINT,
       elementwise=True, domain={"x": (-2.5, 2.5), "y": (0.7, 0.9)})
# x ** y, as JAX: the x-term is y * x ** (y - 1), exactly 0 when y == 0 (x ** 0 is 1,
# even at x = 0); the y-term, ans * log(x), only when y carries a derivative (so
# x ** 2 at x <= 0 never takes a log), exactly 0 where ans is (0 ** y, y > 0), and
# with log(x) taken as 0 at x == 0 (JAX's log of x with its zeros replaced by ones), so
# that its own derivatives there are 0, not 0 * log(0).
# mul_pow and xlogy: numbax/runtime/elementwise.py, their rules in elementwise.py.
define([operator.pow, np.power, pow], "x, y",
       derivative={"x": "nxrt.mul_pow(y, x, y - 1)",
                   "y": "nxrt.xlogy(ans, np.where(x == 0, 1, x))"},
       elementwise=True, domain={"x": (0.5, 2), "y": (-1.5, 1.5)})
define([operator.neg, np.negative], "x", linear="-x", vjp=SELF_ADJOINT, batch=elementwise)
define([operator.pos, np.positive], "x", linear="x", vjp=SELF_ADJOINT, batch=elementwise)
define([operator.matmul, np.matmul], "x, y",
       jvp={"x": "dx @ y",               "y": "x @ dy"},
       vjp={"x": "nxrt.matmul_vjp_x(g, x, y)", "y": "nxrt.matmul_vjp_y(g, x, y)"},
       batch=product(),
       samples=["x[3, 4], y[4, 2]", "x[3, 4], y[4]", "x[4], y[4, 2]", "x[4], y[4]",
                "x[2, 3, 4], y[4, 2]", "x[1, 3, 4], y[2, 4, 2]", "x[4], y[2, 4, 2]",
                "x[2, 3, 4], y[4]"])
# fmt: on

# Integer, bitwise and boolean results: elementwise, without derivatives (``in`` is
# no elementwise operation: vmap loops over it).
nondifferentiable(
    [operator.floordiv, np.floor_divide, operator.not_, operator.invert]
    + [operator.lshift, operator.rshift, operator.and_, operator.or_, operator.xor]
    + [op for op in COMPARE.values() if op is not operator.contains],
    batch=elementwise,
)
nondifferentiable([operator.contains])
