"""A validator for the core language (grammar in normalize/__init__.py's docstring).

Transformations consume and produce core-language trees; asserting the grammar at their
boundaries catches a pass that emits something the next pass does not handle, at the
statement that breaks it rather than deep inside a later pass.
"""

from __future__ import annotations

import gast

from numbax.transform.resolve import local_names

_CONSTANT_TYPES = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis))
_VALUE_CONTAINERS = (gast.Tuple, gast.List)


class CoreGrammarError(AssertionError):
    """A tree is not in the core language; the message names the statement and why."""


def check_core(fn: gast.FunctionDef) -> None:
    """Raise :class:`CoreGrammarError` unless ``fn`` is in the core language."""
    _Checker(fn).function()


class _Checker:
    def __init__(self, fn: gast.FunctionDef) -> None:
        self.fn = fn
        self.locals = local_names(fn)
        self.stmt: gast.stmt | None = None

    def fail(self, why: str) -> CoreGrammarError:
        where = ""
        if self.stmt is not None:
            text = gast.unparse(self.stmt).splitlines()[0]
            where = f" at line {getattr(self.stmt, 'lineno', '?')}: {text}"
        return CoreGrammarError(f"{self.fn.name}: {why}{where}")

    def function(self) -> None:
        body = self.fn.body
        if not body or not isinstance(body[-1], gast.Return):
            raise self.fail("the body must end with its only return")
        self.block(body[:-1], in_loop=False, may_be_empty=True)
        self.statement(body[-1], in_loop=False)
        if body[-1].value is None:
            raise self.fail("return needs a value (return None)")
        self.atom(body[-1].value)

    def block(self, stmts: list[gast.stmt], in_loop: bool, may_be_empty: bool = False) -> None:
        if not stmts and not may_be_empty:
            raise self.fail("empty block (use pass)")
        if any(isinstance(s, gast.Pass) for s in stmts) and len(stmts) != 1:
            raise self.fail("pass is only allowed as a block's only statement")
        for stmt in stmts:
            if isinstance(stmt, gast.Return):
                self.stmt = stmt
                raise self.fail("return before the end of the function")
            self.statement(stmt, in_loop)

    def statement(self, stmt: gast.stmt, in_loop: bool) -> None:
        self.stmt = stmt
        if not isinstance(getattr(stmt, "lineno", None), int):
            raise self.fail("statement without a line number")
        if isinstance(stmt, gast.Assign):
            self.assignment(stmt)
        elif isinstance(stmt, gast.Expr):
            self.expect(isinstance(stmt.value, gast.Call), "expression statements are calls")
            self.call(stmt.value)
        elif isinstance(stmt, gast.If):
            self.name(stmt.test)
            self.block(stmt.body, in_loop)
            if stmt.orelse:
                self.block(stmt.orelse, in_loop)
        elif isinstance(stmt, gast.For):
            self.loop_header(stmt)
            self.block(stmt.body, in_loop=True)
        elif isinstance(stmt, gast.While):
            self.name(stmt.test)
            self.expect(not stmt.orelse, "while loops have no else")
            self.block(stmt.body, in_loop=True)
        elif isinstance(stmt, gast.Raise):
            self.raise_(stmt)
        elif isinstance(stmt, (gast.Break, gast.Continue)):
            self.expect(in_loop, "break/continue outside a loop")
        elif not isinstance(stmt, (gast.Pass, gast.Return)):
            raise self.fail(f"{type(stmt).__name__} is not a core statement")

    def assignment(self, stmt: gast.Assign) -> None:
        self.expect(len(stmt.targets) == 1, "one target per assignment")
        target = stmt.targets[0]
        if isinstance(target, gast.Name):
            self.store(target)
            self.value(stmt.value)
        elif isinstance(target, gast.Tuple):
            self.expect(isinstance(target.ctx, gast.Store), "unpacking target must store")
            for element in target.elts:
                self.store(element)
            self.name(stmt.value)
        elif isinstance(target, gast.Subscript):
            self.expect(isinstance(target.ctx, gast.Store), "subscript target must store")
            self.name(target.value)
            self.index(target.slice)
            self.atom(stmt.value)
        else:
            raise self.fail(f"{type(target).__name__} is not a core assignment target")

    def loop_header(self, stmt: gast.For) -> None:
        self.store(stmt.target)
        it = stmt.iter
        is_range = (
            isinstance(it, gast.Call)
            and isinstance(it.func, gast.Name)
            and it.func.id == "range"
            and 1 <= len(it.args) <= 3
            and not it.keywords
        )
        self.expect(is_range, "for loops iterate over range(...)")
        for arg in it.args:
            self.atom(arg)
        self.expect(not stmt.orelse, "for loops have no else")

    def raise_(self, stmt: gast.Raise) -> None:
        self.expect(stmt.cause is None, "raise has no from clause")
        if isinstance(stmt.exc, gast.Call):
            self.call(stmt.exc)
        else:
            self.name(stmt.exc)

    # -- expressions ---------------------------------------------------------------
    def value(self, node: gast.expr) -> None:
        if isinstance(node, (gast.Name, gast.Constant)):
            self.atom(node)
        elif isinstance(node, gast.BinOp):
            self.atom(node.left)
            self.atom(node.right)
        elif isinstance(node, gast.UnaryOp):
            self.atom(node.operand)
        elif isinstance(node, gast.Compare):
            self.expect(len(node.ops) == 1, "comparisons are not chained")
            self.atom(node.left)
            self.atom(node.comparators[0])
        elif isinstance(node, gast.Call):
            self.call(node)
        elif isinstance(node, gast.Attribute):
            self.attribute(node)
        elif isinstance(node, gast.Subscript):
            self.name(node.value)
            self.index(node.slice)
        elif isinstance(node, _VALUE_CONTAINERS):
            for element in node.elts:
                self.atom(element)
        elif isinstance(node, gast.Dict):
            for key, item in zip(node.keys, node.values, strict=True):
                self.expect(key is not None, "no ** in dict displays")
                self.atom(key)
                self.atom(item)
        else:
            raise self.fail(f"{type(node).__name__} is not a core value")

    def call(self, node: gast.Call) -> None:
        func = node.func
        if not isinstance(func, gast.Name):
            self.attribute(func)
        for arg in node.args:
            self.atom(arg)
        for keyword in node.keywords:
            self.expect(keyword.arg is not None, "no ** in calls")
            self.atom(keyword.value)

    def attribute(self, node: gast.expr) -> None:
        """``local.attr`` (one level), or a chain rooted at a non-local name."""
        self.expect(isinstance(node, gast.Attribute), "callee is a name or an attribute")
        self.expect(isinstance(node.ctx, gast.Load), "attributes are only read")
        root = node.value
        while isinstance(root, gast.Attribute):
            root = root.value
        self.expect(isinstance(root, gast.Name), "attribute chains start at a name")
        if root.id in self.locals:
            self.expect(node.value is root, "attributes of locals are one level deep")
        self.name(root)

    def index(self, node: gast.expr) -> None:
        if isinstance(node, gast.Tuple):
            for element in node.elts:
                self.expect(not isinstance(element, gast.Tuple), "index tuples are flat")
                self.index(element)
        elif isinstance(node, gast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None:
                    self.atom(part)
        else:
            self.atom(node)

    def atom(self, node: gast.expr) -> None:
        if isinstance(node, gast.Constant):
            self.expect(
                isinstance(node.value, _CONSTANT_TYPES), f"constant {node.value!r} not allowed"
            )
        else:
            self.name(node)

    def name(self, node: gast.expr) -> None:
        self.expect(isinstance(node, gast.Name), f"expected a name, found {_kind(node)}")
        self.expect(isinstance(node.ctx, gast.Load), f"{node.id} should be read (Load)")

    def store(self, node: gast.expr) -> None:
        self.expect(isinstance(node, gast.Name), f"expected a name, found {_kind(node)}")
        self.expect(isinstance(node.ctx, gast.Store), f"{node.id} should be written (Store)")

    def expect(self, condition: bool, why: str) -> None:
        if not condition:
            raise self.fail(why)


def _kind(node: object) -> str:
    return type(node).__name__
