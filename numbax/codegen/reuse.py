"""When compiled code made for one function object may serve another: :func:`reuse_key`.

``nx.jit(f)`` written inside a loop or an objective (``jac=nx.jit(nx.grad(loss))`` in
a function SciPy calls) makes a new object each time; it should cost a dictionary
lookup, not a new transformation and compile. Compiled code depends on the function's
code and on the values its free names held when it was compiled (Numba freezes globals
and closure values into the machine code), so two function objects with the same code
whose closure cells, defaults and the globals their code reads hold the very same
objects compile to the same thing. The key compares those values by identity (and
holds them, so an identity is never reused by another object): rebinding a global or a
captured variable to another object gives another key, and so does setting an attribute
the code reads of a user's module (``consts.K = 5.0``: Numba freezes ``consts.K``).
What identity cannot see is a change inside a mutable object (an array written in
place, a dict item set anew), as with ``jax.jit``'s cache.

The functions a function calls compile with it, with their own globals frozen too, so
their globals are part of the key, recursively.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Hashable
from typing import Any

from numbax.codegen.fingerprint import in_library

__all__ = ["Same", "live_key", "reuse_key"]


class Same:
    """A key part equal to another only for the very same object (which it holds)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return type(other) is Same and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def __repr__(self) -> str:
        return f"Same({type(self.value).__name__} at {id(self.value):#x})"


_EMPTY_CELL = ("empty cell",)
_LIBRARIES = ("numpy", "numba", "scipy", "math", "builtins")
_read_names: dict[types.CodeType, tuple[str, ...]] = {}
_visiting = threading.local()


def reuse_key(value: Any) -> Hashable:
    """What compiled code made for ``value`` depends on, as a hashable key: equal keys
    mean the same compiled code serves both. An object numbax made (``grad(f)``,
    ``jit(f)``) says by ``__numbax_reuse_key__``."""
    own = getattr(type(value), "__numbax_reuse_key__", None)
    if own is not None:
        return own(value)
    if type(value) is types.FunctionType:
        return _function_key(value)
    if type(value) is types.MethodType:
        return ("method", reuse_key(value.__func__), Same(value.__self__))
    return Same(value)


def part(value: Any) -> Hashable:
    """``value`` itself when it is hashable, else it by identity (a key part for an
    option or an argument number)."""
    try:
        hash(value)
    except TypeError:
        return Same(value)
    return value


def _function_key(function: types.FunctionType) -> Hashable:
    visiting = _visiting.__dict__.setdefault("ids", set())
    if id(function) in visiting:  # a function calling itself: its code says enough
        return ("recursive", function.__code__)
    visiting.add(id(function))
    try:
        code = function.__code__
        names = _names(code)
        cells = tuple(_cell_key(cell, names) for cell in function.__closure__ or ())
        namespace = function.__globals__
        globals_ = tuple(
            (name, _value_key(namespace[name], names)) for name in names if name in namespace
        )
        defaults = tuple(map(Same, function.__defaults__ or ()))
        kwdefaults = tuple((k, Same(v)) for k, v in (function.__kwdefaults__ or {}).items())
        return (code, cells, Same(namespace), globals_, defaults, kwdefaults)
    finally:
        visiting.discard(id(function))


def _cell_key(cell: types.CellType, names: tuple[str, ...]) -> Hashable:
    try:
        return _value_key(cell.cell_contents, names)
    except ValueError:  # not assigned yet
        return _EMPTY_CELL


def _value_key(value: Any, names: tuple[str, ...] = ()) -> Hashable:
    """A free name's value: by identity, a user function (compiled along) by what it
    reads in turn, and a user's module with the attributes among ``names`` (those the
    code may read of it) by identity too."""
    if type(value) is types.FunctionType and not (value.__module__ or "").startswith(_LIBRARIES):
        return _function_key(value)
    if type(value) is types.ModuleType and not in_library(value.__name__):
        return _module_key(value, names)
    return Same(value)


def _module_key(module: types.ModuleType, names: tuple[str, ...]) -> Hashable:
    visiting = _visiting.__dict__.setdefault("ids", set())
    if id(module) in visiting:  # a module whose attribute is itself
        return Same(module)
    visiting.add(id(module))
    try:
        attributes = vars(module)
        read = tuple(
            (name, _value_key(attributes[name], names)) for name in names if name in attributes
        )
        return (Same(module), read)
    finally:
        visiting.discard(id(module))


def _names(code: types.CodeType) -> tuple[str, ...]:
    """The global names ``code`` and the functions defined in it may read."""
    names = _read_names.get(code)
    if names is None:
        found = dict.fromkeys(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found.update(dict.fromkeys(_names(const)))
        names = _read_names[code] = tuple(found)
    return names


def live_key(function: Any) -> Hashable:
    """When code generated for ``function`` that reads its free names as it runs (an
    un-jitted ``grad(f)``: Python's eager semantics) may serve another function object:
    the same code reading the very same closure cells and globals, with the same
    defaults. A lambda made anew in each call of an objective (``grad(lambda w: loss(w,
    data))``) with ``data`` a global shares its derivative; one closing over a local of
    the objective has new cells each call, and gets its own. Other callables are
    themselves (by equality and hash)."""
    if type(function) is not types.FunctionType or (function.__module__ or "").startswith(
        "numbax_generated_"
    ):
        return function
    return (
        "live",
        function.__code__,
        tuple(map(Same, function.__closure__ or ())),
        Same(function.__globals__),
        tuple(map(Same, function.__defaults__ or ())),
        tuple((k, Same(v)) for k, v in (function.__kwdefaults__ or {}).items()),
    )
