"""``vmap``'s loop over a function whose body has collectives (``nx.lax.psum``...).

A collective needs every example's value before any example can go on, so the loop over
the examples is split at each one: the body's statements up to the first collective run
for every example (a generated function, ``f_part1``, called in a loop like the whole
function otherwise is), the values later parts need are kept for the whole batch, the
collective computes over the batch (``lax.COLLECTIVES``: a value the examples share, as
``psum``'s, or one per example, as ``ppermute``'s), and the next part runs for every
example with its result. ``axis_index`` is the example's position and ``axis_size``
the batch size, passed to the parts that use them. How a part's examples run is the
caller's: one after the other (``vmap``), or on every thread (``pmap``).

    def vmap_center(x):
        _size = nxrt.batch_size('center', (x,), (0,), ('x',))
        # line 3: total = nx.lax.psum(m, 'i')
        _out = _center_part1(nxrt.batch_take(x, 0, 0))
        _part1 = nxrt.batch_empty(_out, _size, 0)
        ...
        _all_total = np.sum(_part1, axis=0)
        # line 4: return x - total
        _out = _center_part2(nxrt.batch_take(x, 0, 0), _all_total)
        ...

The collectives must be statements of the function's own body, outside its branches and
loops (the vectorized method has no such limit), and their other parameters (``perm``,
``axis``, ``tiled``...) constants, as in JAX: literals, module-level values, or names
the body assigns once to literals.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gast

from numbax import lax
from numbax.errors import TransformError
from numbax.transform.batch.axes import Leaf, batch_size
from numbax.transform.batch.loop import INDEX, SIZE, examples_loop
from numbax.transform.cleanup import cleanup
from numbax.transform.nodes import (
    assign,
    at,
    clone,
    const,
    function,
    item,
    literal,
    load,
    names,
    template,
)
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver
from numbax.transform.rules.batch_kinds import text
from numbax.transform.walk import walk

INDEX_PARAMETER = "_axis_index"
"""The parameter a part receives the example's position by."""

SIZE_PARAMETER = "_axis_size"
"""The parameter a part receives the batch size by (``axis_size``)."""

Examples = Callable[[str, list[Leaf], str, Any, str], list[gast.stmt]]
"""How the split loop runs one part's examples: ``examples(callee, arguments, batch,
out_axes, short)``, the statements filling ``batch`` (``loop.py``'s ``examples_loop``, or
``pmap``'s on every thread)."""


class NotStatic(Exception):
    """A collective's parameter (``perm``, ``axis``, ``tiled``...) that is not a constant."""

    def __init__(self, node: gast.AST, parameter: str) -> None:
        super().__init__(f"{parameter} must be a constant")
        self.node = node


@dataclass
class Part:
    """Consecutive statements of the body, run once per example."""

    statements: list[gast.stmt]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # kept for the batch (not the last)
    collective: gast.Assign | None = None  # ``v = psum(x, name)`` after the statements
    reduction: Any = None  # which collective it is (lax.psum...)
    statics: dict[str, Any] = field(default_factory=dict)  # its constant parameters
    uses_index: bool = False
    uses_size: bool = False


def collective_of(node: gast.AST, resolver: Resolver) -> Any:
    """The collective (or ``axis_index``, ``axis_size``) a call resolves to, else None."""
    if not isinstance(node, gast.Call):
        return None
    target = resolver.resolve(node.func)
    return target if target in lax.COLLECTIVES or target in lax.POSITIONAL else None


def arguments_of(call: gast.Call, target: Any) -> dict[str, gast.expr]:
    """Each parameter's argument node in a call of a collective (defaults as constants)."""
    signature = inspect.signature(target)
    bound = signature.bind(*call.args, **{k.arg: k.value for k in call.keywords})
    bound.apply_defaults()
    return {k: v if isinstance(v, gast.AST) else const(v) for k, v in bound.arguments.items()}


def static_definitions(fn: gast.FunctionDef) -> dict[str, gast.expr]:
    """The names the function assigns once, to a constant or a tuple or list (of names
    or constants), and never changes in place: what normalizing made of a literal
    (``perm=[(0, 1), (1, 0)]``), not a list a comprehension fills."""
    counts: dict[str, int] = {}
    values: dict[str, gast.expr] = {}
    for node in walk(fn):
        changed = node.value if isinstance(node, gast.Attribute) else None
        if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
            changed = node.value
        if isinstance(changed, gast.Name):  # xs.append(v), xs[i] = v: not a constant
            counts[changed.id] = 2
        if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)):
            stored = node.targets if isinstance(node, gast.Assign) else [node.target]
            for target in names(stored, gast.Store):
                counts[target] = counts.get(target, 0) + 1
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            if isinstance(node.value, (gast.Constant, gast.Tuple, gast.List, gast.UnaryOp)):
                values[node.targets[0].id] = node.value
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def static_value(
    node: gast.expr, parameter: str, definitions: dict[str, gast.expr], resolver: Resolver
) -> Any:
    """The value of a collective's constant parameter: a literal, tuples and lists of
    them (``perm``), a global, a name the function assigns once to one of these."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, (gast.Tuple, gast.List)):
        return tuple(static_value(e, parameter, definitions, resolver) for e in node.elts)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return -static_value(node.operand, parameter, definitions, resolver)
    if isinstance(node, gast.Name) and node.id in definitions:
        return static_value(definitions[node.id], parameter, definitions, resolver)
    if isinstance(node, (gast.Name, gast.Attribute)):
        value = resolver.resolve(node)
        if value is not LOCAL and value is not UNRESOLVED:
            return tuple(map(tuple, value)) if isinstance(value, list) else value
    raise NotStatic(node, parameter)


def static_arguments(
    call: gast.Call, target: Any, definitions: dict[str, gast.expr], resolver: Resolver
) -> dict[str, Any]:
    """The values of a collective's parameters other than its operand and axis name."""
    bound = arguments_of(call, target)
    return {
        k: static_value(v, k, definitions, resolver)
        for k, v in list(bound.items())[1:]
        if k != "axis_name"
    }


def over_batch(target: Any, operand: gast.expr, axis: int | None, statics: dict) -> gast.expr:
    """The collective computed over the whole batch: ``operand`` holds the examples
    along ``axis`` (None: the batch shares it); see ``lax.OverBatch``."""
    spec = lax.COLLECTIVES[target]
    source = spec.mapped if axis is not None else spec.unmapped
    holes = {k: literal(v) for k, v in statics.items()}
    return template(source, x=operand, b=const(axis), **holes)


def rank_over_batch(target: Any, rank: Any, statics: dict) -> Any:
    """An example's rank of a collective's result, of an operand of this rank."""
    if not isinstance(rank, int):
        return rank
    return rank + lax.COLLECTIVES[target].rank[bool(statics.get("tiled", False))]


def has_collectives(fn: gast.FunctionDef, resolver: Resolver) -> bool:
    return any(collective_of(n, resolver) is not None for n in walk(fn))


def split(fn: gast.FunctionDef, resolver: Resolver, axis_name: Any, display: str) -> list[Part]:
    """The body in parts, each followed by one collective (the last by none)."""
    parts = [Part([])]
    definitions = static_definitions(fn)
    for stmt in fn.body:
        value = stmt.value if isinstance(stmt, gast.Assign) else None
        target = collective_of(value, resolver) if value is not None else None
        if target is not None and target not in lax.POSITIONAL:
            _check_name(value, axis_name, display, resolver)
            parts[-1].collective, parts[-1].reduction = stmt, target
            try:
                parts[-1].statics = static_arguments(value, target, definitions, resolver)
            except NotStatic as error:
                message = (
                    f"{error}: the collective's parameters are part of what it computes, "
                    "as in JAX. Write them as literals or module-level constants."
                )
                raise _refused(message, display, resolver, stmt) from None
            parts.append(Part([]))
            continue
        for node in walk(stmt):
            found = collective_of(node, resolver)
            if found in lax.POSITIONAL:
                _check_name(node, axis_name, display, resolver)
            elif found is not None:
                message = (
                    "a collective inside a branch, a loop or an expression cannot be "
                    "batched by a loop over the examples. Make it a statement of the "
                    "function's own body, or let vmap vectorize the function."
                )
                raise _refused(message, display, resolver, stmt)
        parts[-1].statements.append(stmt)
    _link(parts, [a.id for a in fn.args.args], resolver)
    return parts


def _check_name(call: gast.Call, axis_name: Any, display: str, resolver: Resolver) -> None:
    try:
        name = arguments_of(call, resolver.resolve(call.func)).get("axis_name")
    except TypeError as error:
        raise _refused(f"{text(call)}: {error}", display, resolver, call) from None
    if not isinstance(name, gast.Constant) or name.value != axis_name:
        given = text(name) if name is not None else "no axis name"
        message = (
            f"{given} is not the axis name of this vmap (axis_name={axis_name!r}); "
            "collectives over an enclosing vmap's axis are not supported."
        )
        raise _refused(message, display, resolver, call)


def _refused(message: str, display: str, resolver: Resolver, node: gast.AST) -> TransformError:
    """The error for a collective the loop cannot split at, at its line."""
    return TransformError(
        message,
        function=display,
        transformation="vmap",
        filename=resolver.source.filename,
        lineno=getattr(node, "lineno", None),
    )


def _link(parts: list[Part], params: list[str], resolver: Resolver) -> None:
    """Each part's inputs (values defined before it) and outputs (values a later part or
    collective needs)."""
    defined = set(params)
    for k, part in enumerate(parts):
        found = {collective_of(n, resolver) for s in part.statements for n in walk(s)}
        part.uses_index = lax.axis_index in found
        part.uses_size = lax.axis_size in found
        part.inputs = sorted(set(names(part.statements, gast.Load)) & defined)
        later = [s for p in parts[k + 1 :] for s in p.statements]
        later += [p.collective.value.args[0] for p in parts[k:] if p.collective is not None]
        needed = set(names(later, gast.Load))
        part.outputs = [n for n in names(part.statements, gast.Store) if n in needed]
        defined |= set(part.outputs)
        if part.collective is not None:
            defined.add(part.collective.targets[0].id)


def part_function(fn: gast.FunctionDef, part: Part, name: str, resolver: Resolver) -> Any:
    """``def <name>(<inputs>): <statements>; return <outputs>`` (one output: as it is;
    several: a tuple), ``axis_index`` replaced by the example's position."""
    params = [*part.inputs, *([INDEX_PARAMETER] if part.uses_index else [])]
    params += [SIZE_PARAMETER] if part.uses_size else []
    body = [_with_index(clone(s), resolver) for s in part.statements]
    if part.collective is not None:
        outputs = [load(n) for n in part.outputs]
        returned = outputs[0] if len(outputs) == 1 else gast.Tuple(outputs, gast.Load())
        body.append(gast.copy_location(gast.Return(returned), part.collective))
    tree = gast.copy_location(function(name, params, body), fn)
    return cleanup(tree, resolver.source)


def _with_index(stmt: gast.stmt, resolver: Resolver) -> gast.stmt:
    class _Replace(gast.NodeTransformer):
        def visit_Call(self, node: gast.Call) -> gast.AST:
            found = collective_of(node, resolver)
            if found is lax.axis_index:
                return load(INDEX_PARAMETER)
            if found is lax.axis_size:
                return load(SIZE_PARAMETER)
            return self.generic_visit(node)

    return _Replace().visit(stmt)


def split_loop_function(
    name: str,
    short: str,
    parts: list[Part],
    callees: list[str],
    params: list[str],
    axes: tuple,
    out_axes: Any,
    axis_size: int | None,
    examples: Examples = examples_loop,
) -> gast.FunctionDef:
    """``def <name>(<params>)``: a loop over the examples per part (``callees``: the
    parts' functions; ``examples`` makes the loop), each but the last followed by its
    collective over the batch; each part starts at the user line of the collective it
    leads to (the last part: the function's last line), for the emitter's ``# line``
    comments."""
    where = {p: Leaf(load(p), p, a) for p, a in zip(params, axes, strict=True)}
    body: list[gast.stmt] = [assign(SIZE, batch_size(short, params, axes, axis_size))]
    for k, (part, callee) in enumerate(zip(parts[:-1], callees, strict=False)):
        batch = f"_part{k + 1}"
        statements = []
        if part.outputs:  # else nothing the rest needs: the part need not run
            arguments = [where[n] for n in part.inputs] + _index(part)
            kept = 0 if len(part.outputs) == 1 else tuple(0 for _ in part.outputs)
            statements += examples(callee, arguments, batch, kept, short)
        if len(part.outputs) == 1:
            where[part.outputs[0]] = Leaf(load(batch), batch, 0)
        for j, output in enumerate(part.outputs if len(part.outputs) > 1 else ()):
            where[output] = Leaf(item(load(batch), j), f"{batch}[{j}]", 0)
        target = part.collective.targets[0].id
        statements.append(assign(f"_all_{target}", _reduced(part, where)))
        varying = lax.COLLECTIVES[part.reduction].varying  # a value per example: a batch
        where[target] = Leaf(load(f"_all_{target}"), f"_all_{target}", 0 if varying else None)
        body += _starting_at(statements, getattr(part.collective, "lineno", None))
    last = parts[-1]
    arguments = [where[n] for n in last.inputs] + _index(last)
    statements = examples(callees[-1], arguments, "_batch", out_axes, short)
    line = getattr(last.statements[-1], "lineno", None) if last.statements else None
    body += _starting_at([*statements, gast.Return(load("_batch"))], line)
    return cleanup(function(name, params, body))


def _index(part: Part) -> list[Leaf]:
    """The example's position and the batch size, for the parts that ask for them."""
    index = [Leaf(load(INDEX_PARAMETER), INDEX_PARAMETER, INDEX)] if part.uses_index else []
    return index + ([Leaf(load(SIZE), SIZE, None)] if part.uses_size else [])


def _starting_at(stmts: list[gast.stmt], line: int | None) -> list[gast.stmt]:
    """``stmts``, the first given the user line they run up to."""
    if line is not None:
        at(stmts[0], line)
    return stmts


def _reduced(part: Part, where: dict[str, Leaf]) -> gast.expr:
    """The collective over the batch, of a mapped value along its batch axis, or of a
    shared one what the collective makes of it (``psum``: times the size)."""
    argument = part.collective.value.args[0]
    value = where.get(argument.id) if isinstance(argument, gast.Name) else None
    if value is None or value.axis is None:
        shared = argument if value is None else value.node
        return over_batch(part.reduction, shared, None, part.statics)
    return over_batch(part.reduction, value.node, value.axis, part.statics)
