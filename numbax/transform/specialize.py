"""Bake static argument values into a function's source.

A static argument is part of the cache key and becomes a constant the compiler can
specialize on (a loop bound, a shape, a flag). Values that Python can write as a
literal are written into the source (``n = 3``), so the generated code says what it
was specialized for; any other hashable value is bound as a module global of the
generated module under the parameter's name, which Numba also treats as a constant.
"""

from __future__ import annotations

from typing import Any

import gast

_LITERAL_TYPES = (bool, int, float, complex, str, bytes, type(None))


def is_literal(value: Any) -> bool:
    """True when ``repr(value)`` is Python source that evaluates back to ``value``."""
    if type(value) in _LITERAL_TYPES:
        return not (isinstance(value, float) and value != value)  # nan has no literal
    if type(value) is tuple:
        return all(is_literal(v) for v in value)
    return False


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
        else:
            bindings[name] = value
    fn.body = assignments + fn.body
    return fn, bindings
