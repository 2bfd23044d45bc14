"""Reductions (``sum``, ``max``, ``var``, ``norm``...) with ``axis``/``keepdims``, and the
scans ``cumsum``/``cumprod``.

The JVP of a reduction reduces the tangent, weighted by the derivative of the reduction
with respect to each element (a sum's weights are 1); the VJP spreads the cotangent back
over the reduced axes (``nxrt.broadcast_reduced``) and multiplies it by the same weights:

* ``max``/``min``: ``nxrt.tie_weights``, 1 at the extremum, shared equally among tied
  extrema (as JAX does);
* ``prod``: ``nxrt.prod_others``, the product of the other elements, computed without
  dividing by the element, so it is exact with zeros (the first derivative, any number
  of zeros; second derivatives are exact away from zeros);
* ``norm``: ``nxrt.norm_weights``, ``x / norm`` for the 2-norm and the Frobenius norm,
  ``sign(x)`` for the 1-norm, the sign at the tied maxima for the max norm, and
  ``sign(x) |x|^(p-1) / norm^(p-1)`` for other p; for matrix norms, ``sign(x)`` in the
  column (row) of the largest or smallest sum for 1, -1 (inf, -inf), ``u v^T`` of the
  largest or smallest singular value for 2, -2, and ``U V^T`` for ``'nuc'``
  (``nxrt.norm_weights`` works out which when it runs, from the rank). Matrix norms have
  first derivatives; second ones only where they are piecewise linear (1, inf, -inf):
  the others raise, naming the way around (the singular values of ``np.linalg.svd``).

``cumprod``'s derivatives are scans themselves (``nxrt.cumprod_jvp``/``cumprod_vjp``),
exact with zeros.
"""

import numpy as np

from numbax.transform.rules.batch_kinds import reduction, scan
from numbax.transform.rules.registry import checked_elsewhere, define

# Fragments the templates share: the cotangent spread back over the reduced axes, and
# for var/std the centred input and the number of degrees of freedom (a scalar of a's
# floating dtype: float32 stays float32).
SPREAD = "nxrt.broadcast_reduced(g, a, axis, keepdims)"
KEEP = "axis=axis, keepdims=keepdims"
CENTRED = "(a - np.mean(a, axis=axis, keepdims=True))"
DOF = "nxrt.reduced_count(a, ans, ddof)"
TIES = "nxrt.tie_weights(a, ans, axis, keepdims)"
OTHERS = "nxrt.prod_others(a, axis)"
NORM = "nxrt.norm_weights(x, ans, ord, axis, keepdims)"
MATRIX_NORM = "nxrt.norm_weights(x, ans, ord, (-2, -1), keepdims)"

# fmt: off
#      operation, signature
#      jvp (tangent out)
#      vjp (cotangent in)
#      batching (the axes move up by one past the batch's) and samples
define(np.sum,  "a, axis=None, dtype=None, out=None, keepdims=False, initial=None",
       linear=f"np.sum(a, {KEEP})",
       vjp=SPREAD,
       methods=["sum"], batch=reduction(),
       samples=["a[3, 4], axis=0", "a[2, 3, 4]", "a[2, 3, 4], axis=(0, 2), keepdims=True",
                "a[2, 3, 4], axis=-2"])
define(np.mean, "a, axis=None, dtype=None, out=None, keepdims=False",
       linear=f"np.mean(a, {KEEP})",
       vjp=f"{SPREAD} / nxrt.reduced_count(a, ans)",
       methods=["mean"], batch=reduction(),
       samples=["a[3, 4], axis=-1, keepdims=True", "a[2, 3, 4], axis=(0, 2)", "a[2, 3, 4]"])
define(np.prod, "a, axis=None, dtype=None, out=None, keepdims=False, initial=None",
       jvp=f"np.sum(da * {OTHERS}, {KEEP})",
       vjp=f"{SPREAD} * {OTHERS}",
       methods=["prod"], batch=reduction(),
       samples=["a[3, 4], axis=1", "a[3, 4]", "a[2, 3, 4], axis=(0, 2), keepdims=True"])
define([np.max, np.amax], "a, axis=None, out=None, keepdims=False",
       jvp=f"np.sum(da * {TIES}, {KEEP})",
       vjp=f"{SPREAD} * {TIES}",
       methods=["max"], batch=reduction(),
       samples=["a[3, 4], axis=-1, keepdims=True", "a[2, 3, 4]", "a[2, 3, 4], axis=(0, 1)"])
define([np.min, np.amin], "a, axis=None, out=None, keepdims=False",
       jvp=f"np.sum(da * {TIES}, {KEEP})",
       vjp=f"{SPREAD} * {TIES}",
       methods=["min"], batch=reduction(),
       samples=["a[3, 4], axis=0", "a[2, 3, 4], axis=(1, 2)", "a[2, 3, 4], axis=1, keepdims=True"])
# var = sum((a - mean)^2) / (n - ddof), n the number of elements reduced; std = sqrt(var).
define(np.var,  "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
       jvp=f"2 * np.sum({CENTRED} * da, {KEEP}) / {DOF}",
       vjp=f"2 * {SPREAD} * {CENTRED} / {DOF}",
       methods=["var"], batch=reduction(nests=False),
       samples=["a[3, 4], axis=1, ddof=1", "a[2, 3, 4]",
                "a[2, 3, 4], axis=(0, 2), ddof=1, keepdims=True"])
define(np.std,  "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False",
       jvp=f"np.sum({CENTRED} * da, {KEEP}) / ({DOF} * ans)",
       vjp=f"nxrt.broadcast_reduced(g / ans, a, axis, keepdims) * {CENTRED} / {DOF}",
       methods=["std"], batch=reduction(nests=False),
       samples=["a[3, 4], axis=1", "a[2, 3, 4], ddof=2", "a[2, 3, 4], axis=(0, 1), keepdims=True"])
# For complex x the weights are conj'd (|z|'s slope is conj(z) / |z|, as for np.abs) and
# the tangent is the real part; both are no-ops on real x.
define(np.linalg.norm, "x, ord=None, axis=None, keepdims=False",
       jvp=f"np.real(np.sum(dx * np.conj({NORM}), {KEEP}))",
       vjp=f"nxrt.broadcast_reduced(g, x, axis, keepdims) * np.conj({NORM})",
       batch=reduction("x", nests=False),
       samples=["x[3, 4], axis=1", "x[4]", "x[2, 3, 4]", "x[2, 3, 4], 1, axis=-1, keepdims=True",
                "x[2, 3, 4], np.inf, axis=0", "x[4], -np.inf", "x[2, 3, 4], 3, axis=1",
                "x[3, 4], 0.5, axis=0", "x[4], 2", "x[3, 4], 'fro'",
                "x[2, 3, 4], axis=(1, 2), keepdims=True", "x[3, 4], 2", "x[3, 4], 'nuc'",
                "x[2, 3, 4], -2, axis=(2, 1)", "x[3, 4], 1", "x[4, 3], -np.inf",
                "x[3, 4], -1, keepdims=True", "x[2, 3, 4], np.inf, axis=(0, 2)"])
define(np.linalg.matrix_norm, "x, *, keepdims=False, ord='fro'",
       jvp=f"np.real(np.sum(dx * np.conj({MATRIX_NORM}), axis=(-2, -1), keepdims=keepdims))",
       vjp=f"nxrt.broadcast_reduced(g, x, (-2, -1), keepdims) * np.conj({MATRIX_NORM})",
       samples=checked_elsewhere(
           "tests/autodiff/test_linalg_more.py: its table, and one jitted program for all"))
define(np.trace, "a, offset=0, axis1=0, axis2=1, dtype=None, out=None",
       linear="np.trace(a, offset, axis1, axis2)",
       vjp="nxrt.trace_vjp(g, a, offset, axis1, axis2)",
       methods=["trace"],
       samples=["a[3, 4], 1", "a[3, 3]", "a[3, 4], -1", "a[2, 3, 4], 1, axis1=1, axis2=2",
                "a[2, 3, 4], axis1=2, axis2=0"])

# Scans: axis=None flattens, so the cotangent is flat and goes back to a's shape.
define(np.cumsum,  "a, axis=None, dtype=None, out=None",
       linear="np.cumsum(a, axis=axis)",
       vjp="nxrt.cumsum_reverse(g, a, axis)",
       methods=["cumsum"], batch=scan(),
       samples=["a[3, 4], axis=0", "a[2, 3, 4]", "a[2, 3, 4], axis=-2"])
define(np.cumprod, "a, axis=None, dtype=None, out=None",
       jvp="nxrt.cumprod_jvp(a, da, axis)",
       vjp="nxrt.cumprod_vjp(g, a, axis)",
       methods=["cumprod"], batch=scan(),
       samples=["a[3, 4]", "a[2, 3, 4], axis=2", "a[2, 3, 4], axis=-3"])
# fmt: on
