"""What a generated module depends on besides its text, for its cache key.

A generated module binds objects by name (the user's globals, compiled helpers, other
generated functions); Numba freezes what compiled code reads of them into the machine
code it caches on disk: a global number, an array's data, a module's attribute
(``consts.K``, ``range(consts.N)``), and everything a user's own Numba function
(``@numba.njit``, ``@numba.vectorize``) compiles along: its bytecode, closure and the
globals it reads. Two modules with the same text but other such values must therefore
get different keys: :func:`fingerprint` describes the bindings by content, and
:func:`callable_identity` names a function by where it is defined and by what its code
freezes, so an edited file or a re-run notebook cell never reuses stale machine code.
"""

from __future__ import annotations

import hashlib
import inspect
import marshal
import re
import threading
import types
from typing import Any

import numpy as np

from numbax.codegen.cache import portable_path
from numbax.codegen.load import GENERATED_PREFIX  # such a module's name hashes its text

LIBRARIES = frozenset(
    "numpy math cmath builtins operator functools itertools numbax numba scipy".split()
)
"""Packages whose modules and functions a key names alone: what they do is fixed by the
versions every key holds (``cache.cache_key``)."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def fingerprint(namespace: dict[str, Any], text: str = "") -> list[tuple[str, str]]:
    """What the compiled code of module ``text`` depends on besides its text: the values
    bound in its ``namespace`` that Numba freezes (arrays by content, the attributes the
    text reads of a user's module, a user's Numba functions by their code and globals),
    so a changed value never reuses stale machine code from the disk cache."""
    read = frozenset(_IDENTIFIER.findall(text))
    return [(name, frozen_print(value, read)) for name, value in sorted(namespace.items())]


def frozen_print(value: Any, read: frozenset[str] = frozenset()) -> str:
    """``value`` as compiled code that names ``read`` (attributes among them) freezes it."""
    if _holds_arrays(value):
        return _array_print(value)
    python_function = numba_python_function(value)
    if python_function is not None:
        if (python_function.__module__ or "").startswith(GENERATED_PREFIX):
            return f"{python_function.__module__}.{python_function.__qualname__}"
        options = getattr(value, "targetoptions", None)
        return f"numba {callable_identity(python_function)} {options or ''}"
    if isinstance(value, types.ModuleType):
        return _module_print(value, read)
    if callable(value):
        return callable_identity(value)
    return describe_value(value)


def numba_python_function(value: Any) -> types.FunctionType | None:
    """The Python function behind a Numba object (``njit``'s dispatcher, ``vectorize``'s
    and ``guvectorize``'s ufuncs), which compiled callers compile along; else None."""
    if isinstance(value, types.FunctionType):
        return None
    for holder in (
        value,
        getattr(value, "_dispatcher", None),
        getattr(value, "gufunc_builder", None),
    ):
        function = getattr(holder, "py_func", None)
        if isinstance(function, types.FunctionType):
            return function
    return None


def in_library(module: str) -> bool:
    """Whether ``module`` belongs to one of :data:`LIBRARIES`."""
    return module.partition(".")[0] in LIBRARIES


def _module_print(module: types.ModuleType, read: frozenset[str]) -> str:
    """A module by its name and, for a user's module, the attributes the code may read
    of it (Numba freezes ``consts.K`` into the machine code)."""
    if in_library(module.__name__):
        return module.__name__
    seen = _describing.__dict__.setdefault("ids", set())
    if id(module) in seen:
        return module.__name__
    seen.add(id(module))
    try:
        attributes = vars(module)
        named = sorted(read & attributes.keys())
        parts = ", ".join(f"{a}={frozen_print(attributes[a], read)}" for a in named)
        return f"{module.__name__}{{{parts}}}"
    finally:
        seen.discard(id(module))


SPELLED_OUT_LIMIT = 200
"""The longest ``repr`` a key or a generated header spells out; a longer value is named
by the hash of its ``repr`` (content, not identity: equal values share an entry)."""


def _holds_arrays(value: Any) -> bool:
    """An array, or a tuple or list holding one (a global list read as a tuple)."""
    if isinstance(value, (tuple, list)):
        return any(_holds_arrays(v) for v in value)
    return isinstance(value, np.ndarray)


def _array_print(value: Any) -> str:
    """Arrays by content (their repr elides the middle of a large one), the rest by
    :func:`describe_value`."""
    if isinstance(value, np.ndarray):
        digest = hashlib.sha1(np.ascontiguousarray(value).view(np.uint8)).hexdigest()
        return f"{value.dtype}{value.shape}{digest}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}({', '.join(map(_array_print, value))})"
    return describe_value(value)


def describe_value(value: Any) -> str:
    """``repr(value)``, or, when that is long, its type, length and content hash."""
    text = repr(value)
    if len(text) <= SPELLED_OUT_LIMIT:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    size = f" of {len(value)} items" if hasattr(value, "__len__") else ""
    return f"<{type(value).__name__}{size}, sha256 {digest}>"


def callable_identity(value: Any) -> str:
    """A stable name for a function the generated code calls: its module, name and,
    for Python functions, where it is defined (two lambdas bound to one name differ).
    An object numbax made (``grad(f)``, ``vmap(f)``, ``custom_jvp(f)``...) names itself
    by ``__numbax_identity__``."""
    own = getattr(value, "__numbax_identity__", None)
    if own is not None:
        return own()
    module = getattr(value, "__module__", None) or type(value).__module__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    text = f"{module}.{name or repr(value)}"
    function = inspect.unwrap(value)  # custom_jvp(f): f's
    code = getattr(function, "__code__", None)
    if code is not None:
        text += f"@{portable_path(code.co_filename)}:{code.co_firstlineno}"
    text += _closure_identity(function)
    if isinstance(function, types.FunctionType) and not _numbax_or_library(function):
        text += _frozen_state(function)
    return text


def _numbax_or_library(function: types.FunctionType) -> bool:
    module = function.__module__ or ""
    return module.startswith(GENERATED_PREFIX) or (
        in_library(module) and "<locals>" not in function.__qualname__
    )


def _frozen_state(function: types.FunctionType) -> str:
    """A hash of what compiling ``function`` freezes besides its closure: its code (an
    edited body at the same line), its defaults and the globals it reads, each as
    :func:`frozen_print` describes it (a helper it calls: the helper's, in turn)."""
    seen = _describing.__dict__.setdefault("ids", set())
    if id(function) in seen:  # it calls itself, directly or not
        return ""
    seen.add(id(function))
    try:
        code = function.__code__
        read = names_read(code)
        digest = hashlib.sha256(marshal.dumps(code))
        namespace = function.__globals__
        for name in sorted(read & namespace.keys()):
            digest.update(f"\0{name}={frozen_print(namespace[name], read)}".encode())
        digest.update(frozen_print(function.__defaults__).encode())
        digest.update(frozen_print(function.__kwdefaults__).encode())
        return "#" + digest.hexdigest()[:16]
    finally:
        seen.discard(id(function))


def names_read(code: types.CodeType) -> frozenset[str]:
    """The global and attribute names ``code`` and the code nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_read(const)
    return frozenset(names)


_describing = threading.local()
"""Per thread, the functions whose closure is being described (a nested function that
calls itself holds itself in a cell)."""


def _closure_identity(function: Any) -> str:
    """What a closure captured: two functions made by one factory share their code, name
    and line, and differ only here (``make(two)`` and ``make(three)``), so a module that
    binds one of them must not be taken for a module that binds the other."""
    cells = getattr(function, "__closure__", None)
    seen = _describing.__dict__.setdefault("ids", set())
    if not cells or id(function) in seen:
        return ""
    seen.add(id(function))
    try:
        captured = {}
        for var, cell in zip(function.__code__.co_freevars, cells, strict=True):
            try:
                captured[var] = cell.cell_contents
            except ValueError:  # an empty cell: not assigned yet
                captured[var] = None
        read = names_read(function.__code__)
        parts = (f"{k}={frozen_print(v, read)}" for k, v in sorted(captured.items()))
        return "[" + ", ".join(parts) + "]"
    finally:
        seen.discard(id(function))
