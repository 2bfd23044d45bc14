"""Which tangents forward mode must copy so that a write into one changes no other.

Forward mode writes ``_d_y[i] = _d_v`` beside each ``y[i] = v``, so the tangents must
share memory exactly where the values do: then a write reaches the same tangents as
the value's write reaches values. Copies (``y = x``), subscripts, fields, tuples and
views (``np.reshape``: its tangent is the same view of the tangent) share as their
values do. Two kinds of operation break that mirror, as their value is a new array
but their tangent may be the operand's own:

* a rule whose tangent *is* an operand's tangent (``y = x + c``: ``_d_y = _d_x``;
  ``nxrt.tree_add`` with one active operand; ``nxrt.owned``, the copy that derivative
  code makes of an array it will write into);
* a call of a helper differentiated with its own JVP, which may hand back the tangent
  of an argument (``return x + 1.0``).

A tangent so obtained is copied (``nxrt.owned``) where a write may reach it or its
source: where the variable or one that shares with it is written into, as found by
grouping the variables whose values may share memory. So are the caller's tangents
of the parameters in a group written into. Nothing is copied in a function that
writes into no array.
"""

from __future__ import annotations

from collections.abc import Iterable

import gast

from numbax.transform import rules
from numbax.transform.ad.sequences import may_hold_sequences
from numbax.transform.analysis.activity import Activity, assignments
from numbax.transform.analysis.groups import Groups
from numbax.transform.operations import (
    CALL,
    COPY,
    FIELD,
    PACK,
    POP,
    RULE,
    SUBSCRIPT,
    Operation,
    appended,
    classify,
)
from numbax.transform.resolve import Resolver


def passed_through(op: Operation, activity: Activity) -> str | None:
    """The operand whose tangent is the whole tangent of ``op``'s result, where its
    result is a new array (a rule whose only active term is the operand's tangent:
    ``x + c``, ``+x``, ``nxrt.tree_add(a, b)`` with one of them active), else None."""
    if op.kind != RULE:
        return None
    terms = [
        (param, op.rule.jvp[param])
        for param in op.rule.differentiable
        if param in op.rule.jvp and activity.atom(op.bound.get(param))
    ]
    if len(terms) != 1:  # several terms add up to a new array
        return None
    param, template = terms[0]
    if isinstance(template, gast.Name) and template.id == rules.tangent_name(param):
        return op.bound[param].id
    return None


def _may_share(op: Operation, activity: Activity) -> list[str]:
    """The active operands whose tangent the result's tangent may be, or be a view of,
    where its value is or views that operand too."""
    if op.kind in (COPY, FIELD, SUBSCRIPT, POP, PACK):
        return [a.id for a in op.differentiable_args() if activity.atom(a)]
    if op.kind != RULE or passed_through(op, activity) is not None:
        return []
    active = [
        p for p in op.rule.differentiable if p in op.rule.jvp and activity.atom(op.bound.get(p))
    ]
    if len(active) != 1:
        return []
    template = op.rule.jvp[active[0]]
    if isinstance(template, (gast.BinOp, gast.UnaryOp)):  # arithmetic makes a new array
        return []
    return [op.bound[active[0]].id]  # np.reshape(dx), dx.T: a view as the value is


class SharedTangents:
    """The groups of active variables whose tangents may share memory, and which of
    them generated code writes into."""

    def __init__(self, fn: gast.FunctionDef, activity: Activity, resolver: Resolver) -> None:
        self.activity = activity
        self._groups = Groups()
        written: set[str] = set()
        sequences = may_hold_sequences(fn, resolver)  # an array's store copies the value
        for stmt in assignments(fn.body):
            pushed = appended(stmt)
            if pushed is not None:  # stack.append(v): the list holds v
                stack, value = pushed
                if activity.atom(value):
                    self._groups.join(stack, value.id)
                continue
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):  # x[i] = v: _d_x[i] = _d_v
                base = target.value
                if activity.atom(base):
                    written.add(base.id)
                    if base.id in sequences and activity.atom(stmt.value):  # a list holds v
                        self._groups.join(base.id, stmt.value.id)
                continue
            if isinstance(target, gast.Tuple):  # a, b = t
                if activity.atom(stmt.value):
                    for name in target.elts:
                        self._groups.join(name.id, stmt.value.id)
                continue
            if target.id not in activity:
                continue
            for source in _may_share(classify(stmt.value, resolver), activity):
                self._groups.join(target.id, source)
        self._written = {self._groups.root(n) for n in written}

    def written(self, names: Iterable[str]) -> bool:
        """Whether generated code may write into the tangent of one of ``names`` or of a
        variable sharing memory with one of them."""
        return any(self._groups.root(n) in self._written for n in names)

    def copies(self, target: str, op: Operation) -> bool:
        """Whether the tangent of ``target = <op>`` must be a copy: it may be the
        tangent of an operand while the value is a new array, and a write may reach
        either."""
        if op.kind == CALL:
            sources = [a.id for a in op.differentiable_args() if self.activity.atom(a)]
        else:
            source = passed_through(op, self.activity)
            sources = [] if source is None else [source]
        return bool(sources) and self.written([target, *sources])
