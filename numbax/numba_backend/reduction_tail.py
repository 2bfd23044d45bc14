"""A function that ends in a reduction of its elementwise values: ``return
np.sum(f(x), axis=...)``, split into the reduction and ``f``, the function returning
what it reduces. The GPU target runs ``f`` once per element inside its reduction
kernels (``cuda_reduction.py``), so the values are combined as they are made.
"""

from __future__ import annotations

import ast
import copy
import operator
from dataclasses import dataclass

import gast
import numpy as np

from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver

REDUCTION_FUNCTIONS = {
    np.sum: "sum",
    np.prod: "prod",
    np.max: "max",
    np.amax: "max",
    np.min: "min",
    np.amin: "min",
    np.mean: "mean",
}
"""NumPy's reductions a kernel runs, by identity, with their name in
``cuda_reduction.REDUCERS``; as methods of an array they are spelled as the name."""

REDUCTION_METHODS = {"sum", "prod", "max", "min", "mean"}


class NotReducible(Exception):
    """The function ends in a reduction the GPU kernels do not run as written: the
    message says what to change, ``line`` where."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class TrailingReduction:
    """``return <reducer>(<operand>, axis=<axis>, keepdims=<keepdims>)``, at ``line``;
    ``constants``: the names normalization gave its arguments' values (``_tuple = (0,
    1)``), which only the reduction reads."""

    reducer: str
    axis: int | tuple[int, ...] | None
    keepdims: bool
    operand: str
    line: int
    constants: frozenset[str] = frozenset()

    def axes(self, ndim: int) -> tuple[int, ...]:
        """The reduced axes of an ``ndim``-dimensional operand, sorted, as NumPy reads
        ``axis`` (negative from the end; out of range or repeated is an error)."""
        if self.axis is None:
            return tuple(range(ndim))
        given = (self.axis,) if isinstance(self.axis, int) else self.axis
        axes = tuple(np.lib.array_utils.normalize_axis_tuple(given, ndim))
        return tuple(sorted(axes))


def trailing_reduction(fn: gast.FunctionDef, resolver: Resolver) -> TrailingReduction | None:
    """The reduction normalized ``fn`` returns, when its last two statements are ``t =
    reduction(operand, ...)`` and ``return t``; None otherwise. A reduction with
    arguments the kernels do not take (``dtype``, ``out``, ``where``, ``initial``, an
    ``axis`` known only at run time) is :class:`NotReducible`."""
    if len(fn.body) < 2:
        return None
    stmt, last = fn.body[-2:]
    if not (
        isinstance(last, gast.Return)
        and isinstance(last.value, gast.Name)
        and isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
        and stmt.targets[0].id == last.value.id
        and isinstance(stmt.value, gast.Call)
    ):
        return None
    call = stmt.value
    reducer, operand, args = _reduction_call(call, resolver)
    if reducer is None or not isinstance(operand, gast.Name):
        return None
    given = dict(zip(("axis",), args, strict=False))
    if len(args) > 1:
        raise NotReducible(
            f"np.{reducer} is given {len(args) + 1} arguments by position; on the GPU it takes "
            "the array and axis= and keepdims= only",
            stmt.lineno,
        )
    for keyword in call.keywords:
        if keyword.arg not in ("axis", "keepdims"):
            raise NotReducible(
                f"np.{reducer}(..., {keyword.arg}=...) is not run on the GPU (it takes axis= "
                f"and keepdims=); compute {keyword.arg!r}'s effect with elementwise lines "
                "before it, or run the function on the CPU (backend='cpu')",
                stmt.lineno,
            )
        given[keyword.arg] = keyword.value
    values = _literals(fn.body[:-2])
    axis = _constant(given.get("axis"), values, resolver, stmt.lineno, "axis")
    keepdims = _constant(given.get("keepdims"), values, resolver, stmt.lineno, "keepdims")
    try:
        axis = None if axis is None else _axis(axis)
    except TypeError:
        raise NotReducible(
            f"axis={axis!r}: give an int, a tuple of ints or None", stmt.lineno
        ) from None
    named = {v.id for v in given.values() if isinstance(v, gast.Name)}
    read_elsewhere = {
        n.id
        for s in fn.body[:-2]
        for n in gast.walk(s)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    }
    constants = frozenset(named - read_elsewhere)
    return TrailingReduction(reducer, axis, bool(keepdims), operand.id, stmt.lineno, constants)


def operand_function(fn: gast.FunctionDef, reduction: TrailingReduction) -> gast.FunctionDef:
    """A copy of ``fn`` that returns what its trailing reduction reduces."""
    split = copy.deepcopy(fn)
    returned = gast.Return(value=gast.Name(reduction.operand, gast.Load(), None, None))
    gast.copy_location(returned, split.body[-2])
    kept = [s for s in split.body[:-2] if _assigned(s) not in reduction.constants]
    split.body = [*kept, returned]
    return split


def _assigned(stmt: gast.stmt) -> str | None:
    """The name ``stmt`` assigns, when it is ``name = ...``."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        return target.id if isinstance(target, gast.Name) else None
    return None


def _literals(body: list[gast.stmt]) -> dict[str, gast.expr]:
    """The names ``body`` assigns once, to a literal (``_tuple = (0, 1)``): their values."""
    assigned: dict[str, list[gast.expr]] = {}
    for stmt in body:
        for node in gast.walk(stmt):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                assigned.setdefault(node.id, []).append(None)
        name = _assigned(stmt)
        if name is not None:
            assigned[name][-1] = stmt.value
    return {n: values[0] for n, values in assigned.items() if len(values) == 1 and values[0]}


def _reduction_call(
    call: gast.Call, resolver: Resolver
) -> tuple[str | None, gast.expr | None, list[gast.expr]]:
    """The reduction ``call`` is (by identity for functions, by name for methods), its
    operand and its positional arguments after the operand."""
    function = resolver.resolve(call.func)
    reducer = next((name for f, name in REDUCTION_FUNCTIONS.items() if f is function), None)
    if reducer is not None and call.args:
        return reducer, call.args[0], list(call.args[1:])
    func = call.func
    if isinstance(func, gast.Attribute) and func.attr in REDUCTION_METHODS:
        if isinstance(func.value, gast.Name) and resolver.resolve(func.value) is LOCAL:
            return func.attr, func.value, list(call.args)  # a local array's method
    return None, None, []


def _constant(
    node: gast.expr | None,
    values: dict[str, gast.expr],
    resolver: Resolver,
    line: int,
    what: str,
) -> object:
    """The value of a reduction's argument: a literal, a name normalization assigned
    one to (``values``), or a global or closure variable (read now, as Numba freezes
    them when compiling)."""
    if node is None:
        return None
    if isinstance(node, gast.Name) and node.id in values:
        node = values[node.id]
    elif isinstance(node, gast.Name):
        value = resolver.resolve(node)
        if value is not LOCAL and value is not UNRESOLVED:
            return value
    try:
        return ast.literal_eval(gast.gast_to_ast(node))
    except ValueError:
        raise NotReducible(
            f"{what}= must be a constant for the GPU (a literal, a global or a closure "
            "variable: its kernels are chosen before the call); write the value, or run the "
            "function on the CPU (backend='cpu')",
            line,
        ) from None


def _axis(value: object) -> int | tuple[int, ...]:
    """``value`` as NumPy reads an axis (an integer, NumPy's too, or a tuple of them);
    a ``TypeError`` when it is neither."""
    if isinstance(value, tuple):
        return tuple(operator.index(v) for v in value)
    return operator.index(value)
