"""Parameters that decide the rank of a result, which compiled code must know.

Numba types each variable once, so an argument that decides how many dimensions a
result has (``np.sum(x, axis=0, keepdims=keep)``) must be a constant when compiling.
Where it comes from a parameter, directly (``keep = flag``) or through a branch on one
(``if flag: keep = True``), ``jit`` compiles once per value of that parameter, as if it
were marked static: a value that decides the program's shapes is a static value (JAX's
rule), found here instead of asked for.
"""

from __future__ import annotations

import gast

from numbax.transform.walk import walk

RANK_KEYWORDS = ("keepdims",)
"""Keyword arguments whose value decides the rank of a call's result."""


def _read(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _stored(node: gast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _dependencies(stmts: list[gast.stmt], tests: set[str], edges: dict[str, set[str]]) -> None:
    """``edges[name]``: the names an assignment of ``name`` reads, with the names of the
    tests of the branches and loops around it."""
    for stmt in stmts:
        if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
            value = stmt.value if stmt.value is not None else gast.Constant(None, None)
            targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
            for target in targets:
                for name in _stored(target):
                    edges.setdefault(name, set()).update(_read(value) | tests)
        elif isinstance(stmt, (gast.If, gast.While)):
            inner = tests | _read(stmt.test)
            _dependencies(stmt.body, inner, edges)
            _dependencies(stmt.orelse, inner, edges)
        elif isinstance(stmt, gast.For):
            inner = tests | _read(stmt.iter)
            for name in _stored(stmt.target):
                edges.setdefault(name, set()).update(inner)
            _dependencies(stmt.body, inner, edges)
            _dependencies(stmt.orelse, inner, edges)
        elif isinstance(stmt, (gast.With, gast.Try)):
            for block in ("body", "orelse", "finalbody"):
                _dependencies(getattr(stmt, block, []), tests, edges)


def rank_parameters(fn: gast.FunctionDef) -> tuple[str, ...]:
    """The parameters of ``fn`` whose values reach an argument of
    :data:`RANK_KEYWORDS` that is not written as a constant."""
    reached = set()
    for node in walk(fn):
        if isinstance(node, gast.Call):
            for keyword in node.keywords:
                if keyword.arg in RANK_KEYWORDS:
                    reached |= _read(keyword.value)
    if not reached:
        return ()
    edges: dict[str, set[str]] = {}
    _dependencies(fn.body, set(), edges)
    frontier = set(reached)
    while frontier:
        name = frontier.pop()
        for source in edges.get(name, ()):
            if source not in reached:
                reached.add(source)
                frontier.add(source)
    arguments = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    return tuple(a.id for a in arguments if a.id in reached)
