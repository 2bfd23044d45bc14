"""Reverse mode (VJP): a primal sweep that saves what it overwrites, then an adjoint
sweep that walks the function backwards.

Primal sweep: the user's statements, unchanged, except that a value the adjoint needs
is saved just before it is overwritten — in a variable (``_x_old = x``) outside loops,
on a per-variable tape inside them (``_tape_x.append(x)``; Python lists work both
interpreted and under Numba). A loop also records what its reverse needs: a ``for``
its range (recomputed), a ``while`` its trip count, and the loop's own temporaries,
pushed at the end of each iteration.

Adjoint sweep: each statement, last first, replaced by its VJP rule: the output's
cotangent ``_ct_t`` sends ``nxrt.unbroadcast(<template>, x)`` to each active argument
``x``, and an overwritten ``t`` is restored (``t = _tape_t.pop()``) so that every
statement's adjoint sees the values its primal saw. ``if`` runs the same branch
backwards, loops run their iterations in reverse order. Cotangents are created by the
first contribution (no zero arrays are built for straight-line code) and dropped once
their variable's definition has been reached; a statement whose output has no
cotangent emits nothing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import gast

from numbax.errors import TransformError
from numbax.transform import rules
from numbax.transform.ad.common import (
    DeriveCallee,
    add,
    derivative_name,
    located,
    no_rule_error,
    refuse_made_functions,
    runtime_call,
    total,
    zeros_like,
)
from numbax.transform.ad.kept_results import fold_kept_copies, keep_results
from numbax.transform.ad.recompute import live_in_variables
from numbax.transform.ad.reread import freeze_reread
from numbax.transform.ad.sequences import (
    may_hold_sequences,
    on_sequences_as_arrays,
    sequence_operands,
)
from numbax.transform.analysis.activity import Activity, analyze, assignments
from numbax.transform.analysis.dataflow import (
    assigned_names,
    names,
    read_before_written,
    read_names,
    statements,
)
from numbax.transform.analysis.shape_sources import Shape, ShapeSources, is_elementwise_value
from numbax.transform.cleanup import cleanup
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, clone, load, store
from numbax.transform.operations import (
    CALL,
    CONSTANT,
    COPY,
    FIELD,
    PACK,
    POP,
    RULE,
    SUBSCRIPT,
    Operation,
    appended,
    classify,
    without_host_effects,
)
from numbax.transform.provenance import mark_rerun
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, display_name
from numbax.transform.walk import walk


@dataclass
class _Save:
    """Where a value overwritten by the primal sweep is kept for the adjoint sweep."""

    name: str  # a variable (outside loops) or a tape list (inside)
    tape: bool
    # a variable that may not exist yet is saved only where it does: its flag (see
    # _Reverse.flags) says so, and the flag's own value is saved here beside it
    flag: tuple[str, _Save] | None = None

    def push(self, value: gast.expr) -> gast.stmt:
        if not self.tape:
            return assign(self.name, value)
        append = gast.Attribute(load(self.name), "append", gast.Load())
        return gast.Expr(gast.Call(append, [value], []))

    def pop(self) -> gast.expr:
        if not self.tape:
            return load(self.name)
        return gast.Call(gast.Attribute(load(self.name), "pop", gast.Load()), [], [])

    def keep(self, var: str) -> list[gast.stmt]:
        """Save ``var`` before it is overwritten (where it exists, if it may not)."""
        if self.flag is None:
            return [self.push(load(var))]
        flag, flag_save = self.flag
        return [flag_save.push(load(flag)), gast.If(load(flag), [self.push(load(var))], [])]

    def give_back(self, var: str) -> list[gast.stmt]:
        """Give ``var`` the value :meth:`keep` saved (and its flag the value it had)."""
        if self.flag is None:
            return [assign(var, self.pop())]
        flag, flag_save = self.flag
        restore = assign(var, self.pop())
        return [assign(flag, flag_save.pop()), gast.If(load(flag), [restore], [])]


@dataclass
class _Record:
    """One primal statement and what its adjoint needs."""

    stmt: gast.stmt
    saves: list[tuple[str, _Save]] = field(default_factory=list)  # overwritten values
    body: list[_Record] = field(default_factory=list)
    orelse: list[_Record] = field(default_factory=list)
    snapshot: list[tuple[str, _Save]] = field(default_factory=list)  # loop temporaries
    body_snapshot: list[tuple[str, _Save]] = field(default_factory=list)  # if branches
    orelse_snapshot: list[tuple[str, _Save]] = field(default_factory=list)
    trips: str | None = None  # a while loop's trip counter
    trips_record: _Record | None = None
    defined_before: frozenset[str] = frozenset()  # variables that may exist before it
    definite_before: frozenset[str] = frozenset()  # variables that exist before it
    # a loop whose body the adjoint runs again (recompute.py): what each iteration
    # tapes at its start, and the body as written
    live_in: list[tuple[str, _Save]] | None = None
    original_body: list[gast.stmt] = field(default_factory=list)
    reads: Counter[str] = field(default_factory=Counter)  # a loop's reads of each name


class _Reverse:
    def __init__(
        self,
        fn: gast.FunctionDef,
        source: FunctionSource,
        resolver: Resolver,
        activity: Activity,
        derive: DeriveCallee,
        namer: Namer,
        transformation: str = "vjp",
    ) -> None:
        self.transformation = transformation
        self.source = source
        self.resolver = resolver
        self.activity = activity
        self.derive = derive
        self.namer = namer
        self.cotangents: dict[str, str] = {}
        self.tapes: dict[str, str] = {}
        self.needed = self._needed(fn)
        self.maybe_tuple = _tuple_valued(fn, resolver)
        self.maybe_sequences = may_hold_sequences(fn, resolver)
        self.first_mentions = _first_mentions(fn.body)
        self.loop_indices = _loop_indices(fn)
        # stacks (lists used with append/pop: a user's list, a tape of a reverse sweep
        # being differentiated again, or an adjoint's list of cotangents, only popped):
        # their cotangent is a list of the elements' cotangents, which shrinks and grows
        # backwards as the list grew and shrank
        self.stacks = {
            pushed[0]
            for node in walk(fn)
            if (pushed := appended(node)) is not None and pushed[0] in activity
        } | {
            node.value.func.value.id  # v = l.pop(), of a list perhaps never appended to
            for node in walk(fn)
            if isinstance(node, gast.Assign)
            and classify(node.value, resolver).kind == POP
            and node.value.func.value.id in activity
        }
        # stacks whose cotangent starts as zeros of the list's final value (set once the
        # primal sweep knows which exist at its end); the others get theirs as any
        # variable does, from the first contribution (zeros of the list as it is there:
        # the adjoint sweep takes appended values off and puts popped ones back, so
        # that every statement's adjoint sees the list as its primal saw it)
        self.seeded: set[str] = set()
        # adjoint-sweep state: cotangents that exist here (where their variable does),
        # and those we may update in place
        self.defined: set[str] = set()
        self.owned: set[str] = set()
        # variables that may not exist where the adjoint needs a zero cotangent of them:
        # a flag the primal sweep sets when it assigns one (see _zero)
        self.flags: dict[str, str] = {}

    # -- what the adjoint reads --------------------------------------------------------
    def _needed(self, fn: gast.FunctionDef) -> set[str]:
        """Values the adjoint sweep reads, which the primal sweep must save before
        overwriting: the active variables, every name an active statement reads, the
        tests of ``if`` statements and the bounds of ``for`` loops (both run again
        backwards). A ``while`` runs backwards by its trip count, not its test."""
        needed = set(self.activity.varied & self.activity.useful)
        for node in walk(fn):
            if isinstance(node, gast.Assign) and self._assigns_active(node):
                needed |= names(node)
            elif isinstance(node, gast.If):
                needed |= names(node.test)
            elif isinstance(node, gast.For):
                needed |= names(node.iter)
        return needed

    def _assigns_active(self, node: gast.Assign) -> bool:
        target = node.targets[0]
        if isinstance(target, gast.Subscript):
            target = target.value
        return any(n in self.activity for n in names(target))

    def cotangent(self, name: str) -> str:
        if name not in self.cotangents:
            self.cotangents[name] = self.namer.fresh(derivative_name(name, "ct"))
        return self.cotangents[name]

    def tape(self, name: str) -> _Save:
        if name not in self.tapes:
            self.tapes[name] = self.namer.fresh(f"tape_{name.lstrip('_')}")
        return _Save(self.tapes[name], tape=True)

    # -- primal sweep ------------------------------------------------------------------
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

    # -- adjoint sweep ---------------------------------------------------------------
    def adjoint(self, records: list[_Record]) -> list[gast.stmt]:
        out: list[gast.stmt] = []
        for record in reversed(records):
            stmt = record.stmt
            line = getattr(stmt, "lineno", None)
            if isinstance(stmt, gast.Assign):
                out += located(self._adjoint_assign(stmt, record, line), line, adjoint=True)
            elif isinstance(stmt, gast.If):
                out += self._adjoint_if(stmt, record, line)
            elif isinstance(stmt, gast.For):
                out += self._adjoint_for(stmt, record, line)
            elif isinstance(stmt, gast.While):
                out += self._adjoint_while(stmt, record, line)
            elif appended(stmt) is not None and appended(stmt)[0] in self.stacks:
                out += located(self._adjoint_append(*appended(stmt)), line, adjoint=True)
        return out

    def _adjoint_append(self, stack: str, value: gast.expr) -> list[gast.stmt]:
        """``stack.append(v)``: ``v`` gets the cotangent its ``pop`` pushed."""
        pop = gast.Call(gast.Attribute(load(self.cotangent(stack)), "pop", gast.Load()), [], [])
        undo = [gast.Expr(_method(stack, "pop"))]
        if self.cotangent(stack) not in self.defined:  # the value's cotangent is zero
            return undo
        if not self.activity.atom(value):
            return [gast.Expr(pop), *undo]
        part = self.namer.fresh(f"ct_{value.id.lstrip('_')}_part")
        return [assign(part, pop), *self._accumulate(value.id, load(part)), *undo]

    def _push_cotangent(self, stack: str, value: gast.expr) -> gast.stmt:
        push = gast.Attribute(load(self.cotangent(stack)), "append", gast.Load())
        return gast.Expr(gast.Call(push, [value], []))

    def _accumulate(self, name: str, contribution: gast.expr) -> list[gast.stmt]:
        """``_ct_x = _ct_x + contribution``, or ``_ct_x = contribution`` for the first."""
        ct = self.cotangent(name)
        if isinstance(contribution, gast.Name) and contribution.id == ct:
            self.defined.add(ct)  # its own cotangent, unchanged
            return []
        if ct in self.defined:
            if name in self.maybe_tuple:
                value = runtime_call("tree_add", load(ct), contribution)
            else:
                value = add(load(ct), contribution)
            self.owned.add(ct)  # a sum is a new array
        else:
            value = contribution
            self.defined.add(ct)
            self.owned.discard(ct)
        return [assign(ct, value)]

    @staticmethod
    def _restore(record: _Record, target: gast.expr) -> list[gast.stmt]:
        """Give the variables the statement overwrote their old values back."""
        if isinstance(target, gast.Subscript):
            old = gast.Subscript(load(target.value.id), clone(target.slice), gast.Store())
            return [assign(old, save.pop()) for _, save in record.saves]
        return [stmt for name, save in reversed(record.saves) for stmt in save.give_back(name)]

    def _adjoint_assign(self, stmt: gast.Assign, record: _Record, line: int | None) -> list:
        target = stmt.targets[0]
        if isinstance(target, gast.Tuple):
            return self._adjoint_unpack(stmt, record)
        if isinstance(target, gast.Subscript):
            return self._adjoint_store(stmt, record)
        name = target.id
        ct = self.cotangent(name) if name in self.activity else None
        op = classify(stmt.value, self.resolver)
        # v = l.pop() on a user's list: the list gets v back, as the adjoint of
        # l.append(v) takes it off, so that the adjoint sweep reads the list as it was
        stack = op.node.func.value.id if op.kind == POP else None
        stack_ct = self.cotangent(stack) if stack in self.stacks else None
        undo = [] if stack_ct is None else [gast.Expr(_method(stack, "append", load(name)))]
        if ct is None or ct not in self.defined:
            out = []
            if stack_ct in self.defined:  # keep it balanced
                out.append(self._push_cotangent(stack, zeros_like(target)))
            if ct is not None:
                self.owned.discard(ct)
            return out + undo + self._restore(record, target)
        self.defined.discard(ct)  # this value of the variable gets its cotangent here
        self.owned.discard(ct)
        out: list[gast.stmt] = []
        if stack_ct is not None and stack_ct not in self.defined:  # the list as popped
            out.append(assign(stack_ct, zeros_like(load(stack))))
            self.defined.add(stack_ct)
            self.owned.add(stack_ct)
        ans = load(name)
        reads_self = name in names(stmt.value)
        if record.saves and (reads_self or self._uses_ans(op)):
            keep = self.namer.fresh(f"{name.lstrip('_')}_value")
            ans = load(keep)
        contributions = self._contributions(op, ans, load(ct), line)
        if ans.id != name and any(ans.id in names(v) for _, v in _flat(contributions)):
            out.append(assign(ans.id, load(name)))  # the new value, read by the rule
        out += undo + self._restore(record, target)
        own = []  # t = t * x: the old t's cotangent starts after the others used g
        for arg, value in contributions:
            if arg is None:
                out += value
            elif arg == name:
                own.append(value)
            else:
                out += self._accumulate(arg, value)
        if own:
            out += self._accumulate(name, total(own))
        return out

    def _uses_ans(self, op: Operation) -> bool:
        return op.kind == RULE and op.rule.uses("vjp", rules.ANS)

    def _contributions(
        self, op: Operation, ans: gast.expr, g: gast.expr, line: int | None
    ) -> list[tuple[str | None, gast.expr | list[gast.stmt]]]:
        """(argument, cotangent contribution) pairs; (None, statements) for contributions
        already written as statements (in-place scatters, calls)."""
        active = [a for a in op.differentiable_args() if self.activity.atom(a)]
        if op.kind == COPY:
            return [(op.node.id, g)] if active else []
        if op.kind == CONSTANT or not active:
            return []
        if op.kind == PACK:
            if isinstance(op.node, gast.Dict):
                keyed = list(zip(op.node.keys, op.node.values, strict=True))
            else:
                keyed = [(gast.Constant(i, None), e) for i, e in enumerate(op.node.elts)]
            return [
                (e.id, gast.Subscript(clone(g), clone(key), gast.Load()))
                for key, e in keyed
                if self.activity.atom(e)
            ]
        if op.kind == SUBSCRIPT:
            return [self._subscript_contribution(op.node.value.id, op.node.slice, g)]
        if op.kind == FIELD:
            field = gast.Constant(op.node.attr, None)
            return [self._subscript_contribution(op.node.value.id, field, g)]
        if op.kind == POP:
            stack = op.node.func.value.id
            return [(None, [self._push_cotangent(stack, g)])] if stack in self.stacks else []
        if op.kind == RULE:
            return self._rule_contributions(op, ans, g)
        if op.kind == CALL:
            return self._call_contributions(op, g, line)
        raise no_rule_error(op, self.source, line, self.transformation)

    def _subscript_contribution(self, x: str, index: gast.expr, g: gast.expr) -> tuple:
        """``t = x[i]`` sends ``g`` into ``_ct_x`` at ``i``, in place when ``_ct_x`` is
        an array this function made (``nxrt.index_add`` is ``np.add.at``; for a pytree
        ``x``, a dict or NamedTuple, it returns the cotangent with that entry added)."""
        ct = self.cotangent(x)
        if ct not in self.defined:
            base = zeros_like(load(x))
        elif ct in self.owned:
            base = load(ct)
        else:
            base = runtime_call("owned", load(ct))
        value = runtime_call("index_add", base, _index_expr(index), g)
        self.defined.add(ct)
        self.owned.add(ct)
        return (None, [assign(ct, value)])

    def _rule_contributions(self, op: Operation, ans: gast.expr, g: gast.expr) -> list:
        rule = op.rule
        bound = {**op.bound, rules.ANS: ans, rules.COTANGENT: g}
        sequences = sequence_operands(op, self.maybe_sequences)  # np.square(t): 2 * t repeats
        out = []
        for param in rule.differentiable:
            arg = op.bound.get(param)
            if param not in rule.vjp or not self.activity.atom(arg):
                continue
            value = rules.instantiate(rule.vjp[param], bound)
            if sequences:
                made = frozenset([ans.id] if isinstance(ans, gast.Name) else [])
                value = on_sequences_as_arrays(value, sequences, made)
            if rule.elementwise and self._may_broadcast(op):
                value = runtime_call("unbroadcast", value, load(arg.id))
            out.append((arg.id, value))
        return out

    @staticmethod
    def _may_broadcast(op: Operation) -> bool:
        """Whether the output may be larger than an operand: two variables meet (a
        constant is a scalar; ``np.where``'s condition counts too); or complex where
        an operand may be real (``1j * x``: a real x's cotangent is the real part)."""
        values = op.bound.values()
        complex_constant = any(
            isinstance(a, gast.Constant) and isinstance(a.value, complex) for a in values
        )
        return complex_constant or sum(isinstance(a, gast.Name) for a in values) > 1

    def _call_contributions(self, op: Operation, g: gast.expr, line: int | None) -> list:
        call = op.node
        if call.keywords:
            raise no_rule_error(op, self.source, line, self.transformation)
        positions = tuple(i for i, a in enumerate(call.args) if self.activity.atom(a))
        name = self.derive(op.callee, "vjp", positions, len(call.args))
        parts = [self.namer.fresh(f"ct_{call.args[i].id.lstrip('_')}_part") for i in positions]
        unpack = gast.Tuple([store(p) for p in parts], gast.Store())
        args = [clone(a) for a in call.args] + [g]
        stmts: list[gast.stmt] = [assign(unpack, gast.Call(load(name), args, []))]
        for i, part in zip(positions, parts, strict=True):
            stmts += self._accumulate(call.args[i].id, load(part))
        return [(None, stmts)]

    def _adjoint_unpack(self, stmt: gast.Assign, record: _Record) -> list[gast.stmt]:
        """``a, b = t``: ``_ct_t`` gets ``(_ct_a, _ct_b)``, zeros where there is none."""
        targets = stmt.targets[0].elts
        source = stmt.value.id
        parts, any_ct = [], False
        for t in targets:
            ct = self.cotangent(t.id) if t.id in self.activity else None
            if ct is not None and ct in self.defined:
                parts.append(load(ct))
                any_ct = True
            else:
                parts.append(zeros_like(load(t.id)))
        for t in targets:
            if t.id in self.activity:
                self.defined.discard(self.cotangent(t.id))
        out: list[gast.stmt] = []
        if any_ct and self.activity.atom(stmt.value):
            out += self._accumulate(source, gast.Tuple(parts, gast.Load()))
        return out + self._restore(record, stmt.targets[0])

    def _adjoint_store(self, stmt: gast.Assign, record: _Record) -> list[gast.stmt]:
        """``x[i] = v``: ``v`` gets ``_ct_x[i]``, which is zeroed (the old ``x[i]`` no
        longer reaches the output), and ``x[i]`` gets its old value back. Where ``i``
        names an element twice, NumPy keeps the last write, and only its part of ``v``
        gets the cotangent (``nxrt.last_written``, a copy for other indices)."""
        target = stmt.targets[0]
        x = target.value.id
        ct = self.cotangent(x) if x in self.activity else None
        out: list[gast.stmt] = []
        if ct is not None and ct in self.defined:
            piece = gast.Subscript(load(ct), clone(target.slice), gast.Load())
            if self.activity.atom(stmt.value):
                if self._may_repeat(target.slice):
                    index = _index_expr(target.slice)
                    written = runtime_call("last_written", piece, load(x), index)
                else:
                    written = runtime_call("owned", piece)
                value = runtime_call("unbroadcast", written, load(stmt.value.id))
                out += self._accumulate(stmt.value.id, value)
            if ct not in self.owned:
                out.append(assign(ct, runtime_call("owned", load(ct))))
                self.owned.add(ct)
            cleared = gast.Subscript(load(ct), clone(target.slice), gast.Store())
            out.append(assign(cleared, gast.Constant(0, None)))
        return out + self._restore(record, target)

    def _may_repeat(self, index: gast.expr) -> bool:
        """Whether ``index`` may name an element twice: not when each part is a slice, a
        constant (an int, None, Ellipsis) or the index of a range loop; a name may hold
        an integer array (``nxrt.last_written`` tells when it runs)."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        return not all(
            isinstance(p, (gast.Slice, gast.Constant))
            or (isinstance(p, gast.UnaryOp) and isinstance(p.operand, gast.Constant))
            or (isinstance(p, gast.Name) and p.id in self.loop_indices)
            for p in parts
        )

    # -- control flow in reverse ---------------------------------------------------------
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

    def _flag(self, var: str) -> str:
        """The flag that says whether ``var`` exists: False at the start, set by the
        primal sweep after each assignment to ``var``; the adjoint sweep gives it back
        its old value where it gives ``var`` its own (see _Save.give_back)."""
        if var not in self.flags:
            self.flags[var] = self.namer.fresh(f"has_{var.lstrip('_')}")
        return self.flags[var]

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

    def _unsupported(self, stmt: gast.stmt, construct: str) -> TransformError:
        return TransformError(
            f"reverse mode does not support {construct!r} inside loops yet; restructure "
            "the loop with a flag in its condition, or use forward mode (jvp, jacfwd)",
            function=display_name(self.source.func),
            transformation=self.transformation,
            filename=self.source.filename,
            lineno=getattr(stmt, "lineno", None),
            construct=construct,
        )


@dataclass
class _Loop:
    """The jumps (break/continue) of one loop, with the scopes each one leaves."""

    jumps: list[tuple[gast.stmt, list[_Scope]]] = field(default_factory=list)
    reads: Counter[str] = field(default_factory=Counter)  # how often its body reads each name


@dataclass
class _Scope:
    """One block of the primal sweep: what is defined in it, and its temporaries."""

    loop: _Loop | None  # the innermost enclosing loop
    definite: set[str]  # defined on every path to this point
    maybe: set[str]  # defined on some path to this point
    parent: _Scope | None = None
    temporaries: dict[str, _Save] = field(default_factory=dict)  # first assigned here
    snapshot: list[tuple[str, _Save]] = field(default_factory=list)  # pushed at its end
    stmts: list[gast.stmt] = field(default_factory=list)

    def child(self, loop: _Loop | None = None) -> _Scope:
        return _Scope(loop or self.loop, set(self.definite), set(self.maybe), parent=self)

    def chain(self) -> list[_Scope]:
        """This scope and its parents up to the loop's body, innermost first."""
        scopes, scope = [], self
        while scope is not None and scope.loop is self.loop:
            scopes.append(scope)
            scope = scope.parent
        return scopes


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


def _flat(contributions: list) -> list[tuple[str | None, gast.AST]]:
    """Each contribution's expression, or each statement of one written as statements."""
    out = []
    for arg, value in contributions:
        for part in value if isinstance(value, list) else [value]:
            out.append((arg, part))
    return out


def _method(name: str, method: str, *args: gast.expr) -> gast.Call:
    """``name.method(args)``."""
    return gast.Call(gast.Attribute(load(name), method, gast.Load()), list(args), [])


def _index_expr(index: gast.expr) -> gast.expr:
    """An index as a value: ``x[1:3, None]`` → ``(slice(1, 3, None), None)``."""
    if isinstance(index, gast.Slice):
        parts = [index.lower, index.upper, index.step]
        args = [clone(p) if p is not None else gast.Constant(None, None) for p in parts]
        return gast.Call(load("slice"), args, [])
    if isinstance(index, gast.Tuple):
        return gast.Tuple([_index_expr(e) for e in index.elts], gast.Load())
    return clone(index)


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


def _loop_indices(fn: gast.FunctionDef) -> set[str]:
    """Names that only the target of a ``for name in range(...)`` assigns: integers."""
    counters, targets = set(), set()
    for node in walk(fn):
        if (
            isinstance(node, gast.For)
            and isinstance(node.target, gast.Name)
            and isinstance(node.iter, gast.Call)
            and isinstance(node.iter.func, gast.Name)
            and node.iter.func.id == "range"
        ):
            counters.add(node.target.id)
            targets.add(id(node.target))
    assigned_otherwise = {
        n.id
        for n in walk(fn)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and id(n) not in targets
    }
    return counters - assigned_otherwise - set(_params(fn))


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


_STRUCTURED_COTANGENTS = frozenset(
    {"unarray", "split_like", "unstack_like", "unravel_pytree", "unravel_batch", "jac_unflatten"}
)
"""Runtime helpers whose result has the structure of a sequence or pytree operand: the
cotangent they give an operand that holds a tuple, list or dict is one (``np.asarray(t)``,
``np.stack(xs)``, ``ravel_pytree(params)``)."""


def _gives_structure(rule: rules.Rule, param: str) -> bool:
    """Whether the rule's VJP for ``param`` may be a tuple or list."""
    return bool(rules.vjp_helpers(rule, param) & _STRUCTURED_COTANGENTS)


def _tuple_valued(fn: gast.FunctionDef, resolver: Resolver) -> set[str]:
    """Variables that may hold tuples or other pytrees (their cotangents add up with
    ``nxrt.tree_add``: ``+`` would join two tuples): built from a display, unpacked,
    returned by a function that is differentiated by its own derivative or passed to one
    (its cotangent comes back in the argument's structure), passed where an operation's
    cotangent takes a sequence's structure (``np.asarray(t)``), popped, or read by key
    or field."""
    pytrees = set()
    for node in walk(fn):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            op = classify(node.value, resolver)
            kind = op.kind
            if isinstance(node.value, (gast.Tuple, gast.List, gast.Dict)):
                pytrees.add(node.targets[0].id)
            elif kind == RULE:
                pytrees |= {
                    arg.id
                    for param, arg in op.bound.items()
                    if isinstance(arg, gast.Name) and _gives_structure(op.rule, param)
                }
            elif kind in (CALL, POP, FIELD):
                pytrees.add(node.targets[0].id)
                if isinstance(node.value, gast.Attribute):
                    pytrees.add(node.value.value.id)
                if kind == CALL:
                    pytrees |= {a.id for a in node.value.args if isinstance(a, gast.Name)}
            elif isinstance(node.value, gast.Subscript) and isinstance(node.value.value, gast.Name):
                key = node.value.slice
                if isinstance(key, gast.Constant) and isinstance(key.value, str):
                    pytrees.add(node.value.value.id)
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Tuple):
            if isinstance(node.value, gast.Name):
                pytrees.add(node.value.id)
    # ``a = b`` (``ravel_pytree``'s ``unravel = params``): one value, both or neither
    aliases = [
        (node.targets[0].id, node.value.id)
        for node in walk(fn)
        if isinstance(node, gast.Assign)
        and isinstance(node.targets[0], gast.Name)
        and isinstance(node.value, gast.Name)
    ]
    grown = True
    while grown:
        grown = False
        for pair in aliases:
            if pytrees.intersection(pair) and not pytrees.issuperset(pair):
                pytrees.update(pair)
                grown = True
    return pytrees


COTANGENT_OF = "__numbax_cotangent_of__"
"""The attribute, on a VJP's tree and on the function generated from it, that gives
the shape of each cotangent parameter as the parameters its output's shape broadcasts
from (``{"_ct_out": {"x"}}``; ``analysis/shape_sources.py``). A caller passes a
cotangent of its output's shape (``nx.vjp`` checks a user's), so compiled code may read
the parameter as having that shape: the adjoint then fuses as one loop where shapes
agree (``numba_backend/passes/kept_shapes.py``). A VJP of a VJP keeps its source's parameters,
and so their shapes, and adds its own."""

_SEEDS = {"grad": "grad_seed", "holomorphic": "holomorphic_seed"}
"""The runtime helper that checks a scalar output and gives its cotangent, one."""


def vjp_function(
    fn: gast.FunctionDef,
    source: FunctionSource,
    wrt: list[str],
    derive: DeriveCallee,
    name: str,
    *,
    seed: str = "grad",
    has_aux: bool = False,
    returns: str = "cotangents",
    tuple_cotangents: bool = False,
    transformation: str = "vjp",
) -> gast.FunctionDef:
    """``fn`` (core language) → its reverse-mode derivative, a function named ``name``.

    ``seed``: ``"grad"`` starts from ``nxrt.grad_seed(out)`` (a real scalar output's 1),
    ``"holomorphic"`` from ``nxrt.holomorphic_seed(out)`` (a complex one's);
    ``"parameter"`` adds a last parameter, the output's cotangent. ``returns``:
    ``"cotangents"`` (one, or a tuple for several ``wrt`` or ``tuple_cotangents``),
    ``"value_and_cotangents"``, or ``"tuple"`` (always a tuple).
    With ``has_aux``, ``fn`` returns ``(out, aux)`` and ``aux`` is returned beside.
    """
    namer = Namer.for_function(fn)
    body = freeze_reread(list(fn.body[:-1]), namer)
    if seed not in _SEEDS:  # the primal ran before (a helper's forward, nx.vjp's value)
        body = without_host_effects(body, Resolver(source, local_names(fn)))
    ret = fn.body[-1]
    line = getattr(ret, "lineno", None)
    out = ret.value
    aux = None
    if has_aux:
        value_name, aux_name = namer.fresh("value"), namer.fresh("aux")
        targets = gast.Tuple([store(value_name), store(aux_name)], gast.Store())
        body.append(located([assign(targets, clone(out))], line)[0])
        out, aux = load(value_name), load(aux_name)
    work = clone(fn)
    work.body = body
    resolver = Resolver(source, local_names(fn) | local_names(work))
    outputs = [out.id] if isinstance(out, gast.Name) else []
    activity = analyze(work, wrt, outputs, resolver, transformation)
    refuse_made_functions(work, activity, resolver, source, transformation)
    reverse = _Reverse(work, source, resolver, activity, derive, namer, transformation)
    top = _Scope(None, set(_params(fn)), set(_params(fn)))
    primal, records = reverse.primal(body, top)
    if seed not in _SEEDS:  # the caller ran these lines: what is unused need not run
        for stmt in statements(primal):
            mark_rerun(stmt)
    seed_stmts: list[gast.stmt] = []
    # a list that exists at the end gets zero cotangents, one per element: the adjoint
    # of ``l[k]`` adds into element k, that of ``l.append(v)`` pops v's, and that of
    # ``l = [a, b]`` hands each element its own
    # (a returned list starts from the output's cotangent, below)
    reverse.seeded = {s for s in reverse.stacks if s in top.definite}
    for s in sorted(reverse.seeded - {getattr(out, "id", None)}):
        seed_stmts.append(assign(reverse.cotangent(s), zeros_like(load(s))))
    reverse.defined |= {reverse.cotangent(s) for s in reverse.seeded}
    reverse.owned |= {reverse.cotangent(s) for s in reverse.seeded}
    ct_out_param = None
    if isinstance(out, gast.Name) and out.id in activity:
        ct = reverse.cotangent(out.id)
        if seed in _SEEDS:
            seed_stmts.append(assign(ct, runtime_call(_SEEDS[seed], load(out.id))))
        else:
            ct_out_param = namer.fresh("ct_out")
            ct_out = load(ct_out_param)
            if out.id in reverse.stacks:  # a list returned: its adjoint pops the copy
                ct_out = runtime_call("owned", ct_out)
            seed_stmts.append(assign(ct, ct_out))
        reverse.defined.add(ct)
    elif seed in _SEEDS:  # the output's checks (a real scalar), even without a derivative
        seed_stmts.append(gast.Expr(runtime_call(_SEEDS[seed], clone(out))))
    if seed not in _SEEDS and ct_out_param is None:
        ct_out_param = namer.fresh("ct_out")
    adjoint = reverse.adjoint(records)
    results = []
    for p in wrt:
        ct = reverse.cotangent(p)
        results.append(load(ct) if ct in reverse.defined else zeros_like(load(p)))
    tapes = [assign(t, gast.List([], gast.Load())) for t in reverse.tapes.values()]
    for var, flag in reverse.flags.items():
        tapes.append(assign(flag, gast.Constant(False, None)))
        _flag_assignments(primal, var, flag)
    cts = results[0] if len(results) == 1 else gast.Tuple(results, gast.Load())
    if returns == "tuple" or tuple_cotangents:
        cts = gast.Tuple(results, gast.Load())
    # the value and aux, as the primal sweep left them (the adjoint sweep restores)
    value = clone(out) if returns == "value_and_cotangents" else None
    shown = [e for e in (value, aux) if e is not None]
    kept, renamed = keep_results(
        set().union(*(read_names(e) for e in shown)), body, adjoint, resolver, namer
    )
    for node in (n for e in shown for n in walk(e)):
        if isinstance(node, gast.Name) and node.id in renamed:
            node.id = renamed[node.id]
    if value is not None and aux is not None:
        value = gast.Tuple([value, aux], gast.Load())
    if returns == "value_and_cotangents":
        result = gast.Tuple([value, cts], gast.Load())
    elif aux is not None:
        result = gast.Tuple([cts, aux], gast.Load())
    else:
        result = cts
    new = clone(fn)
    new.name = name
    if ct_out_param is not None:
        new.args.args = list(new.args.args) + [gast.Name(ct_out_param, gast.Param(), None, None)]
        new.args.defaults = []
    new.body = (
        tapes
        + primal
        + located(kept, line)
        + located(seed_stmts, line, adjoint=True)
        + adjoint
        + located([gast.Return(result)], line, adjoint=True)
    )
    cleanup(new, source)
    fold_kept_copies(new, set(renamed.values()))
    setattr(new, COTANGENT_OF, _cotangent_shapes(source, fn, primal, out, ct_out_param, resolver))
    return new


def _cotangent_shapes(
    source: FunctionSource,
    fn: gast.FunctionDef,
    primal: list[gast.stmt],
    out: gast.expr,
    ct_out_param: str | None,
    resolver: Resolver,
) -> dict[str, Shape]:
    """The shapes of the VJP's cotangent parameters (:data:`COTANGENT_OF`): those of
    ``source``'s function, if it is a VJP, and that of its own, the output's."""
    inherited = getattr(source.func, COTANGENT_OF, {})
    if ct_out_param is None or not isinstance(out, gast.Name):
        return dict(inherited)
    params = _params(fn)

    def elementwise(stmt: gast.stmt) -> bool:
        return isinstance(stmt, gast.Assign) and is_elementwise_value(stmt.value, resolver)

    shapes = ShapeSources(params, resolver, elementwise, inherited)
    for stmt in primal:
        shapes.follow(stmt)
    shape = shapes.shape_in_parameters(out.id, params)
    return {**inherited, **({ct_out_param: shape} if shape is not None else {})}


def _flag_assignments(stmts: list[gast.stmt], var: str, flag: str) -> None:
    """Set ``flag`` after each assignment to ``var`` in ``stmts``, nested blocks
    included, and in each iteration of a loop over ``var``."""
    for i in reversed(range(len(stmts))):
        stmt = stmts[i]
        for block in ("body", "orelse"):
            _flag_assignments(getattr(stmt, block, []), var, flag)
        if isinstance(stmt, gast.Assign) and var in assigned_names([stmt]):
            stmts.insert(i + 1, located([assign(flag, gast.Constant(True, None))], stmt.lineno)[0])
        elif isinstance(stmt, gast.For) and stmt.target.id == var:  # set by each iteration
            stmt.body.insert(0, located([assign(flag, gast.Constant(True, None))], stmt.lineno)[0])


def _params(fn: gast.FunctionDef) -> list[str]:
    args = fn.args
    return [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
