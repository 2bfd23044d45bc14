"""Calls to the user's own functions, bound to positional arguments.

The derivative of a helper ``h(x, a=2.0)`` is generated with every parameter of ``h``
followed by the tangents or cotangents (``vjp_h(x, a, ct)``), so the call site must pass
every parameter in order. Normalization binds a call's keywords and fills its omitted
defaults here, once (a literal as itself, another value by a name bound to it), which
also spares the Numba lowering a keyword call.

Keyword-only parameters are bound the same way, by name (or their default), in
signature order after the positional ones. ``h`` itself cannot take them so (and Numba
cannot bind keyword-only parameters at all), so the call is made to ``h``'s positional
view (:func:`positional_view`): ``def h(x, *, scale=1.0)`` read as ``def h(x, scale)``,
the same body with the same globals and closure. Binding against ``h``'s own signature
keeps what the call means: ``def h(x, a=1.0, *, b)`` called as ``h(x, b=y)`` is
``h_by_position(x, 1.0, y)``.
"""

from __future__ import annotations

import builtins
import inspect
import types
import weakref
from collections.abc import Callable
from typing import Any

import gast

from numbax.transform.nodes import clone
from numbax.transform.source import LiveNamespace, function_from_tree, read_function

_LITERALS = (bool, int, float, complex, str, type(None))

_BY_POSITION = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def positional_arguments(
    target: Any,
    args: list[gast.expr],
    keywords: list[gast.keyword],
    bind_value: Callable[[Any, str], str],
) -> list[gast.expr] | None:
    """``args`` and ``keywords`` as one positional list for ``target``'s signature
    (keyword-only parameters last, in their order), or None to leave the call as written
    (``*args``, ``**kwargs``, keyword-only parameters of anything but a Python function,
    ``jit`` of one or an object with ``__numbax_by_position__`` (``vmap``), or arguments
    that do not bind: the call's own error then tells the user).

    An omitted default is passed as the literal it is, or else as a name that
    ``bind_value(value, hint)`` binds to that very object (an array, a NumPy scalar):
    the callee's derivative takes every parameter, so a call cannot leave one out."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in _BY_POSITION]
    keyword_only = [p for p in params if p.kind is p.KEYWORD_ONLY]
    if len(positional) + len(keyword_only) != len(params):
        return None
    if keyword_only and not (
        keyword_only_function(target) or hasattr(target, "__numbax_by_position__")
    ):
        return None
    if len(args) > len(positional):
        return None
    by_name = {k.arg: k.value for k in keywords}
    if None in by_name:  # **mapping
        return None
    bound = list(args)
    for param in [*positional[len(args) :], *keyword_only]:
        if param.name in by_name and param.kind is not param.POSITIONAL_ONLY:
            bound.append(by_name.pop(param.name))
        elif param.default is not param.empty and type(param.default) in _LITERALS:
            bound.append(gast.Constant(param.default, None))
        elif param.default is not param.empty:
            name = bind_value(param.default, f"_default_{param.name}")
            bound.append(gast.Name(name, gast.Load(), None, None))
        else:
            return None
    return None if by_name else bound


def keyword_only_function(target: Any) -> types.FunctionType | None:
    """The Python function behind ``target`` (itself, or what ``jit`` wraps) when it has
    keyword-only parameters; None otherwise."""
    function = getattr(target, "fun", target) if hasattr(target, "nested_dispatcher") else target
    if not isinstance(function, types.FunctionType):
        return None
    return function if function.__code__.co_kwonlyargcount else None


_views: weakref.WeakKeyDictionary[types.FunctionType, types.FunctionType] = (
    weakref.WeakKeyDictionary()
)


def positional_view(function: types.FunctionType, transformation: str) -> types.FunctionType:
    """``function`` with its keyword-only parameters taken by position after the others
    and no defaults (every call of it passes every argument: :func:`positional_arguments`);
    the same body, reading the same globals and closure."""
    view = _views.get(function)
    if view is None:
        source = read_function(function, transformation)
        tree = clone(source.tree)
        tree.args.args = [*tree.args.args, *tree.args.kwonlyargs]
        tree.args.kwonlyargs, tree.args.kw_defaults, tree.args.defaults = [], [], []
        namespace = LiveNamespace({"__builtins__": builtins}, source.live)
        view = function_from_tree(tree, source, namespace, function.__qualname__)
        _views[function] = view
    return view
