"""Selections: ``np.take``, ``np.take_along_axis`` and ``np.sort`` gather elements of
an array, so each is linear in it: the JVP gathers the tangent the same way, the VJP
scatters the cotangent back, adding where an element was taken twice
(``nxrt.untake``, ``nxrt.untake_along_axis``, in ``numbax/runtime/selection.py``).

``np.sort`` is the gather along the order that sorts its argument (``nxrt.sort_order``,
stable): each place's derivative is that of the element sorted into it, as in JAX.
The indices and the order carry no derivative.

``np.choose`` and ``np.select`` pick each element from one of several arrays (a tuple
argument, whose tangent is the tuple of their tangents): the JVP picks from the
tangents, the VJP sends each element's cotangent back to the array it came from
(``nxrt.unchoose``, ``nxrt.unselect``). Python's ``sum`` of a tuple or list adds its
items: each gets the cotangent (``nxrt.spread_like``).
"""

from __future__ import annotations

import numpy as np

from numbax.runtime import selection
from numbax.transform.rules.batch_kinds import (
    BatchOp,
    Decline,
    elementwise_of_tuples,
    repeated,
    same_shape,
    scan,
    shifted_axis,
)
from numbax.transform.rules.registry import checked_elsewhere, define


# -- batching rules (vmap's vectorized method, batch_kinds.py) --------------------------
def _taken(op: BatchOp) -> tuple[str, int | None]:
    """``np.take(a, indices, axis)`` of a batch of ``a`` and shared indices: the axis
    shifted past the batch's."""
    rank, index_rank = op.value("a").rank, op.value("indices").rank
    out = None if op.is_none("axis") or None in (rank, index_rank) else rank - 1 + index_rank
    if not op.batched:
        return "", index_rank if op.is_none("axis") else out
    axis = op.constant("axis")
    if op.is_batched("indices") or not isinstance(axis, int) or rank is None:
        raise Decline(f"{op.name} of the flattened array, or at indices that vary")
    if op.constant("mode") not in (None, "raise"):
        raise Decline(f"{op.name} with mode={op.constant('mode')!r}")
    where = shifted_axis(axis, rank, op.name)
    return f"np.take({op.text('a')}, {op.text('indices')}, {where})", out


def _untaken(op: BatchOp) -> tuple[str, int | None]:
    """The adjoint of ``np.take`` of a batch of cotangents at shared indices: scattered
    into a batch of ``a``'s shape along the shifted axis."""
    rank = op.value("a").rank
    if not op.batched:
        return "", rank
    axis = op.constant("axis")
    if op.is_batched("indices") or not isinstance(axis, int) or rank is None:
        raise Decline(f"{op.name} into the flattened array, or at indices that vary")
    a = op.text("a") if op.is_batched("a") else repeated(op.text("a"))
    where = shifted_axis(axis, rank, op.name)
    return op.replaced({"a": a, "axis": repr(where)}), rank


def _along(values: tuple[str, ...], like: str | None = None) -> object:
    """An operation along ``axis`` of arrays of one rank (``take_along_axis`` and its
    adjoint): the axis shifted past the batch's, shared arrays given a batch axis of
    one to broadcast against it; a shared ``like`` (whose shape the result takes)
    repeated over the batch."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        rank = op.value(values[0]).rank
        if not op.batched:
            return "", rank
        axis = op.constant("axis")
        if not isinstance(axis, int) or rank is None:
            raise Decline(f"{op.name} of the flattened array")
        sources = {
            p: op.text(p) if op.is_batched(p) else f"{op.text(p)}[None]"
            for p in values
            if p in op.bound
        }
        if like is not None and not op.is_batched(like):
            sources[like] = repeated(op.text(like))
        sources["axis"] = repr(shifted_axis(axis, rank, op.name))
        return op.replaced(sources), rank

    return rule


# fmt: off
#      operation, parameters (NumPy's), [array methods of the same meaning]
#      jvp: the tangent out (linear: the operation applied to the tangent)
#      vjp: the cotangent in
#      batching, and samples to check the derivatives on (registry.py)
define(selection.sort_order, "a, axis=-1", batch=scan())
define(selection.select_default, "condlist")
define(selection.untake, "value, a, indices, axis=None, mode='raise'",
       linear="nxrt.untake(value, a, indices, axis, mode)",
       vjp="np.take(g, indices, axis, mode=mode)",
       batch=_untaken,
       samples=["value[2, 3], np.zeros((4, 3)), np.array([1, 3]), 0",
                "value[3], np.zeros(4), np.array([2, 0, 2])"])
define(selection.untake_along_axis, "value, arr, indices, axis",
       linear="nxrt.untake_along_axis(value, arr, indices, axis)",
       vjp="np.take_along_axis(g, indices, axis)",
       batch=_along(("value", "indices"), like="arr"),
       samples=["value[2, 3], np.zeros((2, 3)), np.array([[2, 0, 1], [1, 1, 0]]), 1"])

define(selection.unchoose, "value, a, choices, mode='raise'",
       linear="nxrt.unchoose(value, a, choices, mode)",
       vjp="np.choose(a, g, mode=mode)",
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: a tuple of cotangents"))
define(selection.unselect, "value, condlist, choicelist",
       linear="nxrt.unselect(value, condlist, choicelist)",
       vjp="np.select(condlist, g, 0)",
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: a tuple of cotangents"))
define(selection.spread_like, "value, items",
       linear="nxrt.spread_like(value, items)",
       vjp="nxrt.unbroadcast(sum(g), value)",
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: a tuple of cotangents"))

define(np.take, "a, indices, axis=None, out=None, mode='raise'", methods=["take"],
       linear="np.take(a, indices, axis, mode=mode)",
       vjp="nxrt.untake(g, a, indices, axis, mode)",
       batch=_taken,
       samples=["a[3, 4], 2, 1", "a[4, 3], np.array([3, 0, 3]), 0",
                "a[3, 4], np.array([[1, 2], [0, 0]]), 1",
                "a[3, 4], np.array([5, 1])", "a[4], 5, mode='wrap'",
                "a[2, 4], np.array([-1, 7]), 1, mode='clip'"])
define(np.take_along_axis, "arr, indices, axis",
       linear="np.take_along_axis(arr, indices, axis)",
       vjp="nxrt.untake_along_axis(g, arr, indices, axis)",
       batch=_along(("arr", "indices")),
       samples=["arr[3, 4], np.array([[3, 0, 3], [1, 1, 2], [0, 2, 1]]), 1",
                "arr[3, 2], np.array([[2, 0]]), 0", "arr[2, 3], np.array([5, 0, 5]), None"])
define(np.sort, "a, axis=-1, kind=None, order=None",
       jvp="np.take_along_axis(da, nxrt.sort_order(a, axis), axis)",
       vjp="nxrt.untake_along_axis(g, a, nxrt.sort_order(a, axis), axis)",
       batch=scan(),
       samples=["a[3, 4]", "a[3, 4], axis=0", "a[2, 3], None", "a[5]"])
# np.put_along_axis(arr, indices, values, axis), as normalization writes it (arr =
# nxrt.put_along_axis(...)): linear in arr and values together. Where an index repeats,
# NumPy keeps the last value put there: so does the tangent, and the cotangent goes to
# that value only (nxrt.last_put).
define(selection.put_along_axis, "arr, indices, values, axis",
       jvp={"arr": "nxrt.put_along_axis(darr, indices, 0.0, axis)",
            "values": "nxrt.put_along_axis(nxrt.zeros_like(arr), indices, dvalues, axis)"},
       vjp={"arr": "nxrt.put_along_axis(g, indices, 0.0, axis)",
            "values": "nxrt.unbroadcast(nxrt.last_put(np.take_along_axis(g, indices, axis), "
                      "arr, indices, axis), values)"},
       samples=["arr[3, 4], np.array([[3], [0], [1]]), values[3, 1], 1",
                "arr[3, 4], np.array([[2, 0, 1, 1]]), values[], 0",
                "arr[2, 3], np.array([5, 0]), values[2], None"])
# a.sort() in place, as normalization writes it (a = nxrt.sorted_in_place(a, ...)): sort's
define(selection.sorted_in_place, "a, axis=-1, kind=None, order=None",
       jvp="np.take_along_axis(da, nxrt.sort_order(a, axis), axis)",
       vjp="nxrt.untake_along_axis(g, a, nxrt.sort_order(a, axis), axis)",
       batch=scan(),
       samples=["a[3, 4]", "a[3, 4], axis=0", "a[5]"])
define(np.choose, "a, choices, out=None, mode='raise'", methods=["choose"],
       jvp={"choices": "np.choose(a, dchoices, mode=mode)"},
       vjp={"choices": "nxrt.unchoose(g, a, choices, mode)"},
       batch=elementwise_of_tuples(("a",), ("choices",)),
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: a tuple of choices"))
define(np.select, "condlist, choicelist, default=0",
       jvp={"choicelist": "np.select(condlist, dchoicelist, 0)",
            "default": "nxrt.broadcast_like(np.where(nxrt.select_default(condlist), "
                       "ddefault, 0), ans)"},
       vjp={"choicelist": "nxrt.unselect(g, condlist, choicelist)",
            "default": "nxrt.unbroadcast(np.where(nxrt.select_default(condlist), g, 0), "
                       "default)"},
       batch=elementwise_of_tuples(("default",), ("condlist", "choicelist")),
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: tuples of conditions and choices"))
# what Python's max(items) indexes: the items themselves (of a dict or set, its keys,
# which carry no derivative)
define(selection.as_sequence, "items",
       linear="nxrt.as_sequence(items)", vjp="g", batch=same_shape("items"),
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: max of a sequence"))
# Python's sum(items, start) of a tuple or list (of an array: over its first axis).
define(sum, "iterable, start=0",
       jvp={"iterable": "sum(diterable)", "start": "dstart"},
       vjp={"iterable": "nxrt.spread_like(g, iterable)", "start": "nxrt.unbroadcast(g, start)"},
       samples=checked_elsewhere(
           "tests/autodiff/test_selection_and_order.py: a tuple of values"))
# fmt: on
