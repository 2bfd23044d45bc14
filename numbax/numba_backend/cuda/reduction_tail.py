"""A function that ends in a reduction of its elementwise values: ``return
np.sum(f(x), axis=...)``, or ``g`` of one, ``np.sqrt(np.sum(f(x), axis=...))``, split
into ``f`` (the function returning what is reduced), the reduction, and ``g`` (the
function of the reduced value: the lines after the reduction). The GPU target runs
``f`` once per element inside its reduction kernels (``reductions.py``), so the
values are combined as they are made, and ``g`` once per result as it is written.
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
    """``<target> = <reducer>(<operand>, axis=<axis>, keepdims=<keepdims>)``, at
    ``line``, the ``index``-th statement of the function's body; the statements after
    it compute the result from ``target``, reading the parameters ``after_reads``.
    ``constants``: the names normalization gave its arguments' values (``_tuple = (0,
    1)``), which only the reduction reads."""

    reducer: str
    axis: int | tuple[int, ...] | None
    keepdims: bool
    operand: str
    line: int
    target: str
    index: int
    after_reads: frozenset[str] = frozenset()
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
    """The last reduction of normalized ``fn``, a statement ``t = reduction(operand,
    ...)`` followed only by assignments computed from ``t`` (and numbers, parameters)
    and the ``return``; None when ``fn`` has no such statement. A reduction with
    arguments the kernels do not take (``dtype``, ``out``, ``where``, ``initial``, an
    ``axis`` known only at run time), or lines after it that read values computed
    before it, are :class:`NotReducible`."""
    last = fn.body[-1]
    if not (isinstance(last, gast.Return) and isinstance(last.value, gast.Name)):
        return None
    for index in range(len(fn.body) - 2, -1, -1):
        stmt = fn.body[index]
        if _assigned(stmt) is None:
            return None
        if isinstance(stmt.value, gast.Call):
            reducer, operand, args = _reduction_call(stmt.value, resolver)
            if reducer is not None and isinstance(operand, gast.Name):
                return _reduction(fn, index, reducer, operand.id, args, resolver)
    return None


def _reduction(
    fn: gast.FunctionDef,
    index: int,
    reducer: str,
    operand: str,
    args: list[gast.expr],
    resolver: Resolver,
) -> TrailingReduction:
    """The reduction ``fn.body[index]``, its arguments checked and read, and what the
    lines after it read."""
    stmt = fn.body[index]
    call = stmt.value
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
    before, after = fn.body[:index], fn.body[index + 1 :]
    values = _literals(before)
    axis = _constant(given.get("axis"), values, resolver, stmt.lineno, "axis")
    keepdims = _constant(given.get("keepdims"), values, resolver, stmt.lineno, "keepdims")
    try:
        axis = None if axis is None else _axis(axis)
    except TypeError:
        raise NotReducible(
            f"axis={axis!r}: give an int, a tuple of ints or None", stmt.lineno
        ) from None
    named = {v.id for v in given.values() if isinstance(v, gast.Name)}
    constants = frozenset(named - _reads(before))
    target = stmt.targets[0].id
    params = {a.id for a in fn.args.posonlyargs + fn.args.args}
    made_before = {_assigned(s) for s in before} - params
    for later in after:
        early = sorted((_reads([later]) & made_before) - {target})
        if early:
            raise NotReducible(
                f"after its reduction (line {stmt.lineno}), this line reads {early[0]!r}, made "
                "before it; on the GPU the lines after a function's one reduction compute "
                "from the reduced value, numbers and scalar arguments only. Run the function "
                "on the CPU (backend='cpu'), or return the reduction and finish on the host.",
                later.lineno,
            )
    if len(after) > 1 and target not in _reads(after):
        raise NotReducible(
            "the function's result does not use its reduction, so it would not have the "
            "reduction's shape; on the GPU the lines after the reduction compute from it",
            after[-1].lineno,
        )
    after_reads = frozenset(_reads(after) & params)
    return TrailingReduction(
        reducer, axis, bool(keepdims), operand, stmt.lineno, target, index, after_reads, constants
    )


def _reads(body: list[gast.stmt]) -> set[str]:
    return {
        n.id
        for s in body
        for n in gast.walk(s)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    }


def operand_function(fn: gast.FunctionDef, reduction: TrailingReduction) -> gast.FunctionDef:
    """A copy of ``fn`` that returns what its trailing reduction reduces."""
    split = copy.deepcopy(fn)
    reducing = split.body[reduction.index]
    returned = gast.Return(value=gast.Name(reduction.operand, gast.Load(), None, None))
    gast.copy_location(returned, reducing)
    before = split.body[: reduction.index]
    kept = [s for s in before if _assigned(s) not in reduction.constants]
    split.body = [*kept, returned]
    return split


def finishing_function(
    fn: gast.FunctionDef, reduction: TrailingReduction
) -> gast.FunctionDef | None:
    """A copy of ``fn`` that computes its result from the reduced value, its first
    parameter (before ``fn``'s own, so their defaults stay last); None when ``fn``
    returns the reduced value as it is."""
    after = fn.body[reduction.index + 1 :]
    if len(after) == 1:
        return None
    split = copy.deepcopy(fn)
    split.name = f"{fn.name}_after"
    reduced = gast.Name(reduction.target, gast.Param(), None, None)
    if split.args.posonlyargs:
        split.args.posonlyargs = [reduced, *split.args.posonlyargs]
    else:
        split.args.args = [reduced, *split.args.args]
    split.body = split.body[reduction.index + 1 :]
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


def kernel_stages(
    fn: gast.FunctionDef, resolver: Resolver, attach: bool = True
) -> list[gast.FunctionDef]:
    """Normalized straight-line ``fn`` as the functions the GPU runs one after another:
    one per reduction its result needs, computing that reduction's values and reducing
    them, then, unless the last one ends the function, one computing the result
    elementwise. A stage's parameters are the earlier reductions it reads (first, by
    their names), then ``fn``'s own.

    ``softmax``'s ``e = np.exp(x - np.max(x, axis=-1, keepdims=True))``, ``return e /
    np.sum(e, axis=-1, keepdims=True)`` is ``max`` of ``x``, ``sum`` of ``exp(x -
    max)`` and ``exp(x - max) / sum``: values are made again where a later stage reads
    them, never stored. A function with no reduction its result needs is one stage,
    itself. ``attach``: whether lines after the last reduction that read only its value
    and parameters finish its results in its kernels (else they are a stage of their
    own, as when a parameter they read is an array)."""
    *body, last = fn.body
    if not isinstance(last, gast.Return):
        return [fn]
    reducing = {_assigned(s): k for k, s in enumerate(body) if _reduces(s, resolver)}
    targets = set(reducing)
    used: set[str] = set()
    pending = _reads(_closure(body, _reads([last]), targets) + [last]) & targets
    while pending:
        target = pending.pop()
        used.add(target)
        k = reducing[target]
        pending |= (
            _reads(_closure(body[:k], _reads([body[k]]), targets) + [body[k]]) & targets
        ) - used
    if not used:
        return [fn]
    order = sorted(used, key=reducing.get)
    stages = []
    for number, target in enumerate(order, start=1):
        k = reducing[target]
        reducer = _reduction_call(body[k].value, resolver)[0]
        needed = [*_closure(body[:k], _reads([body[k]]), targets), body[k]]
        stages.append((f"{fn.name}_{number}_{reducer}", needed, target))
    final = _closure(body, _reads([last]), targets)
    ending, k = order[-1], reducing[order[-1]]
    rest = [s for s in final if body.index(s) > k]
    made_before = {_assigned(s) for s in final if body.index(s) < k}
    returns_it = not rest and _reads([last]) == {ending}
    if returns_it or attach and not (_reads([*rest, last]) & (made_before | (targets - {ending}))):
        name, needed, _ = stages[-1]
        stages[-1] = (fn.name if len(stages) == 1 else name, [*needed, *rest], None)
        return [_stage(fn, n, b, t, targets, last) for n, b, t in stages]
    result = [_stage(fn, n, b, t, targets) for n, b, t in stages]
    return [*result, _stage(fn, f"{fn.name}_result", final, None, targets, last)]


def _reduces(stmt: gast.stmt, resolver: Resolver) -> bool:
    if _assigned(stmt) is None or not isinstance(stmt.value, gast.Call):
        return False
    reducer, operand, _ = _reduction_call(stmt.value, resolver)
    return reducer is not None and isinstance(operand, gast.Name)


def _closure(body: list[gast.stmt], wanted: set[str], stops: set[str]) -> list[gast.stmt]:
    """The statements of ``body`` that what ``wanted`` names is computed from, in order;
    the names in ``stops`` (earlier reductions) are inputs, not followed."""
    wanted = set(wanted) - stops
    kept = []
    for stmt in reversed(body):
        name = _assigned(stmt)
        if name in wanted and name not in stops:
            kept.append(stmt)
            wanted |= _reads([stmt]) - stops
    return kept[::-1]


def _stage(
    fn: gast.FunctionDef,
    name: str,
    body: list[gast.stmt],
    result: str | None,
    targets: set[str],
    returned: gast.Return | None = None,
) -> gast.FunctionDef:
    """A copy of ``fn`` named ``name`` running ``body`` and returning ``result`` (or as
    ``returned`` does, when ``result`` is None), whose first parameters are the earlier
    reductions it reads."""
    stage = copy.deepcopy(fn)
    stage.name = name
    body = copy.deepcopy(body)
    if result is not None:
        returned = gast.Return(value=gast.Name(result, gast.Load(), None, None))
        gast.copy_location(returned, body[-1])
    stage.body = [*body, copy.deepcopy(returned)]
    inputs = sorted((_reads(stage.body) & targets) - {_assigned(s) for s in body})
    params = [gast.Name(t, gast.Param(), None, None) for t in inputs]
    if stage.args.posonlyargs:
        stage.args.posonlyargs = [*params, *stage.args.posonlyargs]
    else:
        stage.args.args = [*params, *stage.args.args]
    return stage
