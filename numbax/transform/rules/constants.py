"""Functions whose results carry no derivative: constructors, shapes, rounding,
comparisons, integer-valued results. To the transformations their results are
constants, whatever their arguments.

``np.full``/``np.full_like`` and ``np.linspace`` are constructors too, but their values
do depend on some arguments (the fill value, the end points), so they have rules.
"""

import numpy as np

from numbax.runtime import nxrt
from numbax.transform.rules.batch_kinds import constructor, elementwise, same_shape
from numbax.transform.rules.registry import define, nondifferentiable

# fmt: off
# constructors: values that depend on shapes alone
nondifferentiable([np.zeros, np.ones, np.empty], batch=constructor("args0"))
nondifferentiable([np.arange], batch=constructor("args0", rank=1))
nondifferentiable([np.eye, np.identity], batch=constructor("args0", rank=2))
nondifferentiable([np.tri, np.indices, np.tril_indices, np.triu_indices, np.diag_indices])
nondifferentiable([np.zeros_like, np.ones_like, np.empty_like], batch=same_shape("args0"))
# shapes; integer results: positions, counts
nondifferentiable(
    [np.shape, np.ndim, np.size]
    + [np.argmax, np.argmin, np.argsort, np.argpartition, np.nonzero, np.flatnonzero]
    + [np.argwhere, np.count_nonzero, np.searchsorted]
    # tests of a whole array
    + [np.isreal, np.iscomplex, np.isclose, np.allclose, np.array_equal, np.all, np.any],
    methods=["argmax", "argmin", "argsort", "argpartition", "nonzero", "searchsorted"]
    + ["all", "any", "round"],
    # an array's layout and where it lives: integers, flags, a device
    attributes=["shape", "ndim", "size", "itemsize", "nbytes", "strides"]
    + ["flags", "ctypes", "device"],
)
# the dtype: the same for the batch as for each example
nondifferentiable([], attributes=["dtype"], batch=lambda op: (op.replaced({}), None, False))
# elementwise: rounding (floor, ceil, round, sign: elementwise.py), piecewise constant,
# and tests and comparisons, boolean
nondifferentiable(
    [np.around, np.rint, np.trunc, np.fix, np.signbit, np.heaviside]
    + [np.isinf, np.isneginf, np.isposinf]
    + [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]
    + [np.logical_and, np.logical_or, np.logical_not, np.logical_xor],
    batch=elementwise,
)
# fmt: on

# fmt: off
define(np.full,      "shape, fill_value, dtype=None, order='C', device=None, like=None",
       jvp={"fill_value": "nxrt.broadcast_like(dfill_value, ans)"},
       vjp={"fill_value": "nxrt.unbroadcast(g, fill_value)"},
       samples=["(3, 2), fill_value[]", "(3, 2), fill_value[2]"])
define(np.full_like, "a, fill_value, dtype=None, order='K', subok=True, shape=None, device=None",
       jvp={"fill_value": "nxrt.broadcast_like(dfill_value, ans)"},
       vjp={"fill_value": "nxrt.unbroadcast(g, fill_value)"},
       samples=["np.ones((3, 2)), fill_value[]", "np.ones((3, 2)), fill_value[2]"])
# np.linspace(start, stop) is start * (1 - t) + stop * t, t from 0 to 1 along axis 0.
_T = "nxrt.linspace_weights(ans, endpoint, axis)"  # t, shaped to broadcast against ans
define(np.linspace,
       "start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, device=None",
       jvp={"start": f"nxrt.broadcast_like(dstart * (1 - {_T}), ans)",
            "stop":  f"nxrt.broadcast_like(dstop * {_T}, ans)"},
       vjp={"start": f"nxrt.unbroadcast(g * (1 - {_T}), start)",
            "stop":  f"nxrt.unbroadcast(g * {_T}, stop)"},
       samples=["start[], stop[], 5", "start[2], stop[2], 4, endpoint=False"])
# fmt: on

nondifferentiable([nxrt.linspace_weights])
