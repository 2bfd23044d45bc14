"""Collectives over a named batch axis (``numbax/lax.py``). Each example's output
depends on every example's input, so the cotangent of an input is a collective of the
outputs' cotangents: ``psum`` and ``pmean`` are linear and their own transposes;
``all_gather`` and ``psum_scatter`` are each other's (JAX's rules); ``ppermute``'s is the
permutation reversed (``ppermute_inverse``), which gives zeros to the examples that sent
nothing. ``pmax``/``pmin`` send the derivative to the examples that attain the extremum,
shared among ties (as ``max`` does). ``vmap`` rewrites them for the batch itself
(``transform/batch/vectorize_expressions.py``, ``transform/batch/collectives.py``), not
through batching rules.
"""

from numbax import lax
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)

TIES = "nxrt.psum(np.where(x == ans, 1.0, 0.0), axis_name)"  # how many attain it
NAMED_AXIS = checked_elsewhere(
    "tests/api/test_vmap_collectives.py, tests/api/test_pmap_collectives.py: "
    "under a named batch axis"
)

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
define(lax.all_gather, "x, axis_name, *, axis=0, tiled=False",
       linear="nxrt.all_gather(x, axis_name, axis=axis, tiled=tiled)",
       vjp="nxrt.psum_scatter(g, axis_name, scatter_dimension=axis, tiled=tiled)",
       samples=NAMED_AXIS)
define(lax.psum_scatter, "x, axis_name, *, scatter_dimension=0, tiled=False",
       linear="nxrt.psum_scatter(x, axis_name, scatter_dimension=scatter_dimension, "
              "tiled=tiled)",
       vjp="nxrt.all_gather(g, axis_name, axis=scatter_dimension, tiled=tiled)",
       samples=NAMED_AXIS)
# fmt: on
for permute, transpose in [
    (lax.ppermute, lax.ppermute_inverse),
    (lax.ppermute_inverse, lax.ppermute),
]:
    define(permute, "x, axis_name, perm",
           linear=f"nxrt.{permute.__name__}(x, axis_name, perm)",
           vjp=f"nxrt.{transpose.__name__}(g, axis_name, perm)",
           samples=NAMED_AXIS)  # fmt: skip

nondifferentiable([lax.axis_index, lax.axis_size])
