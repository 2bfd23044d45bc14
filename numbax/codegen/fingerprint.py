"""What a generated module depends on besides its text, for its cache key.

A generated module binds objects by name (the user's globals, compiled helpers, other
generated functions); Numba freezes some of them into machine code it caches on disk.
Two modules with the same text but different bindings must therefore get different
keys: :func:`fingerprint` describes the bindings, :func:`callable_identity` names a
function stably across processes.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
import types
from typing import Any

import numpy as np

from numbax.codegen.cache import portable_path


def fingerprint(namespace: dict[str, Any]) -> list[tuple[str, str]]:
    """What the compiled code depends on besides its text: bound values that Numba
    freezes as constants (arrays by content), so a changed global never reuses stale
    machine code from the disk cache."""
    prints = []
    for name, value in sorted(namespace.items()):
        if _holds_arrays(value):
            prints.append((name, _array_print(value)))
        elif hasattr(value, "py_func"):  # a compiled helper: its generated module's key
            prints.append((name, f"{value.py_func.__module__}.{value.py_func.__qualname__}"))
        elif isinstance(value, types.ModuleType):
            prints.append((name, value.__name__))
        elif callable(value):
            prints.append((name, callable_identity(value)))
        else:
            prints.append((name, describe_value(value)))
    return prints


SPELLED_OUT_LIMIT = 200
"""The longest ``repr`` a key or a generated header spells out; a longer value is named
by the hash of its ``repr`` (content, not identity: equal values share an entry)."""


def _holds_arrays(value: Any) -> bool:
    """An array, or a tuple or list holding one (a global list read as a tuple)."""
    if isinstance(value, (tuple, list)):
        return any(_holds_arrays(v) for v in value)
    return isinstance(value, np.ndarray)


def _array_print(value: Any) -> str:
    """Arrays by content (their repr elides the middle of a large one), the rest by
    :func:`describe_value`."""
    if isinstance(value, np.ndarray):
        digest = hashlib.sha1(np.ascontiguousarray(value).view(np.uint8)).hexdigest()
        return f"{value.dtype}{value.shape}{digest}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({', '.join(map(_array_print, value))})"
    return describe_value(value)


def describe_value(value: Any) -> str:
    """``repr(value)``, or, when that is long, its type, length and content hash."""
    text = repr(value)
    if len(text) <= SPELLED_OUT_LIMIT:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    size = f" of {len(value)} items" if hasattr(value, "__len__") else ""
    return f"<{type(value).__name__}{size}, sha256 {digest}>"


def callable_identity(value: Any) -> str:
    """A stable name for a function the generated code calls: its module, name and,
    for Python functions, where it is defined (two lambdas bound to one name differ).
    An object numbax made (``grad(f)``, ``vmap(f)``, ``custom_jvp(f)``...) names itself
    by ``__numbax_identity__``."""
    own = getattr(value, "__numbax_identity__", None)
    if own is not None:
        return own()
    module = getattr(value, "__module__", None) or type(value).__module__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    text = f"{module}.{name or repr(value)}"
    function = inspect.unwrap(value)  # custom_jvp(f): f's
    code = getattr(function, "__code__", None)
    if code is not None:
        text += f"@{portable_path(code.co_filename)}:{code.co_firstlineno}"
    return text + _closure_identity(function)


_describing = threading.local()
"""Per thread, the functions whose closure is being described (a nested function that
calls itself holds itself in a cell)."""


def _closure_identity(function: Any) -> str:
    """What a closure captured: two functions made by one factory share their code, name
    and line, and differ only here (``make(two)`` and ``make(three)``), so a module that
    binds one of them must not be taken for a module that binds the other."""
    cells = getattr(function, "__closure__", None)
    seen = _describing.__dict__.setdefault("ids", set())
    if not cells or id(function) in seen:
        return ""
    seen.add(id(function))
    try:
        captured = {}
        for var, cell in zip(function.__code__.co_freevars, cells, strict=True):
            try:
                captured[var] = cell.cell_contents
            except ValueError:  # an empty cell: not assigned yet
                captured[var] = None
        return "[" + ", ".join(f"{k}={v}" for k, v in fingerprint(captured)) + "]"
    finally:
        seen.discard(id(function))
