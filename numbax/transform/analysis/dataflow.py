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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import gast

from numbax.transform.walk import name_ids, walk

_BLOCKS = ("body", "orelse")


def names(node: gast.AST) -> set[str]:
    """Every name ``node`` mentions, read or written."""
    return name_ids(node)


def read_names(node: gast.AST) -> set[str]:
    """The names ``node`` reads (nested blocks included)."""
    return name_ids(node, gast.Load)


def assigned_names(stmts: Iterable[gast.AST]) -> set[str]:
    """The names ``stmts`` assign, nested blocks and loop targets included (a store
    ``x[i] = v`` does not assign ``x``: it reads it)."""
    return set().union(*(name_ids(s, gast.Store) for s in stmts))


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
        # what a statement reads and assigns, by id: a loop's body is analysed until
        # nothing changes, so its statements are met more than once
        self._reads: dict[int, set[str]] = {}
        self._defines: dict[int, set[str]] = {}
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
            return set(self._read_by(stmt, read_names))
        if isinstance(stmt, gast.If):
            body = self._block(stmt.body, set(live), loop)
            orelse = self._block(stmt.orelse, set(live), loop)
            return body | orelse | read_names(stmt.test)
        if isinstance(stmt, gast.For | gast.While):
            head = self._read_by(stmt, uses) | live
            while True:
                entry = self._block(stmt.body, set(head), (live, head))
                new = head | entry
                if new == head:
                    return head
                head = new
        if isinstance(stmt, gast.Assign) and not isinstance(stmt.targets[0], gast.Subscript):
            return (live - self._defined_by(stmt)) | self._read_by(stmt, uses)
        return live | self._read_by(stmt, read_names)

    def _read_by(self, stmt: gast.stmt, reads: Callable[[gast.stmt], set[str]]) -> set[str]:
        """``reads(stmt)``, computed once (one function per kind of statement)."""
        found = self._reads.get(id(stmt))
        if found is None:
            found = self._reads[id(stmt)] = reads(stmt)
        return found

    def _defined_by(self, stmt: gast.stmt) -> set[str]:
        found = self._defines.get(id(stmt))
        if found is None:
            found = self._defines[id(stmt)] = definitions(stmt)
        return found


Pairs = frozenset[frozenset[str]]


@dataclass(frozen=True)
class _CopyState:
    """What holds at one point: ``copies``, the pairs of names holding the same object;
    ``branches``, for the test ``t`` of an earlier ``if t:`` (``t`` unchanged since),
    the state at the end of its body and of its ``else``: their own ``branches`` say
    what held in the ``if`` statements nested in them, so a chain of them (``if``,
    ``elif``, ``elif``) repeated by the adjoint sweep is followed to any depth."""

    copies: Pairs = frozenset()
    branches: tuple[tuple[str, _CopyState, _CopyState], ...] = ()

    def kill(self, written: set[str]) -> _CopyState:
        """The state once the names ``written`` are assigned (or stored into)."""
        return _CopyState(
            _alive(self.copies, written),
            tuple(
                (t, body.kill(written), orelse.kill(written))
                for t, body, orelse in self.branches
                if t not in written
            ),
        )

    def meet(self, other: _CopyState) -> _CopyState:
        """What holds on both paths."""
        if other is self:
            return self
        theirs = {t: (body, orelse) for t, body, orelse in other.branches}
        return _CopyState(
            self.copies & other.copies,
            tuple(
                (t, body.meet(theirs[t][0]), orelse.meet(theirs[t][1]))
                for t, body, orelse in self.branches
                if t in theirs
            ),
        )

    def entering(self, test: gast.expr, body: bool) -> _CopyState:
        """The state on entering a branch of ``if test:``: an earlier ``if`` on the same
        unchanged name took the same branch, so what held at that branch's end holds,
        and so do the correlations of the ``if`` statements nested in that branch."""
        for t, then, orelse in self.branches:
            if isinstance(test, gast.Name) and test.id == t:
                taken = then if body else orelse
                known = {b[0] for b in self.branches}
                nested = tuple(b for b in taken.branches if b[0] not in known)
                return _CopyState(self.copies | taken.copies, self.branches + nested)
        return self

    def inside(self, entry: _CopyState) -> _CopyState:
        """This state at the end of a branch entered in ``entry``, less the ``if``
        statements ``entry`` knew already (what a later ``if`` on the same test finds
        of them, it finds in its own state)."""
        known = {b[0] for b in entry.branches}
        return _CopyState(self.copies, tuple(b for b in self.branches if b[0] not in known))


def copied_names(stmt: gast.stmt) -> tuple[str, str] | None:
    """``(a, b)`` for ``a = b`` between two names."""
    if (
        isinstance(stmt, gast.Assign)
        and isinstance(stmt.targets[0], gast.Name)
        and isinstance(stmt.value, gast.Name)
    ):
        return stmt.targets[0].id, stmt.value.id
    return None


def _alive(pairs: Pairs, written: set[str]) -> Pairs:
    return frozenset(p for p in pairs if not p & written)


def _written_by(node: gast.AST) -> set[str]:
    """The names ``node`` assigns or stores into (``x[i] = v`` changes what ``x``
    holds, which matters to a branch test ``x``)."""
    written = set()
    for n in walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
            written.add(n.id)
        elif (
            isinstance(n, gast.Subscript)
            and isinstance(n.ctx, gast.Store)
            and isinstance(n.value, gast.Name)
        ):
            written.add(n.value.id)
    return written


class Copies:
    """Which variables hold the same object as which others (``a = b`` made, neither
    reassigned since), just before each statement of a body, on every path to it.

    A forward analysis: an ``if`` keeps what both branches keep; a loop, what holds at
    its entry of the names its body does not assign (which holds in every iteration
    and after it). It follows one correlation reverse mode relies on: a second
    ``if t:`` on an unchanged ``t`` takes the branch the first took, so what held at
    the end of that branch holds in the same branch of the second (a value saved in a
    branch of the primal sweep and restored in the same branch of the adjoint sweep).
    Pairs are kept as ``frozenset({a, b})``.
    """

    def __init__(self, body: list[gast.stmt]) -> None:
        self._before: dict[int, Pairs] = {}
        self._written: dict[int, set[str]] = {}
        self._block(body, _CopyState())

    def _written_by(self, stmt: gast.stmt) -> set[str]:
        """What ``stmt`` assigns or stores into, nested blocks included: each statement's
        own part found once, not again for every compound statement around it."""
        found = self._written.get(id(stmt))
        if found is None:
            found = set()
            for field in stmt._fields:
                value = getattr(stmt, field, None)
                if field in _BLOCKS:
                    for inner in value:
                        found |= self._written_by(inner)
                elif isinstance(value, gast.AST):
                    found |= _written_by(value)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, gast.AST):
                            found |= _written_by(item)
            self._written[id(stmt)] = found
        return found

    def before(self, stmt: gast.stmt) -> Pairs:
        """The pairs of names that hold the same object just before ``stmt``."""
        return self._before.get(id(stmt), frozenset())

    def _block(self, stmts: list[gast.stmt], state: _CopyState) -> _CopyState:
        for stmt in stmts:
            state = self._statement(stmt, state)
        return state

    def _statement(self, stmt: gast.stmt, state: _CopyState) -> _CopyState:
        self._before[id(stmt)] = state.copies
        if isinstance(stmt, gast.If):
            body = self._block(stmt.body, state.entering(stmt.test, body=True))
            orelse = self._block(stmt.orelse, state.entering(stmt.test, body=False))
            after = body.meet(orelse)
            test = stmt.test
            if isinstance(test, gast.Name) and test.id not in self._written_by(stmt):
                others = tuple(b for b in after.branches if b[0] != test.id)
                record = (test.id, body.inside(state), orelse.inside(state))
                after = _CopyState(after.copies, (*others, record))
            return after
        copied = copied_names(stmt)
        if copied is not None and frozenset(copied) in state.copies:
            return state  # ``a = b`` where both hold one object already changes nothing
        kept = state.kill(self._written_by(stmt))
        if isinstance(stmt, gast.For | gast.While):
            self._block(stmt.body, kept)
            return kept
        if isinstance(stmt, gast.Break | gast.Continue | gast.Return):
            return kept
        if copied is not None and copied[0] != copied[1]:
            return _CopyState(kept.copies | {frozenset(copied)}, kept.branches)
        return kept
