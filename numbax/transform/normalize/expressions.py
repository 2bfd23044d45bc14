"""Expressions lowered to the core language: each operation an assignment of its own,
in Python's evaluation order, to a temporary named after what it holds.

Mixed into the flattener (``flatten.py``), whose tools it uses. :meth:`atom` gives a
name or constant holding an expression's value and :meth:`value` one operation on atoms,
emitting what computes the operands first; ``and``/``or``, conditional expressions,
chained comparisons and comprehensions, which evaluate only part of what they are given,
become ``if`` statements and loops (:meth:`into`). A call of a function numbax
transforms (a helper of the user's) passes every argument by position, defaults
included (:meth:`call`), as the helper's derivative takes them all.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gast

from numbax.transform.analysis.dataflow import names as mentioned
from numbax.transform.nodes import assign, call, const, if_, is_atom, load
from numbax.transform.normalize.calls import (
    keyword_only_function,
    positional_arguments,
    positional_view,
)
from numbax.transform.operations import is_transformable_function
from numbax.transform.source import bind_in_closure

_OP_NAMES: dict[type, str] = {
    gast.Add: "add",
    gast.Sub: "sub",
    gast.Mult: "mul",
    gast.Div: "div",
    gast.FloorDiv: "floordiv",
    gast.Mod: "mod",
    gast.Pow: "pow",
    gast.MatMult: "matmul",
    gast.LShift: "lshift",
    gast.RShift: "rshift",
    gast.BitAnd: "bitand",
    gast.BitOr: "bitor",
    gast.BitXor: "bitxor",
    gast.USub: "neg",
    gast.UAdd: "pos",
    gast.Not: "not",
    gast.Invert: "invert",
    gast.Eq: "eq",
    gast.NotEq: "ne",
    gast.Lt: "lt",
    gast.LtE: "le",
    gast.Gt: "gt",
    gast.GtE: "ge",
    gast.Is: "is",
    gast.IsNot: "is_not",
    gast.In: "in",
    gast.NotIn: "not_in",
    gast.And: "and",
    gast.Or: "or",
}


class ExpressionLowering:
    """The expression part of the flattener (mixed into it; uses its emit/names tools)."""

    # -- names of temporaries ------------------------------------------------------
    def hint(self, node: gast.expr) -> str:
        """What a temporary holding ``node``'s value is called."""
        if isinstance(node, (gast.BinOp, gast.UnaryOp, gast.BoolOp)):
            return _OP_NAMES[type(node.op)]
        if isinstance(node, gast.Compare):
            return _OP_NAMES[type(node.ops[0])]
        if isinstance(node, gast.Call):
            func = node.func
            if isinstance(func, gast.Name):
                return func.id
            return func.attr if isinstance(func, gast.Attribute) else "call"
        if isinstance(node, gast.Attribute):
            return f"{self._base(node.value)}_{node.attr}"
        if isinstance(node, gast.Subscript):
            return f"{self._base(node.value)}_at"
        if isinstance(node, (gast.List, gast.ListComp)):
            return "list"
        if isinstance(node, (gast.Dict, gast.DictComp)):
            return "dict"
        if isinstance(node, gast.Constant):
            return type(node.value).__name__
        return {gast.Tuple: "tuple", gast.IfExp: "ifexp"}.get(type(node), "value")

    def _base(self, node: gast.expr) -> str:
        """What the hint of ``node[...]`` and ``node.attr`` starts with."""
        if isinstance(node, gast.Name):
            return node.id.strip("_") or "value"
        return self.hint(node).strip("_")

    # -- expressions ---------------------------------------------------------------
    def atom(self, node: gast.expr) -> gast.expr:
        """A Name or Constant holding ``node``'s value, emitting what computes it."""
        if isinstance(node, gast.Name):
            return load(self.rename(node.id))
        if isinstance(node, gast.Constant):
            return const(node.value)
        folded = _folded_negative(node)
        if folded is not None:
            return folded
        if isinstance(node, gast.NamedExpr):
            name = self.rename(node.target.id)
            self.assign_user(name, node.value)
            return load(name)
        if _is_multi_statement(node):
            name = self.namer.fresh(self.hint(node))
            self.into(name, node)
            return load(name)
        value = self.value(node)  # operands first, so temporaries number in order
        return self.computed(self.hint(node), value)

    def name_of(self, node: gast.expr) -> gast.Name:
        """Like :meth:`atom`, but always a Name (for subscripted or unpacked values)."""
        value = self.atom(node)
        if isinstance(value, gast.Name):
            return value
        return self.computed("neg" if _is_negative(value) else self.hint(value), value)

    def materialize(self, value: gast.expr) -> gast.expr:
        """An atom for an already-lowered value (atom or one operation on atoms)."""
        return value if is_atom(value) else self.computed(self.hint(value), value)

    def assign_user(self, name: str, node: gast.expr) -> None:
        """``name = node`` for a user variable, assigning the last operation directly.

        Lowerings that assign their target more than once (``and``, comprehensions...)
        go through a temporary when ``node`` reads the target's old value.
        """
        multi = _is_multi_statement(node)
        if multi and any(self.rename(n) == name for n in mentioned(node)):
            self.emit(assign(name, self.atom(node)))
        else:
            self.into(name, node)

    def into(self, name: str, node: gast.expr) -> None:
        """Emit statements that leave ``node``'s value in the variable ``name``."""
        if isinstance(node, gast.BoolOp):
            self._boolean(name, node.op, node.values)
        elif isinstance(node, gast.IfExp):
            self._conditional(name, node)
        elif isinstance(node, gast.Compare) and len(node.ops) > 1:
            self._chain(name, self.atom(node.left), node.ops, node.comparators)
        elif isinstance(node, gast.ListComp):
            self._comprehension(name, gast.List([], gast.Load()), node, self._append(name, node))
        elif isinstance(node, gast.DictComp):
            self._comprehension(name, gast.Dict([], []), node, self._store_item(name, node))
        else:
            self.emit(assign(name, self.value(node)))

    def value(self, node: gast.expr) -> gast.expr:
        """``node`` as one operation on atoms (its operands are emitted first)."""
        if is_atom(node) or _is_multi_statement(node) or isinstance(node, gast.NamedExpr):
            return self.atom(node)
        if isinstance(node, gast.UnaryOp):
            return _folded_negative(node) or gast.UnaryOp(node.op, self.atom(node.operand))
        if isinstance(node, gast.BinOp):
            left, right = self.atom(node.left), self.atom(node.right)
            if isinstance(node.op, gast.Pow) and _is_negative(left):
                left = self.computed("neg", left)  # `-3 ** 2` would unparse wrongly
            return gast.BinOp(left, node.op, right)
        if isinstance(node, gast.Compare):
            left = self.atom(node.left)
            return gast.Compare(left, node.ops, [self.atom(node.comparators[0])])
        if isinstance(node, gast.Call):
            return self.call(node)
        if isinstance(node, gast.Attribute):
            if self.is_global_chain(node):
                return _load_chain(node)
            return gast.Attribute(self.name_of(node.value), node.attr, gast.Load())
        if isinstance(node, gast.Subscript):
            base = self.name_of(node.value)
            return gast.Subscript(base, self.index(node.slice), gast.Load())
        if isinstance(node, (gast.Tuple, gast.List)):
            return type(node)([self.atom(e) for e in node.elts], gast.Load())
        if isinstance(node, gast.Dict):
            keys, values = [], []
            for key, item in zip(node.keys, node.values, strict=True):
                keys.append(self.atom(key))
                values.append(self.atom(item))
            return gast.Dict(keys, values)
        raise self.unsupported(f"the expression {type(node).__name__}", "rewrite it")

    def call(self, node: gast.Call) -> gast.Call:
        func = self.callee(node.func)
        args = [self.atom(a) for a in node.args]
        keywords = [gast.keyword(k.arg, self.atom(k.value)) for k in node.keywords]
        if self.is_global_chain(node.func) and not any(isinstance(a, gast.Starred) for a in args):
            target = self.resolver.resolve(node.func)
            if is_transformable_function(target):  # a helper: its derivative takes all
                positional = positional_arguments(target, args, keywords, self.bind_value)
                if positional is not None:
                    given = (len(args), tuple(k.arg for k in keywords))
                    return call(self.by_position(func, target, given), positional)
        return call(func, args, keywords)

    def bind_value(self, value: Any, hint: str) -> str:
        """A name the transformed code reads ``value`` by (a callee's default)."""
        return bind_in_closure(self.source, value, hint, self.locals)

    def by_position(self, func: gast.expr, target: Any, given: tuple[int, tuple]) -> gast.expr:
        """What a call binding every argument by position calls: ``func``, or, for a
        callee with keyword-only parameters, its positional view, named in the closure
        (``h_by_position``): a Python function's own (:func:`positional_view`), or what
        ``target.__numbax_by_position__(n_positional, keywords)`` gives for a call with
        these (``given``) arguments (``vmap`` maps the arguments passed by keyword); for a
        call leaving parameters to their defaults, what ``__numbax_omitted__`` gives
        (``vmap`` maps no default, though the call now passes it)."""
        function = keyword_only_function(target)
        parameters = inspect.signature(target).parameters.values()
        omitted = getattr(target, "__numbax_omitted__", None)
        if function is not None:
            view = positional_view(function, self.transformation)
        elif any(p.kind is p.KEYWORD_ONLY for p in parameters):
            view = target.__numbax_by_position__(*given)
        elif omitted is not None and given[0] + len(given[1]) < len(parameters):
            view = omitted(*given)  # vmap maps no default: the call's own axes
            if view is None:
                return func
        else:
            return func
        hint = view.__name__ if function is not None else getattr(target, "name", "callee")
        return load(bind_in_closure(self.source, view, f"{hint}_by_position", self.locals))

    def callee(self, func: gast.expr) -> gast.expr:
        if isinstance(func, gast.Name):
            return load(self.rename(func.id))
        if isinstance(func, gast.Attribute):
            if self.is_global_chain(func):
                return _load_chain(func)
            return gast.Attribute(self.name_of(func.value), func.attr, gast.Load())
        return self.name_of(func)

    def index(self, node: gast.expr) -> gast.expr:
        if isinstance(node, gast.Slice):
            parts = [
                None if p is None else self.atom(p) for p in (node.lower, node.upper, node.step)
            ]
            return gast.Slice(*parts)
        if isinstance(node, gast.Tuple):
            return gast.Tuple([self.index(e) for e in node.elts], gast.Load())
        return self.atom(node)

    def negate(self, name: str) -> str:
        """Emit ``_not = not name`` (``if`` tests are names) and return ``_not``."""
        return self.computed("not", gast.UnaryOp(gast.Not(), load(name))).id

    def _boolean(self, name: str, op: gast.boolop, values: list[gast.expr]) -> None:
        """``name = a and b``: ``name = a; if name: name = b`` (``or`` tests ``not name``)."""
        self.into(name, values[0])
        if len(values) == 1:
            return
        test = name if isinstance(op, gast.And) else self.negate(name)
        rest = self.block_of(lambda: self._boolean(name, op, values[1:]))
        self.emit(if_(test, rest))

    def _conditional(self, name: str, node: gast.IfExp) -> None:
        test = self.atom(node.test)
        if isinstance(test, gast.Constant):
            self.into(name, node.body if test.value else node.orelse)
            return
        body = self.block_of(lambda: self.into(name, node.body))
        orelse = self.block_of(lambda: self.into(name, node.orelse))
        self.emit(if_(test.id, body, orelse))

    def _chain(self, name: str, left: gast.expr, ops: list, comparators: list) -> None:
        """``a < b < c``: ``name = a < b; if name: name = b < c`` (``b`` evaluated once)."""
        right = self.atom(comparators[0])
        self.emit(assign(name, gast.Compare(left, [ops[0]], [right])))
        if len(ops) > 1:
            rest = self.block_of(lambda: self._chain(name, right, ops[1:], comparators[1:]))
            self.emit(if_(name, rest))

    def _append(self, name: str, node: gast.ListComp) -> Callable[[], None]:
        def append() -> None:
            item = self.atom(node.elt)
            method = gast.Attribute(load(name), "append", gast.Load())
            self.emit(gast.Expr(call(method, [item])))

        return append

    def _store_item(self, name: str, node: gast.DictComp) -> Callable[[], None]:
        def store_item() -> None:
            key = self.atom(node.key)
            item = self.atom(node.value)
            self.emit(assign(gast.Subscript(load(name), key, gast.Store()), item))

        return store_item

    def _comprehension(
        self, name: str, empty: gast.expr, node: gast.expr, innermost: Callable[[], None]
    ) -> None:
        self.emit(assign(name, empty))
        self.comprehension_scopes.append({})
        try:
            self._generators(node.generators, innermost)
        finally:
            self.comprehension_scopes.pop()

    def _generators(self, generators: list[gast.comprehension], innermost: Callable) -> None:
        first, rest = generators[0], generators[1:]
        inner = (lambda: self._generators(rest, innermost)) if rest else innermost
        body = lambda: self._filtered(first.ifs, inner)  # noqa: E731
        self.loop(first.target, first.iter, body, comprehension=True)

    def _filtered(self, conditions: list[gast.expr], then: Callable[[], None]) -> None:
        if not conditions:
            then()
            return
        test = self.atom(conditions[0])
        if isinstance(test, gast.Constant):
            if test.value:
                self._filtered(conditions[1:], then)
            return
        body = self.block_of(lambda: self._filtered(conditions[1:], then))
        self.emit(if_(test.id, body))


def _is_multi_statement(node: gast.expr) -> bool:
    """Lowerings that assign their result more than once (through ``if``/loops)."""
    if isinstance(node, gast.Compare):
        return len(node.ops) > 1
    return isinstance(node, (gast.BoolOp, gast.IfExp, gast.ListComp, gast.DictComp))


def _is_negative(node: gast.expr) -> bool:
    return (
        isinstance(node, gast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and node.value < 0
    )


def _folded_negative(node: gast.expr) -> gast.Constant | None:
    """``-3`` / ``-1.5`` as one constant (complex literals keep their sign of zero)."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        operand = node.operand
        if isinstance(operand, gast.Constant) and type(operand.value) in (int, float):
            return const(-operand.value)
    return None


def _load_chain(node: gast.expr) -> gast.expr:
    """A copy of ``np.linalg.norm``-like chains with every context set to Load."""
    if isinstance(node, gast.Attribute):
        return gast.Attribute(_load_chain(node.value), node.attr, gast.Load())
    return load(node.id)
