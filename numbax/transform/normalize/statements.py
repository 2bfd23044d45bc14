"""Statements and assignment targets lowered to the core language.

Mixed into the flattener (``flatten.py``): :meth:`_statement` sends each user statement
to the method named after its type (``_Assign``, ``_If``, ``_While``...). Assignments
assign a user variable directly where they can (``a, b = b, a + b`` as two assignments
when that keeps Python's meaning), ``x op= v`` is ``x = x op v`` marked as in place
(``aliases.py``), ``if``/``while`` on a literal test are decided now, a ``while`` with a
computed test recomputes it at the end of its body and before each ``continue``, and
``assert`` becomes an ``if`` that raises. :meth:`store` and :meth:`bind` assign any
target: names, nested tuples (through temporaries where Python's left-to-right order
matters) and subscripts.
"""

from __future__ import annotations

import gast

from numbax.transform.analysis.dataflow import names as mentioned
from numbax.transform.nodes import (
    assign,
    block_never_completes,
    call,
    clone,
    const,
    if_,
    load,
    store,
)
from numbax.transform.normalize.aliases import IN_PLACE
from numbax.transform.normalize.expressions import _OP_NAMES
from numbax.transform.walk import walk


class StatementLowering:
    """The statement part of the flattener (mixed into it; uses its emit/atom tools)."""

    # -- targets -------------------------------------------------------------------
    def bind(self, target: gast.expr, element: gast.expr | list) -> None:
        """Assign a loop element (a value, or a tuple of values kept apart) to ``target``."""
        if isinstance(element, list):
            if isinstance(target, (gast.Tuple, gast.List)):
                if len(target.elts) != len(element):
                    raise self.unsupported(
                        f"unpacking {len(element)} values into {len(target.elts)} targets",
                        "use as many names as the loop produces values",
                    )
                for part, value in zip(target.elts, element, strict=True):
                    self.bind(part, value)
                return
            element = gast.Tuple([self._element_atom(e) for e in element], gast.Load())
        if isinstance(target, gast.Name):
            self.emit(assign(self.rename(target.id), element))
        else:
            self.store(target, self.materialize(element))

    def _element_atom(self, element: gast.expr | list) -> gast.expr:
        if isinstance(element, list):
            element = gast.Tuple([self._element_atom(e) for e in element], gast.Load())
        return self.materialize(element)

    def store(self, target: gast.expr, value: gast.expr) -> None:
        """``target = value`` for an atom ``value`` and any assignment target."""
        if isinstance(target, gast.Name):
            self.emit(assign(self.rename(target.id), value))
        elif isinstance(target, (gast.Tuple, gast.List)):
            source = value if isinstance(value, gast.Name) else self.computed("tuple", value)
            self._unpack(target, source)
        else:  # Subscript: attribute and starred targets were rejected up front
            base = self.name_of(target.value)
            index = self.index(target.slice)
            self.emit(assign(gast.Subscript(base, index, gast.Store()), value))

    def _unpack(self, target: gast.Tuple | gast.List, source: gast.Name) -> None:
        """``a, (b, c), d[i] = source``: names directly, the rest through temporaries.

        Python assigns the parts left to right, so once a part stores into a container
        (whose index may read a name), the names after it go through temporaries too.
        """
        names, later = [], []
        for part in target.elts:
            if isinstance(part, gast.Name) and not any(_stores_item(p) for p, _ in later):
                names.append(store(self.rename(part.id)))
                continue
            temp = self.namer.fresh(_unpacked_hint(part))
            names.append(store(temp))
            later.append((part, load(temp)))
        self.emit(assign(gast.Tuple(names, gast.Store()), source))
        for part, temp in later:
            self.store(part, temp)

    # -- statements ----------------------------------------------------------------
    def _statement(self, stmt: gast.stmt) -> None:
        handler = getattr(self, f"_{type(stmt).__name__}", None)
        if handler is None:
            raise self.unsupported(f"the statement {type(stmt).__name__}", "rewrite it")
        handler(stmt)

    def _Assign(self, stmt: gast.Assign) -> None:
        first, *others = stmt.targets
        if not others:
            self._assign_one(first, stmt.value)
            return
        if isinstance(first, gast.Name):
            self.assign_user(self.rename(first.id), stmt.value)
            value = load(self.rename(first.id))
        else:
            value = self.atom(stmt.value)
            self.store(first, value)
        for target in others:
            self.store(target, value)

    def _assign_one(self, target: gast.expr, value: gast.expr) -> None:
        if isinstance(target, gast.Name):
            self.assign_user(self.rename(target.id), value)
        elif isinstance(target, (gast.Tuple, gast.List)) and _same_shape_literal(target, value):
            self._parallel_assign(target.elts, value.elts)
        elif isinstance(target, (gast.Tuple, gast.List)) and _independent_parts(target, value):
            for part, element in zip(target.elts, value.elts, strict=True):
                self.store(part, self.atom(element))
        else:
            self.store(target, self.atom(value))

    def _parallel_assign(self, targets: list[gast.Name], values: list[gast.expr]) -> None:
        """``a, b = x, y``: one assignment per name when that keeps Python's meaning."""
        names = [self.rename(t.id) for t in targets]
        if not set(names) & {self.rename(n) for v in values for n in mentioned(v)}:
            for name, value in zip(names, values, strict=True):
                self.assign_user(name, value)
            return
        atoms = [self.atom(v) for v in values]
        read_later = [
            {a.id for a in atoms[i + 1 :] if isinstance(a, gast.Name)} for i in range(len(atoms))
        ]
        if all(name not in later for name, later in zip(names, read_later, strict=True)):
            for name, value in zip(names, atoms, strict=True):  # e.g. a, b = b, a + b
                self.emit(assign(name, value))
            return
        packed = self.computed("tuple", gast.Tuple(atoms, gast.Load()))  # a, b = b, a
        self.emit(assign(gast.Tuple([store(n) for n in names], gast.Store()), packed))

    def _AnnAssign(self, stmt: gast.AnnAssign) -> None:
        if stmt.value is not None:
            self._assign_one(stmt.target, stmt.value)

    def _AugAssign(self, stmt: gast.AugAssign) -> None:
        target = stmt.target
        if isinstance(target, gast.Name):
            name = self.rename(target.id)
            value = self.atom(stmt.value)
            in_place = assign(name, gast.BinOp(load(name), stmt.op, value))
            setattr(in_place, IN_PLACE, True)  # an array's own memory: see normalize/aliases.py
            self.emit(in_place)
            return
        base = self.name_of(target.value)  # a Subscript: index computed once
        index = self.index(target.slice)
        current = self.computed(self.hint(target), gast.Subscript(base, index, gast.Load()))
        value = self.atom(stmt.value)
        result = self.computed(_OP_NAMES[type(stmt.op)], gast.BinOp(current, stmt.op, value))
        stored = gast.Subscript(load(base.id), clone(index), gast.Store())
        self.emit(assign(stored, result))

    def _Expr(self, stmt: gast.Expr) -> None:
        if isinstance(stmt.value, (gast.Constant, gast.Name)):
            return  # no effect
        if isinstance(stmt.value, gast.Call):
            call = self.call(stmt.value)
            if _pops_a_list(call):  # named, so that reverse mode can put it back
                self.computed("popped", call)
            else:
                self.emit(gast.Expr(call))
        else:
            self.atom(stmt.value)

    def _If(self, stmt: gast.If) -> None:
        condition, test = self.capture(lambda: self.atom(stmt.test))
        if isinstance(test, gast.Constant):
            self.out += self.block(stmt.body if test.value else stmt.orelse)
            return
        body, orelse = self.block(stmt.body), self.block(stmt.orelse)
        if not body and not orelse:  # `if c: pass`: only the effects of c remain
            if any(isinstance(n, gast.Call) for s in condition for n in walk(s)):
                self.out += condition
            return
        self.out += condition
        if body:
            self.emit(if_(test.id, body, orelse))
        else:
            self.emit(if_(self.negate(test.id), orelse))

    def _For(self, stmt: gast.For) -> None:
        self.loop(stmt.target, stmt.iter, lambda: self.out.extend(self.block(stmt.body)))

    def _While(self, stmt: gast.While) -> None:
        condition, test = self.capture(lambda: self.atom(stmt.test))
        if isinstance(test, gast.Constant):
            if not test.value:
                return
            test, condition = self.computed("forever", const(True)), []
        self.out += condition
        body = self.block(stmt.body)
        if condition:
            _before_continues(body, condition)
            if not block_never_completes(body):
                body += clone(condition)
        self.emit(gast.While(load(test.id), self.nonempty(body), []))

    def _Return(self, stmt: gast.Return) -> None:
        value = const(None) if stmt.value is None else self.atom(stmt.value)
        self.emit(gast.Return(value))

    def _Raise(self, stmt: gast.Raise) -> None:
        exc = stmt.exc
        exc = self.call(exc) if isinstance(exc, gast.Call) else self.name_of(exc)
        self.emit(gast.Raise(exc, None))

    def _Assert(self, stmt: gast.Assert) -> None:
        test = self.atom(stmt.test)

        def fail() -> None:
            exc = load(self.builtin("AssertionError"))
            if stmt.msg is not None:
                exc = call(exc, [self.atom(stmt.msg)])
            self.emit(gast.Raise(exc, None))

        if isinstance(test, gast.Constant):
            if not test.value:
                fail()
            return
        self.emit(if_(self.negate(test.id), self.block_of(fail)))

    def _Break(self, stmt: gast.Break) -> None:
        self.emit(gast.Break())

    def _Continue(self, stmt: gast.Continue) -> None:
        self.emit(gast.Continue())

    def _Pass(self, stmt: gast.Pass) -> None:
        """Dropped: empty blocks get their ``pass`` back when they are emitted."""


def _before_continues(stmts: list[gast.stmt], condition: list[gast.stmt]) -> None:
    """Recompute a while loop's condition before each ``continue`` of that loop."""
    for i in reversed(range(len(stmts))):
        stmt = stmts[i]
        if isinstance(stmt, gast.Continue):
            stmts[i:i] = clone(condition)
        elif isinstance(stmt, gast.If):
            _before_continues(stmt.body, condition)
            _before_continues(stmt.orelse, condition)


def _stores_item(target: gast.expr) -> bool:
    return any(isinstance(n, gast.Subscript) for n in walk(target))


def _unpacked_hint(target: gast.expr) -> str:
    """``_b_c`` for a nested ``(b, c)`` target, ``_d`` for ``d``, ``_item`` otherwise."""
    if _stores_item(target):
        return "item"
    return "_".join(n.id for n in walk(target) if isinstance(n, gast.Name))


def _independent_parts(target: gast.expr, value: gast.expr) -> bool:
    """``(x,), (t,) = primals, tangents``: nested names on the left, as many values on
    the right, and no value reads a name the left side assigns, so each part may be
    assigned on its own. Kept apart, each name depends only on its own value, which
    the derivative transformations' activity analysis sees (one packed tuple would make
    ``x`` depend on ``tangents`` too)."""
    if not isinstance(value, (gast.Tuple, gast.List)) or len(value.elts) != len(target.elts):
        return False
    stored = [n for n in walk(target) if isinstance(n, gast.Name)]
    only_names = all(
        isinstance(n, (gast.Name, gast.Tuple, gast.List, gast.Store)) for n in walk(target)
    )
    read = {n for element in value.elts for n in mentioned(element)}
    return only_names and not {n.id for n in stored} & read


def _same_shape_literal(target: gast.expr, value: gast.expr) -> bool:
    """``a, b = x, y``: plain names on the left, as many values on the right."""
    return (
        isinstance(value, (gast.Tuple, gast.List))
        and len(value.elts) == len(target.elts)
        and all(isinstance(t, gast.Name) for t in target.elts)
    )


def _pops_a_list(call: gast.Call) -> bool:
    """``l.pop()`` of a local list, its value unused: reverse mode reverses a pop by
    appending the value back (``v = l.pop()``), so it keeps the value under a name."""
    func = call.func
    return (
        isinstance(func, gast.Attribute)
        and func.attr == "pop"
        and isinstance(func.value, gast.Name)
        and not call.args
        and not call.keywords
    )
