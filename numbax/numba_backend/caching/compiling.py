"""Whether this thread is inside one of numbax's compiles.

Some of Numba's machinery is tuned for numbax's own compiles only: no per-compile timers
(``compile_timers.py``) and one scope per copy of an inlined function (``inlining.py``).
``disk_cache.attach`` enters :func:`numbax_compiling` around each compile of generated
code; a user's own Numba code compiled outside it keeps Numba's behavior.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_state = threading.local()


@contextlib.contextmanager
def numbax_compiling() -> Iterator[None]:
    """Within this block (this thread), Numba compiles for numbax."""
    previous = getattr(_state, "active", False)
    _state.active = True
    try:
        yield
    finally:
        _state.active = previous


def in_numbax_compile() -> bool:
    """Whether this thread is within :func:`numbax_compiling`."""
    return getattr(_state, "active", False)
