"""The alias pass's analysis (``aliases.py``): what each local name holds before each
statement, as far as sharing memory goes.

A forward dataflow over the core language: a name's :class:`Held` is the abstract objects
it may hold or point into (one per parameter, one per statement that makes a new value,
and a container's items), how it was derived from another name where that is known
(:class:`Derivation`: ``b = a[:2]``, ``t = a.T``, ``c = a``), and the line that made it.
Branches join (:func:`_join`: a derivation survives only where both paths agree) and
loops run to a fixpoint, a statement that makes a value again in a later pass telling
its old values from the new one (:func:`_made_again`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import gast
import numpy as np

from numbax.transform.nodes import clone
from numbax.transform.normalize.alias_kinds import _is_user_function
from numbax.transform.resolve import LOCAL, UNRESOLVED
from numbax.transform.walk import name_ids

IN_PLACE = "numbax_in_place"
"""Attribute the flattener sets on ``x = x op v`` lowered from ``x op= v``."""


_VIEW_FUNCTIONS = {
    np.reshape,
    np.ravel,
    np.asarray,
    np.asanyarray,
    np.squeeze,
    np.expand_dims,
    np.swapaxes,
    np.moveaxis,
    np.atleast_1d,
    np.atleast_2d,
    np.atleast_3d,
    np.diagonal,
    np.broadcast_to,
    np.real,
    np.imag,
    np.transpose,
}
"""NumPy functions whose result may share memory with their first argument."""


_VIEW_METHODS = {"reshape", "ravel", "view", "squeeze", "swapaxes", "diagonal", "transpose"}


_VIEW_ATTRIBUTES = {"real", "imag", "flat", "mT"}


@dataclass(frozen=True)
class Derivation:
    """``name = value``, where ``value`` reads ``parent`` (and the names in ``reads``)."""

    parent: str
    value: gast.expr
    text: str  # gast.dump of value: derivations compare by it
    reads: frozenset[str]
    line: int
    array: bool  # certainly an array (a slice of one), not maybe a number

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Derivation) and (self.parent, self.text) == (
            other.parent,
            other.text,
        )

    def __hash__(self) -> int:
        return hash((self.parent, self.text))


@dataclass(frozen=True)
class Held:
    """What a name holds: the abstract objects it may share, how it was derived (if
    known) and the line that made it."""

    objects: frozenset[object]
    derivation: Derivation | None
    line: int
    # a tuple or list literal's items, each one's objects (None: not known one by one)
    elements: tuple[frozenset[object], ...] | None = None
    # certainly an array, not maybe a number (what a view method or function returns)
    array: bool = False


State = dict[str, Held]


class _SharingAnalysis:
    """The analysis part of the alias pass's ``_Aliases`` (mixed into it)."""

    def _block(self, stmts: list[gast.stmt], state: State, loop: list | None) -> State | None:
        """The state after ``stmts`` (None: they never complete); ``loop`` collects the
        states at each ``break`` and ``continue`` of the innermost loop."""
        for stmt in stmts:
            seen = self.before.get(id(stmt))
            self.before[id(stmt)] = state if seen is None else _join(seen, state)
            if isinstance(stmt, gast.If):
                body = self._block(stmt.body, dict(state), loop)
                orelse = self._block(stmt.orelse, dict(state), loop)
                state = _join_all([s for s in (body, orelse) if s is not None])
                if state is None:
                    return None
            elif isinstance(stmt, (gast.For, gast.While)):
                state = self._loop(stmt, state)
            elif isinstance(stmt, (gast.Break, gast.Continue)):
                loop.append((type(stmt), state))
                return None
            elif isinstance(stmt, (gast.Return, gast.Raise)):
                return None
            elif isinstance(stmt, gast.Assign):
                state = self._assign(stmt, state)
            elif isinstance(stmt, gast.Expr):
                state = self._appended(stmt, state)
        return state

    def _appended(self, stmt: gast.Expr, state: State) -> State:
        """``items.append(x)``: the list holds ``x``'s array among its items."""
        call = stmt.value
        if not (
            isinstance(call, gast.Call)
            and isinstance(call.func, gast.Attribute)
            and call.func.attr == "append"
            and isinstance(call.func.value, gast.Name)
            and call.func.value.id in state
            and len(call.args) == 1
            and isinstance(call.args[0], gast.Name)
            and call.args[0].id in state
        ):
            return state
        held = state[call.func.value.id]
        items = _as_items(state[call.args[0].id].objects)
        return {**state, call.func.value.id: replace(held, objects=held.objects | items)}

    def _loop(self, stmt: gast.For | gast.While, entry: State) -> State:
        head = dict(entry)
        if isinstance(stmt, gast.For):
            head = self._rebind(head, stmt.target.id, None)
        while True:
            jumps: list = []
            end = self._block(stmt.body, dict(head), jumps)
            continuing = [s for kind, s in jumps if kind is gast.Continue]
            back = [s for s in [end, *continuing] if s is not None]
            if isinstance(stmt, gast.For):
                back = [self._rebind(dict(s), stmt.target.id, None) for s in back]
            new = _join_all([head, *back])
            if new == head:
                breaks = [s for kind, s in jumps if kind is gast.Break]
                return _join_all([head, *breaks])
            head = new

    def _rebind(self, state: State, name: str, held: Held | None) -> State:
        """``state`` after ``name`` is assigned ``held`` (None: a value of its own that
        shares nothing, such as a loop's integer): derivations reading it are lost."""
        for other, h in list(state.items()):
            if h.derivation is not None and name in h.derivation.reads and other != name:
                state[other] = replace(h, derivation=None)
        if held is None:
            state.pop(name, None)
        else:
            state[name] = held
        return state

    def _assign(self, stmt: gast.Assign, state: State) -> State:
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript):  # a store: changes values, not names
            base, value = target.value, stmt.value
            if base.id in self.containers and isinstance(value, gast.Name) and value.id in state:
                held = state[base.id]  # a list's or dict's item: the array itself
                objects = held.objects | _as_items(state[value.id].objects)
                return {**state, base.id: replace(held, objects=objects, elements=None)}
            return state
        line = stmt.lineno
        if isinstance(target, gast.Name):
            if getattr(stmt, IN_PLACE, False) and target.id in state:
                return state  # in place: the name holds the same object
            state = _made_again(state, stmt)
            return self._rebind(state, target.id, self._made(stmt.value, stmt, state, line))
        state = dict(state)
        names = [e.id if isinstance(e, gast.Name) else None for e in target.elts]
        whole = state.get(stmt.value.id) if isinstance(stmt.value, gast.Name) else None
        for i, name in enumerate(names):  # a, b = t: each the item of t it takes
            if name is None:
                continue
            parts = None
            if whole is not None and whole.elements and len(whole.elements) == len(names):
                parts = whole.elements[i]
            elif whole is not None:
                parts = _items(whole.objects)
            held = Held(parts, None, line) if parts else None
            state = self._rebind(state, name, held)
        return state

    def _made(self, value: gast.expr, stmt: gast.stmt, state: State, line: int) -> Held | None:
        fresh = frozenset({("made", id(stmt))})
        if isinstance(value, gast.Name):
            held = state.get(value.id)
            if held is None:
                return None  # a global, a number, a loop's integer
            return Held(held.objects, self._derivation(value.id, value, line, False), line)
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
            held = state.get(value.value.id)
            if held is None:
                return None
            kind = self._index_kind(value.slice)
            if kind == "copy":
                return Held(fresh, None, line)
            if kind is None:  # an index array or an integer: a copy or a view
                return Held(held.objects | _items(held.objects) | fresh, None, line)
            derivation = self._derivation(value.value.id, value, line, kind == "view")
            return Held(held.objects | _items(held.objects), derivation, line)
        if isinstance(value, gast.Attribute) and isinstance(value.value, gast.Name):
            held = state.get(value.value.id)
            if held is None:
                return None
            if value.attr == "T":
                return Held(
                    held.objects, self._derivation(value.value.id, value, line, False), line
                )
            if value.attr in _VIEW_ATTRIBUTES:
                return Held(held.objects | fresh, None, line)
            if not hasattr(np.ndarray, value.attr):  # a NamedTuple's or a class's field
                return Held(held.objects | _items(held.objects), None, line)
            return None  # x.shape, x.size: numbers and tuples of them
        if isinstance(value, (gast.Tuple, gast.List)):  # holds its items' arrays
            elements = tuple(
                state[e.id].objects if isinstance(e, gast.Name) and e.id in state else frozenset()
                for e in value.elts
            )
            items = _as_items(frozenset().union(*elements))
            return Held(fresh | items, None, line, elements)
        if isinstance(value, gast.Call):
            shared = self._call_shares(value, state)
            if shared:
                return Held(shared | fresh, None, line, array=self._makes_array(value))
        return Held(fresh, None, line)

    def _derivation(self, parent: str, value: gast.expr, line: int, array: bool) -> Derivation:
        reads = frozenset(name_ids(value))
        return Derivation(parent, clone(value), gast.dump(value), reads, line, array)

    def _index_kind(self, index: gast.expr) -> str | None:
        """``"view"``: basic indexing with a slice, ``...`` or ``None`` (a view, always
        an array); ``"item"``: integers or keys only (a view, or one number or item);
        ``"copy"``: an index array among the parts (fancy indexing copies); None: a name
        that may hold an integer or an index array."""
        parts = index.elts if isinstance(index, gast.Tuple) else [index]
        kinds = set()
        for part in parts:
            if isinstance(part, gast.Slice):
                kinds.add("view")  # its bounds are integers, whatever computes them
            elif isinstance(part, gast.Constant):
                if part.value is Ellipsis or part.value is None:
                    kinds.add("view")
                elif type(part.value) in (int, str):
                    kinds.add("item")
                else:
                    kinds.add(None)
            elif isinstance(part, gast.Name) and part.id in self.integers:
                kinds.add("item")
            elif isinstance(part, gast.Name) and part.id in self.index_arrays:
                kinds.add("copy")
            else:
                kinds.add(None)
        for kind in ("copy", None, "view"):
            if kind in kinds:
                return kind
        return "item"

    def _makes_array(self, value: gast.Call) -> bool:
        """Whether the call returns an array whatever it is given: a view method or
        function (``x.ravel()``, ``np.reshape``), not ``np.real``/``np.imag`` or a
        helper of the user's, which may return a number."""
        func = value.func
        if isinstance(func, gast.Attribute) and func.attr in _VIEW_METHODS:
            return isinstance(func.value, gast.Name) and func.value.id in self.resolver.locals
        target = self.resolver.resolve(func)
        return any(target is f for f in _VIEW_FUNCTIONS - {np.real, np.imag})

    def _call_shares(self, value: gast.Call, state: State) -> frozenset:
        """The objects a call's result may share with the arrays it is given."""
        func = value.func
        given = [a for a in value.args if isinstance(a, gast.Name) and a.id in state]
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name):
            if func.value.id in state and func.attr in _VIEW_METHODS:
                return state[func.value.id].objects
            if func.value.id in state or not self.resolver.is_global_chain(func):
                return frozenset()  # x.copy(), x.sum(): a value of its own
        target = self.resolver.resolve(func)
        if target is LOCAL or target is UNRESOLVED:
            return frozenset()
        if any(target is f for f in _VIEW_FUNCTIONS):
            return (
                state[given[0].id].objects if given and given[0] is value.args[0] else frozenset()
            )
        if _is_user_function(target):
            return frozenset().union(*(state[a.id].objects for a in given))
        return frozenset()


def _as_items(objects: frozenset[object]) -> frozenset[object]:
    """``objects`` as a container's items (an item's items are the container's too)."""
    return frozenset(o if o[0] == "item" else ("item", o) for o in objects)


def _items(objects: frozenset[object]) -> frozenset[object]:
    """The objects among ``objects`` that are a container's items, as themselves."""
    return frozenset(o[1] for o in objects if o[0] == "item")


def _made_again(state: State, stmt: gast.stmt) -> State:
    """``state`` as ``stmt`` makes a new value once more (a loop's next pass): the
    values it made before are told apart from the new one (one object for all of them,
    which may share memory with each other but not with the new one)."""
    made, old = ("made", id(stmt)), ("old", id(stmt))
    renamed = {made: old, ("item", made): ("item", old)}

    def again(objects: frozenset[object]) -> frozenset[object]:
        return frozenset(renamed.get(o, o) for o in objects)

    out = {}
    for name, held in state.items():
        if made in held.objects or ("item", made) in held.objects:
            elements = held.elements and tuple(again(e) for e in held.elements)
            held = replace(held, objects=again(held.objects), elements=elements)
        out[name] = held
    return out


def _join(a: State, b: State) -> State:
    out = dict(a)
    for name, held in b.items():
        mine = out.get(name)
        if mine is None or mine == held:
            out[name] = held
        else:
            derivation = mine.derivation if mine.derivation == held.derivation else None
            out[name] = Held(mine.objects | held.objects, derivation, min(mine.line, held.line))
    return out


def _join_all(states: list[State]) -> State | None:
    if not states:
        return None
    out = states[0]
    for other in states[1:]:
        out = _join(out, other)
    return out
