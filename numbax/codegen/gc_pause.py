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

What blocks of at least :data:`SETTLE_AFTER` seconds together (a compile, or the loads
of a large program's cached machine code; not the load of a small function's) leave
behind is settled at the end of the last: one collection frees the cycles the compile
dropped, and what survives (Numba's typing and target contexts, the compiled code,
numbax's generated modules: 120,000 to 200,000 objects after the first compile) is
frozen (``gc.freeze``), so the full collections of the user's loop that follows no
longer walk it. Without this, the first full collection after a cold ``jit(grad(f))`` of
the MLP benchmark paused the loop for 0.15 to 0.43 s (5 ms steps). That collection walks
only what the process made since the last freeze: the whole heap after the first
compile, then about what each compile made. So that a cycle the program drops after a
compile froze it is freed after all, a compile at least :data:`THAW_AFTER` seconds after
the last thaw unfreezes everything first and collects it all (0.1 to 0.4 s, inside a
compile that takes seconds, never in the loop). That collection walks the whole heap, so
it grows with what the process compiled: in a process that compiled the rule table's 300
programs it took 0.85 s, every 30 s of compiling. So the next thaw also waits
:data:`THAW_COST_FACTOR` times what the last one took: about 1% of the process's time
at most, however large its heap. Nothing is frozen while the collector is disabled
(``gc.disable()``).
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterator

FULL_COLLECTION_FACTOR = 100
"""How many times rarer a full collection is within the block."""

SETTLE_AFTER = 0.25
"""Seconds that outermost blocks take together since the last settling for the end of
one to settle: the collection then costs a fraction of them (0.05 to 0.3 s), never the
whole of a quick load's."""

THAW_AFTER = 30.0
"""Seconds after which the next settling unfreezes everything before it collects."""

THAW_COST_FACTOR = 100.0
"""How many times the last thaw's seconds the next one waits at least."""

_last_thaw = -float("inf")
_last_thaw_seconds = 0.0
_started = 0.0  # when the outermost block began
_unsettled = 0.0  # seconds in outermost blocks since the last settling

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def fewer_full_collections(settling: bool = True) -> Iterator[None]:
    """Within this block, full collections are :data:`FULL_COLLECTION_FACTOR` times
    rarer; an outermost block that is ``settling`` adds its time to what is not settled
    yet, and settles at its end when that is due (see the module's docstring). Importing
    Numba is not: it leaves modules, not garbage, and the first compile settles them with
    its own objects."""
    global _depth, _saved, _started, _unsettled
    with _lock:
        if _depth == 0:
            _started = time.monotonic()
            _saved = gc.get_threshold()
            young, middle, full = _saved
            gc.set_threshold(young, middle, full * FULL_COLLECTION_FACTOR)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            outermost = _depth == 0
            if outermost and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
            due = False
            if outermost and settling:
                _unsettled += time.monotonic() - _started
                due = _unsettled >= SETTLE_AFTER
                _unsettled = 0.0 if due else _unsettled
        if due:
            settle()


def settle() -> None:
    """Free the cycles made since the last freeze and freeze what survives (see the
    module's docstring)."""
    global _last_thaw, _last_thaw_seconds
    if not gc.isenabled():
        return
    now = time.monotonic()
    if now - _last_thaw >= max(THAW_AFTER, THAW_COST_FACTOR * _last_thaw_seconds):
        gc.unfreeze()
        gc.collect()
        _last_thaw = time.monotonic()
        _last_thaw_seconds = _last_thaw - now
    else:
        gc.collect()
    gc.freeze()
