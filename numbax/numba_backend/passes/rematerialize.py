"""Recompute elementwise values where a later fused loop reads them, instead of storing
them (before ``fuse.py`` fuses each run of elementwise statements into one loop).

An adjoint reads what its forward sweep computed: the gradient of
``sum(1 / (1 + exp(-x)))`` reads ``_exp``, ``_add`` and ``_div``, three arrays the
forward sweep writes out only for it. Reading three arrays costs more than computing
them again from ``x``, and writing them cost as much again. So a run of elementwise
statements that reads a value an earlier run computed gets a copy of the statements
that compute it, from values that have not changed since; the original, when nothing
else reads it any more, is removed. What remains of the forward sweep then fuses into
fewer loops (here one, feeding the sum), and the adjoint into one loop over ``x``:

    _ct_x = _grad_sum_logistic_line14(x, _ct_sum)    # recomputes exp, add, div

A call (``np.exp``, ``np.tanh``...) is computed again only when nothing but elementwise
lines reads its value, so that its array need not be stored at all; where another
operation reads the array (a matrix product), reading it is cheaper. Copies go only
into runs of two statements or more, which become a fused loop anyway
(a lone statement given copies would become one more loop for Numba to compile), and
stop at :data:`MOST_COPIED` statements per run; past that, values are read as they were
stored.

A copy reads its inputs later than the original did, so they must hold the same values
then. An assignment to a name says so; a write into an array (``x[::-1] = v``) changes
every name that may share its memory too (``b = a``, ``b = x[::-1][::-1]``), which
the alias pass (``transform/normalize/aliases.py``) brings up to date only where the
program reads it later: a copy that reads such a name after the write would read the
written memory. So no copy reads a name across a write into any array it may share
memory with (:class:`_SharedMemory`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Container
from dataclasses import dataclass

import gast

from numbax.numba_backend.passes.kept_shapes import copy_mark
from numbax.transform.analysis.groups import Groups
from numbax.transform.names import Namer
from numbax.transform.nodes import clone
from numbax.transform.walk import name_ids, name_nodes, walk

MOST_COPIED = 24
"""Statements copied into one run at most: a bound on the work recomputed."""


@dataclass(frozen=True)
class Kinds:
    """How the fuser sees statements: ``elementwise`` ones fuse into loops; a ``sink``
    (a sum of an elementwise value over axes) ends a run, its loop feeding the sum;
    ``whole(stmt)`` names what a statement of a run reads as a whole array (for its
    shape), which a copy must not compute as one element."""

    elementwise: Callable[[gast.stmt], bool]
    sink: Callable[[gast.stmt], bool]
    whole: Callable[[gast.stmt], frozenset[str]]

    def runs(self, stmts: list[gast.stmt]) -> list[tuple[int, int]]:
        """The runs of ``stmts`` as (start, end) indices: consecutive elementwise
        statements, each closed by a sink that follows it, if any."""
        runs, index = [], 0
        while index < len(stmts):
            if self.elementwise(stmts[index]):
                end = index
                while end < len(stmts) and self.elementwise(stmts[end]):
                    end += 1
                if end < len(stmts) and self.sink(stmts[end]):
                    end += 1
                runs.append((index, end))
                index = end
            elif self.sink(stmts[index]):
                runs.append((index, index + 1))
                index += 1
            else:
                index += 1
        return runs


def rematerialize(
    stmts: list[gast.stmt],
    kinds: Kinds,
    is_local: Callable[[str], bool],
    namer: Namer,
    live_after: Container[str],
) -> list[gast.stmt]:
    """``stmts`` with copies of the elementwise statements each later elementwise run
    reads the values of, and without the originals nothing reads any more."""
    block = _Block(stmts, kinds, is_local)
    out: list[gast.stmt] = []
    copied_from: list[int] = []  # indices of the statements copies were made of
    done = 0
    for start, end in kinds.runs(stmts):
        out += stmts[done:start]
        copies, sources = [], []
        if end - start >= 2:  # a fused loop already: copies add no compile of their own
            copies, sources = block.copies_for(start, end, namer)
        out += copies + stmts[start:end]
        copied_from += sources
        done = end
    out += stmts[done:]
    return _without_unread(out, {id(stmts[i]) for i in copied_from}, kinds.elementwise, live_after)


class _Block:
    """One block's statements and where each name is assigned."""

    def __init__(
        self, stmts: list[gast.stmt], kinds: Kinds, is_local: Callable[[str], bool]
    ) -> None:
        self.stmts = stmts
        # as they were: a run's reads are renamed in place to its copies, and a later
        # run's copies of the same statements read the values they first read
        self.originals = [clone(stmt) for stmt in stmts]
        self.kinds = kinds
        self.is_elementwise = kinds.elementwise
        self.is_local = is_local
        self.assigned = [_assigned(stmt) for stmt in stmts]
        self.assignments: dict[str, list[int]] = {}  # by name, the statements in order
        for index, names in enumerate(self.assigned):
            for name in names:
                self.assignments.setdefault(name, []).append(index)
        # names a statement reads as whole arrays: stored arrays anyway
        self.read_whole = set().union(*(self._whole_reads(stmt) for stmt in stmts))
        self._memory = _SharedMemory(stmts, kinds.elementwise)

    def _whole_reads(self, stmt: gast.stmt) -> frozenset[str]:
        if self.is_elementwise(stmt) or self.kinds.sink(stmt):
            return self.kinds.whole(stmt)
        return frozenset(name_ids(stmt, gast.Load))

    def _element_reads(self, stmt: gast.stmt) -> list[str]:
        """What an elementwise statement (or a sink) reads element by element, each name
        once, in the same order in every process: the copies are planned in this order
        within a budget, so an order that followed string hashing would make different
        code (and a different cache entry) in each new process."""
        whole = self.kinds.whole(stmt)
        names = (node.id for node in name_nodes(stmt.value, gast.Load))
        return [name for name in dict.fromkeys(names) if name not in whole]

    def copies_for(self, start: int, end: int, namer: Namer) -> tuple[list[gast.stmt], list[int]]:
        """Copies (renamed) of the statements before ``start`` that compute the values
        the run ``stmts[start:end]`` reads, its reads renamed to them; and the indices of
        the statements copied."""
        run = self.originals[start:end]
        plan: list[int] = []
        defined_in_run: set[str] = set()
        for stmt in run:
            for name in self._element_reads(stmt):
                if name in defined_in_run:
                    continue
                where = self._last_assignment(name, start)
                if where is None or where not in plan:
                    plan += [i for i in self._plan(name, start, len(plan)) if i not in plan]
            defined_in_run.add(stmt.targets[0].id)
        plan.sort()
        if not plan:
            return [], []
        # Each copy gets a fresh name of its own (a name assigned twice, ``_ct_x = a``
        # then ``_ct_x = _ct_x + b``, gets two), and reads the copy of the assignment it
        # read, where one was made.
        fresh = {i: namer.fresh(self._target(i)) for i in plan}

        def renamed(name: str, before: int) -> str | None:
            return fresh.get(self._last_assignment(name, before))

        copies = []
        for i in plan:
            copy = clone(self.originals[i])
            copy.recomputed = True  # for the fused loop's name and line (fused_loops.py)
            copy.recomputes = self._target(i)  # the value it computes again (fused_loops.py)
            copy_mark(self.stmts[i], copy)
            for node in name_nodes(copy.value, gast.Load):
                if node.id not in self.kinds.whole(copy):
                    node.id = renamed(node.id, i) or node.id
            copy.targets[0].id = fresh[i]
            copies.append(copy)
        defined_in_run = set()
        for stmt in self.stmts[start:end]:
            whole = self.kinds.whole(stmt)
            for node in name_nodes(stmt.value, gast.Load):
                if node.id not in defined_in_run and node.id not in whole:
                    node.id = renamed(node.id, start) or node.id
            defined_in_run.add(stmt.targets[0].id)
        return copies, plan

    def _target(self, index: int) -> str:
        return self.originals[index].targets[0].id

    def _plan(self, name: str, before: int, budget_used: int) -> list[int]:
        """The statements (indices, any order) that compute ``name`` as it is at
        ``before`` from values unchanged since; none when it cannot be."""
        plan: list[int] = []
        if not self._compute(name, before, before, plan, budget_used):
            return []
        return plan

    def _compute(self, name: str, at: int, until: int, plan: list[int], used: int) -> bool:
        """Add to ``plan`` what computes ``name``'s value at ``at``, all of it readable
        at ``until``; False when it cannot be."""
        where = self._last_assignment(name, at)
        if where is None or not self.is_elementwise(self.originals[where]):
            return False
        if where in plan:
            return True
        if isinstance(self.originals[where].value, gast.Call) and name in self.read_whole:
            # a function (exp, tanh...) whose array is stored for another reader anyway:
            # reading it costs less than computing it again
            return False
        if used + len(plan) >= MOST_COPIED:
            return False
        for read in self.kinds.whole(self.originals[where]):  # read as stored: unchanged
            if self.is_local(read) and not self._unchanged(read, where, until):
                return False
        plan.append(where)
        for read in self._element_reads(self.originals[where]):
            if not self.is_local(read):
                continue  # a constant of the function
            if self._unchanged(read, where, until):
                source = self._last_assignment(read, where)
                if source is not None and self.is_elementwise(self.originals[source]):
                    # computed too, if it can be, else read as stored
                    attempt: list[int] = []
                    if self._compute(read, where, until, attempt, used + len(plan)):
                        plan += [i for i in attempt if i not in plan]
                continue
            if not self._compute(read, where, until, plan, used):
                return False
        return True

    def _last_assignment(self, name: str, before: int) -> int | None:
        """The statement before ``before`` that last assigns ``name``, when it is a plain
        ``name = value``."""
        indices = self.assignments.get(name, [])
        position = bisect.bisect_left(indices, before)
        if position == 0:
            return None
        index = indices[position - 1]
        stmt = self.originals[index]
        simple = isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
        return index if simple and isinstance(stmt.targets[0], gast.Name) else None

    def _unchanged(self, name: str, read_at: int, until: int) -> bool:
        """Whether ``name`` holds at ``until`` the value statement ``read_at`` reads: no
        statement from ``read_at`` (which may assign it, ``x = x + y``) up to ``until``
        assigns it."""
        indices = self.assignments.get(name, [])
        position = bisect.bisect_left(indices, read_at)
        if position < len(indices) and indices[position] < until:
            return False
        return not self._memory.written_between(name, read_at, until)


class _SharedMemory:
    """Which names of a block may share memory, and where the block writes into it.

    A name made by an elementwise operation holds a new array; one made any other way
    (``b = a``, a subscript, an attribute, a call, anything inside an ``if`` or a loop)
    may hold part of what the names it reads hold. Names are grouped by that relation,
    each group with the statements that write into an array of it (a subscript store)."""

    def __init__(self, stmts: list[gast.stmt], elementwise: Callable[[gast.stmt], bool]) -> None:
        self._groups = Groups()
        for stmt in stmts:
            if elementwise(stmt) and not isinstance(stmt.value, gast.Name):  # c = a: one array
                continue
            for node in walk(stmt):
                if isinstance(node, gast.Assign):
                    made = name_ids(gast.Tuple(elts=node.targets, ctx=gast.Store()), gast.Store)
                    for name in made | name_ids(node.value, gast.Load):
                        self._groups.join(name, next(iter(made), name))
        self._writes: dict[str, list[int]] = {}
        for index, stmt in enumerate(stmts):
            for node in walk(stmt):
                if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store | gast.Del):
                    for name in name_ids(node.value, gast.Load):
                        self._writes.setdefault(self._groups.root(name), []).append(index)

    def written_between(self, name: str, start: int, end: int) -> bool:
        """Whether a statement from ``start`` up to ``end`` writes into an array that
        ``name`` may share."""
        writes = self._writes.get(self._groups.root(name), [])
        position = bisect.bisect_left(writes, start)
        return position < len(writes) and writes[position] < end


def _assigned(stmt: gast.stmt) -> set[str]:
    """The names ``stmt`` assigns, and those whose arrays it stores into (``c[0] = v``
    changes ``c``: a value computed before it is not computed again after it)."""
    names = name_ids(stmt, gast.Store, gast.Del)
    for node in walk(stmt):
        if isinstance(node, gast.Subscript) and isinstance(node.ctx, (gast.Store, gast.Del)):
            names |= name_ids(node.value, gast.Load)
    return names


def _without_unread(
    stmts: list[gast.stmt],
    candidates: set[int],
    is_elementwise: Callable[[gast.stmt], bool],
    live_after: Container[str],
) -> list[gast.stmt]:
    """``stmts`` without the ``candidates`` (statements, by id) whose value nothing reads
    any more: elementwise, so computing nothing read changes nothing.

    One pass from the last statement back, tracking which names a later statement
    still reads: a value is read if a statement after it reads the name before one
    assigns it again, unconditionally, without reading it (the adjoint's ``_ct_p = _ct_p
    + _div`` reads the value before it, but a copy renamed to read the recomputed one
    does not), or after the block. A statement dropped reads nothing, so what only it
    read goes in the same pass."""
    read_later: set[str] = set()
    assigned_later: set[str] = set()  # unconditionally: the block's value is not read
    kept: list[gast.stmt] = []
    for stmt in reversed(stmts):
        if id(stmt) in candidates and is_elementwise(stmt):
            name = stmt.targets[0].id
            reaches_after = name not in assigned_later and name in live_after
            if name not in read_later and not reaches_after:
                continue
        if isinstance(stmt, gast.Assign):
            for target in stmt.targets:
                if isinstance(target, gast.Name):
                    read_later.discard(target.id)
                    assigned_later.add(target.id)
        read_later |= name_ids(stmt, gast.Load)
        kept.append(stmt)
    return kept[::-1]
