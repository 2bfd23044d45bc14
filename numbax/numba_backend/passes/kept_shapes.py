"""Which ``nxrt.unbroadcast`` calls cannot change their value's shape.

Reverse mode brings every cotangent of a broadcasting operation back to its operand's
shape with ``nxrt.unbroadcast(value, like)``, which sums the axes broadcasting added.
Mostly nothing broadcast: ``_ct_cos = nxrt.unbroadcast(_ct_mul * x, _cos)`` with
``_cos = np.cos(x)`` only converts the dtype. Yet the call is not elementwise in
general, so it ended each fused run, and the statements around it became separate
passes over memory, each compiled on its own.

Two values computed from the same set of *sources* (parameters, results of operations
that are not elementwise) have the same shape (``transform/analysis/shape_sources.py``).
This pass marks each ``unbroadcast`` whose value and ``like`` come from the same
non-empty set (:data:`KEPT`): on scalars it is ``nxrt.cotangent_as(value, like)``, the
dtype conversion alone, and it joins the kernel.

In a VJP (``grad`` of ``grad``, a callee's adjoint), the cotangent parameter has the
shape of the output it belongs to, known in terms of the other parameters
(``reverse.COTANGENT_OF``): ``_ct_div = _ct_out``, then ``_ct_sub =
nxrt.unbroadcast(_ct_div / _add, _sub)`` keeps the shape, and the adjoint of a VJP fuses
as the first adjoint does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import gast

from numbax.transform.analysis.shape_sources import (
    Shape,
    ShapeSources,
    constant_int,
    is_broadcast_reduced,
    is_unbroadcast,
)
from numbax.transform.resolve import Resolver

KEPT = "keeps_shape"
"""The attribute set on an ``unbroadcast`` call proven to keep its value's shape."""


def mark_kept_shapes(
    body: list[gast.stmt],
    params: list[str],
    resolver: Resolver,
    elementwise: Callable,
    cotangents: Mapping[str, Shape] | None = None,
) -> None:
    """Set :data:`KEPT` on the ``unbroadcast`` calls of ``body``'s top-level statements
    whose value has ``like``'s shape. ``elementwise(stmt)``: whether a statement's value
    has the broadcast shape of the names it reads. ``cotangents``: the parameters whose
    shape is that of other parameters (a VJP's)."""
    shapes = ShapeSources(params, resolver, elementwise, cotangents)
    for stmt in body:
        value = getattr(stmt, "value", None)
        if isinstance(stmt, gast.Assign) and is_unbroadcast(value, resolver):
            shape_of_value, shape_of_like = shapes.of(value.args[0]), shapes.of(value.args[1])
            if shape_of_value and shape_of_value == shape_of_like:
                setattr(value, KEPT, True)
        shapes.follow(stmt)


def is_axes_broadcast(value: gast.expr, resolver: Resolver) -> bool:
    """``nxrt.broadcast_reduced(g, a, axis, keepdims)`` with ``axis`` an int or a tuple
    of ints and ``keepdims`` a bool, all written as constants: the cotangent of a
    reduction over those axes, spread over ``a``'s shape. Elementwise, it is ``g`` with
    the reduced axes back as axes of length 1 (``nxrt.expand_reduced``), broadcast."""
    if not (is_broadcast_reduced(value, resolver) and len(value.args) == 4):
        return False
    axis, keepdims = value.args[2:]
    constant_bool = isinstance(keepdims, gast.Constant) and type(keepdims.value) is bool
    return constant_axes(axis) is not None and constant_bool


def constant_axes(axis: gast.expr) -> tuple[int, ...] | None:
    """The axes an ``axis`` argument written as an int or a tuple of ints names (``-1``
    included), or None."""
    items = axis.elts if isinstance(axis, gast.Tuple) else [axis]
    values = [constant_int(item) for item in items]
    if not values or None in values:
        return None
    return tuple(values)


def is_full_broadcast(value: gast.expr, resolver: Resolver) -> bool:
    """``nxrt.broadcast_reduced(g, a, None, False)``: the cotangent of a full reduction,
    a scalar spread over ``a``'s shape (elementwise, it is ``g`` itself)."""
    return (
        len(getattr(value, "args", ())) == 4
        and is_broadcast_reduced(value, resolver)
        and all(isinstance(a, gast.Constant) and a.value in (None, False) for a in value.args[2:])
    )


def keeps_shape(value: gast.expr) -> bool:
    """Whether :func:`mark_kept_shapes` proved this ``unbroadcast`` call elementwise."""
    return getattr(value, KEPT, False)


def copy_mark(original: gast.Assign, copy: gast.Assign) -> None:
    """A statement copied with its names renamed alike (``rematerialize``) computes its
    value from copies of the same sources: the proof holds for the copy."""
    if keeps_shape(original.value):
        setattr(copy.value, KEPT, True)
