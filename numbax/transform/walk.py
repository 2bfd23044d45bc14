"""Walks over syntax trees, faster than ``gast.walk`` and with the same answers.

A process whose machine code is cached on disk still runs the transformations in
Python to name its cache entries, before its first call can run: their time is what a
warm start waits for. They ask many questions of whole trees (which names a function
assigns, which a statement reads), and ``gast.walk`` (Python's ``ast.walk``) answers
each through three nested generators per node. :func:`walk` yields the same nodes in
the same order (breadth first, a node's children read just before the node is
yielded, so a caller that edits the tree as it goes sees what it saw before);
:func:`name_ids` and :func:`name_nodes`, the questions most asked, need no order and
no generator at all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

import gast

_AST = gast.AST
_NAME = gast.Name

#: Per node class, the fields that can hold a ``Name``: every field but the expression
#: context (``Load``, ``Store``...), a leaf that the name questions never need.
_NAME_BEARING_FIELDS: dict[type, tuple[str, ...]] = {}


def walk(node: gast.AST) -> Iterator[gast.AST]:
    """``node`` and every node below it, as ``gast.walk`` yields them."""
    todo = deque([node])
    take, put = todo.popleft, todo.append
    while todo:
        node = take()
        _put_children(node, node._fields, put)
        yield node


def name_ids(node: gast.AST, *contexts: type[gast.expr_context]) -> set[str]:
    """The identifiers of the ``Name`` nodes in ``node`` (``node`` included), only those
    whose context is one of ``contexts`` (``gast.Store``...) when some are given."""
    return {name.id for name in name_nodes(node, *contexts)}


def name_nodes(node: gast.AST, *contexts: type[gast.expr_context]) -> list[gast.Name]:
    """The ``Name`` nodes in ``node`` (``node`` included), in no particular order; only
    those whose context is one of ``contexts`` when some are given."""
    found = []
    todo = [node]
    take, put = todo.pop, todo.append
    fields_of = _NAME_BEARING_FIELDS.get
    while todo:
        node = take()
        kind = node.__class__
        if (kind is _NAME or isinstance(node, _NAME)) and (
            not contexts or isinstance(node.ctx, contexts)
        ):
            found.append(node)
        fields = fields_of(kind)
        if fields is None:
            fields = _NAME_BEARING_FIELDS[kind] = tuple(f for f in kind._fields if f != "ctx")
        _put_children(node, fields, put)
    return found


def _put_children(node: gast.AST, fields: tuple[str, ...], put: Callable) -> None:
    """Hand ``put`` the nodes held in ``node``'s ``fields``, in order."""
    for field in fields:
        value = getattr(node, field, None)
        if isinstance(value, _AST):
            put(value)
        elif value.__class__ is list:
            for item in value:
                if isinstance(item, _AST):
                    put(item)
