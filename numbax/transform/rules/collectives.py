"""Collectives over a named batch axis (``numbax/lax.py``): ``psum`` and ``pmean`` are
linear, and each example's output depends on every example's input, so the cotangent
of an input is the collective of the outputs' cotangents. ``pmax``/``pmin`` send the
derivative to the examples that attain the extremum, shared among ties (as ``max``
does). ``vmap`` rewrites them for the batch itself (``transform/batch/vectorize.py``,
``transform/batch/collectives.py``), not through batching rules.
"""

from numbax import lax
from numbax.transform.rules.registry import define, nondifferentiable

TIES = "nxrt.psum(np.where(x == ans, 1.0, 0.0), axis_name)"  # how many attain it

# fmt: off
define(lax.psum,  "x, axis_name",
       jvp="nxrt.psum(dx, axis_name)",                             vjp="nxrt.psum(g, axis_name)")
define(lax.pmean, "x, axis_name",
       jvp="nxrt.pmean(dx, axis_name)",                            vjp="nxrt.pmean(g, axis_name)")
define([lax.pmax, lax.pmin], "x, axis_name",
       jvp=f"nxrt.psum(np.where(x == ans, dx, 0), axis_name) / {TIES}",
       vjp=f"np.where(x == ans, nxrt.psum(g, axis_name), 0) / {TIES}")
# fmt: on

nondifferentiable([lax.axis_index])
