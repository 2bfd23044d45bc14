"""Numba versions of the runtime helpers (``numbax/runtime``), one module per family.

Each registers, on the runtime's own function object, how Numba compiles a call to it:
``numba.extending.overload`` where the implementation depends on the argument types,
``register_jitable`` where the plain Python compiles as it is. The function objects are
not replaced, so derivative rules (matched by identity) and generated code see the same
ones interpreted and compiled. Importing this package registers them all; the jit
pipeline does so (``numba_backend/registered.py``) before compiling anything.
"""

from numbax.numba_backend.runtime import (  # noqa: F401  (importing registers them)
    batching,
    broadcasting,
    callbacks,
    collectives,
    elementwise,
    fft,
    fusion,
    gathers,
    jacobians,
    linalg,
    reductions,
    seeds,
    selection,
    shapes,
    stores,
    tangents,
)
