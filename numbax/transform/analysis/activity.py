"""Which variables carry derivatives: *varied* (depend on a differentiated input) and
*useful* (reach the output), computed once per function over all its statements.

Only active variables (varied and useful) get tangents or cotangents; every other
statement is left as the user wrote it and costs nothing extra. The analysis is
flow-insensitive: a name is active if any of its assignments is, which is what a
variable's one tangent needs (a loop-carried ``acc = 0.0`` becomes active through
``acc = acc * x``).

A call made for its effect (``y.fill(v)``, ``y.sort()``, ``np.copyto(y, x)``, a helper
that writes into its argument) changes values without assigning them, which the
derivatives cannot follow: when it reads a value that varies and one that is useful,
the analysis refuses the function rather than letting the change go undifferentiated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import gast

from numbax.errors import TransformError
from numbax.transform.analysis.dataflow import names, statements
from numbax.transform.operations import CALL, CONSTANT, UNKNOWN, appended, classify, held_globals
from numbax.transform.resolve import Resolver
from numbax.transform.rules.batch_kinds import text
from numbax.transform.source import display_name


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
    for stmt in statements(body):
        if isinstance(stmt, gast.Assign) or appended(stmt):
            yield stmt


def analyze(
    fn: gast.FunctionDef,
    wrt: Iterable[str],
    outputs: Iterable[str],
    resolver: Resolver,
    transformation: str | None = None,
) -> Activity:
    """Activity of ``fn``'s variables for derivatives of ``outputs`` w.r.t. ``wrt``.

    Also records in ``resolver`` the locals that hold a global object, which
    :func:`~numbax.transform.operations.classify` then sees through (``_np_r_[x, x]``);
    a call made for its effect on active values raises a :class:`TransformError` naming
    ``transformation``.
    """
    resolver.held = held_globals(fn, resolver)
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
            edges.append(({stmt.value.id}, names(target)))
        elif isinstance(target, gast.Subscript):  # x[i] = v: x now holds v
            if isinstance(stmt.value, gast.Name):
                edges.append(({stmt.value.id}, {target.value.id}))
    varied = _closure(set(wrt), edges)
    useful = _closure(set(outputs), [(t, s) for s, t in edges])
    _refuse_effects(fn, resolver, varied, useful, transformation)
    return Activity(frozenset(varied), frozenset(useful))


def _refuse_effects(
    fn: gast.FunctionDef,
    resolver: Resolver,
    varied: set[str],
    useful: set[str],
    transformation: str | None,
) -> None:
    """Raise for a call statement (other than a tape's append) that may change a value
    carrying a derivative: one without a rule or a user function, reading a value that
    varies and one that reaches the output (``y.fill(v)``: ``v`` varies, ``y`` is
    returned)."""
    for stmt in statements(fn.body):
        if not isinstance(stmt, gast.Expr) or appended(stmt):
            continue
        op = classify(stmt.value, resolver)
        if op.kind not in (UNKNOWN, CALL):
            continue
        read = op.differentiable_names()
        if read & varied and read & useful:
            what = f"{text(stmt.value.func)}()"
            raise TransformError(
                f"{what} is called for its effect on a value that carries a derivative "
                "(it changes its arguments in place, or may), which numbax cannot "
                "differentiate: only values that operations return and stores "
                "(y[i] = v) are followed. Assign the result of a function instead "
                "(y = np.sort(y), y = np.full_like(y, v), y = x.copy()).",
                function=display_name(resolver.source.func),
                transformation=transformation,
                filename=resolver.source.filename,
                lineno=getattr(stmt, "lineno", None),
                construct=what,
            )


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
