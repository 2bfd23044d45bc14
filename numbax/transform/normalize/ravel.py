"""``ravel_pytree`` (``nx.flatten_util``) called inside a function being transformed,
rewritten into the runtime's pytree helpers, which have derivative rules:

* ``flat, unravel = ravel_pytree(tree)`` is ``unravel = tree`` and ``flat =
  nxrt.ravel_pytree(unravel)``: the leaves raveled and concatenated in ``tree_flatten``
  order, in their common dtype (under ``jit`` a dict is a record, whose fields are in
  the same order);
* each ``unravel(v)`` is ``nxrt.unravel_pytree(v, unravel)``: ``unravel`` holds the tree it
  was made from, whose structure, shapes and dtypes cut ``v`` back into a tree;
* ``ravel_pytree(tree)[0]`` is ``nxrt.ravel_pytree(tree)``.

``ravel_pytree`` itself builds a Python function (``unravel``), which neither the
transformations nor Numba can hold as a value; the tree stands in for it, so ``unravel``
can only be called, in the function that made it. Other uses (``unravel`` returned or
passed on, the pair kept whole) are refused, saying what to write instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.runtime import nxrt
from numbax.transform.normalize.reject import unsupported
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource, bind_in_closure
from numbax.transform.walk import walk

_ravels: list[Callable[..., Any]] = []

_ADVICE = (
    "inside a transformed function write `flat, unravel = ravel_pytree(tree)` (then call "
    "`unravel(v)` in the same function) or `ravel_pytree(tree)[0]`"
)


def register_ravel(function: Callable[..., Any]) -> None:
    """Read calls to ``function`` (``nx.flatten_util.ravel_pytree``, matched by identity)
    as this module says. It registers itself: the transformations are a layer below."""
    if not any(function is known for known in _ravels):
        _ravels.append(function)


def rewrite_ravels(
    fn: gast.FunctionDef, source: FunctionSource, transformation: str
) -> gast.FunctionDef:
    """``fn`` with its calls to ``ravel_pytree`` and to the ``unravel`` they return
    rewritten (in place)."""
    resolver = Resolver(source, local_names(fn))
    if not any(_names_ravel(node, resolver) for node in walk(fn)):
        return fn
    return _Rewriter(fn, source, transformation, resolver).visit(fn)


def _names_ravel(node: gast.AST, resolver: Resolver) -> bool:
    """Whether ``node`` is a global name or chain for ``ravel_pytree``."""
    if not isinstance(node, (gast.Name, gast.Attribute)) or not resolver.is_global_chain(node):
        return False
    target = resolver.resolve(node)
    if target is LOCAL or target is UNRESOLVED:
        return False
    return any(target is known for known in _ravels)


def _is_ravel(node: gast.AST, resolver: Resolver) -> bool:
    """Whether ``node`` is a call of ``ravel_pytree``."""
    return isinstance(node, gast.Call) and _names_ravel(node.func, resolver)


class _Rewriter(gast.NodeTransformer):
    def __init__(
        self,
        fn: gast.FunctionDef,
        source: FunctionSource,
        transformation: str,
        resolver: Resolver,
    ) -> None:
        self.source = source
        self.transformation = transformation
        self.resolver = resolver
        self.line: int | None = None
        self.runtime = self._runtime_name()
        self.unravels = self._unravels(fn)

    # -- plumbing ------------------------------------------------------------------
    def visit(self, node: gast.AST) -> Any:
        saved = self.line
        self.line = getattr(node, "lineno", None) or self.line
        try:
            return super().visit(node)
        finally:
            self.line = saved

    def refuse(self, construct: str, advice: str = _ADVICE) -> TransformError:
        return unsupported(self.source, self.transformation, self.line, construct, advice)

    def _runtime_name(self) -> str:
        """A name for ``nxrt`` in the function (bound in its closure if needed)."""
        return bind_in_closure(self.source, nxrt, "nxrt", self.resolver.locals)

    def helper(self, name: str, args: list[gast.expr]) -> gast.Call:
        func = gast.Attribute(gast.Name(self.runtime, gast.Load(), None, None), name, gast.Load())
        return gast.Call(func, args, [])

    def argument(self, call: gast.Call) -> gast.expr:
        """The tree of a ``ravel_pytree`` call (its one argument)."""
        keywords = [k for k in call.keywords if k.arg == "pytree"]
        args = [*call.args, *(k.value for k in keywords)]
        if len(args) != 1 or len(keywords) != len(call.keywords):
            raise self.refuse(
                "ravel_pytree called with other than one tree",
                "pass the tree alone: ravel_pytree(tree)",
            )
        return self.visit(args[0])

    # -- which names hold an unravel -------------------------------------------------
    def _unravels(self, fn: gast.FunctionDef) -> set[str]:
        """The names assigned the ``unravel`` of ``flat, unravel = ravel_pytree(tree)``
        and read afterwards; each must be assigned nothing else and only be called."""
        made: dict[str, int] = {}
        for node in walk(fn):
            pair = self._unpacked(node)
            if pair is not None and isinstance(pair[1], gast.Name):
                made[pair[1].id] = made.get(pair[1].id, 0) + 1
        called = {
            id(node.func)
            for node in walk(fn)
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
        }
        stores: dict[str, int] = {}
        read: dict[str, gast.Name] = {}
        for node in walk(fn):
            if isinstance(node, gast.Name) and node.id in made:
                if isinstance(node.ctx, gast.Load):
                    if id(node) not in called:
                        self.line = self._line_of(fn, node)
                        raise self.refuse(f"the unravel function {node.id!r} used as a value")
                    read.setdefault(node.id, node)
                else:
                    stores[node.id] = stores.get(node.id, 0) + 1
        for name in read:
            if stores.get(name, 0) != made[name]:
                self.line = self._line_of(fn, read[name])
                raise self.refuse(
                    f"{name!r} assigned both an unravel function and another value",
                    "give the unravel function of ravel_pytree a name of its own",
                )
        return set(read)

    @staticmethod
    def _line_of(fn: gast.FunctionDef, target: gast.AST) -> int | None:
        """The line of the innermost statement holding ``target`` (``gast.walk`` goes
        breadth first, so the last statement found is the innermost)."""
        line = None
        for stmt in walk(fn):
            if isinstance(stmt, gast.stmt) and any(n is target for n in walk(stmt)):
                line = getattr(stmt, "lineno", line)
        return line

    def _unpacked(self, node: gast.AST) -> tuple[gast.expr, gast.expr] | None:
        """``(flat, unravel)`` targets of ``flat, unravel = ravel_pytree(tree)``."""
        if not isinstance(node, gast.Assign) or len(node.targets) != 1:
            return None
        target = node.targets[0]
        if not isinstance(target, (gast.Tuple, gast.List)) or len(target.elts) != 2:
            return None
        if any(isinstance(e, gast.Starred) for e in target.elts):
            return None
        if not _is_ravel(node.value, self.resolver):
            return None
        return target.elts[0], target.elts[1]

    # -- the rewrites ----------------------------------------------------------------
    def visit_Assign(self, node: gast.Assign) -> Any:
        pair = self._unpacked(node)
        if pair is None:
            return self.generic_visit(node)
        flat, unravel = pair
        if not isinstance(unravel, gast.Name):  # d["unravel"], obj.unravel
            raise self.refuse("the unravel function of ravel_pytree stored in a container")
        tree = self.argument(node.value)
        flat = self.visit(flat)
        if unravel.id not in self.unravels:
            raveled = gast.Assign([flat], self.helper("ravel_pytree", [tree]), None)
            return gast.copy_location(raveled, node)
        if any(isinstance(n, gast.Name) and n.id == unravel.id for n in walk(flat)):
            raise self.refuse(f"{unravel.id!r} assigned both the flat vector and unravel")
        held = gast.Assign([gast.Name(unravel.id, gast.Store(), None, None)], tree, None)
        load = gast.Name(unravel.id, gast.Load(), None, None)
        raveled = gast.Assign([flat], self.helper("ravel_pytree", [load]), None)
        return [gast.copy_location(held, node), gast.copy_location(raveled, node)]

    def visit_Subscript(self, node: gast.Subscript) -> Any:
        index = node.slice
        if (
            _is_ravel(node.value, self.resolver)
            and isinstance(node.ctx, gast.Load)
            and isinstance(index, gast.Constant)
            and index.value == 0
            and type(index.value) is int
        ):
            return self.helper("ravel_pytree", [self.argument(node.value)])
        return self.generic_visit(node)

    def visit_Name(self, node: gast.Name) -> Any:
        if _names_ravel(node, self.resolver):
            raise self.refuse("ravel_pytree used other than called")
        return node

    def visit_Attribute(self, node: gast.Attribute) -> Any:
        if _names_ravel(node, self.resolver):
            raise self.refuse("ravel_pytree used other than called")
        return self.generic_visit(node)

    def visit_Call(self, node: gast.Call) -> Any:
        if _is_ravel(node, self.resolver):
            raise self.refuse("ravel_pytree's (flat, unravel) pair kept whole")
        if isinstance(node.func, gast.Name) and node.func.id in self.unravels:
            node = self.generic_visit(node)
            if len(node.args) != 1 or node.keywords:
                raise self.refuse(
                    f"{node.func.id} called with other than one vector",
                    "pass the flat vector alone: unravel(v)",
                )
            return self.helper("unravel_pytree", [node.args[0], node.func])
        return self.generic_visit(node)
