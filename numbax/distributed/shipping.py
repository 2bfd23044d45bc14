"""What a distributed map sends to its workers: source text and its content key.

No function is pickled. The client writes the function to map as one module of source
(``codegen/standalone.py``, the machinery of ``nx.export``): the user's function and the
functions and constants it reads are copied as source, the generated code of a
transformation (``nx.grad(f)``) as its text; numbax's own objects (``nxrt``, its
elementary functions, ``numbax.lax``...) are imported from numbax on the worker, whose
version the worker plugin checked, so the worker compiles the same code the client
would, with numbax's own pipeline: results bit-identical to ``nx.jit(nx.vmap(f,
method="loop"))`` here. The key is a hash of the text (and of numbax's, Numba's and
NumPy's versions): a worker compiles a text once, and its generated modules, named by
content, meet the machine code another worker left in a shared cache.

The client keeps where each function of the text comes from, so that a line a worker
reports (an exception in the user's code) is named in the user's own file.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import types
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from numbax.api.export import _what_runs
from numbax.codegen.cache import cache_key
from numbax.codegen.load import GENERATED_PREFIX
from numbax.codegen.reuse import reuse_key
from numbax.codegen.standalone import ExportError, Standalone
from numbax.distributed.collectives import collective_in
from numbax.transform.provenance import Origin, resolve
from numbax.transform.source import display_name
from numbax.version import __version__


@dataclass(frozen=True)
class Shipped:
    """A function as workers receive it: ``text`` defines ``name``; ``key`` names it by
    content; the map's axes; ``label`` names the user's function in messages."""

    key: str
    name: str
    text: str
    in_axes: Any
    out_axes: Any
    label: str


class _Shipment(Standalone):
    """A standalone module that imports numbax's own objects instead of copying them,
    and remembers where each function it copies comes from."""

    def __init__(self) -> None:
        super().__init__(substitute=_what_runs)
        self.origins: dict[str, types.FunctionType] = {}  # name in the text -> copied from

    def add(
        self, value: Any, name: str, where: str, attributes: frozenset[str] | None = frozenset()
    ) -> str:
        imported = _numbax_import(value)
        if imported is None:
            return super().add(value, name, where, attributes)
        module, attribute = imported
        key = ("numbax", module, attribute)
        if key in self.named:
            return self.named[key]
        flat = self._claim(name, key, value)
        if attribute is None:
            self._import(f"import {module} as {flat}")
        else:
            self._import(
                f"from {module} import {attribute}" + ("" if flat == attribute else f" as {flat}")
            )
        return flat

    def add_text(self, text: str, namespace: Any, where: str) -> dict[str, str]:
        own = super().add_text(text, namespace, where)
        for name, flat in own.items():
            value = namespace.get(name)
            if isinstance(value, types.FunctionType):
                self.origins.setdefault(flat, value)
        return own

    def _add_function(
        self, fun: types.FunctionType, name: str, where: str, decorated: bool = True
    ) -> str:
        flat = super()._add_function(fun, name, where, decorated)
        self.origins.setdefault(flat, fun)
        return flat


def _numbax_import(value: Any) -> tuple[str, str | None] | None:
    """``(module, attribute)`` to import ``value`` from numbax (attribute None: the
    module itself); None for anything else, or what numbax made at run time."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
        if name.split(".")[0] == "numbax" and sys.modules.get(name) is value:
            return name, None
        return None
    module = getattr(value, "__module__", None)
    attribute = getattr(value, "__name__", None)
    if not isinstance(module, str) or not isinstance(attribute, str):
        return None
    if module.split(".")[0] != "numbax" or module.startswith(GENERATED_PREFIX):
        return None
    try:
        found = importlib.import_module(module)
    except ImportError:
        return None
    if getattr(found, attribute, None) is not value:
        return None
    return module, attribute


_recent: dict[Hashable, tuple[Shipped, _LineMap]] = {}
_RECENT = 32
"""Shipments kept, by what ``fun``'s code freezes (``codegen/reuse.py``: a global or
captured value rebound is another key), so that a map called again costs a lookup
instead of a walk of the source (tens of milliseconds)."""


def ship(fun: Any, in_axes: Any, out_axes: Any) -> tuple[Shipped, _LineMap]:
    """``fun`` as workers receive it, and how to name its lines in the user's files."""
    try:
        key: Hashable = (reuse_key(fun), repr(in_axes), repr(out_axes))
        hash(key)
    except Exception:  # noqa: BLE001 - what cannot be keyed is written each time
        key = None
    if key is not None and key in _recent:
        return _recent[key]
    made = _ship(fun, in_axes, out_axes)
    if key is not None:
        if len(_recent) >= _RECENT:
            _recent.pop(next(iter(_recent)))
        _recent[key] = made
    return made


def _ship(fun: Any, in_axes: Any, out_axes: Any) -> tuple[Shipped, _LineMap]:
    label = display_name(fun)
    found = collective_in(fun)
    if found is not None:  # a collective needs every example at once
        raise NotImplementedError(
            f"nx.distributed.map of {label}: nx.lax.{found} over the mapped axis needs every "
            "example at once, and the examples of a distributed map run on different "
            "workers. nx.pmap on one machine supports it (nx.pmap(f, axis_name=...)); on a "
            "cluster, map the part before the collective and reduce its results here."
        )
    file = _Shipment()
    try:
        root = _what_runs(fun) or fun
        name = file.add(root, getattr(root, "__name__", "mapped"), f"the mapped function {label}")
    except ExportError as error:
        raise ExportError(
            f"nx.distributed.map sends the source of {label} to the workers, never a "
            f"pickled function: {error}"
        ) from None
    header = (
        f"# {label}, as the workers of nx.distributed.map compile it (numbax {__version__})\n"
        "# Everything below is copied from the user's code or generated by numbax;\n"
        "# numbax's own functions are imported from it.\n"
    )
    text = file.text(header, [name])
    shipped = Shipped(cache_key("distributed", text), name, text, in_axes, out_axes, label)
    return shipped, _LineMap(text, file.origins)


class _LineMap:
    """A line of the shipped text → the user's line it comes from."""

    def __init__(self, text: str, origins: dict[str, types.FunctionType]) -> None:
        self.defs = {
            node.name: (node.lineno, node.end_lineno)
            for node in ast.parse(text).body
            if isinstance(node, ast.FunctionDef)
        }
        self.origins = origins

    def origin(self, line: int) -> Origin | None:
        for name, (first, last) in self.defs.items():
            fun = self.origins.get(name)
            if fun is None or not first <= line <= (last or first):
                continue
            own = _def_line(fun)
            if own is None:
                return None
            return resolve(fun.__code__.co_filename, own + line - first)
        return None


def _def_line(fun: types.FunctionType) -> int | None:
    """The line of ``fun``'s ``def`` in its file (below its decorators)."""
    try:
        lines, start = inspect.getsourcelines(fun)
    except (OSError, TypeError):
        return None
    for offset, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return start + offset
    return None
