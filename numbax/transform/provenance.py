"""Where each generated statement comes from: the user's file and line, and whether it
is the adjoint of that line.

Generated code is read by users, so each block of it is commented with the user's own
line (``# line 7: ...``, ``# adjoint of line 7: ...``). Statements carry that as an
:class:`Origin` in their ``numbax_origin`` attribute, which ``codegen/emit.py`` reads:

* ``normalize`` gives every statement of the function it reads its origin
  (:func:`annotate`);
* the transformations give each statement they make the line (``lineno``) of the
  statement it comes from, and reverse mode marks those of its adjoint sweep
  (:func:`mark_adjoint`); the cleanup pass that ends each transformation annotates the
  result again, which gives the new statements their origin;
* a transformation of generated code (``grad(grad(f))``, ``jit(vmap(grad(f)))``) reads a
  module in the cache, whose lines are not the user's: emitting a module records the
  origin of each of its lines (:func:`record_module`), and :func:`resolve` maps a line
  of it back to the user's — through any number of compositions.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from dataclasses import dataclass, replace

import gast

from numbax.transform.analysis.dataflow import statements

ORIGIN = "numbax_origin"
"""The attribute of a gast statement holding its :class:`Origin`."""

ADJOINT = "numbax_adjoint"
"""The attribute reverse mode sets (True) on the statements of its adjoint sweep."""

RERUN = "numbax_rerun"
"""The attribute reverse mode sets (True) on the statements of a forward sweep that runs
the user's lines a second time (a helper's VJP: its caller ran them before)."""


@dataclass(frozen=True)
class Origin:
    """A user's line: ``filename`` and ``line``; ``adjoint`` when the statement computes
    that line's adjoint rather than the line itself."""

    filename: str
    line: int
    adjoint: bool = False

    @property
    def text(self) -> str:
        """The user's source line (stripped), or ``""`` where it cannot be read."""
        return linecache.getline(self.filename, self.line).strip()

    @property
    def label(self) -> str:
        return f"adjoint of line {self.line}" if self.adjoint else f"line {self.line}"


def origin_of(node: object) -> Origin | None:
    """The origin a statement (or function definition) was annotated with, if any."""
    return getattr(node, ORIGIN, None)


def mark_adjoint(stmt: gast.stmt) -> None:
    """Record that ``stmt`` belongs to an adjoint sweep."""
    setattr(stmt, ADJOINT, True)


def mark_rerun(stmt: gast.stmt) -> None:
    """Record that ``stmt`` runs a user's line a second time, with the same values."""
    setattr(stmt, RERUN, True)


def reruns(stmt: gast.stmt) -> bool:
    """Whether ``stmt`` was marked by :func:`mark_rerun`."""
    return getattr(stmt, RERUN, False)


_modules: dict[str, dict[int, Origin]] = {}
"""The text of each module numbax generated → the origin of each of its lines."""


def record_module(text: str, origins: dict[int, Origin]) -> None:
    """Remember the origin of the lines of a generated module whose text is ``text``."""
    if origins:
        _modules[text] = dict(origins)


def _origins_in(filename: str) -> dict[int, Origin] | None:
    """The recorded origins of a generated file's lines (None for a user's file)."""
    if not _modules:
        return None
    return _modules.get("".join(linecache.getlines(filename)))


def resolve(filename: str, line: int) -> Origin:
    """The user's line behind line ``line`` of ``filename``: itself for a user's file;
    for a module numbax generated, the origin recorded for that line (or for the nearest
    line above it with one: a statement spanning several lines)."""
    return lines_of(filename)(line)


def lines_of(filename: str) -> Callable[[int], Origin]:
    """:func:`resolve` for the lines of one file, which reads the file once."""
    origins = _origins_in(filename)

    def origin(line: int) -> Origin:
        if origins:
            for at in range(line, 0, -1):
                if at in origins:
                    return origins[at]
        return Origin(filename, line)

    return origin


def annotate(fn: gast.FunctionDef, filename: str) -> None:
    """Give ``fn`` and each of its statements that has a line (``lineno``, a line of
    ``filename``) the user's origin of that line; a statement marked adjoint (or one
    that was an adjoint already, in generated code) is the adjoint of its line."""
    origin_of_line = lines_of(filename)
    for node in [fn, *statements(fn.body)]:
        line = getattr(node, "lineno", None)
        if line is None:
            continue
        origin = origin_of_line(line)
        if getattr(node, ADJOINT, False) and not origin.adjoint:
            origin = replace(origin, adjoint=True)
        setattr(node, ORIGIN, origin)
