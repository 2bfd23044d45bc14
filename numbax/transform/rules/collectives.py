"""Collectives over a named batch axis (``numbax/lax.py``): ``psum`` and ``pmean`` are
linear, and each example's output depends on every example's input, so the cotangent
of an input is the collective of the outputs' cotangents. ``pmax``/``pmin`` send the
derivative to the examples that attain the extremum, shared among ties (as ``max``
does). ``vmap`` rewrites them for the batch itself (``transform/batch/vectorize.py``,
``transform/batch/collectives.py``), not through batching rules.
"""

from numbax import lax
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)

TIES = "nxrt.psum(np.where(x == ans, 1.0, 0.0), axis_name)"  # how many attain it
NAMED_AXIS = checked_elsewhere("tests/test_vmap_collectives.py: under a named batch axis")

# fmt: off
define(lax.psum,  "x, axis_name",
       linear="nxrt.psum(x, axis_name)",                           vjp=SELF_ADJOINT,
       samples=NAMED_AXIS)
define(lax.pmean, "x, axis_name",
       linear="nxrt.pmean(x, axis_name)",                          vjp=SELF_ADJOINT,
       samples=NAMED_AXIS)
define([lax.pmax, lax.pmin], "x, axis_name",
       jvp=f"nxrt.psum(np.where(x == ans, dx, 0), axis_name) / {TIES}",
       vjp=f"np.where(x == ans, nxrt.psum(g, axis_name), 0) / {TIES}",
       samples=NAMED_AXIS)
# fmt: on

nondifferentiable([lax.axis_index])
