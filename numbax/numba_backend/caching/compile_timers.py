"""No per-compile timers while numbax compiles.

Numba times each compile for ``dispatcher.get_metadata(signature)["timers"]``:
``Dispatcher.compile`` installs two listeners, one on its compiler lock and one on LLVM's
lock, for the compile's duration. Every LLVM call takes that lock, and each time the event
goes to every listener installed; the compiles of one generated program nest (its
function types its loops, which type their helpers), so each LLVM call of a helper is
heard by the listeners of every compile above it. ``jit(grad)`` of the MLP of a dict
takes LLVM's lock 14,000 times across 36 compiles: 65,000 notifications.

numbax reads none of these timers. Within numbax's compiles (``compiling.py``, this
thread), ``event.install_timer`` installs nothing: the MLP's first call on an empty
cache takes about 0.07 s less (six alternating runs each way, in a fresh process:
median 2.89 s against 2.96, minimum 2.82 against 2.90). The events
themselves are still broadcast, to listeners registered for them (``numba:compile``
for numbax's compile log, the compile benchmark's own). A user's compile outside numbax
keeps Numba's timers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from numba.core import event

from numbax.numba_backend.caching.compiling import in_numbax_compile


def _install_timer(kind: str, callback: Callable[[float], Any]) -> Any:
    """``event.install_timer``: nothing to install within numbax's compiles."""
    if in_numbax_compile():
        return contextlib.nullcontext()
    return _numba_install_timer(kind, callback)


_numba_install_timer = event.install_timer
event.install_timer = _install_timer
