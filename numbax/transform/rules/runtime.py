"""Rules for the runtime helpers that derivative code itself calls (``nxrt.*``).

The closure invariant: whatever a transformation emits, every transformation accepts.
So each helper the rules and the transformations emit has its own JVP and VJP here —
mostly linear maps whose adjoint is another helper of the table.
"""

from numbax.numba_backend import runtime as nxrt
from numbax.transform.rules.registry import define, nondifferentiable

# fmt: off
define(nxrt.unbroadcast, "value, like",
       jvp="nxrt.unbroadcast(dvalue, like)",              vjp="nxrt.unbroadcast(g, value)")
define(nxrt.broadcast_like, "value, like",
       jvp="nxrt.broadcast_like(dvalue, like)",           vjp="nxrt.unbroadcast(g, value)")
define(nxrt.broadcast_reduced, "value, a, axis=None, keepdims=False",
       jvp="nxrt.broadcast_reduced(dvalue, a, axis, keepdims)",
       vjp="nxrt.unbroadcast(np.sum(g, axis=axis, keepdims=keepdims), value)")
define(nxrt.owned, "x",
       jvp="dx",                                          vjp="g")
define(nxrt.ravel, "x",
       jvp="nxrt.ravel(dx)",                              vjp="nxrt.reshape_like(g, x)")
define(nxrt.reshape_like, "value, like",
       jvp="nxrt.reshape_like(dvalue, like)",             vjp="nxrt.reshape_like(g, value)")
define(nxrt.jac_reshape, "jac, out, x",
       jvp="nxrt.jac_reshape(djac, out, x)",              vjp="nxrt.reshape_like(g, jac)")
define(nxrt.tree_add, "a, b",
       jvp={"a": "da",                                    "b": "db"},
       vjp={"a": "g",                                     "b": "g"}, combine="nxrt.tree_add")
define(nxrt.index_add, "base, index, value",
       jvp={"base": "nxrt.owned(dbase)",
            "value": "nxrt.index_add(nxrt.zeros_like(base), index, dvalue)"},
       vjp={"base": "g",
            "value": "nxrt.unbroadcast(g[index], value)"}, combine="nxrt.tree_add")
define(nxrt.matmul_vjp_x, "ct, x, y",
       jvp={"ct": "nxrt.matmul_vjp_x(dct, x, y)",         "y": "nxrt.matmul_vjp_x(ct, x, dy)"},
       vjp={"ct": "np.matmul(g, y)",                      "y": "nxrt.matmul_vjp_y(ct, g, y)"})
define(nxrt.matmul_vjp_y, "ct, x, y",
       jvp={"ct": "nxrt.matmul_vjp_y(dct, x, y)",         "x": "nxrt.matmul_vjp_y(ct, dx, y)"},
       vjp={"ct": "np.matmul(x, g)",                      "x": "nxrt.matmul_vjp_x(ct, x, g)"})
# fmt: on

nondifferentiable(
    [nxrt.zeros_like, nxrt.ones_like, nxrt.grad_seed, nxrt.basis, nxrt.jac_empty, nxrt.size]
)
