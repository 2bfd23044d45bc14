"""Rules for the helpers of generated Jacobians (``numbax/runtime/jacobians.py``), so
that a Jacobian is differentiated again (``hessian = jacfwd(jacrev(f))``,
``jacrev(jacrev(f))``): raveling and cutting a flat buffer into a pytree are linear,
each the adjoint of its inverse; sizes, basis vectors and buffers carry no derivative.
The raveling pair is also ``nx.flatten_util.ravel_pytree`` and its ``unravel`` inside a
transformed function (``normalize/ravel.py``).

Batching rules let ``vmap`` vectorize a Jacobian's code (``jacfwd`` of ``jacrev``: the
JVP of the row loop, mapped over the basis of tangents): a batch of arrays ravels to a
``(batch, size)`` matrix, and ``jac_unflatten`` cuts a batch of buffers itself (it
takes a leading batch axis); a buffer the batch shares has rank 2.

``jac_diagonal`` writes a Jacobian known to be diagonal from its diagonal (a separable
function's Hessian): linear in that diagonal, its transpose reads the diagonal back.
"""

from numbax.runtime import nxrt
from numbax.transform.rules.batch_kinds import BatchOp, Decline
from numbax.transform.rules.registry import define, nondifferentiable


def _ravel(op: BatchOp) -> tuple[str, int | None]:
    """A batch of arrays (not of pytrees) raveled per example."""
    value = op.value("x")
    if not op.batched:
        return "", 1
    if value.rank is None or value.elements is not None:
        raise Decline("ravel_pytree of a batch that may be a pytree")
    return f"nxrt.ravel_batch({op.text('x')})", 1


def _unflatten(op: BatchOp) -> tuple[str, int | None]:
    """A batch of Jacobian buffers for shared ``out`` and ``x``: the helper keeps the
    leading batch axis on every leaf (the rank is known for arrays only)."""
    out, x = op.value("out"), op.value("x")
    known = out.elements is None and x.elements is None and None not in (out.rank, x.rank)
    rank = out.rank + x.rank if known else None
    if not op.batched:
        return "", rank
    if op.is_batched("out") or op.is_batched("x"):
        raise Decline("jac_unflatten for outputs or inputs that are batched")
    return op.replaced({}), rank


def _basis(op: BatchOp) -> tuple[str, int | None]:
    """A basis vector of a value the batch shares (a row of ``jacrev``'s loop inside
    ``jacfwd``'s mapped JVP) has that value's rank, which elementwise operations of it
    and batched tangents need to know."""
    if op.batched:
        raise Decline("a basis vector of batched values")
    value = op.value("x")
    return "", value.rank if value.elements is None else None


def _buffer(op: BatchOp) -> tuple[str, int | None]:
    if op.batched:
        raise Decline("a Jacobian buffer for batched values")
    return "", 2


# fmt: off
define(nxrt.ravel_pytree, "x",
       linear="nxrt.ravel_pytree(x)",                     vjp="nxrt.unravel_pytree(g, x)",
       batch=_ravel, samples=["x[3, 2]"])
define(nxrt.unravel_pytree, "flat, like",
       linear="nxrt.unravel_pytree(flat, like)",          vjp="nxrt.ravel_pytree(g)",
       samples=["flat[6], np.zeros((3, 2))"])
define(nxrt.jac_unflatten, "jac, out, x",
       linear="nxrt.jac_unflatten(jac, out, x)",
       vjp="nxrt.jac_flatten(g, out, x)", batch=_unflatten,
       samples=["jac[6, 4], np.zeros((3, 2)), np.zeros(4)"])
define(nxrt.jac_flatten, "tree, out, x",
       linear="nxrt.jac_flatten(tree, out, x)",
       vjp="nxrt.jac_unflatten(g, out, x)",
       samples=["tree[3, 2, 4], np.zeros((3, 2)), np.zeros(4)"])
define(nxrt.jac_diagonal, "d_out, out, x, transformation='jacfwd'",
       linear="nxrt.jac_diagonal(d_out, out, x, transformation)",
       vjp="nxrt.unravel_pytree(np.diag(g), d_out)",
       samples=["d_out[4], np.zeros(4), np.zeros(4)", "d_out[2, 3], np.zeros((2, 3)), np.zeros(6)"])
define(nxrt.ravel_batch, "x",
       linear="nxrt.ravel_batch(x)",                      vjp="nxrt.unravel_batch(g, x)",
       samples=["x[3, 2]"])
define(nxrt.unravel_batch, "flat, like",
       linear="nxrt.unravel_batch(flat, like)",           vjp="nxrt.ravel_batch(g)",
       samples=["flat[3, 2], np.zeros((3, 2))"])
# fmt: on

nondifferentiable([nxrt.jac_size, nxrt.jac_basis_all])
nondifferentiable([nxrt.jac_basis], batch=_basis)
nondifferentiable([nxrt.jac_buffer], batch=_buffer)
