"""Definitions, uses and liveness of variables in the core language.

The core language (see ``normalize``) has assignments with one operation on the right,
subscript stores, expression statements (calls made for their effect, a tape's
``append``), ``if name:``, ``for i in range(...):``, ``while name:``, ``break``,
``continue`` and one ``return``. Every question a transformation asks about names —
what a block assigns, what it reads before writing, which values a later statement
still reads — is answered here, once, for all of them.

Liveness is computed backwards over the structured statements, with loops iterated to
a fixed point: ``break`` sees what is live after its loop, ``continue`` what is live at
the loop's head. It errs on the side of *live*: a store into ``x[i]`` keeps ``x`` (and
what it reads) live, and a ``for`` target stays live across the loop, since a loop that
runs no iteration leaves the old value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import gast

_BLOCKS = ("body", "orelse")


def names(node: gast.AST) -> set[str]:
    """Every name ``node`` mentions, read or written."""
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def read_names(node: gast.AST) -> set[str]:
    """The names ``node`` reads (nested blocks included)."""
    return {
        n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    }


def assigned_names(stmts: Iterable[gast.AST]) -> set[str]:
    """The names ``stmts`` assign, nested blocks and loop targets included (a store
    ``x[i] = v`` does not assign ``x``: it reads it)."""
    return {
        n.id
        for s in stmts
        for n in gast.walk(s)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    }


def statements(body: Iterable[gast.stmt]) -> Iterator[gast.stmt]:
    """Every statement of ``body``, each compound one before those of its blocks."""
    for stmt in body:
        yield stmt
        for block in _BLOCKS:
            yield from statements(getattr(stmt, block, []))


def header(stmt: gast.stmt) -> list[gast.AST]:
    """What a compound statement evaluates itself (its test, or its target and range);
    a simple statement is its own header."""
    if isinstance(stmt, gast.If | gast.While):
        return [stmt.test]
    if isinstance(stmt, gast.For):
        return [stmt.target, stmt.iter]
    return [stmt]


def uses(stmt: gast.stmt) -> set[str]:
    """The names a statement reads itself (for a compound one, its header only)."""
    return set().union(*(read_names(part) for part in header(stmt)))


def definitions(stmt: gast.stmt) -> set[str]:
    """The names a statement assigns itself (for a ``for``, its target only)."""
    return assigned_names(header(stmt))


def read_before_written(stmts: list[gast.stmt]) -> set[str]:
    """The names ``stmts`` read before writing them on some path: in a loop body,
    those an iteration reads from the one before, or from before the loop."""
    return _exposed(stmts, set())


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
        elif isinstance(stmt, gast.For | gast.While):
            head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            exposed |= read_names(head) - written
            inner = set(written) | ({stmt.target.id} if isinstance(stmt, gast.For) else set())
            exposed |= _exposed(stmt.body, inner)  # it may run no time: writes do not count
        else:
            exposed |= read_names(stmt) - written
            if isinstance(stmt, gast.Assign):
                written |= assigned_names([stmt])
    return exposed


class Liveness:
    """Which variables are live (may still be read) after each statement of a body.

    ``Liveness(body, at_end)``: ``at_end`` are the names read after ``body`` (for a
    function's body, nothing: its ``return`` reads what it returns).
    """

    def __init__(self, body: list[gast.stmt], at_end: Iterable[str] = ()) -> None:
        self._after: dict[int, set[str]] = {}
        self.entry = self._block(body, set(at_end), None)

    def after(self, stmt: gast.stmt) -> set[str]:
        """The names live just after ``stmt`` (all of them, for a statement not seen)."""
        return self._after[id(stmt)]

    def _block(
        self, stmts: list[gast.stmt], live: set[str], loop: tuple[set[str], set[str]] | None
    ) -> set[str]:
        for stmt in reversed(stmts):
            live = self._statement(stmt, live, loop)
        return live

    def _statement(
        self, stmt: gast.stmt, live: set[str], loop: tuple[set[str], set[str]] | None
    ) -> set[str]:
        """Names live before ``stmt`` given those live after it; ``loop``: what is live
        after the enclosing loop and at its head (for ``break`` and ``continue``)."""
        seen = self._after.get(id(stmt))
        self._after[id(stmt)] = live if seen is None else seen | live
        if isinstance(stmt, gast.Break):
            return set(loop[0]) if loop else set(live)
        if isinstance(stmt, gast.Continue):
            return set(loop[1]) if loop else set(live)
        if isinstance(stmt, gast.Return):
            return read_names(stmt)
        if isinstance(stmt, gast.If):
            body = self._block(stmt.body, set(live), loop)
            orelse = self._block(stmt.orelse, set(live), loop)
            return body | orelse | read_names(stmt.test)
        if isinstance(stmt, gast.For | gast.While):
            head = uses(stmt) | live
            while True:
                entry = self._block(stmt.body, set(head), (live, head))
                new = head | entry
                if new == head:
                    return head
                head = new
        if isinstance(stmt, gast.Assign) and not isinstance(stmt.targets[0], gast.Subscript):
            return (live - definitions(stmt)) | uses(stmt)
        return live | read_names(stmt)
