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
    attribute_rule,
    batching,
    define,
    method_rule,
    nondifferentiable,
)

# fmt: off
#      operation, parameters (NumPy's), [array methods/attributes of the same meaning]
#      jvp: the tangent out
#      vjp: the cotangent in
define(np.reshape, "a, shape=None, order='C', copy=None",
       jvp="np.reshape(da, shape)",
       vjp="nxrt.reshape_like(g, a)")
define([], "a, *shape, order='C', copy=None", methods=["reshape"], name=".reshape()",
       jvp="nxrt.reshape_like(da, ans)",
       vjp="nxrt.reshape_like(g, a)")
define(np.ravel, "a, order='C'", methods=["ravel", "flatten"],
       jvp="np.ravel(da)",
       vjp="nxrt.reshape_like(g, a)")
define(np.transpose, "a, axes=None",
       jvp="np.transpose(da, axes)",
       vjp="np.transpose(g, nxrt.inverse_axes(axes))")
define([], "a, *axes", name=".transpose()", methods=["transpose"],
       jvp="np.transpose(da, nxrt.transpose_axes(axes))",
       vjp="np.transpose(g, nxrt.inverse_axes(nxrt.transpose_axes(axes)))")
define([], "a", name=".T", attributes=["T"],
       jvp="da.T",
       vjp="g.T")
define(np.swapaxes, "a, axis1, axis2", methods=["swapaxes"],
       jvp="np.swapaxes(da, axis1, axis2)",
       vjp="np.swapaxes(g, axis1, axis2)")
define(np.moveaxis, "a, source, destination",
       jvp="np.moveaxis(da, source, destination)",
       vjp="np.moveaxis(g, destination, source)")
define(np.expand_dims, "a, axis",
       jvp="np.expand_dims(da, axis)",
       vjp="nxrt.reshape_like(g, a)")
define(np.squeeze, "a, axis=None", methods=["squeeze"],
       jvp="nxrt.reshape_like(da, ans)",
       vjp="nxrt.reshape_like(g, a)")
define(np.atleast_1d, "a",
       jvp="np.atleast_1d(da)",
       vjp="nxrt.reshape_like(g, a)")
define(np.atleast_2d, "a",
       jvp="np.atleast_2d(da)",
       vjp="nxrt.reshape_like(g, a)")
define(np.ascontiguousarray, "a, dtype=None",
       jvp="np.ascontiguousarray(da)",
       vjp="nxrt.unbroadcast(g, a)")
define(np.broadcast_to, "array, shape, subok=False",
       jvp="np.broadcast_to(darray, shape)",
       vjp="nxrt.unbroadcast(g, array)")

define(np.concatenate, "arrays, axis=0, out=None, dtype=None, casting='same_kind'",
       jvp="np.concatenate(darrays, axis)",
       vjp="nxrt.split_like(g, arrays, axis)")
define(np.stack, "arrays, axis=0, out=None, dtype=None, casting='same_kind'",
       jvp="np.stack(darrays, axis)",
       vjp="nxrt.unstack_like(g, arrays, axis)")
define(np.hstack, "tup, dtype=None, casting='same_kind'",
       jvp="np.hstack(dtup)",
       vjp="nxrt.split_like(g, tup, 1 if ans.ndim > 1 else 0)")
define(np.vstack, "tup, dtype=None, casting='same_kind'",
       jvp="np.vstack(dtup)",
       vjp="nxrt.split_like(g, tup, 0)")

define(np.flip, "m, axis=None",
       jvp="np.flip(dm, axis)",
       vjp="np.flip(g, axis)")
define([np.fliplr], "m",
       jvp="np.fliplr(dm)",
       vjp="np.fliplr(g)")
define([np.flipud], "m",
       jvp="np.flipud(dm)",
       vjp="np.flipud(g)")
define(np.roll, "a, shift, axis=None",
       jvp="np.roll(da, shift, axis)",
       vjp="nxrt.unrolled(g, shift, axis)")
define(np.tile, "A, reps",
       jvp="np.tile(dA, reps)",
       vjp="nxrt.untile(g, A, reps)")
define(np.repeat, "a, repeats, axis=None", methods=["repeat"],
       jvp="np.repeat(da, repeats, axis)",
       vjp="nxrt.unrepeat(g, a, repeats, axis)")
define(np.diag, "v, k=0",
       jvp="np.diag(dv, k)",
       vjp="nxrt.undiag(g, v, k)")
define(np.triu, "m, k=0",
       jvp="np.triu(dm, k)",
       vjp="np.triu(g, k)")
define(np.tril, "m, k=0",
       jvp="np.tril(dm, k)",
       vjp="np.tril(g, k)")

# A copy is the identity, with a tangent of its own (the copy may be written into while
# the original's tangent is still needed); a cotangent is never written into in place.
define(np.copy, "a, order='K', subok=False", methods=["copy"],
       jvp="nxrt.owned(da)",
       vjp="g")
# x.item(): the one element as a Python scalar; its cotangent goes back to x's shape.
define([], "a", name=".item()", methods=["item"],
       jvp="da.item()",
       vjp="nxrt.unbroadcast(g, a)")

# x.astype(dtype): a float dtype keeps the derivative, an integer or bool one drops it.
define([], "x, dtype, order='K', casting='unsafe', subok=True, copy=True",
       name=".astype()", methods=["astype"],
       jvp="nxrt.cast(dx, dtype)",
       vjp="nxrt.uncast(g, x, dtype)")

# -- the adjoints' own rules (runtime/shapes.py): each is linear in its first argument --
define(nxrt.split_like, "value, arrays, axis=0",
       jvp="nxrt.split_like(dvalue, arrays, axis)",
       vjp="nxrt.join_like(g, value, axis)")
define(nxrt.join_like, "pieces, value, axis=0",
       jvp="nxrt.join_like(dpieces, value, axis)",
       vjp="nxrt.split_like(g, pieces, axis)")
define(nxrt.unstack_like, "value, arrays, axis=0",
       jvp="nxrt.unstack_like(dvalue, arrays, axis)",
       vjp="np.stack(g, axis)")
define(nxrt.unrolled, "x, shift, axis=None",
       jvp="nxrt.unrolled(dx, shift, axis)",
       vjp="np.roll(g, shift, axis)")
define(nxrt.untile, "value, A, reps",
       jvp="nxrt.untile(dvalue, A, reps)",
       vjp="np.tile(g, reps)")
define(nxrt.unrepeat, "value, a, repeats, axis=None",
       jvp="nxrt.unrepeat(dvalue, a, repeats, axis)",
       vjp="np.repeat(g, repeats, axis)")
define(nxrt.undiag, "value, v, k=0",
       jvp="nxrt.undiag(dvalue, v, k)",
       vjp="np.diag(g, k)")
define(nxrt.cast, "value, dtype",
       jvp="nxrt.cast(dvalue, dtype)",
       vjp="nxrt.uncast(g, value, dtype)")
define(nxrt.uncast, "value, x, dtype",
       jvp="nxrt.uncast(dvalue, x, dtype)",
       vjp="nxrt.cast(g, dtype)")
# fmt: on

nondifferentiable([nxrt.inverse_axes, nxrt.transpose_axes])


# -- batching (vmap's vectorized method, batch_kinds.py)
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


batching(_reversed_axes, np.transpose, attribute_rule("T"))


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


batching(_reshaped, np.reshape, method_rule("reshape"), np.ravel)
batching(joined(new_axis=False), np.concatenate)
batching(joined(new_axis=True), np.stack)


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


batching(_split, nxrt.split_like)
batching(same_shape("a"), np.ascontiguousarray, np.copy, method_rule("copy"))
