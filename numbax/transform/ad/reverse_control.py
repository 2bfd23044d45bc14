"""Control flow in reverse mode's adjoint sweep: ``if`` statements and loops run
backwards.

Mixed into ``reverse.py``'s ``_Reverse``. An ``if`` runs the branch its primal ran (its
test was saved), and both branches' adjoints are made to agree on which cotangents exist
afterwards (:meth:`~_ControlFlowAdjoints._join`: a zero where the variable exists,
guarded by its flag where it may not). A ``for`` over a range runs its iterations
backwards (:func:`_backwards`); a ``while``, or a ``for`` left by ``break``, as many times
as its primal counted. The cotangents an iteration hands to the one before exist before
the reverse loop, and each iteration leaves them as it found them.
"""

from __future__ import annotations

import gast

from numbax.transform.ad.common import add, located, runtime_call, zeros_like
from numbax.transform.ad.reverse_records import _Record, _Scope
from numbax.transform.analysis.activity import assignments
from numbax.transform.analysis.dataflow import names, read_before_written
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, clone, load, store
from numbax.transform.operations import appended, without_host_effects


class _ControlFlowAdjoints:
    """The adjoint of ``if`` and loops, for :class:`~numbax.transform.ad.reverse._Reverse`
    (mixed in)."""

    def _join(self, branches: list[tuple[set[str], set[str]]], record: _Record):
        """Make the branches agree on which cotangents exist afterwards.

        A branch without a variable's cotangent gets a zero of it, where the variable
        exists (see _zero). The cotangent of one that does not exist before the
        statement is dropped: nothing before it reads that."""
        union = set().union(*(d for d, _ in branches))
        extra: list[list[gast.stmt]] = []
        for defined, _ in branches:
            stmts = []
            for ct in sorted(union - defined):
                if self._variable_of(ct) in record.defined_before:
                    stmts.append(self._zero(ct, record))
                else:
                    union.discard(ct)
            extra.append(stmts)
        owned_all = set.intersection(*(o for _, o in branches)) if branches else set()
        return union, owned_all, extra

    def _zero(self, ct: str, record: _Record) -> gast.stmt:
        """``ct = zeros_like(x)`` for ``x``'s cotangent ``ct``, before ``record``; if
        ``x`` may not exist there (``if c: x = ...`` earlier), only if the primal sweep
        assigned it (its flag). Where it exists then, but did not yet at this point of
        the primal sweep, the zero is never read: what reads ``ct`` earlier in the
        adjoint is the adjoint of a statement that used ``x``."""
        var = self._variable_of(ct)
        return self._where_exists(var, record, assign(ct, zeros_like(load(var))))

    def _where_exists(self, var: str, record: _Record, stmt: gast.stmt) -> gast.stmt:
        """``stmt``, which reads ``var``: guarded by ``var``'s flag if it may not exist
        before ``record``."""
        if var in record.definite_before:
            return stmt
        return gast.If(load(self._flag(var)), [stmt], [])

    def _variable_of(self, ct: str) -> str:
        return next(v for v, c in self.cotangents.items() if c == ct)

    def _adjoint_if(self, stmt: gast.If, record: _Record, line: int | None) -> list[gast.stmt]:
        start_defined, start_owned = set(self.defined), set(self.owned)
        results = []
        blocks = []
        for records, snapshot in (
            (record.body, record.body_snapshot),
            (record.orelse, record.orelse_snapshot),
        ):
            self.defined, self.owned = set(start_defined), set(start_owned)
            restore = [r for name, save in reversed(snapshot) for r in save.give_back(name)]
            blocks.append(located(restore, line, adjoint=True) + self.adjoint(records))
            results.append((self.defined, self.owned))
        defined, owned, extra = self._join(results, record)
        self.defined, self.owned = defined, owned
        body = blocks[0] + located(extra[0], line, adjoint=True)
        orelse = blocks[1] + located(extra[1], line, adjoint=True)
        if not body and not orelse:
            return []
        node = gast.If(clone(stmt.test), body or [gast.Pass()], orelse)
        return located([node], line, adjoint=True)

    def _loop_cotangents(self, record: _Record) -> list[str]:
        """Cotangents the reverse loop carries between iterations: those of the active
        variables that the body's active statements (those whose adjoint does
        something) mention and that exist before the loop or are read by an iteration
        before it assigns them (made zero before the loop if need be), and of those
        defined by the loop whose cotangent exists already."""
        mentioned = set().union(*(names(s) for s in self._active_statements(record)))
        carried = read_before_written(record.stmt.body)
        return sorted(
            self.cotangent(v)
            for v in mentioned
            if v in self.activity
            and (v in record.defined_before or v in carried or self.cotangent(v) in self.defined)
        )

    def _active_statements(self, record: _Record) -> list[gast.stmt]:
        """The loop body's assignments to active variables and appends to active
        lists, nested blocks included."""
        return [
            s
            for s in assignments(record.stmt.body)
            if (isinstance(s, gast.Assign) and self._assigns_active(s))
            or (appended(s) is not None and appended(s)[0] in self.stacks)
        ]

    def _reverse_body(self, record: _Record, line: int | None) -> tuple[list, list] | None:
        """(statements before the reverse loop, its body), or None when the loop has
        nothing to run backwards.

        Each iteration must leave the cotangents as it found them: one consumed by a
        definition in the body (its variable gets a new value there, whose cotangent
        starts at zero in the iteration before) is made zero again at the end. That
        zero has the shape of this iteration's value; the iteration before, once its
        values are back, gives it the shape of its own (``nxrt.loop_cotangent``: a loop
        over layers of different widths).
        """
        start = set(self.defined), set(self.owned)
        carried = self._loop_cotangents(record)
        before = []
        for ct in carried:
            if ct not in self.defined:
                before.append(self._zero(ct, record))
                self.defined.add(ct)
                self.owned.add(ct)
        entry_defined, entry_owned = set(self.defined), set(self.owned)
        if record.live_in is not None:  # the iteration's start, then the body again
            restore = [assign(name, save.pop()) for name, save in reversed(record.live_in)]
            stmt = record.stmt
            target = {stmt.target.id} if isinstance(stmt, gast.For) else set()
            scope = _Scope(
                None, set(record.definite_before) | target, set(record.defined_before) | target
            )
            again = without_host_effects([clone(s) for s in record.original_body], self.resolver)
            again, records = self.primal(again, scope)
            adjoint = self.adjoint(records)
        else:
            restore = [r for n, save in reversed(record.snapshot) for r in save.give_back(n)]
            again, adjoint = [], self.adjoint(record.body)
        ending, fitted = [], []
        for ct in carried:
            if ct not in self.defined:
                var = self._variable_of(ct)  # if it may not exist yet: where it does
                ending.append(self._where_exists(var, record, assign(ct, zeros_like(load(var)))))
                fit = assign(ct, runtime_call("loop_cotangent", load(ct), load(var)))
                fitted.append(self._where_exists(var, record, fit))
            elif ct in entry_owned and ct not in self.owned:
                copy = assign(ct, runtime_call("owned", load(ct)))
                ending.append(self._where_exists(self._variable_of(ct), record, copy))
        self.defined = entry_defined | (self.defined & set(carried))
        self.owned = entry_owned
        fitted = located(fitted, line, adjoint=True)
        body = _read_by(again, fitted + adjoint) + fitted + adjoint
        body = located(restore, line, adjoint=True) + body + located(ending, line, adjoint=True)
        if not body:  # what ``before`` made is not needed
            self.defined, self.owned = start
            return None
        return located(before, line, adjoint=True), body

    def _adjoint_for(self, stmt: gast.For, record: _Record, line: int | None) -> list[gast.stmt]:
        reverse = self._reverse_body(record, line)
        if reverse is None:
            return []
        before, body = reverse
        if record.trips is not None:  # left early: its iterations, counted, backwards
            start, _, step = _range_args(stmt.iter)
            k = self.namer.fresh("k")
            index = load(k)
            if _constant(step) != 1:
                index = gast.BinOp(index, gast.Mult(), clone(step))
            if _constant(start) != 0:
                index = add(clone(start), index)
            body.insert(0, located([assign(stmt.target.id, index)], line, adjoint=True)[0])
            last = gast.BinOp(load(record.trips), gast.Sub(), gast.Constant(1, None))
            minus_one = gast.Constant(-1, None)
            backwards = gast.Call(load("range"), [last, minus_one, clone(minus_one)], [])
            loop = gast.For(store(k), backwards, body, [], None)
            counter = self._restore(record.trips_record, record.trips_record.stmt.targets[0])
            return before + located([loop, *counter], line, adjoint=True)
        loop = gast.For(store(stmt.target.id), _backwards(stmt.iter, self.namer), body, [], None)
        count = loop.iter.numbax_count
        return before + located([*count, loop], line, adjoint=True)

    def _adjoint_while(self, stmt: gast.While, record: _Record, line: int | None) -> list:
        reverse = self._reverse_body(record, line)
        if reverse is None:
            return []
        before, body = reverse
        iteration = self.namer.fresh("iteration")
        trips = gast.Call(load("range"), [load(record.trips)], [])
        loop = gast.For(store(iteration), trips, body, [], None)
        counter = self._restore(record.trips_record, record.trips_record.stmt.targets[0])
        return before + located([loop, *counter], line, adjoint=True)


def _read_by(stmts: list[gast.stmt], after: list[gast.stmt]) -> list[gast.stmt]:
    """``stmts`` without the assignments to names nothing after reads (a recomputed
    body's loop test, say, which the reverse loop does not evaluate)."""
    live = set().union(*(names(s) for s in after)) if after else set()
    kept: list[gast.stmt] = []
    for stmt in reversed(stmts):
        target = stmt.targets[0] if isinstance(stmt, gast.Assign) else None
        if isinstance(target, gast.Name) and target.id not in live:
            continue
        kept.append(stmt)
        live |= names(stmt)
    return kept[::-1]


def _backwards(iterator: gast.Call, namer: Namer) -> gast.Call:
    """``range(a, b, s)`` walked backwards: ``range(a + (n - 1) * s, a - s, -s)`` with
    ``n = len(range(a, b, s))``; simply ``range(b - 1, -1, -1)`` for ``range(b)``.
    The returned call carries the statements computing ``n`` as ``numbax_count``."""
    start, stop, step = _range_args(iterator)
    minus_one = gast.Constant(-1, None)
    if _constant(start) == 0 and _constant(step) == 1:
        last = gast.BinOp(clone(stop), gast.Sub(), gast.Constant(1, None))
        call = gast.Call(load("range"), [last, minus_one, clone(minus_one)], [])
        call.numbax_count = []
        return call
    count = namer.fresh("n")
    steps = gast.BinOp(
        gast.BinOp(load(count), gast.Sub(), gast.Constant(1, None)), gast.Mult(), clone(step)
    )
    last = steps if _constant(start) == 0 else add(clone(start), steps)
    if _constant(start) is not None and _constant(step) is not None:
        before = gast.Constant(_constant(start) - _constant(step), None)
    else:
        before = gast.BinOp(clone(start), gast.Sub(), clone(step))
    if _constant(step) is not None:
        back = gast.Constant(-_constant(step), None)
    else:
        back = gast.UnaryOp(gast.USub(), clone(step))
    call = gast.Call(load("range"), [last, before, back], [])
    length = gast.Call(load("len"), [clone(iterator)], [])
    call.numbax_count = [assign(count, length)]
    return call


def _constant(node: gast.expr) -> int | None:
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None


def _range_args(node: gast.Call) -> tuple[gast.expr, gast.expr, gast.expr]:
    args = node.args
    if len(args) == 1:
        return gast.Constant(0, None), args[0], gast.Constant(1, None)
    if len(args) == 2:
        return args[0], args[1], gast.Constant(1, None)
    return args[0], args[1], args[2]
