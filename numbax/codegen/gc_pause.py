"""Fewer full garbage collections while numbax generates and compiles code.

Generating a program and having Numba compile or load it allocates hundreds of
thousands of objects (syntax trees, Numba's IR and types, LLVM bindings). Python's
collector counts them, and every few thousand runs a full collection, which walks every
object the process holds: NumPy's, Numba's and numbax's modules included, a few hundred
thousand. In the first call of ``jit`` of the 4th derivative of ``tanh`` with its
compiled code cached (``python -m benchmarks.compile --only tanh4``, "warm"), four
full collections took 0.1 to 0.15 s of about 1.1 s.

Within :func:`fewer_full_collections`, full collections wait until the young ones have
run a hundred times more often than Python's default; the young generations are
collected as always, so short-lived cycles are still freed. The previous thresholds
come back when the outermost block (in any thread) ends.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

FULL_COLLECTION_FACTOR = 100
"""How many times rarer a full collection is within the block."""

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def fewer_full_collections() -> Iterator[None]:
    """Within this block, full collections are :data:`FULL_COLLECTION_FACTOR` times
    rarer (see the module's docstring)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            young, middle, full = _saved
            gc.set_threshold(young, middle, full * FULL_COLLECTION_FACTOR)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
