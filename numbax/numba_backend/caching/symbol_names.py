"""Function names no other process gives, so that a library loaded from numbax's caches
never shares a symbol with a different function.

Numba names a compiled function by its module, qualified name, argument types and a
number counted from 1 in each process (``FunctionIdentity._unique_ids``). Two processes
that compile in a different order give one name to two different functions: the
``array_impl`` that ``elementary`` makes for ``exp`` in one process and for ``log`` in
another. Numba's own disk cache never meets this, as it loads only whole programs.
numbax's runtime cache (``runtime_cache``) loads callees that other processes compiled,
and LLVM keeps only one of two functions of the same name (Numba gives callees
``linkonce_odr`` linkage: one name, one definition). A caller then ran the other
process's function, silently: a test worker computed ``log`` where it asked for ``exp``.

Each process therefore starts the count at a random 62-bit offset. Two processes' names
meet only if their offsets fall within the number of functions they compile (about
10^5) of each other: a chance of about 10^-13 a pair.
"""

from __future__ import annotations

import itertools
import secrets

from numba.core.bytecode import FunctionIdentity

_OFFSET_BITS = 62


def start_numbering_at_random_offset() -> None:
    """Make this process's function numbers start at a random offset (idempotent)."""
    if getattr(FunctionIdentity, "_numbax_random_offset", False):
        return
    FunctionIdentity._unique_ids = itertools.count(secrets.randbits(_OFFSET_BITS))
    FunctionIdentity._numbax_random_offset = True
