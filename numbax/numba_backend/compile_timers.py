"""No per-compile timers while numbax compiles.

Numba times each compile for ``dispatcher.get_metadata(signature)["timers"]``:
``Dispatcher.compile`` installs two listeners, one on its compiler lock and one on LLVM's
lock, for the compile's duration. Every LLVM call takes that lock, and each time the event
goes to every listener installed; the compiles of one generated program nest (its
function types its loops, which type their helpers), so each LLVM call of a helper is
heard by the listeners of every compile above it. ``jit(grad)`` of the MLP of a dict
takes LLVM's lock 14,000 times across 36 compiles: 65,000 notifications.

numbax reads none of these timers. Within :func:`untimed` (numbax's compiles, this
thread), ``event.install_timer`` installs nothing: the MLP's first call on an empty cache
takes about 0.07 s less (six alternating runs each way, in a fresh process: median 2.89 s
against 2.96, minimum 2.82 against 2.90). The events
themselves are still broadcast, to listeners registered for them (``numba:compile``
for numbax's compile log, the compile benchmark's own). A user's compile outside numbax
keeps Numba's timers.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from numba.core import event

_state = threading.local()


@contextlib.contextmanager
def untimed() -> Iterator[None]:
    """Within this block (this thread), Numba's compiles install no timers."""
    previous = getattr(_state, "untimed", False)
    _state.untimed = True
    try:
        yield
    finally:
        _state.untimed = previous


def _install_timer(kind: str, callback: Callable[[float], Any]) -> Any:
    """``event.install_timer``: nothing to install within :func:`untimed`."""
    if getattr(_state, "untimed", False):
        return contextlib.nullcontext()
    return _numba_install_timer(kind, callback)


_numba_install_timer = event.install_timer
event.install_timer = _install_timer
