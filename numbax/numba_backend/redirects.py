"""NumPy functions that compiled code calls through ``nxrt``: numbax's own versions.

Where Numba lacks a NumPy function, lacks some of its arguments, or compiles it with
other semantics (``math/elementary.py``, ``np/``: one module per family), the lowering
pass (``lower.py``) rewrites a call that resolves to the NumPy function, by identity,
into ``nxrt.<name>(...)``, a function of the same meaning with a Numba implementation.
Each such function declares what it replaces with ``@redirect(np.<function>)`` next to
its definition; that puts it in the runtime's namespace ``nxrt`` (only compiled code
calls it there) and in the table :func:`replacement_for` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from numbax.runtime import publish

F = TypeVar("F", bound=Callable[..., Any])

REDIRECTS: dict[int, str] = {}
"""``id`` of a redirected function → the name compiled code calls it by in ``nxrt``."""
_KEEP_ALIVE: list[Any] = []  # the ids stay valid while the objects live
_REPLACEMENTS: dict[str, Callable[..., Any]] = {}
_REPLACED: dict[int, Any] = {}  # id of a replacement -> the NumPy function it replaces


def redirect(replaced: Any, *, name: str | None = None) -> Callable[[F], F]:
    """Declare the decorated function the replacement, under jit, of ``replaced``
    (a NumPy function), called as ``nxrt.<name>`` (by default its own name)."""

    def register(fn: F) -> F:
        target = name or fn.__name__
        publish(target, fn)
        REDIRECTS[id(replaced)] = target
        _REPLACEMENTS[target] = fn
        _REPLACED[id(fn)] = replaced
        _KEEP_ALIVE.append(replaced)
        return fn

    return register


def lowering_helper(fn: F) -> F:
    """Publish ``fn`` as ``nxrt.<name>`` for the code the lowering pass writes around
    values (``weak``, ``keep_dtype``, ``elementwise``): no NumPy function is replaced."""
    publish(fn.__name__, fn)
    return fn


def replacement_for(func: Any) -> str | None:
    """The ``nxrt`` name of numbax's replacement for ``func``, if it has one."""
    return REDIRECTS.get(id(func))


def replacements() -> dict[str, Callable[..., Any]]:
    """Each ``nxrt`` name a ``@redirect`` declared, and its function (a copy), for the
    tests that walk them."""
    return dict(_REPLACEMENTS)


def replaced_by(fn: Any) -> Any:
    """The NumPy function ``fn`` replaces under jit (None if it replaces none)."""
    return _REPLACED.get(id(fn))
