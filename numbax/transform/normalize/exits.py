"""Control-flow lowerings that run on the user's statements before flattening.

Three rewrites, in this order:

* :func:`prune` drops statements that can never run (after ``return``, ``raise``,
  ``break``, ``continue``, or an ``if`` whose branches all leave), so later passes never
  have to reason about unreachable code and none is emitted.
* :func:`lower_loop_else` turns ``for/while ... else`` into a flag: ``_no_break = True``
  before the loop, ``_no_break = False`` before each ``break`` of that loop, and
  ``if _no_break: <else body>`` after it (or the else body straight after the loop when
  the loop has no ``break``).
* :func:`single_exit` leaves exactly one ``return`` at the end of the function.

Single exit, in detail. A function whose only ``return`` is its last statement is left
alone. Otherwise every ``return v`` becomes ``_result = v`` and the function ends with
``return _result``; falling off the end is ``return None`` made explicit. Returns in
``if`` branches are handled by restructuring: when one branch always returns, the
statements after the ``if`` move into the other branch. Where that is impossible
without duplicating code (a return inside a loop, or both branches sometimes falling
through), a flag records that the function has returned:
``_result = v; _returned = True; break`` inside loops, ``if _returned: break`` after an
inner loop that may have returned, and ``_not_returned = not _returned;
if _not_returned: <rest>`` around the code after it at the top level. The flag is only
set at returns whose path reaches such a guard, so structured code carries no flag.
"""

from __future__ import annotations

import enum

import gast

from numbax.transform.names import Namer
from numbax.transform.nodes import (
    assign,
    at,
    block_never_completes,
    clone,
    const,
    contains,
    if_,
    load,
    never_completes,
    own_breaks,
)
from numbax.transform.walk import walk


def prune(stmts: list[gast.stmt]) -> list[gast.stmt]:
    """``stmts`` (recursively) without the statements that can never run."""
    kept = []
    for stmt in stmts:
        for field in ("body", "orelse"):
            if hasattr(stmt, field):
                setattr(stmt, field, prune(getattr(stmt, field)))
        kept.append(stmt)
        if never_completes(stmt):
            break
    return kept


def lower_loop_else(stmts: list[gast.stmt], namer: Namer) -> list[gast.stmt]:
    """Replace every ``for/while ... else`` in ``stmts`` by a loop and a flag."""
    out: list[gast.stmt] = []
    for stmt in stmts:
        for field in ("body", "orelse"):
            if hasattr(stmt, field):
                setattr(stmt, field, lower_loop_else(getattr(stmt, field), namer))
        if not isinstance(stmt, (gast.For, gast.While)) or not stmt.orelse:
            out.append(stmt)
            continue
        orelse, stmt.orelse = stmt.orelse, []
        if not own_breaks(stmt):
            out += [stmt, *orelse]
            continue
        flag = namer.fresh("no_break")
        _before_own_breaks(stmt.body, flag)
        out += [
            at(assign(flag, const(True)), stmt.lineno),
            stmt,
            at(if_(flag, orelse), stmt.lineno),
        ]
    return out


def _before_own_breaks(stmts: list[gast.stmt], flag: str) -> None:
    """Insert ``flag = False`` before every ``break`` of the loop whose body is ``stmts``."""
    for i in reversed(range(len(stmts))):
        stmt = stmts[i]
        if isinstance(stmt, gast.Break):
            stmts.insert(i, at(assign(flag, const(False)), stmt.lineno))
        elif isinstance(stmt, gast.If):
            _before_own_breaks(stmt.body, flag)
            _before_own_breaks(stmt.orelse, flag)


def single_exit(stmts: list[gast.stmt], namer: Namer, def_line: int) -> list[gast.stmt]:
    """``stmts`` rewritten to end in the function's one and only ``return``."""
    last_line = stmts[-1].lineno if stmts else def_line
    if not stmts or not never_completes(stmts[-1]):
        stmts = stmts + [at(gast.Return(const(None)), last_line)]
    returns = [n for s in stmts for n in walk(s) if isinstance(n, gast.Return)]
    if len(returns) == 1 and stmts[-1] is returns[0]:
        return stmts
    if not returns:  # ends in `raise`; the core language still ends in a return
        return stmts + [at(gast.Return(const(None)), last_line)]
    exits = _Exits(namer)
    body, _, _ = exits.block(stmts, depth=0)
    body = exits.finish(body)
    if exits.flag is not None:
        body.insert(0, at(assign(exits.flag, const(False)), def_line))
    return body + [at(gast.Return(load(exits.result)), last_line)]


class _Status(enum.Enum):
    FALLS = "no path through the block has returned"
    RETURNS = "every path through the block has returned (or raised)"
    MAYBE = "some paths have returned, others fall through"


class _Site(gast.Pass):
    """Placeholder after ``_result = v``: becomes ``_returned = True`` if a guard needs it."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.needed = False
        at(self, line)


class _Exits:
    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.result = namer.fresh("result")
        self.flag: str | None = None
        self.not_flag: str | None = None

    def block(
        self, stmts: list[gast.stmt], depth: int
    ) -> tuple[list[gast.stmt], _Status, list[_Site]]:
        """Lower the returns of ``stmts`` at loop depth ``depth``.

        Returns the new statements, whether they have returned, and the return sites
        whose flag is needed only if a guard ends up following them.
        """
        out: list[gast.stmt] = []
        sites: list[_Site] = []
        for i, stmt in enumerate(stmts):
            rest = stmts[i + 1 :]
            if isinstance(stmt, gast.Return):
                return self._return(stmt, depth, out, sites)
            if not contains(stmt, gast.Return):
                out.append(stmt)
            elif isinstance(stmt, (gast.For, gast.While)):
                infinite = never_completes(stmt)  # before its returns become breaks
                stmt.body, _, loop_sites = self.block(stmt.body, depth + 1)
                out.append(stmt)
                if depth > 0:  # leave the enclosing loops too
                    self._need(loop_sites)
                    out.append(at(if_(self._flag(), [at(gast.Break(), stmt.lineno)]), stmt.lineno))
                else:
                    status = _Status.RETURNS if infinite else _Status.MAYBE
                    return self._then(out, status, sites + loop_sites, rest)
            elif depth > 0:  # an `if` in a loop: its returns break out, the rest follows
                stmt.body, _, body_sites = self.block(stmt.body, depth)
                stmt.orelse, _, else_sites = self.block(stmt.orelse, depth)
                out.append(stmt)
                sites += body_sites + else_sites
            else:
                if len(rest) == 1 and isinstance(rest[0], gast.Return):
                    # A final `return e` is copied into the branches that can reach it:
                    # cheaper to read than a flag, and never more than one line a path.
                    for branch in (stmt.body, stmt.orelse):
                        if not block_never_completes(branch):
                            branch.append(clone(rest[0]))
                    rest = []
                return self._top_level_if(stmt, out, sites, rest)
        status = _Status.RETURNS if out and never_completes(out[-1]) else _Status.FALLS
        return out, status, sites

    def _return(
        self, stmt: gast.Return, depth: int, out: list[gast.stmt], sites: list[_Site]
    ) -> tuple[list[gast.stmt], _Status, list[_Site]]:
        value = stmt.value if stmt.value is not None else const(None)
        site = _Site(stmt.lineno)
        out += [at(assign(self.result, value), stmt.lineno), site]
        if depth > 0:
            out.append(at(gast.Break(), stmt.lineno))
        return out, _Status.RETURNS, sites + [site]

    def _top_level_if(
        self, stmt: gast.If, out: list[gast.stmt], sites: list[_Site], rest: list[gast.stmt]
    ) -> tuple[list[gast.stmt], _Status, list[_Site]]:
        stmt.body, body_status, body_sites = self.block(stmt.body, 0)
        stmt.orelse, else_status, else_sites = self.block(stmt.orelse, 0)
        out.append(stmt)
        if body_status is _Status.RETURNS and else_status is _Status.RETURNS:
            return out, _Status.RETURNS, sites + body_sites + else_sites
        if _Status.RETURNS not in (body_status, else_status):
            return self._then(out, _Status.MAYBE, sites + body_sites + else_sites, rest)
        # One branch always returns: the rest of the block belongs to the other one.
        if body_status is _Status.RETURNS:
            stmt.orelse, status, pending = self._then(stmt.orelse, else_status, else_sites, rest)
            pending = body_sites + pending
        else:
            stmt.body, status, pending = self._then(stmt.body, body_status, body_sites, rest)
            pending = else_sites + pending
        merged = _Status.RETURNS if status is _Status.RETURNS else _Status.MAYBE
        return out, merged, sites + pending

    def _then(
        self,
        done: list[gast.stmt],
        status: _Status,
        sites: list[_Site],
        rest: list[gast.stmt],
    ) -> tuple[list[gast.stmt], _Status, list[_Site]]:
        """``done`` (which ended in ``status``) followed by the top-level ``rest``."""
        if status is _Status.RETURNS or not rest:
            return done, status, sites
        lowered, rest_status, rest_sites = self.block(rest, 0)
        if status is _Status.FALLS:
            return done + lowered, rest_status, sites + rest_sites
        self._need(sites)
        if self.not_flag is None:
            self.not_flag = self.namer.fresh("not_returned")
        line = rest[0].lineno
        guard = [
            at(assign(self.not_flag, gast.UnaryOp(gast.Not(), load(self._flag()))), line),
            at(if_(self.not_flag, lowered), line),
        ]
        after = _Status.RETURNS if rest_status is _Status.RETURNS else _Status.MAYBE
        return done + guard, after, rest_sites

    def _flag(self) -> str:
        if self.flag is None:
            self.flag = self.namer.fresh("returned")
        return self.flag

    def _need(self, sites: list[_Site]) -> None:
        self._flag()
        for site in sites:
            site.needed = True

    def finish(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        """Turn the needed return sites into ``_returned = True``; drop the others."""
        out = []
        for stmt in stmts:
            for field in ("body", "orelse"):
                if hasattr(stmt, field):
                    setattr(stmt, field, self.finish(getattr(stmt, field)))
            if isinstance(stmt, _Site):
                if stmt.needed:
                    out.append(at(assign(self.flag, const(True)), stmt.lineno))
            else:
                out.append(stmt)
        return out
