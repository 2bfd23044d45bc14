"""Reverse mode's primal sweep: the user's statements, with the saves the adjoint needs.

Mixed into ``reverse.py``'s ``_Reverse``, whose state it reads (``needed``, ``namer``,
``first_mentions``...). Before a statement overwrites a value that the adjoint reads, the
value is saved (``reverse_records.py``); a nested block pushes the values first assigned
in it (its temporaries) at its end, for its adjoint to restore first; a loop counts its
trips where its reverse runs by count (a ``while``, a ``for`` left by ``break``), or tapes
its live-in values where the adjoint recomputes its body (``recompute.py``). A loop's
``break``/``continue`` become the last statements of their blocks (:func:`_guard_jumps`),
so that the adjoint, which has no jumps, skips what the primal skipped.
"""

from __future__ import annotations

from collections import Counter

import gast

from numbax.transform.ad.common import add, located, runtime_call
from numbax.transform.ad.recompute import live_in_variables
from numbax.transform.ad.reverse_records import _Loop, _Record, _Save, _Scope
from numbax.transform.analysis.dataflow import (
    assigned_names,
    names,
    read_before_written,
    read_names,
)
from numbax.transform.nodes import assign, clone, load
from numbax.transform.walk import walk


class _PrimalSweep:
    """The primal sweep of :class:`~numbax.transform.ad.reverse._Reverse` (mixed in)."""

    def primal(
        self, stmts: list[gast.stmt], scope: _Scope
    ) -> tuple[list[gast.stmt], list[_Record]]:
        """The primal statements of one block (with saves) and a record per statement."""
        out: list[gast.stmt] = []
        records: list[_Record] = []
        for stmt in stmts:
            if isinstance(stmt, (gast.Assign, gast.Expr)):  # what it reads exists
                scope.definite |= read_names(stmt) & scope.maybe
            record = _Record(
                stmt,
                defined_before=frozenset(scope.maybe),
                definite_before=frozenset(scope.definite),
            )
            line = getattr(stmt, "lineno", None)
            if isinstance(stmt, gast.Assign):
                out += self._primal_assign(stmt, record, scope, line)
            elif isinstance(stmt, gast.If):
                out += self._primal_if(stmt, record, scope, line)
            elif isinstance(stmt, (gast.For, gast.While)):
                out += self._primal_loop(stmt, record, scope, line)
            elif isinstance(stmt, (gast.Break, gast.Continue)):
                out.append(stmt)  # what the scopes saved is pushed before it (see loops)
                scope.loop.jumps.append((stmt, scope.chain()))
            else:
                out.append(stmt)
            records.append(record)
        return out, records

    def _block(self, stmts: list[gast.stmt], scope: _Scope, line: int | None, handed=frozenset()):
        """A nested block: its statements, ending with the push of the values first
        assigned in it (its *temporaries*, restored at the start of its adjoint), but
        for those ``handed`` to the enclosing block (see _primal_if)."""
        out, records = self.primal(stmts, scope)
        scope.stmts = out
        scope.snapshot = [
            (n, save)
            for n, save in scope.temporaries.items()
            if n not in handed and (n in scope.definite or save.flag is not None)
        ]
        if not (out and isinstance(out[-1], (gast.Break, gast.Continue))):
            out += located([p for n, save in scope.snapshot for p in save.keep(n)], line)
        return out, records

    def _primal_assign(
        self, stmt: gast.Assign, record: _Record, scope: _Scope, line: int | None
    ) -> list[gast.stmt]:
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript):  # x[i] = v: keep the old x[i]
            name = target.value.id
            if name not in self.needed:
                return [stmt]
            save = self._save(name + "_at", scope)
            record.saves.append((name, save))
            old = gast.Subscript(load(name), clone(target.slice), gast.Load())
            kept = runtime_call("kept_item", old, load(name))
            return [*located([save.push(kept)], line), stmt]
        targets = [n.id for n in walk(target) if isinstance(n, gast.Name)]
        for name in targets:
            if name not in self.needed:
                continue
            if name in scope.definite:  # overwritten: saved just before
                record.saves.append((name, self._save(name, scope)))
                continue
            # perhaps overwritten: saved where it exists, unless no line above mentions
            # it (then no statement above reads the value it had, from an iteration
            # before, and Numba compiles no read of a variable above its assignments)
            if name in scope.maybe and self.first_mentions.get(name) is not stmt:
                save = self._save(name, scope)
                flag = self._flag(name)
                save.flag = (flag, self._save(flag, scope))
                record.saves.append((name, save))
            if name not in scope.temporaries:  # first value here: saved at block end
                scope.temporaries[name] = self._save(name, scope)
        scope.definite.update(targets)
        scope.maybe.update(targets)
        pushes = [push for name, save in record.saves for push in save.keep(name)]
        return [*located(pushes, line), stmt]

    def _save(self, name: str, scope: _Scope) -> _Save:
        if scope.loop is not None:
            return self.tape(name)
        return _Save(self.namer.fresh(f"{name.lstrip('_')}_old"), tape=False)

    def _primal_if(
        self, stmt: gast.If, record: _Record, scope: _Scope, line: int | None
    ) -> list[gast.stmt]:
        body, orelse = scope.child(), scope.child()
        # in a loop, what follows the ``if`` in this iteration may read a value first
        # assigned in a branch, and its adjoint runs before the branch's: such values
        # are pushed at the end of the enclosing block, as if first assigned there
        # (with their flag if only some paths assign them). An ``if`` that may jump
        # keeps them: nothing in its block follows it (see _guard_jumps).
        handed: set[str] = set()
        if scope.loop is not None and not _own_jumps([stmt]):
            inside = _reads(stmt)
            handed = {n for n, k in scope.loop.reads.items() if k > inside[n]}
        stmt.body, record.body = self._block(stmt.body, body, line, handed)
        stmt.orelse, record.orelse = self._block(stmt.orelse, orelse, line, handed)
        record.body_snapshot, record.orelse_snapshot = body.snapshot, orelse.snapshot
        completing = [b for b in (body, orelse) if not _ends_in_jump(b.stmts)]
        if completing:
            scope.definite = set.intersection(*(b.definite for b in completing))
        scope.maybe |= body.maybe | orelse.maybe
        for branch in (body, orelse):
            for name in branch.temporaries:
                if name in handed and name not in scope.temporaries:
                    save = self._save(name, scope)
                    if name not in scope.definite:
                        flag = self._flag(name)
                        save.flag = (flag, self._save(flag, scope))
                    scope.temporaries[name] = save
        return [stmt]

    def _primal_loop(
        self, stmt: gast.For | gast.While, record: _Record, scope: _Scope, line: int | None
    ) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        record.reads = _reads(stmt)  # as written (see _hand_over)
        jumps = _guard_jumps(stmt)
        if isinstance(stmt, gast.While) or jumps:
            # iterations are counted: a while loop's, or a for loop's left by break
            record.trips = self.namer.fresh("trips")
            self.needed.add(record.trips)
            counter = _Record(assign(record.trips, gast.Constant(0, None)))
            out += self._primal_assign(counter.stmt, counter, scope, line)
            record.trips_record = counter
        live = self._live_in(stmt, scope)
        if live is not None:  # taped: the live-in values; the rest is recomputed
            record.original_body = [clone(s) for s in stmt.body]
            record.live_in = [(name, self.tape(name)) for name in live]
            pushes = [save.push(load(name)) for name, save in record.live_in]
            body = located(pushes, line) + list(stmt.body)
            scope.maybe |= names(stmt)
            if record.trips is not None:
                count = add(load(record.trips), gast.Constant(1, None))
                body.insert(0, located([assign(record.trips, count)], line)[0])
            stmt.body = body
            self._hand_over(stmt, record, scope)
            return [*out, stmt]
        body_scope = scope.child(_Loop(reads=_reads(gast.Module(body=stmt.body, type_ignores=[]))))
        # values an iteration reads from the one before
        body_scope.maybe |= read_before_written(stmt.body) & assigned_names(stmt.body)
        if isinstance(stmt, gast.For):
            body_scope.definite.add(stmt.target.id)
            body_scope.maybe.add(stmt.target.id)
        body, record.body = self._block(stmt.body, body_scope, line)
        record.snapshot = body_scope.snapshot
        if record.trips is not None:
            count = add(load(record.trips), gast.Constant(1, None))
            body.insert(0, located([assign(record.trips, count)], line)[0])
        for jump, chain in body_scope.loop.jumps:
            pushes = [p for s in chain for n, save in s.snapshot for p in save.keep(n)]
            _insert_before(body, jump, located(pushes, getattr(jump, "lineno", line)))
        stmt.body = body
        scope.maybe |= body_scope.maybe
        self._hand_over(stmt, record, scope)
        return [*out, stmt]

    def _hand_over(self, stmt: gast.For | gast.While, record: _Record, scope: _Scope) -> None:
        """In an enclosing loop, a value first assigned by a nested loop and read after
        it is pushed at the end of the enclosing block, as if first assigned there
        (where it exists, as its flag says: the loop may not run): the adjoint of
        what reads it runs before the nested loop's, which leaves other values."""
        if scope.loop is None:
            return
        inner = record.original_body or stmt.body
        made = assigned_names(inner)
        if isinstance(stmt, gast.For):
            made.add(stmt.target.id)
        outside = {n for n, k in scope.loop.reads.items() if k > record.reads[n]}
        for name in sorted(made & outside & self.needed):
            if name in record.definite_before or name in scope.temporaries:
                continue
            save = self._save(name, scope)
            flag = self._flag(name)
            save.flag = (flag, self._save(flag, scope))
            scope.temporaries[name] = save

    def _live_in(self, stmt: gast.For | gast.While, scope: _Scope) -> list[str] | None:
        """The variables to tape per iteration if the adjoint recomputes the body (it
        must have something to differentiate), else None."""
        body = gast.Module(body=stmt.body, type_ignores=[])
        if not any(isinstance(n, gast.Assign) and self._assigns_active(n) for n in walk(body)):
            return None
        return live_in_variables(stmt, scope.definite, scope.maybe, self.needed)


def _first_mentions(stmts: list[gast.stmt]) -> dict[str, gast.stmt]:
    """Each name's first statement in the text of ``stmts`` (a block's header before
    its body)."""
    first: dict[str, gast.stmt] = {}
    for stmt in stmts:
        blocks = [getattr(stmt, block, []) for block in ("body", "orelse")]
        header = [getattr(stmt, part) for part in ("test", "target", "iter") if hasattr(stmt, part)]
        for name in set().union(*map(names, header if any(blocks) else [stmt])):
            first.setdefault(name, stmt)
        for block in blocks:
            for name, inner in _first_mentions(block).items():
                first.setdefault(name, inner)
    return first


def _reads(node: gast.AST) -> Counter[str]:
    """How often ``node`` reads each name."""
    return Counter(
        n.id for n in walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
    )


def _ends_in_jump(stmts: list[gast.stmt]) -> bool:
    return bool(stmts) and isinstance(stmts[-1], (gast.Break, gast.Continue))


def _own_jumps(stmts: list[gast.stmt]) -> bool:
    """Whether ``stmts`` contain a break/continue of their loop (not of a nested one)."""
    for stmt in stmts:
        if isinstance(stmt, (gast.Break, gast.Continue)):
            return True
        if isinstance(stmt, gast.If) and (_own_jumps(stmt.body) or _own_jumps(stmt.orelse)):
            return True
    return False


def _guard_jumps(loop: gast.For | gast.While) -> bool:
    """Move the statements a ``break``/``continue`` skips into the branches that
    complete, so that no statement follows an ``if`` that may jump.

    ``if c: ...; break`` followed by ``rest`` becomes ``if c: ...; break`` /
    ``else: rest``: the primal behaves exactly as before, and the adjoint sweep (which
    has no jumps) skips what the primal skipped by the same, taped, test. ``rest`` is
    copied into both branches when both may complete (a jump nested deeper).
    """
    if not _own_jumps(loop.body):
        return False
    loop.body = _jump_last(loop.body)
    return True


def _jump_last(stmts: list[gast.stmt]) -> list[gast.stmt]:
    out: list[gast.stmt] = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, (gast.Break, gast.Continue)):
            return [*out, stmt]  # what follows never runs
        if isinstance(stmt, gast.If) and _own_jumps([stmt]):
            rest = stmts[i + 1 :]
            for field in ("body", "orelse"):
                branch = _jump_last(getattr(stmt, field))
                if rest and not _always_jumps(branch):
                    branch = _jump_last(branch + clone(rest))
                setattr(stmt, field, branch)
            return [*out, stmt]
        out.append(stmt)
    return out


def _always_jumps(stmts: list[gast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (gast.Break, gast.Continue)):
        return True
    return isinstance(last, gast.If) and _always_jumps(last.body) and _always_jumps(last.orelse)


def _insert_before(stmts: list[gast.stmt], target: gast.stmt, new: list[gast.stmt]) -> bool:
    for i, stmt in enumerate(stmts):
        if stmt is target:
            stmts[i:i] = new
            return True
        if isinstance(stmt, gast.If):
            if _insert_before(stmt.body, target, new) or _insert_before(stmt.orelse, target, new):
                return True
    return False
