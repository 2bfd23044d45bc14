"""Results that are pytree arguments, or parts of them read by constant keys, traced
statically so that ``jit`` gives them back in the arguments' container types.

Compiled code holds every list as a tuple (``numba_backend/boundary.py``), so a
function that returns its list argument, or ``p[1]`` where ``p[1]`` is a list, would
come back from ``jit`` as a tuple where NumPy (and JAX) give the list. The container
types of the arguments are known at each call, so a result that is statically one of
them is rebuilt in their types: :func:`returned_arguments` says which part of the
result is which argument's part, for every ``return`` of the function alike.

A part is traced where the function returns a parameter it never rebinds, read by
constant subscripts (``p[1]``, ``params["w"]``) and attributes (``layer.W``), or a
tuple of such parts (``return p[1], x``). Anything else (a container built in the
function, a part read by a variable's index) is not traced: it comes back as compiled
code builds it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import gast

Template = tuple | None
"""``("argument", name, keys)``: argument ``name``'s part at ``keys`` (each ``("item",
key)`` or ``("attr", name)``); ``("tuple", templates)``: a tuple of such parts (None
for an item that is none); None: nothing traced."""


def returned_arguments(fn: gast.FunctionDef) -> Template:
    """Which parts of ``fn``'s result are (parts of) its arguments, the same for every
    ``return`` of ``fn`` (None: none is, or its returns differ there)."""
    params = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    rebound = {
        node.id
        for node in _own_nodes(fn)
        if isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load)
    }
    rebound |= {
        name
        for node in _own_nodes(fn)
        if isinstance(node, gast.Nonlocal | gast.Global)
        for name in node.names
    }
    known = params - rebound
    templates = [
        _template(node.value, known) if node.value is not None else None
        for node in _own_nodes(fn)
        if isinstance(node, gast.Return)
    ]
    return functools.reduce(_common, templates) if templates else None


def _common(a: Template, b: Template) -> Template:
    """What two returns' templates have in common: the parts both trace alike."""
    if a == b or a is None or b is None:
        return a if a == b else None
    if a[0] == b[0] == "tuple" and len(a[1]) == len(b[1]):
        items = tuple(_common(x, y) for x, y in zip(a[1], b[1], strict=True))
        return ("tuple", items) if any(item is not None for item in items) else None
    return None


def _template(node: gast.expr, known: set[str]) -> Template:
    if isinstance(node, gast.Tuple):
        items = tuple(_template(item, known) for item in node.elts)
        return ("tuple", items) if any(item is not None for item in items) else None
    keys: list[tuple[str, Any]] = []
    while True:
        if isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant):
            if not isinstance(node.slice.value, int | str) or isinstance(node.slice.value, bool):
                return None
            keys.append(("item", node.slice.value))
        elif isinstance(node, gast.Attribute):
            keys.append(("attr", node.attr))
        else:
            break
        node = node.value
    if isinstance(node, gast.Name) and node.id in known:
        return ("argument", node.id, tuple(reversed(keys)))
    return None


def _own_nodes(fn: gast.FunctionDef) -> Iterator[gast.AST]:
    """``fn``'s nodes, without those of the functions, lambdas and classes it defines
    (their returns and names are their own)."""
    stack: list[gast.AST] = [*fn.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, gast.FunctionDef | gast.AsyncFunctionDef | gast.Lambda | gast.ClassDef):
            continue
        stack.extend(gast.iter_child_nodes(node))
