"""Bake static argument values into a function's source.

A static argument is part of the cache key and becomes a constant the compiler can
specialize on (a loop bound, a shape, a flag). Values that Python can write as a
short literal are written into the source (``n = 3``), so the generated code says what
it was specialized for; any other hashable value is bound as a module global of the
generated module under the parameter's name, which Numba also treats as a constant.

A long tuple of numbers is bound as a read-only NumPy array when the function only
takes its length, reads single elements, iterates over it or hands it to a NumPy
function: those mean the same for both, and Numba compiles a 100,000-element tuple
constant for minutes but an array constant at once. Used any other way (sliced,
concatenated, compared) it stays a tuple.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from numbax.transform.walk import walk

_LITERAL_TYPES = (bool, int, float, complex, str, bytes, type(None))

LITERAL_LIMIT = 64
"""The most scalars a static value may hold to be written out in the source; a larger
one is bound by reference (and keyed by a hash of its content), so a 100,000-element
tuple costs what a small one does."""


def is_literal(value: Any) -> bool:
    """True when ``repr(value)`` is Python source that evaluates back to ``value``, short
    enough to write into the generated source."""
    return _literal_size(value) <= LITERAL_LIMIT


def _literal_size(value: Any) -> float:
    """How many scalars the literal of ``value`` holds (infinite: it has none)."""
    if type(value) in _LITERAL_TYPES:
        if isinstance(value, float) and value != value:  # nan has no literal
            return float("inf")
        return 1 if not isinstance(value, (str, bytes)) else 1 + len(value) // 64
    if type(value) is tuple:
        size = 0
        for item in value:
            size += _literal_size(item)
            if size > LITERAL_LIMIT:
                return float("inf")
        return size
    return float("inf")


def _literal_node(value: Any) -> gast.expr:
    if type(value) is tuple:
        return gast.Tuple([_literal_node(v) for v in value], gast.Load())
    if isinstance(value, (int, float, complex)) and not isinstance(value, bool) and value < 0:
        # `-3` parses as a unary minus; keep the tree the shape the parser would give.
        return gast.UnaryOp(gast.USub(), gast.Constant(-value, None))
    return gast.Constant(value, None)


def bake_static_arguments(
    fn: gast.FunctionDef, values: dict[str, Any]
) -> tuple[gast.FunctionDef, dict[str, Any]]:
    """Remove the static parameters from ``fn`` and define them as constants instead.

    Returns the rewritten function and the non-literal values the generated module must
    bind as globals.
    """
    if not values:
        return fn, {}
    args = fn.args
    kept, kept_defaults = [], []
    n_without_default = len(args.args) - len(args.defaults)
    for i, param in enumerate(args.args):
        if param.id in values:
            continue
        kept.append(param)
        if i >= n_without_default:
            kept_defaults.append(args.defaults[i - n_without_default])
    kwonly = [(p, d) for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    kwonly = [(p, d) for p, d in kwonly if p.id not in values]
    args.args, args.defaults = kept, kept_defaults
    args.kwonlyargs = [p for p, _ in kwonly]
    args.kw_defaults = [d for _, d in kwonly]

    assignments, bindings = [], {}
    for name, value in values.items():
        if is_literal(value):
            assign = gast.Assign(
                [gast.Name(name, gast.Store(), None, None)], _literal_node(value), None
            )
            assignments.append(assign)
        elif _numeric_tuple(value) and _used_as_sequence(fn, name):
            array = np.array(value)
            array.flags.writeable = False
            bindings[name] = array
        else:
            bindings[name] = value
    fn.body = assignments + fn.body
    return fn, bindings


def _numeric_tuple(value: Any) -> bool:
    kinds = {type(v) for v in value} if type(value) is tuple else set()
    return bool(value) and len(kinds) == 1 and kinds <= {int, float, bool}


def _used_as_sequence(fn: gast.FunctionDef, name: str) -> bool:
    """Whether every read of ``name`` in the normalized ``fn`` takes its length, one
    element (``name[i]``) or passes it to a NumPy function, and it is never rebound."""
    parents = {id(child): node for node in walk(fn) for child in gast.iter_child_nodes(node)}
    for node in walk(fn):
        if not (isinstance(node, gast.Name) and node.id == name):
            continue
        if not isinstance(node.ctx, gast.Load):
            return False
        parent = parents.get(id(node))
        if isinstance(parent, gast.Subscript) and parent.value is node:
            if isinstance(parent.slice, (gast.Slice, gast.Tuple)):
                return False
        elif isinstance(parent, gast.Call) and node in parent.args:
            if not (_is_len(parent.func) or _is_numpy_function(parent.func)):
                return False
        else:
            return False
    return True


def _is_len(func: gast.expr) -> bool:
    return isinstance(func, gast.Name) and func.id == "len"


def _is_numpy_function(func: gast.expr) -> bool:
    return (
        isinstance(func, gast.Attribute)
        and isinstance(func.value, gast.Name)
        and func.value.id in ("np", "numpy")
    )
