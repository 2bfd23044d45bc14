"""The one way numbax builds code: gast nodes, from builders or from a template, for
every pass of ``numbax.transform`` (normalization, the derivatives, batching) and the
backend's passes after them.

gast constructors take every field positionally (``Name(id, ctx, annotation,
type_comment)``); the builders keep the code about *what* it emits. A template is a
Python expression parsed once (and cached) whose free names are holes:
``template("np.transpose(x, order)", x=node, order=literal((1, 0)))`` is a fresh tree
with each hole replaced by a copy of its node. Code is never spelled as text and parsed
back, so what the rules and the user wrote reaches the generated source as it was.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

import gast

from numbax.transform.walk import walk

_AST = gast.AST
_CONTEXT = gast.expr_context

_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers")
_POSITION = ("lineno", "end_lineno", "col_offset", "end_col_offset")


def load(name: str) -> gast.Name:
    return gast.Name(name, gast.Load(), None, None)


def store(name: str) -> gast.Name:
    return gast.Name(name, gast.Store(), None, None)


def const(value: Any) -> gast.Constant:
    return gast.Constant(value, None)


def assign(target: str | gast.expr, value: gast.expr) -> gast.Assign:
    """``target = value``; a string target is a plain variable."""
    node = store(target) if isinstance(target, str) else target
    return gast.Assign([node], value, None)


def call(func: gast.expr, args: list[gast.expr], keywords: list | None = None) -> gast.Call:
    return gast.Call(func, args, keywords or [])


def builtin_call(name: str, *args: gast.expr) -> gast.Call:
    return call(load(name), list(args))


def if_(test: str, body: list[gast.stmt], orelse: list[gast.stmt] | None = None) -> gast.If:
    return gast.If(load(test), body, orelse or [])


def range_arguments(node: gast.expr) -> list[gast.expr] | None:
    """The arguments of ``range(...)`` called with positional ones only (a loop's
    iterable), or None for anything else."""
    if (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Name)
        and node.func.id == "range"
        and not node.keywords
    ):
        return node.args
    return None


def is_atom(node: gast.AST) -> bool:
    return isinstance(node, (gast.Name, gast.Constant))


def at(stmt: gast.stmt, line: int) -> gast.stmt:
    """Give ``stmt`` and its expressions (not nested statements) the user line ``line``.

    Every piece lowered from one user statement shares that statement's line, so the
    emitter's ``# line N`` comments and error messages point at the user's code.
    """
    stmt.lineno = stmt.end_lineno = line
    stmt.col_offset = stmt.end_col_offset = 0
    for field in stmt._fields:
        if field in _BODY_FIELDS:
            continue
        value = getattr(stmt, field)
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, gast.AST):
                _locate_expression(child, line)
    return stmt


def _locate_expression(node: gast.AST, line: int) -> None:
    for sub in walk(node):
        if "lineno" in getattr(sub, "_attributes", ()):
            sub.lineno = sub.end_lineno = line
            sub.col_offset = sub.end_col_offset = 0


def never_completes(stmt: gast.stmt) -> bool:
    """True when control never reaches the statement after ``stmt``."""
    if isinstance(stmt, (gast.Return, gast.Raise, gast.Break, gast.Continue)):
        return True
    if isinstance(stmt, gast.If):
        return block_never_completes(stmt.body) and block_never_completes(stmt.orelse)
    if isinstance(stmt, gast.While):
        return _is_truthy_constant(stmt.test) and not own_breaks(stmt)
    return False


def block_never_completes(stmts: list[gast.stmt]) -> bool:
    return bool(stmts) and never_completes(stmts[-1])


def _is_truthy_constant(node: gast.AST) -> bool:
    return isinstance(node, gast.Constant) and bool(node.value)


def own_breaks(loop: gast.For | gast.While) -> list[gast.Break]:
    """The ``break`` statements that leave ``loop`` itself (not a loop nested in it)."""
    found: list[gast.Break] = []
    pending = list(loop.body)
    while pending:
        node = pending.pop()
        if isinstance(node, gast.Break):
            found.append(node)
        elif isinstance(node, gast.If):
            pending += node.body + node.orelse
    return found


def contains(stmts: list[gast.stmt] | gast.AST, kind: type) -> bool:
    nodes = stmts if isinstance(stmts, list) else [stmts]
    return any(isinstance(n, kind) for node in nodes for n in walk(node))


def clone(node: Any) -> Any:
    """A deep copy of a gast tree (or list of trees), several times faster than deepcopy.

    What numbax notes on a node besides its fields is copied with it: positions and
    provenance (immutable, shared), statements it carries (``numbax_count``, cloned).
    Expression contexts (``Load``, ``Store``...), which carry nothing, are shared."""
    kind = node.__class__
    if kind is list:
        return [clone(n) for n in node]
    if not isinstance(node, _AST) or isinstance(node, _CONTEXT):
        return node  # identifiers, literal values and contexts are immutable
    new = kind.__new__(kind)
    copied = new.__dict__
    for name, value in node.__dict__.items():
        copied[name] = clone(value) if value.__class__ is list or isinstance(value, _AST) else value
    return new


def literal(value: Any) -> gast.expr:
    """A constant, or a tuple or dict of constants (an axis or a pytree prefix of axes),
    as source spells it."""
    if isinstance(value, tuple):
        return gast.Tuple([literal(v) for v in value], gast.Load())
    if isinstance(value, dict):
        return gast.Dict([literal(k) for k in value], [literal(v) for v in value.values()])
    return const(value)


def dotted(path: str) -> gast.expr:
    """``np.sum`` from ``"np.sum"``: a name and its attributes."""
    first, *rest = path.split(".")
    node: gast.expr = load(first)
    for attr in rest:
        node = gast.Attribute(node, attr, gast.Load())
    return node


def item(value: gast.expr, key: Any) -> gast.Subscript:
    """``value[key]`` for a constant key."""
    return gast.Subscript(clone(value), const(key), gast.Load())


def function(name: str, params: list[str], body: list[gast.stmt]) -> gast.FunctionDef:
    """``def <name>(<params>): <body>``."""
    args = gast.arguments(
        [gast.Name(p, gast.Param(), None, None) for p in params], [], None, [], [], None, []
    )
    return gast.FunctionDef(name, args, body, [], None, None, [])


def names(trees: list[gast.AST], context: type = gast.Load) -> list[str]:
    """The names ``trees`` read (``context`` ``gast.Load``) or write (``gast.Store``), in
    order of first mention."""
    seen: dict[str, None] = {}
    for tree in trees:
        for node in walk(tree):
            if isinstance(node, gast.Name) and isinstance(node.ctx, context):
                seen[node.id] = None
    return list(seen)


def template(source: str, **holes: gast.expr) -> gast.expr:
    """The expression ``source`` with each name in ``holes`` replaced by a copy of its
    node (names not in ``holes`` stay names: ``np``, ``nxrt``, ``_size``)."""
    return _filled(_parsed(source), holes)


def expression(source: str) -> gast.expr:
    """An expression a batching rule wrote as source (its contract), as a tree."""
    return clone(_parsed(source))


def _filled(node: Any, holes: dict[str, gast.expr]) -> Any:
    """A copy of ``node`` with its holes filled (the nodes filled in are not searched)."""
    if isinstance(node, list):
        return [_filled(n, holes) for n in node]
    if not isinstance(node, gast.AST):
        return node
    if isinstance(node, gast.Name) and node.id in holes:
        return clone(holes[node.id])
    new = node.__class__.__new__(node.__class__)
    for name in node._fields:
        setattr(new, name, _filled(getattr(node, name, None), holes))
    for name in node._attributes:
        if hasattr(node, name):
            setattr(new, name, getattr(node, name))
    return new


@functools.lru_cache(maxsize=4096)
def _parsed(source: str) -> gast.expr:
    """``source`` parsed, without the positions of the text it was parsed from (the
    statement a tree lands in says which user line it batches)."""
    tree = gast.ast_to_gast(ast.parse(source, mode="eval")).body
    for node in walk(tree):
        for position in _POSITION:
            if hasattr(node, position):
                delattr(node, position)
    return tree
