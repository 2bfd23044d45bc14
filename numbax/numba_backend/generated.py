"""Numba implementations written as source while Numba types a call.

Where an implementation depends on the argument types (ranks, tuple structures, which
axes are reduced), numbax writes it as Python source for exactly those types and hands
the function to Numba, which compiles it. The source is registered with ``linecache``
under a name saying where it was generated, so Numba's messages and tracebacks can quote
the generated lines.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Callable, Mapping
from typing import Any

_COUNTER = itertools.count()


def define(source: str, scope: Mapping[str, Any], origin: str, name: str = "impl") -> Callable:
    """Exec generated ``source`` in a copy of ``scope`` and return its function ``name``.

    ``origin`` names what generated it (``"reductions sum"``) in the source's file name.
    """
    filename = f"<numbax.{origin} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    # A module Numba can import when it loads this function's machine code from disk.
    namespace = {"__name__": __name__, **scope}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (numbax's own source)
    return namespace[name]


class Code:
    """The source of one implementation ``impl``, built line by line, then defined."""

    def __init__(self, header: str, scope: Mapping[str, Any], origin: str, **names: Any):
        self.lines = [header]
        self.depth = 1
        self.scope = scope
        self.names = names  # more names the source calls, added to as it is built
        self.origin = origin

    def __call__(self, *lines: str) -> None:
        """Append ``lines`` at the current depth (``self.depth`` levels of indentation)."""
        self.lines += ["    " * self.depth + line for line in lines]

    def compile(self, label: str) -> Callable:
        """The function ``impl`` the lines define, its source named by ``label``."""
        source = "\n".join(self.lines) + "\n"
        return define(source, {**self.scope, **self.names}, f"{self.origin} {label}")
