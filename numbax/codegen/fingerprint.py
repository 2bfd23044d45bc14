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
import types
from typing import Any

import numpy as np


def fingerprint(namespace: dict[str, Any]) -> list[tuple[str, str]]:
    """What the compiled code depends on besides its text: bound values that Numba
    freezes as constants (arrays by content), so a changed global never reuses stale
    machine code from the disk cache."""
    prints = []
    for name, value in sorted(namespace.items()):
        if isinstance(value, np.ndarray):
            digest = hashlib.sha1(np.ascontiguousarray(value).view(np.uint8)).hexdigest()
            prints.append((name, f"{value.dtype}{value.shape}{digest}"))
        elif hasattr(value, "py_func"):  # a compiled helper: its generated module's key
            prints.append((name, f"{value.py_func.__module__}.{value.py_func.__qualname__}"))
        elif isinstance(value, types.ModuleType):
            prints.append((name, value.__name__))
        elif callable(value):
            prints.append((name, callable_identity(value)))
        else:
            prints.append((name, repr(value)))
    return prints


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
    code = getattr(inspect.unwrap(value), "__code__", None)  # custom_jvp(f): f's
    if code is not None:
        text += f"@{code.co_filename}:{code.co_firstlineno}"
    return text
