"""Which values of a function have the same shape, without knowing any shape.

Broadcasting is associative, commutative and idempotent, so the shape of an elementwise
expression is the broadcast of the shapes of the *sources* it was computed from: the
function's parameters and the results of other operations. Two values computed from the
same set of sources have the same shape. :class:`ShapeSources` tracks that set per name
through a function's top-level straight-line statements. Anything it does not follow (a
statement with a body, a tuple target, an operation that is not elementwise) gives its
names a source of their own, so they prove nothing.

Reverse mode's ``nxrt.unbroadcast(value, like)`` and ``nxrt.broadcast_reduced(g, a,
...)`` give their result ``like``'s and ``a``'s shape. The elements of a tuple display
(``_tuple = _ct_x,``, what a VJP returns) are followed through copies and constant
subscripts (``_ct_tuple[0]``).

A VJP's cotangent parameter has its output's shape, or one that broadcasts to it (a
caller passes the cotangent of the value the call made; ``nx.vjp`` checks a user's).
Reverse mode records that shape in terms of the VJP's other parameters
(:func:`shape_in_parameters`: ``_ct_out`` has ``x``'s shape), and the VJP of that VJP
keeps the record, so the analysis starts from it (``cotangents``). A cotangent smaller
than its output (a scalar) proves nothing false: what is computed from it has, at most,
the shape claimed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, Union

import gast
import numpy as np

from numbax.runtime import nxrt as runtime
from numbax.transform.analysis.dataflow import assigned_names
from numbax.transform.resolve import Resolver

Sources = frozenset
"""The values whose shapes broadcast to a value's shape (empty: a scalar)."""

Shape = Union[Sources, tuple]  # noqa: UP007 (a type alias of a frozenset and a tuple)
"""A value's :data:`Sources`, or for a tuple display, its elements' (``None`` where an
element's is not known)."""

ELEMENTWISE_BINOPS = (
    gast.Add,
    gast.Sub,
    gast.Mult,
    gast.Div,
    gast.FloorDiv,
    gast.Mod,
    gast.Pow,
    gast.BitAnd,
    gast.BitOr,
    gast.BitXor,
    gast.LShift,
    gast.RShift,
)
"""The binary operators that act element by element, with NumPy's broadcasting."""

ELEMENTWISE_COMPARES = (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq)

_NUMBERS = int | float | complex


def is_elementwise_callee(target: Any, n_args: int) -> bool:
    """Whether calling ``target`` with ``n_args`` arguments is one elementwise operation
    (a ufunc of one output, ``np.where``)."""
    if target is np.where:
        return n_args == 3
    if not isinstance(target, np.ufunc) or target.signature is not None:  # matmul: a gufunc
        return False
    return target.nout == 1 and target.nin == n_args


def is_elementwise_value(value: gast.expr, resolver: Resolver) -> bool:
    """Whether ``value`` is one elementwise operation, or a copy, in core language."""
    if isinstance(value, gast.Name):
        return True
    if isinstance(value, gast.BinOp):
        return isinstance(value.op, ELEMENTWISE_BINOPS)
    if isinstance(value, gast.UnaryOp):
        return isinstance(value.op, (gast.USub, gast.UAdd, gast.Invert))
    if isinstance(value, gast.Compare):
        return isinstance(value.ops[0], ELEMENTWISE_COMPARES)
    if isinstance(value, gast.Call) and not value.keywords:
        return is_elementwise_callee(resolver.resolve(value.func), len(value.args))
    return False


class ShapeSources:
    """The sources of each name, statement by statement (see the module's docstring).

    ``elementwise(stmt)``: whether an assignment's value has the broadcast shape of the
    names it reads. ``cotangents``: parameters whose shape is known from others (a VJP's
    cotangents, :data:`Shape` in terms of parameter names)."""

    def __init__(
        self,
        params: list[str],
        resolver: Resolver,
        elementwise: Callable[[gast.stmt], bool],
        cotangents: Mapping[str, Shape] | None = None,
    ) -> None:
        self._fresh = (f"source {k}" for k in itertools.count())  # never an identifier
        self._resolver = resolver
        self._elementwise = elementwise
        self.sources: dict[str, Sources] = {p: Sources({p}) for p in params}
        self.elements: dict[str, tuple[Sources, ...]] = {}  # of tuple displays, by name
        known = set(params)
        for cotangent, shape in (cotangents or {}).items():
            if cotangent not in known:
                continue
            if isinstance(shape, tuple):
                self.sources[cotangent] = self._new()
                self.elements[cotangent] = tuple(self._entry(s, known) for s in shape)
            else:
                self.sources[cotangent] = self._entry(shape, known)

    def _new(self) -> Sources:
        return Sources({next(self._fresh)})

    def _entry(self, shape: Sources | None, params: set[str]) -> Sources:
        """A parameter's sources given as other parameters (each one's own, at entry)."""
        if shape is None or not shape <= params:
            return self._new()
        return Sources(shape)

    def of(self, expr: gast.expr) -> Sources:
        """The sources of a name or a number (any other expression: its own)."""
        if isinstance(expr, gast.Name) and expr.id in self.sources:
            return self.sources[expr.id]
        if isinstance(expr, gast.Constant) and isinstance(expr.value, _NUMBERS):
            return Sources()
        return self._new()

    def follow(self, stmt: gast.stmt) -> None:
        """Take in one top-level statement."""
        single = (
            isinstance(stmt, gast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name)
        )
        if not single:
            for name in assigned_names([stmt]):
                self.sources[name] = self._new()
                self.elements.pop(name, None)
            return
        target, value = stmt.targets[0].id, stmt.value
        elements = self.elements
        made = None
        if isinstance(value, gast.Tuple) and all(_is_operand(e) for e in value.elts):
            made = tuple(self.of(e) for e in value.elts)
        elif isinstance(value, gast.Name) and value.id in elements:  # a tuple's copy
            made = elements[value.id]
        if made is not None:
            self.sources[target] = self._new()
            elements[target] = made
            return
        elements.pop(target, None)
        self.sources[target] = self._value_sources(stmt, value)

    def _value_sources(self, stmt: gast.Assign, value: gast.expr) -> Sources:
        item = self._constant_item(value)
        if item is not None:
            return item
        if is_unbroadcast(value, self._resolver):
            return self.of(value.args[1])
        if is_broadcast_reduced(value, self._resolver):  # spread over a's shape
            return self.of(value.args[1])
        if self._elementwise(stmt) and (operands := _operands(value)) is not None:
            return Sources().union(*(self.of(n) for n in operands))
        return self._new()

    def _constant_item(self, value: gast.expr) -> Sources | None:
        """The sources of ``t[k]``, ``k`` a constant index of tuple display ``t``."""
        if not (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name)):
            return None
        items = self.elements.get(value.value.id)
        index = constant_int(value.slice)
        if items is None or index is None or not -len(items) <= index < len(items):
            return None
        return items[index]

    def shape_in_parameters(self, name: str, params: list[str]) -> Shape | None:
        """``name``'s shape as the parameters (at entry) it broadcasts from, or None."""

        def of_parameters(sources: Sources) -> Sources | None:
            return sources if sources <= set(params) else None

        if name in self.elements:
            return tuple(of_parameters(s) for s in self.elements[name])
        if name in self.sources:
            return of_parameters(self.sources[name])
        return None


def _is_operand(expr: gast.expr) -> bool:
    """A name or a number: what an elementwise operation's sources are read from."""
    return isinstance(expr, gast.Name) or (
        isinstance(expr, gast.Constant) and isinstance(expr.value, _NUMBERS)
    )


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
    return operands if all(_is_operand(o) for o in operands) else None


def is_unbroadcast(value: gast.expr, resolver: Resolver) -> bool:
    """``nxrt.unbroadcast(value, like)``."""
    return (
        isinstance(value, gast.Call)
        and not value.keywords
        and len(value.args) == 2
        and resolver.resolve(value.func) is runtime.unbroadcast
    )


def is_broadcast_reduced(value: gast.expr, resolver: Resolver) -> bool:
    """``nxrt.broadcast_reduced(g, a, ...)``."""
    return (
        isinstance(value, gast.Call)
        and len(value.args) >= 2
        and resolver.resolve(value.func) is runtime.broadcast_reduced
    )


def constant_int(node: gast.expr) -> int | None:
    """The int a constant (``3``, ``-1``) writes, or None."""
    negative = isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)
    inner = node.operand if negative else node
    if not (isinstance(inner, gast.Constant) and type(inner.value) is int):
        return None
    return -inner.value if negative else inner.value
