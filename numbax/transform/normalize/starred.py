"""``f(*args)`` where the number of items is known from the source.

The core language has no starred arguments: every call passes its arguments one by one,
so that a callee's derivative gets as many tangents as it has arguments. A starred
argument is spelled out when its length is fixed before the function runs:

* a tuple or list literal, ``f(*(a, b))``;
* a local assigned exactly once, from a tuple or list literal: ``xs = (a, b)``, and the
  ``*args`` of a function taking them, which numbax names per call
  (``args = (args_0, args_1)``, see ``numbax.codegen.variadic``): ``g(*args)`` forwards
  them;
* a tuple or list the function reads from its globals or closure.

It becomes ``f(xs[0], xs[1])``. Any other starred argument (a parameter, whose length
only the caller knows) is left for ``normalize/reject.py`` to refuse.

The sum of two such sequences of one kind (two tuples, or two lists) is their
concatenation, spelled out the same way: ``args + (ones,)`` becomes
``(args[0], args[1], ones)``. Left as a sum, it would be read as arithmetic on arrays,
whose derivative rule cannot apply to a tuple.
"""

from __future__ import annotations

import gast

from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver
from numbax.transform.walk import walk


def expand_starred_arguments(fn: gast.FunctionDef, resolver: Resolver) -> None:
    """Spell out, in place, each concatenation of sequences and each starred argument of
    ``fn`` whose length is known."""
    literals = _assigned_once_from_literals(fn)
    _Concatenations(literals, resolver).visit(fn)
    lengths = {name: len(items) for name, (_, items) in literals.items()}
    for node in walk(fn):
        if not isinstance(node, gast.Call):
            continue
        args = []
        for arg in node.args:
            count = _length(arg.value, lengths, resolver) if isinstance(arg, gast.Starred) else None
            if count is None:
                args.append(arg)
            elif isinstance(arg.value, (gast.Tuple, gast.List)):
                args += arg.value.elts
            else:
                args += [_item(arg.value, i) for i in range(count)]
        node.args = args


def _length(value: gast.expr, literals: dict[str, int], resolver: Resolver) -> int | None:
    if isinstance(value, (gast.Tuple, gast.List)):
        if any(isinstance(e, gast.Starred) for e in value.elts):
            return None
        return len(value.elts)
    if isinstance(value, gast.Name) and value.id in literals:
        return literals[value.id]
    if resolver.is_global_chain(value):
        found = resolver.resolve(value)
        if found is not LOCAL and found is not UNRESOLVED and isinstance(found, (tuple, list)):
            return len(found)
    return None


class _Concatenations(gast.NodeTransformer):
    """``a + b`` of two tuples, or two lists, whose items are known: one literal."""

    def __init__(self, literals: dict[str, tuple[type, list]], resolver: Resolver) -> None:
        self.literals = literals
        self.resolver = resolver

    def visit_BinOp(self, node: gast.BinOp) -> gast.expr:
        self.generic_visit(node)
        if not isinstance(node.op, gast.Add):
            return node
        left, right = self._items(node.left), self._items(node.right)
        if left is None or right is None or left[0] is not right[0]:
            return node
        kind = left[0]
        return kind(left[1] + right[1], gast.Load())

    def _items(self, value: gast.expr) -> tuple[type, list[gast.expr]] | None:
        """The kind (gast.Tuple or gast.List) and the items of a sequence of known
        length; None for anything else."""
        if isinstance(value, (gast.Tuple, gast.List)):
            if any(isinstance(e, gast.Starred) for e in value.elts):
                return None
            return type(value), list(value.elts)
        if isinstance(value, gast.Name) and value.id in self.literals:
            kind, items = self.literals[value.id]
            return kind, [_item(value, i) for i in range(len(items))]
        if self.resolver.is_global_chain(value):
            found = self.resolver.resolve(value)
            if found is not LOCAL and found is not UNRESOLVED and type(found) in _KINDS:
                return _KINDS[type(found)], [_item(value, i) for i in range(len(found))]
        return None


_KINDS = {tuple: gast.Tuple, list: gast.List}


def _assigned_once_from_literals(fn: gast.FunctionDef) -> dict[str, tuple[type, list]]:
    """Locals assigned once, from a tuple or list literal without starred items: the
    literal's kind (gast.Tuple or gast.List) and items (a list's only while nothing
    appends to it: none of its methods is called)."""
    stores: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    changed = {
        node.func.value.id
        for node in walk(fn)
        if isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and isinstance(node.func.value, gast.Name)
    }
    lengths = {}
    for node in walk(fn):
        if (
            isinstance(node, gast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], gast.Name)
            and isinstance(node.value, (gast.Tuple, gast.List))
            and not any(isinstance(e, gast.Starred) for e in node.value.elts)
        ):
            name = node.targets[0].id
            if stores.get(name) == 1 and name not in changed:
                lengths[name] = (type(node.value), node.value.elts)
    return lengths


def _item(value: gast.expr, index: int) -> gast.Subscript:
    return gast.Subscript(_copy(value), gast.Constant(index, None), gast.Load())


def _copy(node: gast.expr) -> gast.expr:
    if isinstance(node, gast.Attribute):
        return gast.Attribute(_copy(node.value), node.attr, gast.Load())
    return gast.Name(node.id, gast.Load(), None, None)
