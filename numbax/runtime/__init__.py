"""The helpers generated code calls as ``nxrt.<name>``, as plain NumPy (no Numba import).

Generated code runs unchanged interpreted and under ``nx.jit``: interpreted, these
functions are what runs; compiled, ``numba_backend/runtime`` gives each its Numba
version, keyed on the same function object. Each module holds one family of helpers,
each registered by ``@helper`` (``registry.py``) into the namespace ``nxrt`` that
generated code is given; importing this package registers them all.
"""

from numbax.runtime import (  # noqa: F401  (importing registers the helpers)
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
    nxrt,
    reductions,
    seeds,
    selection,
    shapes,
    stores,
    tangents,
)
from numbax.runtime.registry import helper, helpers, publish

__all__ = ["helper", "helpers", "nxrt", "publish"]
