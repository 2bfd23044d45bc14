"""Rules for the helpers of generated Jacobians (``numbax/runtime/jacobians.py``), so
that a Jacobian is differentiated again (``hessian = jacfwd(jacrev(f))``,
``jacrev(jacrev(f))``): raveling and cutting a flat buffer into a pytree are linear,
each the adjoint of its inverse; sizes, basis vectors and buffers carry no derivative.
"""

from numbax.runtime import nxrt
from numbax.transform.rules.registry import define, nondifferentiable

# fmt: off
define(nxrt.jac_ravel, "x",
       jvp="nxrt.jac_ravel(dx)",                          vjp="nxrt.jac_unravel(g, x)")
define(nxrt.jac_unravel, "flat, like",
       jvp={"flat": "nxrt.jac_unravel(dflat, like)"},     vjp={"flat": "nxrt.jac_ravel(g)"})
define(nxrt.jac_unflatten, "jac, out, x",
       jvp={"jac": "nxrt.jac_unflatten(djac, out, x)"},
       vjp={"jac": "nxrt.jac_flatten(g, out, x)"})
define(nxrt.jac_flatten, "tree, out, x",
       jvp={"tree": "nxrt.jac_flatten(dtree, out, x)"},
       vjp={"tree": "nxrt.jac_unflatten(g, out, x)"})
# fmt: on

nondifferentiable([nxrt.jac_size, nxrt.jac_basis, nxrt.jac_buffer])
