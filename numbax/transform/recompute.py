"""Which loops reverse mode runs again instead of taping their temporaries.

Taping every value a loop body's adjoint reads costs a push and a pop per value and
iteration; for a body of scalar arithmetic (an ODE step, Lorenz-63) that is most of the
time. A hand-written adjoint stores the state at the start of each iteration and
recomputes the rest. Reverse mode does the same for a loop whose body can be run a
second time without effect: it tapes the *live-in* variables (those the body reads
before writing, and those it overwrites that existed before the loop), and the reverse
loop restores them, runs the body again as straight-line code with its own saves, and
then its adjoint.

A body that cannot simply run again keeps the general tape: one that breaks or
continues, stores into arrays (``a[i] = v`` changes state the second run would see),
or pushes and pops stacks.
"""

from __future__ import annotations

import gast

from numbax.transform.operations import appended


def live_in_variables(
    loop: gast.For | gast.While, before: set[str], existing: set[str], needed: set[str]
) -> list[str] | None:
    """The variables to tape at the start of each iteration so that the body can be
    recomputed, or None when it cannot be. ``before``: variables defined on every path
    to the loop; ``existing``: those defined on some path; ``needed``: those the
    adjoint reads."""
    for node in gast.walk(gast.Module(body=loop.body, type_ignores=[])):
        if isinstance(node, (gast.Break, gast.Continue, gast.Return)):
            return None
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript):
            return None
        if isinstance(node, gast.stmt) and appended(node) is not None:
            return None
        if isinstance(node, gast.Call) and _is_pop(node):
            return None
    assigned = assigned_names(loop.body)
    if isinstance(loop, gast.For):
        assigned.discard(loop.target.id)  # the reverse loop sets it
    live = (_exposed(loop.body, set()) & assigned) | (assigned & existing & needed)
    if not live <= before:
        return None  # a value carried from an earlier iteration, first made in the loop
    return sorted(live)


def read_before_written(stmts: list[gast.stmt]) -> set[str]:
    """The names ``stmts`` read before writing them on some path: in a loop body,
    those an iteration reads from the one before, or from before the loop."""
    return _exposed(stmts, set())


def _is_pop(call: gast.Call) -> bool:
    return isinstance(call.func, gast.Attribute) and call.func.attr == "pop"


def assigned_names(stmts: list[gast.stmt]) -> set[str]:
    """The names ``stmts`` assign, nested blocks (and loop targets) included."""
    return {
        n.id
        for s in stmts
        for n in gast.walk(s)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    }


def read_names(node: gast.AST) -> set[str]:
    """The names ``node`` reads."""
    return {
        n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    }


def _exposed(stmts: list[gast.stmt], written: set[str]) -> set[str]:
    """Names read before being written on some path through ``stmts`` (``written``
    grows with what is written on every path)."""
    exposed: set[str] = set()
    for stmt in stmts:
        if isinstance(stmt, gast.If):
            exposed |= read_names(stmt.test) - written
            body, orelse = set(written), set(written)
            exposed |= _exposed(stmt.body, body) | _exposed(stmt.orelse, orelse)
            written |= body & orelse
        elif isinstance(stmt, (gast.For, gast.While)):
            head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            exposed |= read_names(head) - written
            inner = set(written) | ({stmt.target.id} if isinstance(stmt, gast.For) else set())
            exposed |= _exposed(stmt.body, inner)  # it may run no time: writes do not count
        else:
            exposed |= read_names(stmt) - written
            if isinstance(stmt, gast.Assign):
                written |= assigned_names([stmt])
    return exposed
