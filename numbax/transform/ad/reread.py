"""Values the reverse sweep reads again, kept as they were when the primal read them.

The adjoint of ``if t:`` branches on ``t`` again, and the reverse of ``for j in
range(k, n)`` recomputes ``j`` from ``k``. Reverse mode restores every variable to its
value at that point of the primal — but a test that the branch itself reassigns (``a and
b`` normalizes to ``t = a; if t: t = b``), or a bound that the loop body reassigns, had
its value *before* the statement, not at its end. Such a test or bound is copied into a
fresh variable first, which nothing reassigns.
"""

from __future__ import annotations

import gast

from numbax.transform.ad.common import located
from numbax.transform.analysis.dataflow import assigned_names
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, load
from numbax.transform.walk import walk


def freeze_reread(stmts: list[gast.stmt], namer: Namer) -> list[gast.stmt]:
    """``stmts`` with a copy before each ``if`` test or ``for`` bound that the
    statement's own body reassigns (recursively)."""
    out: list[gast.stmt] = []
    for stmt in stmts:
        line = getattr(stmt, "lineno", None)
        if isinstance(stmt, gast.If):
            stmt.body = freeze_reread(stmt.body, namer)
            stmt.orelse = freeze_reread(stmt.orelse, namer)
            reassigned = assigned_names(stmt.body + stmt.orelse)
            if isinstance(stmt.test, gast.Name) and stmt.test.id in reassigned:
                copy = namer.fresh(f"{stmt.test.id.lstrip('_')}_taken")
                out += located([assign(copy, load(stmt.test.id))], line)
                stmt.test = load(copy)
        elif isinstance(stmt, (gast.For, gast.While)):
            stmt.body = freeze_reread(stmt.body, namer)
            if isinstance(stmt, gast.For):
                reassigned = assigned_names(stmt.body)
                for node in walk(stmt.iter):
                    if isinstance(node, gast.Name) and node.id in reassigned:
                        copy = namer.fresh(f"{node.id.lstrip('_')}_at_start")
                        out += located([assign(copy, load(node.id))], line)
                        node.id = copy
        out.append(stmt)
    return out
