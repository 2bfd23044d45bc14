"""Long compiles are visible: Numba compiling a function numbax generated for longer
than ``numbax_compile_log_seconds`` prints one line to stderr when it finishes, naming
the user's function (``nx.config.update("numbax_compile_log", False)`` or
``NUMBAX_COMPILE_LOG=0`` silences it).

It listens to Numba's ``numba:compile`` events (a compile, not a load from the disk
cache), so calls that do not compile pay nothing. Compiles nest (a function's helpers
compile inside it): the outermost one is timed and named.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from numba.core import event

from numbax.configuration import config

DESCRIPTION = "__numbax_description__"
"""The attribute of a Numba dispatcher that says, for the log, what it compiles."""


def describe(dispatcher: Any, description: str) -> None:
    """Name ``dispatcher`` in the log: ``description`` is like ``jit of loss (fit.py,
    line 12)``."""
    setattr(dispatcher, DESCRIPTION, description)


class _CompileLog(event.Listener):
    """Times the outermost compile and reports it when it is long."""

    def __init__(self) -> None:
        self.depth = 0
        self.started = 0.0

    def on_start(self, ev: event.Event) -> None:
        if self.depth == 0:
            self.started = time.perf_counter()
        self.depth += 1

    def on_end(self, ev: event.Event) -> None:
        self.depth -= 1
        if self.depth or not config.numbax_compile_log:
            return
        elapsed = time.perf_counter() - self.started
        description = getattr(ev.data.get("dispatcher"), DESCRIPTION, None)
        if description is not None and elapsed >= config.numbax_compile_log_seconds:
            print(
                f"numbax: compiled {description} in {elapsed:.1f} s (the next calls with "
                "these argument types reuse it; NUMBAX_COMPILE_LOG=0 silences this)",
                file=sys.stderr,
                flush=True,
            )


event.register("numba:compile", _CompileLog())
