"""The values a reverse-mode function returns beside its cotangents, kept as the primal
sweep left them.

The adjoint sweep gives what the primal sweep overwrote its old value back, so that each
line's adjoint reads what its primal read: ``acc = _tape_acc.pop()``, ``y[i] = _old``,
``l.pop()``. A result read after the adjoint sweep (``value_and_grad``'s value, a
``has_aux`` function's aux) would then be the value of some earlier moment — a loop
accumulator's initial value. So a result the adjoint may change is kept before it runs:

    _acc_out = acc                  # the adjoint rebinds acc
    _aux_out = nxrt.owned(_aux)     # the adjoint writes into an object _aux may share

and returned instead. A result the adjoint leaves alone is returned as it is (no copy).

Which objects a change may show in a result is over-approximated without types: a
result sees the objects it shares memory with (a copy, a view, an element, a helper's
result: every assignment but a fresh elementwise value such as ``a + b`` or
``np.sin(x)``, both ways) and those it holds (a tuple or list of them, one way: a tape
that holds ``acc`` is popped without changing ``acc``).
"""

from __future__ import annotations

import gast

from numbax.transform.ad.common import runtime_call
from numbax.transform.analysis.dataflow import assigned_names, names, read_names, statements
from numbax.transform.analysis.shape_sources import is_elementwise_value
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, load
from numbax.transform.resolve import Resolver
from numbax.transform.walk import walk

_MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "fill"}
)
"""Methods of lists and arrays that change their object in place."""


def keep_results(
    results: set[str],
    primal: list[gast.stmt],
    adjoint: list[gast.stmt],
    resolver: Resolver,
    namer: Namer,
) -> tuple[list[gast.stmt], dict[str, str]]:
    """Statements that keep each of ``results`` (names the function returns beside its
    cotangents) that the ``adjoint`` sweep may change, and the name each is kept in;
    ``primal`` is the primal sweep, whose assignments say what may share what."""
    rebound = assigned_names(adjoint)
    written = _written_in_place(adjoint)
    reaches = _reaches(primal, resolver)
    kept: list[gast.stmt] = []
    renamed: dict[str, str] = {}
    for name in sorted(results):
        if reaches.get(name, {name}) & written:
            value = runtime_call("owned", load(name))
        elif name in rebound:
            value = load(name)
        else:
            continue
        renamed[name] = namer.fresh(f"{name.lstrip('_')}_out")
        kept.append(assign(renamed[name], value))
    return kept, renamed


def fold_kept_copies(fn: gast.FunctionDef, kept: set[str]) -> None:
    """Remove the copies among ``kept`` (names :func:`keep_results` gave) that the cleanup
    pass made needless: where the copied variable is no longer assigned after the copy
    (the cleanup gave the values a restore would have undone names of their own), the
    return reads it directly."""
    for k, stmt in enumerate(fn.body):
        if not (
            isinstance(stmt, gast.Assign)
            and isinstance(stmt.targets[0], gast.Name)
            and stmt.targets[0].id in kept
            and isinstance(stmt.value, gast.Name)
        ):
            continue
        later = fn.body[k + 1 :]
        if stmt.value.id in assigned_names(later):
            continue
        for node in (n for s in later for n in walk(s)):
            if isinstance(node, gast.Name) and node.id == stmt.targets[0].id:
                node.id = stmt.value.id
        del fn.body[k]
        fold_kept_copies(fn, kept)
        return


def _written_in_place(stmts: list[gast.stmt]) -> set[str]:
    """The names whose objects ``stmts`` change in place: stored into (``x[i] = v``) or
    changed by a method (``l.pop()``)."""
    written: set[str] = set()
    for stmt in statements(stmts):
        if isinstance(stmt, gast.Assign):
            for target in stmt.targets:
                if isinstance(target, gast.Subscript):
                    written |= read_names(target.value)
        value = getattr(stmt, "value", None)
        if (
            isinstance(stmt, gast.Assign | gast.Expr)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr in _MUTATING_METHODS
        ):
            written |= read_names(value.func.value)
    return written


def _reaches(stmts: list[gast.stmt], resolver: Resolver) -> dict[str, set[str]]:
    """For each name, the names whose objects a change to may show in its value: itself,
    what it may share memory with (a copy, a view, an element, a helper's result on it)
    and what it may hold (a tuple or a list of it)."""
    edges: dict[str, set[str]] = {}
    for stmt in statements(stmts):
        for holder, held, both_ways in _links(stmt, resolver):
            for a in holder:
                edges.setdefault(a, set()).update(held)
            if both_ways:
                for b in held:
                    edges.setdefault(b, set()).update(holder)
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen, todo = {start}, [start]
        while todo:
            for b in edges.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        reach[start] = seen
    return reach


def _links(stmt: gast.stmt, resolver: Resolver) -> list[tuple[set[str], set[str], bool]]:
    """``(holder, held, both_ways)``: after ``stmt``, the objects of ``held`` may show in
    the values of ``holder`` (and, ``both_ways``, the other way round: shared memory)."""
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
        call = stmt.value  # l.append(v): l holds v
        if isinstance(call.func, gast.Attribute) and call.func.attr in _MUTATING_METHODS:
            return [(read_names(call.func.value), read_names(call) - read_names(call.func), False)]
        return []
    if not isinstance(stmt, gast.Assign):
        return []
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, gast.Subscript):  # x[i] = v: a list x holds v
        return [(read_names(target.value), read_names(value), False)]
    if isinstance(value, gast.Tuple | gast.List):  # t = (a, b): t holds a and b
        return [(names(target), read_names(value), False)]
    if not isinstance(value, gast.Name) and is_elementwise_value(value, resolver):
        return []  # a fresh value
    if isinstance(value, gast.Subscript):  # an element, or a view, of what is indexed
        value = value.value
    return [(names(target), read_names(value), True)]
