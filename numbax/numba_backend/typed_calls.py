"""Functions whose compiled implementation is chosen when Numba types a call to them.

``vmap`` generates its batched code for the ranks of its arguments, which compiled code
only knows once Numba has typed the call: such a function is a stub that Numba
overloads, and the overload asks its owner for the compiled function to call for these
argument types. Everything that calls it is compiled per process (see
:func:`numbax.numba_backend.cpu.typed_per_process`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
from numba.core import types
from numba.extending import overload

from numbax.numba_backend.caching import disk_cache
from numbax.numba_backend.cpu import DEFAULT_NUMBA_OPTIONS, typed_per_process
from numbax.numba_backend.generated import define

PRANGE = numba.prange
"""The parallel range a generated loop names ``prange`` (a ``range`` in Python)."""


def rank_of_type(numba_type: Any) -> Any:
    """The rank of an argument Numba typed, as the transformation's ``rank_of`` gives it
    for a value: an array's ndim, 0 for a number, a tuple of its elements' for a tuple,
    None for anything else."""
    if isinstance(numba_type, types.Array):
        return numba_type.ndim
    if isinstance(numba_type, (types.Number, types.Boolean)):
        return 0
    if isinstance(numba_type, types.BaseTuple):
        return tuple(rank_of_type(t) for t in numba_type.types)
    return None


def typed_per_call(
    name: str,
    params: list[str],
    target: Callable[[tuple], Callable],
    identity: str | None = None,
) -> Callable:
    """A function ``name(<params>)`` that compiled code can call: for each new tuple of
    argument types, ``target(types)`` gives the compiled function the call runs.

    ``identity`` names, stably across processes and by content, everything ``target``
    may give (for every argument types): callers of the function are then kept in the
    disk cache under keys that include it. Without one, its callers are compiled in
    every process (see :func:`numbax.numba_backend.cpu.typed_per_process`)."""
    signature = ", ".join(params)
    # a stub and its typing function with the parameters' names
    stub = define(
        f"def {name}({signature}):\n    raise RuntimeError('called by compiled code only')\n",
        {},
        f"typed call {name}",
        name,
    )
    forwarding = {"forwarding": lambda types: _forwarding(params, target(types))}
    typing = define(
        f"def typing({signature}):\n    return forwarding(({signature},))\n",
        forwarding,
        f"typed call {name} typing",
        "typing",
    )
    overload(stub)(typing)
    if identity is None:
        stub.__numbax_typed_per_process__ = True  # see cpu.typed_per_process
    else:
        stub.__numbax_identity__ = lambda: identity  # its callers' cache key
    return stub


def _forwarding(params: list[str], target: Callable) -> Callable:
    """``def implementation(<params>): return target(<params>)``, which Numba compiles
    as the overload's implementation."""
    signature = ", ".join(params)
    source = f"def implementation({signature}):\n    return target({signature})\n"
    return define(source, {"target": target}, "typed call forwarding", "implementation")


def compiled_calling(function: Callable, options: dict[str, Any], callees: list[Any]) -> Any:
    """``function`` (generated Python that Numba compiles as it is) compiled with these
    options; kept in Numba's disk cache unless a callee is typed per process."""
    njit_options = {**DEFAULT_NUMBA_OPTIONS, **options}
    per_process = typed_per_process(callees)
    cached = njit_options.pop("cache", True) and not per_process
    dispatcher = numba.njit(**njit_options)(function)
    disk_cache.attach(dispatcher, cached)
    if per_process:
        dispatcher.__numbax_typed_per_process__ = True
    return dispatcher
