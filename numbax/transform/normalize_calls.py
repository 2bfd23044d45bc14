"""Calls to the user's own functions, bound to positional arguments.

The derivative of a helper ``h(x, a=2.0)`` is generated with every parameter of ``h``
followed by the tangents or cotangents (``vjp_h(x, a, ct)``), so the call site must pass
every parameter in order. Normalization binds a call's keywords and fills its omitted
defaults (when they are literals) here, once, which also spares the Numba lowering a
keyword call.
"""

from __future__ import annotations

import inspect
from typing import Any

import gast

_LITERALS = (bool, int, float, complex, str, type(None))


def positional_arguments(
    target: Any, args: list[gast.expr], keywords: list[gast.keyword]
) -> list[gast.expr] | None:
    """``args`` and ``keywords`` as one positional list for ``target``'s signature, or
    None to leave the call as written (``*args``, keyword-only parameters, a default
    that is not a literal, or arguments that do not bind: the call's own error
    then tells the user)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None
    if len(args) > len(params):
        return None
    by_name = {k.arg: k.value for k in keywords}
    if None in by_name:  # **mapping
        return None
    bound = list(args)
    for param in params[len(args) :]:
        if param.name in by_name and param.kind is not param.POSITIONAL_ONLY:
            bound.append(by_name.pop(param.name))
        elif param.default is not param.empty and type(param.default) in _LITERALS:
            bound.append(gast.Constant(param.default, None))
        else:
            return None
    return None if by_name else bound
