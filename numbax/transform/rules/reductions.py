"""Reductions (``sum``, ``mean``, ...) with ``axis``/``keepdims``: the JVP reduces the
tangent the same way; the VJP spreads the cotangent back over the reduced axes
(``nxrt.expand_reduced``)."""

import numpy as np

from numbax.transform.rules.registry import define

# fmt: off
define(np.sum, "a, axis=None, dtype=None, out=None, keepdims=False",
       jvp="np.sum(da, axis=axis, keepdims=keepdims)",
       vjp="nxrt.broadcast_reduced(g, a, axis, keepdims)",
       methods=["sum"])
define(np.mean, "a, axis=None, dtype=None, out=None, keepdims=False",
       jvp="np.mean(da, axis=axis, keepdims=keepdims)",
       vjp="nxrt.broadcast_reduced(g, a, axis, keepdims) * (np.size(ans) / np.size(a))",
       methods=["mean"])
# fmt: on
