"""The passes that make a generated function one GPU thread's code.

The jit pipeline (``pipeline.py``) is shared by every target; what only a thread needs
-- NumPy's ufuncs on its scalars, its loop tapes in local memory, its arrays as loops
over local arrays -- lives here and is handed to the pipeline by the GPU target, so
that the CPU target never imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast

from numbax.numba_backend.cuda.local_arrays import local_arrays
from numbax.numba_backend.cuda.thread_shapes import ThreadArrays, known_shapes
from numbax.numba_backend.cuda.ufuncs import scalar_ufuncs
from numbax.numba_backend.passes.tapes import device_tapes


@dataclass(frozen=True)
class ThreadPasses:
    """One device function's passes; ``arrays``: the shapes of the arrays one example
    makes and returns, when it makes any."""

    arrays: ThreadArrays | None = None

    def before_resolving(self, fn: gast.FunctionDef) -> gast.FunctionDef:
        return fn if self.arrays is None else known_shapes(fn, self.arrays)

    def after_lowering(
        self, fn: gast.FunctionDef, resolve: Callable[[gast.expr], Any]
    ) -> gast.FunctionDef:
        fn = scalar_ufuncs(device_tapes(fn, resolve), resolve)
        return fn if self.arrays is None else local_arrays(fn, self.arrays, resolve)

    def held(self, fn: gast.FunctionDef) -> str | None:
        if self.arrays is None:
            return None
        shapes = self.arrays.describe([a.id for a in fn.args.args])
        return f"arrays in local memory, for one example's shapes: {shapes or 'its own'}"
