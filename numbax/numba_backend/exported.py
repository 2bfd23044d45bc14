"""The Numba versions of a runtime helper, for ``nx.export`` of jitted code.

numbax's vectorizable elementary functions (``math/elementary.py``: ``nxrt.exp``, ``nxrt.sin``...)
are built from LLVM intrinsics made per dtype, which have no source to copy: an
exported file calls the NumPy function each replaces (``np.exp``), which Numba compiles
itself (the same values within 2.5 ulp, without numbax's SIMD speed). And the file keeps
no disk cache of numbax's: what it compiles, it compiles in its own process.

Compiled code calls a runtime helper (``nxrt.unbroadcast``) through the Numba
implementation numbax registered on the helper's function object (``runtime/``:
``numba.extending.overload``). An exported file that compiles the same code must
register the same implementation: this module finds it in Numba's typing registry, so
that the file copies its source after the helper's.
"""

from __future__ import annotations

import types
from typing import Any

import numba
from numba.core import errors
from numba.core.caching import NullCache
from numba.core.registry import cpu_target
from numba.extending import overload

from numbax.codegen.standalone import Companion
from numbax.numba_backend import registered as runtime  # noqa: F401  (registers the Numba versions)
from numbax.numba_backend.caching import (
    disk_cache,
    runtime_cache,
)
from numbax.numba_backend.loops import (
    tapes,
    threads,
)
from numbax.numba_backend.math import elementary
from numbax.numba_backend.redirects import replaced_by

_OPTIONS = {
    "_jit_options": "jit_options",
    "_strict": "strict",
    "_inline": "inline",
    "_prefer_literal": "prefer_literal",
}
"""Where an ``overload`` template keeps each option of its registration."""


def numba_versions(value: Any) -> list[Companion]:
    """The functions that register how Numba compiles a call of ``value`` (numbax's
    ``@overload`` definitions for it); none for a function Numba compiles as written
    (``register_jitable``, whose decorator the copied source keeps)."""
    if not isinstance(value, types.FunctionType):
        return []
    context = cpu_target.typing_context
    context.refresh()
    try:
        typed = context.resolve_value_type(value)
    except (errors.TypingError, ValueError, KeyError):
        return []
    found = []
    for template in getattr(typed, "templates", ()):
        definition = getattr(template, "_overload_func", None)
        module = getattr(definition, "__module__", "") or ""
        if isinstance(definition, types.FunctionType) and module.startswith("numbax."):
            options = {
                keyword: _option(getattr(template, attribute))
                for attribute, keyword in _OPTIONS.items()
                if hasattr(template, attribute)
            }
            found.append(Companion(definition, overload, options))
    return found


def _option(value: Any) -> Any:
    """An option as ``overload`` takes it (``inline`` is kept as an InlineOptions)."""
    return getattr(value, "_inline", value)


def portable(value: Any) -> Any:
    """What an exported file calls in place of ``value``: NumPy's own function for one
    of numbax's elementary functions, no disk cache for numbax's, lists for loop tapes;
    None for any other value."""
    if getattr(value, "__module__", None) == elementary.__name__:
        return replaced_by(value)
    if value is disk_cache.cache_for or value is runtime_cache.cache_of:
        return no_disk_cache
    if value is runtime_cache.njit:  # numbax's runtime cache: not in an exported file
        return numba.njit
    if value is tapes.tape:  # no TapeArray there: lists of slots
        return tapes.list_tape
    if value is tapes.grown:
        return tapes.list_grown
    if value is threads.threads_allowed:  # an exported file's loops run on one thread
        return one_thread_only
    if value in (threads.launch, threads.chunk_runner, threads.threads_for):
        return not_in_exported_files
    return None


def one_thread_only() -> bool:
    """False: an exported file's loops do not use numbax's threads (``loops/threads.py``),
    which name its symbols in Numba's threading layer."""
    return False


def not_in_exported_files(*args: Any) -> None:
    """Stands for numbax's threads in an exported file, which does not use them."""


def no_disk_cache(function: Any) -> NullCache:
    """No disk cache for ``function`` (what an exported file's kernels get in place of
    numbax's trusted one and its runtime cache, whose directories it does not have)."""
    return NullCache()
