"""Host callbacks under ``vmap``: which ones JAX refuses to batch.

A ``pure_callback`` says how it batches by its ``vmap_method``; without one, batching
it is a ``NotImplementedError`` in JAX, and here too (numbax would otherwise call it
once per example, which the callback's author did not promise is right). An
``io_callback(..., ordered=True)`` cannot be batched (``ValueError``, as in JAX). The
body is searched, and the bodies of the user functions it calls, since numbax's loop
method batches a function without reading it.
"""

from __future__ import annotations

import types
from typing import Any

import gast

from numbax.errors import TransformError
from numbax.runtime.callbacks import io_callback, pure_callback
from numbax.transform.normalize import normalize
from numbax.transform.operations import is_transformable_function
from numbax.transform.resolve import Resolver, local_names
from numbax.transform.source import FunctionSource, display_name, read_function
from numbax.transform.walk import walk


def refuse_unbatchable_callbacks(source: FunctionSource) -> None:
    """Raise JAX's error for the first callback in ``source`` (or a function it calls)
    that ``vmap`` may not batch."""
    _search(source, set())


def _search(source: FunctionSource, seen: set[int]) -> None:
    seen.add(id(source.func))
    try:
        fn = normalize(source, "vmap")
    except TransformError:  # the loop calls what numbax cannot read: nothing to search
        return
    resolver = Resolver(source, local_names(fn))
    for node in walk(fn):
        if not isinstance(node, gast.Call):
            continue
        target = resolver.resolve(node.func)
        if target is pure_callback and not _given(node, "vmap_method"):
            raise NotImplementedError(
                f"vmap of {display_name(source.func)!r}: the pure_callback at "
                f"{source.filename}, line {getattr(node, 'lineno', '?')} has no vmap_method. "
                "As in JAX, say how it batches: vmap_method='sequential' (one call per "
                "example), 'expand_dims' or 'broadcast_all' (one call on the batch, the "
                "callback taking a leading batch axis)."
            )
        if target is io_callback and _given(node, "ordered", true=True):
            raise ValueError(
                f"Cannot vmap an ordered io_callback ({display_name(source.func)!r}, "
                f"{source.filename}, line {getattr(node, 'lineno', '?')}): pass ordered=False"
            )
        callee = getattr(target, "__numbax_primal__", None)
        callee = callee() if callee is not None else target
        if (
            isinstance(callee, types.FunctionType)
            and is_transformable_function(callee)
            and id(callee) not in seen
        ):
            try:
                callee_source = read_function(callee, "vmap")
            except TransformError:  # what numbax cannot read it cannot search either
                continue
            _search(callee_source, seen)


def _given(call: gast.Call, keyword: str, true: Any = None) -> bool:
    """Whether ``call`` passes ``keyword`` (not None; with ``true``: a value that is
    not a constant False)."""
    for k in call.keywords:
        if k.arg == keyword:
            if isinstance(k.value, gast.Constant):
                return k.value.value is not None and (true is None or bool(k.value.value))
            return True
    return False
