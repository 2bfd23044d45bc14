"""Which ``nxrt.unbroadcast`` calls cannot change their value's shape.

Reverse mode brings every cotangent of a broadcasting operation back to its operand's
shape with ``nxrt.unbroadcast(value, like)``, which sums the axes broadcasting added.
Mostly nothing broadcast: ``_ct_cos = nxrt.unbroadcast(_ct_mul * x, _cos)`` with
``_cos = np.cos(x)`` only converts the dtype. Yet the call is not elementwise in
general, so it ended each fused run, and the statements around it became separate
passes over memory, each compiled on its own.

Broadcasting is associative, commutative and idempotent, so the shape of an elementwise
expression is the broadcast of the shapes of the *sources* it was computed from: the
function's parameters and the results of other operations. Two values computed from the
same set of sources have the same shape. This pass tracks that set per name through the
function's top-level straight-line statements and marks each ``unbroadcast`` whose
value and ``like`` come from the same non-empty set (:data:`KEPT`): on scalars it is
``nxrt.cotangent_as(value, like)``, the dtype conversion alone, and it joins the kernel.
Anything the pass does not follow (a statement with a body, a tuple target, an
operation that is not elementwise) gives its names a source of their own, so they
prove nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import gast

from numbax.runtime import nxrt as runtime
from numbax.transform.analysis.dataflow import assigned_names
from numbax.transform.resolve import Resolver

KEPT = "keeps_shape"
"""The attribute set on an ``unbroadcast`` call proven to keep its value's shape."""

Sources = frozenset
"""The values whose shapes broadcast to a value's shape (empty: a scalar)."""


def mark_kept_shapes(
    body: list[gast.stmt], params: list[str], resolver: Resolver, elementwise: Callable
) -> None:
    """Set :data:`KEPT` on the ``unbroadcast`` calls of ``body``'s top-level statements
    whose value has ``like``'s shape. ``elementwise(stmt)``: whether a statement's value
    has the broadcast shape of the names it reads."""
    fresh = (f"source {k}" for k in itertools.count())
    sources: dict[str, Sources] = {p: Sources({p}) for p in params}

    def of(expr: gast.expr) -> Sources:
        if isinstance(expr, gast.Name) and expr.id in sources:
            return sources[expr.id]
        if isinstance(expr, gast.Constant) and isinstance(expr.value, int | float | complex):
            return Sources()
        return Sources({next(fresh)})

    for stmt in body:
        single = (
            isinstance(stmt, gast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name)
        )
        if not single:
            for name in assigned_names([stmt]):
                sources[name] = Sources({next(fresh)})
            continue
        target, value = stmt.targets[0].id, stmt.value
        if _is_unbroadcast(value, resolver):
            shape_of_value, shape_of_like = of(value.args[0]), of(value.args[1])
            if shape_of_value and shape_of_value == shape_of_like:
                setattr(value, KEPT, True)
            sources[target] = shape_of_like
        elif _is_broadcast_reduced(value, resolver):  # spread over a's shape
            sources[target] = of(value.args[1])
        elif elementwise(stmt) and (operands := _operands(value)) is not None:
            sources[target] = Sources().union(*(of(n) for n in operands))
        else:
            sources[target] = Sources({next(fresh)})


def _operands(value: gast.expr) -> list[gast.expr] | None:
    """The operands of an elementwise operation, when each is a name or a number (an
    operand such as ``x[0]`` or ``x.T`` has a shape of its own: None)."""
    if isinstance(value, gast.Name):
        operands = [value]
    elif isinstance(value, gast.BinOp):
        operands = [value.left, value.right]
    elif isinstance(value, gast.UnaryOp):
        operands = [value.operand]
    elif isinstance(value, gast.Compare):
        operands = [value.left, *value.comparators]
    elif isinstance(value, gast.Call):
        operands = list(value.args)
    else:
        return None
    numbers = int | float | complex
    simple = all(
        isinstance(o, gast.Name) or (isinstance(o, gast.Constant) and isinstance(o.value, numbers))
        for o in operands
    )
    return operands if simple else None


def _is_unbroadcast(value: gast.expr, resolver: Resolver) -> bool:
    return (
        isinstance(value, gast.Call)
        and not value.keywords
        and len(value.args) == 2
        and resolver.resolve(value.func) is runtime.unbroadcast
    )


def _is_broadcast_reduced(value: gast.expr, resolver: Resolver) -> bool:
    return (
        isinstance(value, gast.Call)
        and len(value.args) >= 2
        and resolver.resolve(value.func) is runtime.broadcast_reduced
    )


def is_axes_broadcast(value: gast.expr, resolver: Resolver) -> bool:
    """``nxrt.broadcast_reduced(g, a, axis, keepdims)`` with ``axis`` an int or a tuple
    of ints and ``keepdims`` a bool, all written as constants: the cotangent of a
    reduction over those axes, spread over ``a``'s shape. Elementwise, it is ``g`` with
    the reduced axes back as axes of length 1 (``nxrt.expand_reduced``), broadcast."""
    if not (_is_broadcast_reduced(value, resolver) and len(value.args) == 4):
        return False
    axis, keepdims = value.args[2:]
    constant_bool = isinstance(keepdims, gast.Constant) and type(keepdims.value) is bool
    return constant_axes(axis) is not None and constant_bool


def constant_axes(axis: gast.expr) -> tuple[int, ...] | None:
    """The axes an ``axis`` argument written as an int or a tuple of ints names (``-1``
    included), or None."""
    items = axis.elts if isinstance(axis, gast.Tuple) else [axis]
    values = [_constant_int(item) for item in items]
    if not values or None in values:
        return None
    return tuple(values)


def _constant_int(node: gast.expr) -> int | None:
    negative = isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)
    inner = node.operand if negative else node
    if not (isinstance(inner, gast.Constant) and type(inner.value) is int):
        return None
    return -inner.value if negative else inner.value


def is_full_broadcast(value: gast.expr, resolver: Resolver) -> bool:
    """``nxrt.broadcast_reduced(g, a, None, False)``: the cotangent of a full reduction,
    a scalar spread over ``a``'s shape (elementwise, it is ``g`` itself)."""
    return (
        isinstance(value, gast.Call)
        and len(value.args) == 4
        and resolver.resolve(value.func) is runtime.broadcast_reduced
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
