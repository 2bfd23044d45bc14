"""Registration of the runtime's helpers: one decorator, one table, one namespace.

A helper is a function that generated code calls as ``nxrt.<name>``. Registering it
(``@helper``) puts it both in the table that tells what the runtime offers (every
helper must have its derivative and batching rules: ``numbax.transform.rules`` checks
this table) and in the ``nxrt`` namespace generated code calls through. Nothing keeps
a separate list of names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from numbax.runtime import nxrt

F = TypeVar("F", bound=Callable[..., Any])

_HELPERS: dict[str, Callable[..., Any]] = {}


def helper(fn: F, name: str | None = None) -> F:
    """Register ``fn`` as the runtime helper ``nxrt.<name>`` (by default its own name);
    return it unchanged (its identity is what derivative rules and Numba overloads are
    keyed on). A function of another library may be a helper too (``scipy.special.psi``
    as ``nxrt.digamma``): its rules are then the library function's own."""
    name = name or fn.__name__
    publish(name, fn)
    _HELPERS[name] = fn
    return fn


def publish(name: str, value: Any) -> None:
    """Make ``value`` callable from generated code as ``nxrt.<name>``. Helpers are
    published by :func:`helper`; the jit pipeline publishes, the same way, the functions
    only compiled code calls (its replacements of NumPy functions)."""
    current = getattr(nxrt, name, None)
    if current is not None and current is not value:
        raise ValueError(f"nxrt.{name} is already {current!r}")
    setattr(nxrt, name, value)


def helpers() -> dict[str, Callable[..., Any]]:
    """Every registered helper by name (a copy), for the checks that walk them."""
    return dict(_HELPERS)
