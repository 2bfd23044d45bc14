"""Rules for the helpers of generated Jacobians (``numbax/runtime/jacobians.py``), so
that a Jacobian is differentiated again (``hessian = jacfwd(jacrev(f))``,
``jacrev(jacrev(f))``): raveling and cutting a flat buffer into a pytree are linear,
each the adjoint of its inverse; sizes, basis vectors and buffers carry no derivative.
The raveling pair is also ``nx.flatten_util.ravel_pytree`` and its ``unravel`` inside a
transformed function (``normalize_ravel.py``).
"""

from numbax.runtime import nxrt
from numbax.transform.rules.registry import define, nondifferentiable

# fmt: off
define(nxrt.ravel_pytree, "x",
       linear="nxrt.ravel_pytree(x)",                     vjp="nxrt.unravel_pytree(g, x)",
       samples=["x[3, 2]"])
define(nxrt.unravel_pytree, "flat, like",
       linear="nxrt.unravel_pytree(flat, like)",          vjp="nxrt.ravel_pytree(g)",
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
