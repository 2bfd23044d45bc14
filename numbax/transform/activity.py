"""Which variables carry derivatives: *varied* (depend on a differentiated input) and
*useful* (reach the output), computed once per function over all its statements.

Only active variables (varied and useful) get tangents or cotangents; every other
statement is left as the user wrote it and costs nothing extra. The analysis is
flow-insensitive: a name is active if any of its assignments is, which is what a
variable's one tangent needs (a loop-carried ``acc = 0.0`` becomes active through
``acc = acc * x``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import gast

from numbax.transform.operations import CONSTANT, appended, classify
from numbax.transform.resolve import Resolver


@dataclass(frozen=True)
class Activity:
    varied: frozenset[str]
    useful: frozenset[str]

    def __contains__(self, name: object) -> bool:
        return name in self.varied and name in self.useful

    def atom(self, node: gast.AST) -> bool:
        """Whether an atom (a name or a constant) is active."""
        return isinstance(node, gast.Name) and node.id in self


def assignments(body: Iterable[gast.stmt]) -> Iterator[gast.Assign | gast.Expr]:
    """Every assignment and ``stack.append(v)`` in ``body``, nested blocks included."""
    for stmt in body:
        if isinstance(stmt, gast.Assign) or appended(stmt):
            yield stmt
        for field in ("body", "orelse"):
            yield from assignments(getattr(stmt, field, []))


def analyze(
    fn: gast.FunctionDef, wrt: Iterable[str], outputs: Iterable[str], resolver: Resolver
) -> Activity:
    """Activity of ``fn``'s variables for derivatives of ``outputs`` w.r.t. ``wrt``."""
    edges: list[tuple[set[str], set[str]]] = []  # (sources, targets): targets vary with sources
    for stmt in assignments(fn.body):
        pushed = appended(stmt)
        if pushed is not None:  # the stack holds v
            stack, value = pushed
            if isinstance(value, gast.Name):
                edges.append(({value.id}, {stack}))
            continue
        target = stmt.targets[0]
        if isinstance(target, gast.Name):
            op = classify(stmt.value, resolver)
            sources = set() if op.kind == CONSTANT else op.differentiable_names()
            edges.append((sources, {target.id}))
        elif isinstance(target, gast.Tuple):  # a, b = t
            names = {n.id for n in gast.walk(target) if isinstance(n, gast.Name)}
            edges.append(({stmt.value.id}, names))
        elif isinstance(target, gast.Subscript):  # x[i] = v: x now holds v
            if isinstance(stmt.value, gast.Name):
                edges.append(({stmt.value.id}, {target.value.id}))
    varied = _closure(set(wrt), edges)
    useful = _closure(set(outputs), [(t, s) for s, t in edges])
    return Activity(frozenset(varied), frozenset(useful))


def _closure(start: set[str], edges: list[tuple[set[str], set[str]]]) -> set[str]:
    reached = set(start)
    changed = True
    while changed:
        changed = False
        for sources, targets in edges:
            if sources & reached and not targets <= reached:
                reached |= targets
                changed = True
    return reached
