"""Rules for the helpers of generated Jacobians (``numbax/runtime/jacobians.py``), so
that a Jacobian is differentiated again (``hessian = jacfwd(jacrev(f))``,
``jacrev(jacrev(f))``): raveling and cutting a flat buffer into a pytree are linear,
each the adjoint of its inverse; sizes, basis vectors and buffers carry no derivative.
"""

from numbax.runtime import nxrt
from numbax.transform.rules.registry import define, nondifferentiable

# fmt: off
define(nxrt.jac_ravel, "x",
       linear="nxrt.jac_ravel(x)",                        vjp="nxrt.jac_unravel(g, x)",
       samples=["x[3, 2]"])
define(nxrt.jac_unravel, "flat, like",
       linear="nxrt.jac_unravel(flat, like)",             vjp="nxrt.jac_ravel(g)",
       samples=["flat[6], np.zeros((3, 2))"])
define(nxrt.jac_unflatten, "jac, out, x",
       linear="nxrt.jac_unflatten(jac, out, x)",
       vjp="nxrt.jac_flatten(g, out, x)",
       samples=["jac[6, 4], np.zeros((3, 2)), np.zeros(4)"])
define(nxrt.jac_flatten, "tree, out, x",
       linear="nxrt.jac_flatten(tree, out, x)",
       vjp="nxrt.jac_unflatten(g, out, x)",
       samples=["tree[3, 2, 4], np.zeros((3, 2)), np.zeros(4)"])
# fmt: on

nondifferentiable([nxrt.jac_size, nxrt.jac_basis, nxrt.jac_buffer])
