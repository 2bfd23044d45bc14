"""Shape manipulation: each is linear, so its JVP applies it to the tangent and its VJP
applies its adjoint (the inverse rearrangement, or a sum over repeated elements).

Functions that join several arrays (``np.concatenate``, ``np.stack``, ...) take them as
one tuple argument (``normalize`` makes ``np.concatenate([a, b])`` a tuple variable
first): its tangent is the tuple of the arrays' tangents, and its cotangent the tuple of
the pieces of ``g`` (``nxrt.split_like``).

The adjoints that are not NumPy functions live in ``numbax/runtime/shapes.py``; their
own rules are at the end, so derivative code can be differentiated again.
"""

import gast
import numpy as np

from numbax.runtime import nxrt
from numbax.transform.rules.batch_kinds import (
    BatchOp,
    Decline,
    Value,
    joined,
    repeated,
    same_shape,
    shifted_axis,
    text,
)
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)


# -- batching rules (vmap's vectorized method, batch_kinds.py) of the table below
def _reversed_axes(op: BatchOp) -> tuple[str, int | None]:
    """``x.T``, ``np.transpose(x)``: the example's axes reversed, the batch axis first."""
    rank = op.value("a").rank
    if not op.batched:
        return "", rank
    if not op.is_none("axes") or rank is None:
        raise Decline(f"{op.name} with given axes")
    if rank <= 1:
        return op.text("a"), rank
    axes = (0, *range(rank, 0, -1))
    return f"np.transpose({op.text('a')}, {axes!r})", rank


def _reshaped(op: BatchOp) -> tuple[str, int | None]:
    """``np.reshape(x, shape)``, ``x.reshape(*shape)``, ``np.ravel(x)``: each example
    reshaped, the batch axis kept first (from a C-ordered copy where the batch is not
    one: compiled code reshapes contiguous arrays only)."""
    given = [p for p in op.bound if p.startswith("shape") and not op.is_none(p)]
    if op.name == "numpy.ravel":  # also x.ravel(), x.flatten()
        parts = ["-1"]
    elif len(given) == 1 and isinstance(op.bound[given[0]], gast.Tuple):
        parts = [text(e) for e in op.bound[given[0]].elts]
    elif given and all(op.value(p).rank == 0 for p in given):
        parts = [op.text(p) for p in given]  # reshape(a, 6), x.reshape(2, 3)
    else:
        parts = None  # a tuple in a variable: its length is the rank, if known
    elements = op.value(given[0]).elements if parts is None and len(given) == 1 else None
    rank = len(parts) if parts is not None else None if elements is None else len(elements)
    if not op.batched:
        return "", rank
    if rank is None or op.constant("order") not in (None, "C"):
        raise Decline(f"{op.name} to a shape of unknown length, or in Fortran order")
    a = op.text("a")
    if parts is None:
        shape = f"({a}.shape[0],) + {op.text(given[0])}"
    else:
        shape = f"({', '.join([f'{a}.shape[0]', *parts])})"
    return f"np.reshape(np.ascontiguousarray({a}), {shape})", rank


def _split(op: BatchOp) -> tuple[str, Value]:
    """The adjoint of a concatenation: each example's cotangent split like the arrays it
    joined, those the batch shares given the batch axis first."""
    parts = op.elements("arrays")
    if parts is None or any(v.rank is None for _, v in parts):
        if op.batched:
            raise Decline(f"{op.name} of a tuple whose elements are not known")
        return "", Value(None)
    pieces = tuple(Value(v.rank, op.batched) for _, v in parts)
    if not op.batched:
        return "", Value(None, False, pieces)
    axis = op.constant("axis")
    rank = op.value("value").rank
    if not isinstance(axis, int) or rank is None or not op.is_batched("value"):
        raise Decline(f"{op.name} along axis {axis!r}, or of a shared cotangent")
    likes = [s if v.batched else repeated(s) for s, v in parts]
    where = shifted_axis(axis, rank, op.name)
    return f"nxrt.split_like({op.text('value')}, ({', '.join(likes)},), {where})", Value(
        None, True, pieces
    )


_ROW_STACK = [np.row_stack] if hasattr(np, "row_stack") else []
"""vstack's alias, deprecated in NumPy 2.0 and gone from NumPy 2.5."""

# fmt: off
#      operation, parameters (NumPy's), [array methods/attributes of the same meaning]
#      jvp: the tangent out (linear: the operation applied to the tangent)
#      vjp: the cotangent in (SELF_ADJOINT: the same operation on it)
#      batching, and samples to check the derivatives on (registry.py)
define(np.reshape, "a, shape=None, order='C', copy=None",
       linear="np.reshape(a, shape)",
       vjp="nxrt.reshape_like(g, a)",
       batch=_reshaped, samples=["a[3, 4], (2, 6)", "a[3, 4], -1"])
define([], "a, *shape, order='C', copy=None", methods=["reshape"], name=".reshape()",
       jvp="nxrt.reshape_like(da, ans)",
       vjp="nxrt.reshape_like(g, a)",
       batch=_reshaped, samples=["a[3, 4], 6, 2", "a[3, 4], (2, 6)"])
define(np.ravel, "a, order='C'", methods=["ravel", "flatten"],
       linear="np.ravel(a)",
       vjp="nxrt.reshape_like(g, a)",
       batch=_reshaped, samples=["a[3, 4]"])
define(np.transpose, "a, axes=None",
       linear="np.transpose(a, axes)",
       vjp="np.transpose(g, nxrt.inverse_axes(axes))",
       batch=_reversed_axes, samples=["a[3, 4]", "a[2, 3, 4], (1, 2, 0)"])
define([], "a, *axes", name=".transpose()", methods=["transpose"],
       jvp="np.transpose(da, nxrt.transpose_axes(axes))",
       vjp="np.transpose(g, nxrt.inverse_axes(nxrt.transpose_axes(axes)))",
       samples=["a[3, 4]", "a[2, 3, 4], 2, 0, 1", "a[2, 3, 4], (1, 2, 0)"])
define([], "a", name=".T", attributes=["T"],
       linear="a.T",
       vjp=SELF_ADJOINT,
       batch=_reversed_axes, samples=["a[3, 4]"])
define(np.swapaxes, "a, axis1, axis2", methods=["swapaxes"],
       linear="np.swapaxes(a, axis1, axis2)",
       vjp=SELF_ADJOINT,
       samples=["a[2, 3, 4], 0, 2"])
define(np.moveaxis, "a, source, destination",
       linear="np.moveaxis(a, source, destination)",
       vjp="np.moveaxis(g, destination, source)",
       samples=["a[2, 3, 4], 0, -1"])
define(np.expand_dims, "a, axis",
       linear="np.expand_dims(a, axis)",
       vjp="nxrt.reshape_like(g, a)",
       samples=["a[3, 4], 1"])
define(np.squeeze, "a, axis=None", methods=["squeeze"],
       jvp="nxrt.reshape_like(da, ans)",
       vjp="nxrt.reshape_like(g, a)",
       samples=["a[3, 1, 4], 1", "a[3, 1, 4]"])  # Numba squeezes a given axis only
define(np.atleast_1d, "a",
       linear="np.atleast_1d(a)",
       vjp="nxrt.reshape_like(g, a)",
       samples=["a[]"])
define(np.atleast_2d, "a",
       linear="np.atleast_2d(a)",
       vjp="nxrt.reshape_like(g, a)",
       samples=["a[4]"])
define(np.ascontiguousarray, "a, dtype=None",
       linear="np.ascontiguousarray(a)",
       vjp="nxrt.unbroadcast(g, a)",
       batch=same_shape("a"), samples=["a[3, 4]"])
define(np.broadcast_to, "array, shape, subok=False",
       linear="np.broadcast_to(array, shape)",
       vjp="nxrt.unbroadcast(g, array)",
       samples=["array[4], (3, 4)", "array[3, 1], (2, 3, 4)"])

define(np.concatenate, "arrays, axis=0, out=None, dtype=None, casting='same_kind'",
       linear="np.concatenate(arrays, axis)",
       vjp="nxrt.split_like(g, arrays, axis)",
       batch=joined(new_axis=False),
       samples=["(a[2, 3], b[1, 3]), axis=0", "(a[2, 3], b[2, 1], c[2, 2]), axis=1"])
define(np.stack, "arrays, axis=0, out=None, dtype=None, casting='same_kind'",
       linear="np.stack(arrays, axis)",
       vjp="nxrt.unstack_like(g, arrays, axis)",
       batch=joined(new_axis=True), samples=["(a[2, 3], b[2, 3]), axis=1"])
define(np.hstack, "tup, dtype=None, casting='same_kind'",
       linear="np.hstack(tup)",
       vjp="nxrt.split_like(g, tup, 1 if ans.ndim > 1 else 0)",
       samples=["(a[2, 3], b[2, 1])", "(a[3], b[2])"])
define([np.vstack, *_ROW_STACK], "tup, dtype=None, casting='same_kind'",
       linear="np.vstack(tup)",
       vjp="nxrt.split_like(g, tup, 0)",
       samples=["(a[2, 3], b[1, 3])"])

define(np.flip, "m, axis=None",
       linear="np.flip(m, axis)",
       vjp=SELF_ADJOINT,
       samples=["m[3, 4]", "m[3, 4], 1"])
define([np.fliplr], "m",
       linear="np.fliplr(m)",
       vjp=SELF_ADJOINT,
       samples=["m[3, 4]"])
define([np.flipud], "m",
       linear="np.flipud(m)",
       vjp=SELF_ADJOINT,
       samples=["m[3, 4]"])
define(np.roll, "a, shift, axis=None",
       linear="np.roll(a, shift, axis)",
       vjp="nxrt.unrolled(g, shift, axis)",
       samples=["a[3, 4], 2", "a[3, 4], -1, 1"])
define(np.tile, "A, reps",
       linear="np.tile(A, reps)",
       vjp="nxrt.untile(g, A, reps)",
       samples=["A[3], 2", "A[2, 3], (2, 1)"])
define(np.repeat, "a, repeats, axis=None", methods=["repeat"],
       linear="np.repeat(a, repeats, axis)",
       vjp="nxrt.unrepeat(g, a, repeats, axis)",
       samples=["a[2, 3], 2", "a[2, 3], 2, 1"])
define(np.diag, "v, k=0",
       linear="np.diag(v, k)",
       vjp="nxrt.undiag(g, v, k)",
       samples=["v[3]", "v[3, 4], 1", "v[3], -1"])
define(np.triu, "m, k=0",
       linear="np.triu(m, k)",
       vjp=SELF_ADJOINT,
       samples=["m[3, 4]", "m[3, 4], 1"])
define(np.tril, "m, k=0",
       linear="np.tril(m, k)",
       vjp=SELF_ADJOINT,
       samples=["m[3, 4]", "m[3, 4], -1"])

# A copy is the identity, with a tangent of its own (the copy may be written into while
# the original's tangent is still needed); a cotangent is never written into in place.
define(np.copy, "a, order='K', subok=False", methods=["copy"],
       jvp="nxrt.owned(da)",
       vjp="g",
       batch=same_shape("a"), samples=["a[3, 4]"])
# x.item(): the one element as a Python scalar; its cotangent goes back to x's shape.
define([], "a", name=".item()", methods=["item"],
       linear="a.item()",
       vjp="nxrt.unbroadcast(g, a)",
       samples=["a[1]", "a[1, 1]"])

# x.astype(dtype): a float dtype keeps the derivative, an integer or bool one drops it.
define([], "x, dtype, order='K', casting='unsafe', subok=True, copy=True",
       name=".astype()", methods=["astype"],
       jvp="nxrt.cast(dx, dtype)",
       vjp="nxrt.uncast(g, x, dtype)",
       samples=["x[3, 2], np.float64"])

# -- the adjoints' own rules (runtime/shapes.py): each is linear in its first argument --
define(nxrt.split_like, "value, arrays, axis=0, promote='leading'",
       linear="nxrt.split_like(value, arrays, axis, promote)",
       vjp="nxrt.join_like(g, value, axis, promote)",
       batch=_split, samples=checked_elsewhere(
           "tests/autodiff/test_rules_shapes_indexing.py: a tuple of pieces"))
define(nxrt.join_like, "pieces, value, axis=0, promote='leading'",
       linear="nxrt.join_like(pieces, value, axis, promote)",
       vjp="nxrt.split_like(g, pieces, axis, promote)",
       samples=["(a[2, 3], b[1, 3]), np.zeros((3, 3)), 0"])
define(nxrt.unstack_like, "value, arrays, axis=0",
       linear="nxrt.unstack_like(value, arrays, axis)",
       vjp="np.stack(g, axis)",
       samples=checked_elsewhere(
           "tests/autodiff/test_rules_shapes_indexing.py: a tuple of pieces"))
define(nxrt.unrolled, "x, shift, axis=None",
       linear="nxrt.unrolled(x, shift, axis)",
       vjp="np.roll(g, shift, axis)",
       samples=["x[3, 4], 2", "x[3, 4], -1, 1"])
define(nxrt.untile, "value, A, reps",
       linear="nxrt.untile(value, A, reps)",
       vjp="np.tile(g, reps)",
       samples=["value[4, 3], np.zeros((2, 3)), (2, 1)"])
define(nxrt.unrepeat, "value, a, repeats, axis=None",
       linear="nxrt.unrepeat(value, a, repeats, axis)",
       vjp="np.repeat(g, repeats, axis)",
       samples=["value[2, 6], np.zeros((2, 3)), 2, 1"])
define(nxrt.undiag, "value, v, k=0",
       linear="nxrt.undiag(value, v, k)",
       vjp="np.diag(g, k)",
       samples=["value[3, 3], np.zeros(3)", "value[3], np.zeros((3, 4)), 1"])
define(nxrt.cast, "value, dtype",
       linear="nxrt.cast(value, dtype)",
       vjp="nxrt.uncast(g, value, dtype)",
       samples=["value[3, 2], np.float64"])
define(nxrt.uncast, "value, x, dtype",
       linear="nxrt.uncast(value, x, dtype)",
       vjp="nxrt.cast(g, dtype)",
       samples=["value[3, 2], np.zeros((3, 2)), np.float64"])
define(nxrt.as_kind_of, "value, like",
       linear="nxrt.as_kind_of(value, like)",             vjp="nxrt.as_kind_of(g, value)",
       samples=["value[3], np.zeros(3)", "value[2, 3], np.zeros((2, 3))"])
# fmt: on

nondifferentiable([nxrt.inverse_axes, nxrt.transpose_axes, nxrt.is_array])
