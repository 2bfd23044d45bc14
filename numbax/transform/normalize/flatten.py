"""The flattener: the pass of :func:`~numbax.transform.normalize.normalize` that lowers
a function's body to the core language, one user statement at a time.

``_Flattener`` holds what the lowering reads and writes as it goes (the statements
emitted so far, the current line, the function's names, those private to the
comprehensions being lowered, the locals renamed for the builtins lowered code calls)
and the tools every lowering uses (``emit``, ``block``, ``capture``, ``computed``, name
lookups). The lowerings themselves are mixed in: expressions (``expressions.py``),
assignment targets and statements (``statements.py``), ``for`` loops (``loops.py``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TypeVar

import gast

from numbax.errors import TransformError
from numbax.transform.analysis.dataflow import names as mentioned
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, at, load
from numbax.transform.normalize.expressions import ExpressionLowering
from numbax.transform.normalize.loops import LoopLowering
from numbax.transform.normalize.reject import unsupported
from numbax.transform.normalize.statements import StatementLowering
from numbax.transform.resolve import Resolver
from numbax.transform.source import FunctionSource

T = TypeVar("T")


_EMITTED_BUILTINS = ("range", "len", "min", "AssertionError")
"""Builtins that lowered code calls by name, so no local may shadow them."""


class _Scopes:
    """Which names the function binds, and which names comprehensions may keep private."""

    def __init__(self, fn: gast.FunctionDef) -> None:
        args = fn.args
        self.params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
        self.locals = set(self.params)  # bound in the function's own scope
        self.free = set(self.params)  # used outside the comprehensions that bind them
        for stmt in fn.body:
            self._visit(stmt, frozenset())

    def _visit(self, node: gast.AST, bound: frozenset[str]) -> None:
        if isinstance(node, (gast.ListComp, gast.DictComp, gast.SetComp, gast.GeneratorExp)):
            self._comprehension(node, bound)
            return
        if isinstance(node, gast.Name) and node.id not in bound:
            self.free.add(node.id)
            if isinstance(node.ctx, (gast.Store, gast.Del)):
                self.locals.add(node.id)
        for child in gast.iter_child_nodes(node):
            self._visit(child, bound)

    def _comprehension(self, node: gast.AST, bound: frozenset[str]) -> None:
        inner = bound
        for i, gen in enumerate(node.generators):
            self._visit(gen.iter, bound if i == 0 else inner)  # the first runs outside
            inner = inner | mentioned(gen.target)
            for condition in gen.ifs:
                self._visit(condition, inner)
        for part in ("elt", "key", "value"):
            if hasattr(node, part):
                self._visit(getattr(node, part), inner)


class _Flattener(LoopLowering, ExpressionLowering, StatementLowering):
    """Emits core statements for user statements, one user statement at a time."""

    def __init__(
        self, source: FunctionSource, transformation: str, namer: Namer, fn: gast.FunctionDef
    ) -> None:
        self.source = source
        self.transformation = transformation
        self.namer = namer
        scopes = _Scopes(fn)
        self.params = scopes.params
        self.locals = scopes.locals
        self.free = scopes.free
        self.resolver = Resolver(source, self.locals)
        # Locals that shadow a builtin the lowered code calls are renamed (_range).
        self.renames = {
            name: namer.fresh(name)
            for name in _EMITTED_BUILTINS
            if name in self.locals and name not in self.params
        }
        self.comprehension_scopes: list[dict[str, str]] = []
        self.out: list[gast.stmt] = []
        self.line = fn.lineno

    # -- plumbing ------------------------------------------------------------------
    def emit(self, stmt: gast.stmt) -> None:
        self.out.append(at(stmt, self.line))

    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        """The core statements for the user statements ``stmts``."""
        saved_out, saved_line = self.out, self.line
        self.out = []
        try:
            for stmt in stmts:
                self.line = stmt.lineno
                self._statement(stmt)
            return self.out
        finally:
            self.out, self.line = saved_out, saved_line

    def block_of(self, emit_statements: Callable[[], object]) -> list[gast.stmt]:
        """The statements that ``emit_statements()`` emits, captured as a block."""
        return self.capture(emit_statements)[0]

    def capture(self, compute: Callable[[], T]) -> tuple[list[gast.stmt], T]:
        """What ``compute()`` returns, and the statements it emits, captured apart."""
        saved = self.out
        self.out = []
        try:
            result = compute()
            return self.out, result
        finally:
            self.out = saved

    def nonempty(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        """``stmts``, or ``[pass]`` where a loop body would otherwise be empty."""
        return stmts or [at(gast.Pass(), self.line)]

    def unsupported(self, construct: str, advice: str) -> TransformError:
        return unsupported(self.source, self.transformation, self.line, construct, advice)

    def computed(self, hint: str, value: gast.expr) -> gast.Name:
        """Emit ``_hint = value`` and return the new name."""
        name = self.namer.fresh(hint)
        self.emit(assign(name, value))
        return load(name)

    # -- names ---------------------------------------------------------------------
    def rename(self, name: str) -> str:
        for scope in reversed(self.comprehension_scopes):
            if name in scope:
                return scope[name]
        return self.renames.get(name, name)

    def is_local(self, name: str) -> bool:
        return name in self.locals or any(name in s for s in self.comprehension_scopes)

    def is_global_chain(self, node: gast.expr) -> bool:
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and not self.is_local(node.id)

    def resolves_to(self, node: gast.expr, obj: object) -> bool:
        """True when ``node`` denotes ``obj`` itself (identity, not spelling)."""
        return self.is_global_chain(node) and self.resolver.resolve(node) is obj

    def builtin(self, name: str) -> str:
        """``name``, after checking that it means the builtin where the code runs."""
        if name in self.params:
            raise self.unsupported(
                f"a parameter named {name!r}",
                f"numbax lowers this statement with the builtin {name}(), which the "
                "parameter hides: rename the parameter",
            )
        source = self.source
        found = source.closure.get(name, source.globals.get(name, getattr(builtins, name)))
        if found is not getattr(builtins, name):
            raise self.unsupported(
                f"a global or enclosing name {name!r} that is not the builtin",
                f"numbax lowers this statement with the builtin {name}(): rename yours",
            )
        return name

    def bind_comprehension_names(self, target: gast.expr) -> None:
        """Register a comprehension's loop variables, renaming any that would clash."""
        scope = self.comprehension_scopes[-1]
        enclosing = self.comprehension_scopes[:-1]
        for name in sorted(mentioned(target)):
            if name in scope:
                continue
            clash = (
                name in self.free or name in _EMITTED_BUILTINS or any(name in s for s in enclosing)
            )
            scope[name] = self.namer.fresh(name) if clash else name
