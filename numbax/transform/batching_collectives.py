"""``vmap``'s loop over a function whose body has collectives (``nx.lax.psum``...).

A collective needs every example's value before any example can go on, so the loop over
the examples is split at each one: the body's statements up to the first collective run
for every example (a generated function, ``f_part1``, called in a loop like the whole
function otherwise is), the values later parts need are kept for the whole batch, the
collective reduces over the batch, and the next part runs for every example with its
result. ``axis_index`` is the example's position, passed to the parts that use it.

    def vmap_center(x):
        _size = nxrt.batch_size('center', (x,), (0,), ('x',))
        _out = _center_part1(nxrt.batch_take(x, 0, 0))        # m = np.mean(x)
        _part1 = (nxrt.batch_empty(_out[0], _size, 0),)
        ...
        _all_total = np.sum(_part1[0], axis=0)                # total = psum(m, 'i')
        _out = _center_part2(nxrt.batch_take(x, 0, 0), _all_total)
        ...

The collectives must be statements of the function's own body, outside its branches and
loops (the vectorized method has no such limit).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import gast

from numbax import lax
from numbax.errors import TransformError
from numbax.transform.batching import INDEX, examples_loop
from numbax.transform.resolve import Resolver
from numbax.transform.rules.batch_kinds import text

INDEX_PARAMETER = "_axis_index"
"""The parameter a part receives the example's position by."""


@dataclass
class Part:
    """Consecutive statements of the body, run once per example."""

    statements: list[gast.stmt]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # kept for the batch (not the last)
    collective: gast.Assign | None = None  # ``v = psum(x, name)`` after the statements
    reduction: Any = None  # which collective it is (lax.psum...)
    uses_index: bool = False


def collective_of(node: gast.AST, resolver: Resolver) -> Any:
    """The collective (or ``axis_index``) a call resolves to, else None."""
    if not isinstance(node, gast.Call):
        return None
    target = resolver.resolve(node.func)
    return target if target in lax.COLLECTIVES or target is lax.axis_index else None


def has_collectives(fn: gast.FunctionDef, resolver: Resolver) -> bool:
    return any(collective_of(n, resolver) is not None for n in gast.walk(fn))


def split(fn: gast.FunctionDef, resolver: Resolver, axis_name: Any, display: str) -> list[Part]:
    """The body in parts, each followed by one collective (the last by none)."""
    parts = [Part([])]
    for stmt in fn.body:
        value = stmt.value if isinstance(stmt, gast.Assign) else None
        target = collective_of(value, resolver) if value is not None else None
        if target is not None and target is not lax.axis_index:
            _check_name(value, axis_name, display, resolver)
            parts[-1].collective, parts[-1].reduction = stmt, target
            parts.append(Part([]))
            continue
        for node in gast.walk(stmt):
            found = collective_of(node, resolver)
            if found is lax.axis_index:
                _check_name(node, axis_name, display, resolver)
            elif found is not None:
                raise TransformError(
                    "a collective inside a branch, a loop or an expression cannot be "
                    "batched by a loop over the examples. Make it a statement of the "
                    "function's own body, or let vmap vectorize the function.",
                    function=display,
                    transformation="vmap",
                    filename=resolver.source.filename,
                    lineno=getattr(stmt, "lineno", None),
                )
        parts[-1].statements.append(stmt)
    _link(parts, [a.id for a in fn.args.args], resolver)
    return parts


def _check_name(call: gast.Call, axis_name: Any, display: str, resolver: Resolver) -> None:
    keywords = {k.arg: k.value for k in call.keywords}
    name = keywords.get("axis_name", call.args[-1] if call.args else None)
    if not isinstance(name, gast.Constant) or name.value != axis_name:
        given = text(name) if name is not None else "no axis name"
        raise TransformError(
            f"{given} is not the axis name of this vmap (axis_name={axis_name!r}); "
            "collectives over an enclosing vmap's axis are not supported.",
            function=display,
            transformation="vmap",
            filename=resolver.source.filename,
            lineno=getattr(call, "lineno", None),
        )


def _loads(stmts: list[gast.AST]) -> set[str]:
    return {
        n.id
        for s in stmts
        for n in gast.walk(s)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    }


def _stores(stmts: list[gast.stmt]) -> list[str]:
    seen: dict[str, None] = {}
    for s in stmts:
        for n in gast.walk(s):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                seen[n.id] = None
    return list(seen)


def _link(parts: list[Part], params: list[str], resolver: Resolver) -> None:
    """Each part's inputs (values defined before it) and outputs (values a later part or
    collective needs)."""
    defined = set(params)
    for k, part in enumerate(parts):
        part.uses_index = any(
            collective_of(n, resolver) is lax.axis_index
            for s in part.statements
            for n in gast.walk(s)
        )
        loads = _loads(part.statements)
        part.inputs = sorted(loads & defined)
        later = [s for p in parts[k + 1 :] for s in p.statements]
        later += [p.collective.value for p in parts[k:] if p.collective is not None]
        needed = _loads(later)
        part.outputs = [n for n in _stores(part.statements) if n in needed]
        defined |= set(part.outputs)
        if part.collective is not None:
            defined.add(part.collective.targets[0].id)


def part_function(fn: gast.FunctionDef, part: Part, name: str, resolver: Resolver) -> Any:
    """``def <name>(<inputs>): <statements>; return (<outputs>,)``, ``axis_index``
    replaced by the example's position."""
    params = [*part.inputs, *([INDEX_PARAMETER] if part.uses_index else [])]
    body = [_with_index(copy.deepcopy(s), resolver) for s in part.statements]
    if part.collective is not None:
        outputs = ", ".join(part.outputs)
        body.append(gast.parse(f"return ({outputs},)").body[0])
        gast.copy_location(body[-1], part.collective)
    tree = copy.deepcopy(fn)
    tree.name = name
    tree.args.args = [gast.Name(p, gast.Param(), None, None) for p in params]
    tree.args.defaults = []
    tree.body = body
    return tree


def _with_index(stmt: gast.stmt, resolver: Resolver) -> gast.stmt:
    class _Replace(gast.NodeTransformer):
        def visit_Call(self, node: gast.Call) -> gast.AST:
            if collective_of(node, resolver) is lax.axis_index:
                return gast.Name(INDEX_PARAMETER, gast.Load(), None, None)
            return self.generic_visit(node)

    return _Replace().visit(stmt)


def driver_lines(
    parts: list[Part], callees: list[str], params: list[str], axes: tuple, short: str
) -> tuple[list[str], dict[str, tuple[str, Any]]]:
    """The driver's lines between the size and the final part's loop, and where each
    value the final part needs is: ``(expression, axis)``."""
    where: dict[str, tuple[str, Any]] = dict(
        zip(params, zip(params, axes, strict=True), strict=True)
    )
    lines: list[str] = []
    for k, (part, callee) in enumerate(zip(parts[:-1], callees, strict=True)):
        batch = f"_part{k + 1}"
        if part.outputs:  # else nothing the rest needs: the part need not run
            args = [where[n] for n in part.inputs] + ([("", INDEX)] if part.uses_index else [])
            line = getattr(part.collective, "lineno", None)
            lines.append(f"    # part {k + 1}: every example, up to the collective of line {line}")
            lines += examples_loop(callee, args, batch, tuple(0 for _ in part.outputs), short)
        for j, name in enumerate(part.outputs):
            where[name] = (f"{batch}[{j}]", 0)
        collective = part.collective
        target = collective.targets[0].id
        argument = collective.value.args[0]
        reduce, unmapped = lax.COLLECTIVES[part.reduction]
        if isinstance(argument, gast.Name):
            source, axis = where.get(argument.id, (argument.id, None))
        else:
            source, axis = text(argument), None
        shared = f"_all_{target}"
        if axis is None:
            lines.append(f"    {shared} = {unmapped.format(x=source)}")
        else:
            lines.append(f"    {shared} = {reduce}({source}, axis={axis})")
        where[target] = (shared, None)
    return lines, where
