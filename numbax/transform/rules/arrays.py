"""Arrays built from values and cut into pieces: ``np.array`` of lists and tuples,
``np.append``/``np.insert``/``np.delete``, the joining functions that promote their
arrays first (``np.column_stack``, ``np.dstack``), the splitting functions, ``np.pad``,
``np.rot90``, and the ufunc methods normalization spells as functions (``np.add.outer``
as ``np.add(nxrt.outer_operand(a, b), b)``, ``np.maximum.accumulate`` as
``nxrt.cummax``).

Each is linear in the values it takes apart or puts together. Operations that only pick
elements (``np.delete``, ``np.pad``, running maxima) differentiate through positions
(``numbax/runtime/gathers.py``): the operation applied to the numbers of a's elements
says where each element of the result comes from, and the cotangent is summed back
there (``nxrt.ungather``).
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from numbax.runtime import nxrt
from numbax.runtime.shapes import concatenated_item
from numbax.transform.rules.batch_kinds import BatchOp, Decline, repeated, scan
from numbax.transform.rules.registry import checked_elsewhere, define, nondifferentiable


# -- batching rules (vmap's vectorized method, batch_kinds.py) of the table below
def _concatenated_item(op: BatchOp) -> tuple[str, int | None]:
    """Each example's item reshaped as one example's is, the batch axis kept first."""
    rank, ndmin, trans1d = op.value("item").rank, op.constant("ndmin"), op.constant("trans1d")
    if rank is None or not isinstance(ndmin, int) or not isinstance(trans1d, int):
        if op.batched:
            raise Decline(f"{op.name} of an item whose rank is not known")
        return "", None
    # the helper on an item whose axis d has length d + 2 says where each axis goes
    probe = concatenated_item(np.zeros(tuple(range(2, rank + 2))), ndmin, trans1d)
    if not op.batched:
        return "", probe.ndim
    item = op.text("item")
    lengths = ["1" if n == 1 else f"{item}.shape[{n - 1}]" for n in probe.shape]
    shape = ", ".join([f"{item}.shape[0]", *lengths])
    return f"np.reshape(np.ascontiguousarray({item}), ({shape}))", probe.ndim


def _from_values(param: str) -> Callable[[BatchOp], tuple[str, int | None]]:
    """``np.array(obj)``/``np.asarray(obj)``: of a tuple (a list the vectorizer made
    one) of values of one shape per example, their stack along the axis after the
    batch's, the shared ones repeated over the batch; of an array, the array."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        parts = op.elements(param)
        if parts is None:  # an array (or a tuple whose elements are not known here)
            rank = op.value(param).rank
            if op.batched and (rank is None or op.constant("ndmin") not in (None, 0)):
                raise Decline(f"{op.name} of a value whose rank is not known, or ndmin=")
            return (op.replaced({}) if op.batched else ""), rank
        ranks = {value.rank for _, value in parts}
        rank = ranks.pop() + 1 if len(ranks) == 1 and None not in ranks else None
        if not op.batched:
            return "", rank
        if rank is None or op.constant("ndmin") not in (None, 0):
            raise Decline(f"{op.name} of values whose ranks are not known or differ, or ndmin=")
        stacked = ", ".join(s if v.batched else repeated(s) for s, v in parts)
        return op.replaced({param: f"np.stack(({stacked},), axis=1)"}), rank

    return rule


def _pad(op: BatchOp) -> tuple[str, int | None]:
    """``np.pad`` of a batch: each example's widths (and per-axis constants), none on
    the batch axis."""
    rank = op.value("array").rank
    if not op.batched:
        return "", rank
    if rank is None or op.is_batched("constant_values") or op.is_batched("pad_width"):
        raise Decline(f"{op.name} of batched widths or constants, or of an unknown rank")
    widths = _per_axis(op.nested_constant("pad_width"), rank, "pad_width")
    sources = {"pad_width": repr(((0, 0), *widths))}
    if op.value("constant_values").rank != 0:  # per axis: none for the batch's
        constants = ((0, 0), *_per_axis(op.nested_constant("constant_values"), rank, "constants"))
        if any(isinstance(c, float) for pair in constants for c in pair):  # one type
            constants = tuple((float(before), float(after)) for before, after in constants)
        sources["constant_values"] = repr(constants)
    return op.replaced(sources), rank


def _per_axis(widths: Any, rank: int, what: str) -> tuple[tuple[Any, Any], ...]:
    """NumPy's forms of per-axis pairs (``2``, ``(1, 2)``, ``((1, 2), (0, 3))``), each
    axis's pair spelled out."""
    try:
        pairs = np.broadcast_to(np.asarray(widths, dtype=object), (rank, 2))
    except ValueError:
        raise Decline(f"np.pad: {what} {widths!r} for rank {rank}") from None
    return tuple((before, after) for before, after in pairs.tolist())


# fmt: off
#      operation, parameters (NumPy's): jvp, vjp, samples (registry.py)

# np.array(object): object is an array, or a list or tuple of scalars and arrays of one
# shape (normalization makes nested literal lists arrays, row by row). The tangent is
# cast to the result's dtype: an integer result carries no derivative.
define(np.array, "object, dtype=None, *, copy=True, order='K', subok=False, ndmin=0, like=None",
       jvp="nxrt.cast(np.array(dobject), ans.dtype)",
       vjp="nxrt.unarray(g, object)", batch=_from_values("object"),
       samples=["(a[], b[], 2.0)", "[a[3], b[3]]", "a[2, 3]"])
define(np.asarray, "a, dtype=None, order=None, *, device=None, copy=None, like=None",
       jvp="nxrt.cast(np.array(da), ans.dtype)",
       vjp="nxrt.unarray(g, a)", batch=_from_values("a"),
       samples=["(a[], b[])", "a[2, 3]"])
define(np.atleast_3d, "a",
       linear="np.atleast_3d(a)",
       vjp="nxrt.reshape_like(g, a)",
       samples=["a[]", "a[4]", "a[2, 3]"])
define(np.rot90, "m, k=1, axes=(0, 1)",
       linear="np.rot90(m, k, axes)",
       vjp="np.rot90(g, -k, axes)",
       samples=["m[2, 3]", "m[2, 3], 3", "m[2, 3, 4], 2, (1, 2)"])

# Joining and splitting: the adjoint of one is the other (runtime/shapes.py). A split
# returns a list, whose Jacobian compiled code does not build: its pieces are checked
# where they are used.
_PIECES = "tests/autodiff/test_arrays_from_values.py: pieces used in the function"
define(np.column_stack, "tup",
       linear="np.column_stack(tup)",
       vjp="nxrt.split_like(g, tup, 1, 'column')",
       samples=["(a[3], b[3, 2])", "[a[3], b[3]]"])
define(np.dstack, "tup",
       linear="np.dstack(tup)",
       vjp="nxrt.split_like(g, tup, 2, 'depth')",
       samples=["(a[3], b[3])", "(a[2, 3], b[2, 3, 2])"])
define(np.split, "ary, indices_or_sections, axis=0",
       linear="np.split(ary, indices_or_sections, axis)",
       vjp="nxrt.join_like(g, ary, axis)",
       samples=checked_elsewhere(_PIECES))
define(np.array_split, "ary, indices_or_sections, axis=0",
       linear="np.array_split(ary, indices_or_sections, axis)",
       vjp="nxrt.join_like(g, ary, axis)",
       samples=checked_elsewhere(_PIECES))
define(np.hsplit, "ary, indices_or_sections",
       linear="np.hsplit(ary, indices_or_sections)",
       vjp="nxrt.join_like(g, ary, 1 if ary.ndim > 1 else 0)",
       samples=checked_elsewhere(_PIECES))
define(np.vsplit, "ary, indices_or_sections",
       linear="np.vsplit(ary, indices_or_sections)",
       vjp="nxrt.join_like(g, ary, 0)",
       samples=checked_elsewhere(_PIECES))
define(np.dsplit, "ary, indices_or_sections",
       linear="np.dsplit(ary, indices_or_sections)",
       vjp="nxrt.join_like(g, ary, 2)",
       samples=checked_elsewhere(_PIECES))

# np.append flattens both without axis, as split_like(axis=None) undoes.
define(np.append, "arr, values, axis=None",
       jvp={"arr": "np.append(darr, nxrt.zeros_like(values), axis)",
            "values": "np.append(nxrt.zeros_like(arr), dvalues, axis)"},
       vjp={"arr": "nxrt.split_like(g, (arr, values), axis)[0]",
            "values": "nxrt.split_like(g, (arr, values), axis)[1]"},
       samples=["arr[4], values[2]", "arr[2, 3], values[1, 3], 0", "arr[2, 2], 1.5"])
define(np.delete, "arr, obj, axis=None",
       linear="np.delete(arr, obj, axis)",
       vjp="nxrt.ungather(g, arr, np.delete(nxrt.positions(arr), obj, axis))",
       samples=["arr[5], 1", "arr[3, 4], (0, 2), 1", "arr[3, 4], 1, 0"])
# np.insert broadcasts values to the slots: the numbers of values' elements, inserted
# the same way, say where each copy went.
define(np.insert, "arr, obj, values, axis=None",
       jvp={"arr": "np.insert(darr, obj, 0, axis)",
            "values": "np.insert(nxrt.zeros_like(arr), obj, dvalues, axis)"},
       vjp={"arr": "nxrt.ungather(g, arr, np.insert(nxrt.positions(arr), obj, 0, axis))",
            "values": "nxrt.ungather(g, values, np.insert(0 * nxrt.positions(arr), obj, "
                      "nxrt.positions(values), axis))"},
       samples=["arr[4], 1, values[]", "arr[3, 2], 1, values[2], 0", "arr[3, 2], 2, values[3], 1"])
# np.pad in the modes that copy elements (nxrt.pad_positions refuses the others); the
# padding constant carries no derivative.
define(np.pad, "array, pad_width, mode='constant', constant_values=0",
       jvp="nxrt.regather(darray, nxrt.pad_positions(array, pad_width, mode))",
       vjp="nxrt.ungather(g, array, nxrt.pad_positions(array, pad_width, mode))",
       batch=_pad,
       samples=["array[4], 2", "array[3, 4], ((1, 0), (2, 1)), 'edge'",
                "array[5], (2, 3), 'reflect'", "array[2, 3], 2, 'wrap'",
                "array[4], 3, 'symmetric'", "array[4], 1, constant_values=2.0"])

# an item of np.r_/np.c_ made at least ndmin-D (normalization writes it so): a reshape
define(nxrt.concatenated_item, "item, ndmin, trans1d",
       linear="nxrt.concatenated_item(item, ndmin, trans1d)",
       vjp="nxrt.reshape_like(g, item)", batch=_concatenated_item,
       samples=["item[3], 3, 0", "item[2, 3], 3, 1", "item[], 2, 0", "item[4], 3, -2"])

# ufunc methods (normalization writes them so): outer products and running extremes.
define(nxrt.outer_operand, "a, b",
       linear="nxrt.outer_operand(a, b)",
       vjp="nxrt.reshape_like(g, a)",
       samples=["a[3], np.zeros(2)", "a[2, 3], np.zeros((2, 2))"])
define(nxrt.cummax, "x, axis=0",
       jvp="nxrt.regather(dx, nxrt.running_positions(x, ans, axis))",
       vjp="nxrt.ungather(g, x, nxrt.running_positions(x, ans, axis))",
       batch=scan("x"), samples=["x[5]", "x[3, 4], 1"])
define(nxrt.cummin, "x, axis=0",
       jvp="nxrt.regather(dx, nxrt.running_positions(x, ans, axis))",
       vjp="nxrt.ungather(g, x, nxrt.running_positions(x, ans, axis))",
       batch=scan("x"), samples=["x[5]", "x[3, 4], 1"])

# -- the adjoints' own rules (runtime/shapes.py, runtime/gathers.py) --------------------
define(nxrt.unarray, "value, obj",
       linear="nxrt.unarray(value, obj)",
       vjp="np.array(g)",
       samples=["value[3], (1.0, 2.0, 3.0)", "value[2, 3], np.zeros((2, 3))"])
define(nxrt.array_operand, "x",
       linear="nxrt.array_operand(x)",
       vjp="nxrt.unarray(g, x)", batch=_from_values("x"),
       samples=["(a[], b[])", "[a[2], b[2]]", "a[2, 3]"])
define(nxrt.ungather, "value, a, index",
       linear="nxrt.ungather(value, a, index)",
       vjp="nxrt.regather(g, index)",
       samples=["value[4], np.zeros(3), np.array([1, 0, 3, 1])"])
define(nxrt.regather, "value, index",
       linear="nxrt.regather(value, index)",
       vjp="nxrt.ungather(g, value, index)",
       samples=["value[3], np.array([[1, 0], [3, 1]])"])
# fmt: on

nondifferentiable([nxrt.positions, nxrt.running_positions, nxrt.pad_positions])
