"""The one way batching builds code: gast nodes, from builders or from a template.

A template is a Python expression parsed once (and cached) whose free names are holes:
``template("np.transpose(x, order)", x=node, order=literal((1, 0)))`` is a fresh tree
with each hole replaced by a copy of its node. Code is never spelled as text and parsed
back, so what the rules and the user wrote reaches the generated source as it was.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

import gast

from numbax.transform.normalize_nodes import clone, const, load
from numbax.transform.walk import walk

_POSITION = ("lineno", "end_lineno", "col_offset", "end_col_offset")


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
