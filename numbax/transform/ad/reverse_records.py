"""What reverse mode's primal sweep keeps for its adjoint sweep (``reverse.py``).

A :class:`_Save` says where a value that the primal sweep overwrites is kept (a variable
outside loops, a tape inside them) and writes the statements that keep it and give it
back; a :class:`_Record` is one primal statement with what its adjoint needs; a
:class:`_Scope` is one block of the primal sweep, inside the innermost loop's
:class:`_Loop`. The primal sweep (``reverse_primal.py``) makes them and the adjoint sweep
(``reverse_statements.py``, ``reverse_control.py``) reads them, so they live apart from
both.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import gast

from numbax.transform.nodes import assign, load


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
