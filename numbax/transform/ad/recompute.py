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

from numbax.transform.analysis.dataflow import assigned_names, read_before_written
from numbax.transform.operations import appended
from numbax.transform.walk import walk


def live_in_variables(
    loop: gast.For | gast.While, before: set[str], existing: set[str], needed: set[str]
) -> list[str] | None:
    """The variables to tape at the start of each iteration so that the body can be
    recomputed, or None when it cannot be. ``before``: variables defined on every path
    to the loop; ``existing``: those defined on some path; ``needed``: those the
    adjoint reads."""
    for node in walk(gast.Module(body=loop.body, type_ignores=[])):
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
    live = (read_before_written(loop.body) & assigned) | (assigned & existing & needed)
    if not live <= before:
        return None  # a value carried from an earlier iteration, first made in the loop
    return sorted(live)


def _is_pop(call: gast.Call) -> bool:
    return isinstance(call.func, gast.Attribute) and call.func.attr == "pop"
