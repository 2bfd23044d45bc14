"""numbax's runtime compiled once, not once per process: Numba's disk cache for numbax's
own implementations, in numbax's trusted cache.

Generated code calls numbax's helpers (``nxrt.sum``, the fused-loop drivers, the
derivative helpers), which Numba types and compiles for each new combination of argument
types. Numba keeps that work in memory only, so every new process paid it again before
a user's function could run: about 2.5 s of the 3 s a one-line ``jit(f)`` took, and 11
of the 15 s of an MLP's ``jit(grad)``. Here each implementation numbax hands Numba (its
overloads, ``register_jitable`` helpers, kernels, and the functions it writes while Numba
types a call) is saved to ``<cache>/runtime`` the first time it compiles and loaded from
there by later processes, with the same checks as generated code (``disk_cache``:
owner, mode, checksum, entry). An entry the user's cache lacks is looked for in the
installed runtime (``python -m numbax precompile``; ``codegen/installed_runtime.py``),
read in place, so a user's first program does not compile the common helpers either.

What makes an entry valid. Numba's index keys an entry by signature and bytecode; all
else that decides the machine code is put into the entry's name or key here:

- the hash of numbax's whole source, Numba's and NumPy's versions (the index's stamp:
  a changed helper anywhere makes every entry stale);
- the Numba options the function compiles with, and Numba's process-wide settings that
  change all code (``NUMBA_BOUNDSCHECK``, ``NUMBA_OPT``...: ``disk_cache.CODE_SETTINGS``);
- for a function numbax wrote at run time (``generated.define``), its source text and
  a description of every global it reads;
- the values its closure captured, described the same way.

A value is described by what it is, so that two processes agree: numbers, strings,
tuples, arrays by content, classes and functions by where they are defined, Numba types
by their key. A value with no such description (an arbitrary object, a function of the
user's) leaves the function uncached: it compiles in every process, as it did before.
A signature is saved only when a new process can rebuild its types (no class made at
run time, such as the type of one program's dict of parameters).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import linecache
import re
import types as pytypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.core.caching import CompileResultCacheImpl, NullCache, _CacheLocator
from numba.core.compiler import Flags
from numba.core.decorators import jit as numba_cpu_jit
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic
from numba.core.targetconfig import ConfigStack
from numba.core.typing.templates import _OverloadFunctionTemplate
from numba.np.ufunc.dufunc import DUFunc

from numbax.codegen.cache import RUNTIME_SUBDIR, generated_dir
from numbax.codegen.installed_runtime import runtime_stamp, usable_installed_runtime
from numbax.codegen.load import GENERATED_PREFIX
from numbax.codegen.locks import entry_lock
from numbax.codegen.trust import ensure_private_directory, installed_problem
from numbax.numba_backend.caching.disk_cache import (
    TrustedCache,
    _CheckedFiles,
    code_settings,
    reduce_without_annotation,
)

_LIBRARIES = (Path(__file__).resolve().parents[2], Path(numba.__file__).resolve().parent)
"""numbax's and Numba's source: the cache's stamp holds numbax's hash and Numba's version."""
_GENERATED_FILE = "<numbax."  # how generated.define names the source it executes
_MARK = "__numbax_runtime__"


class _Undescribed(Exception):
    """A value two processes cannot be shown to agree on: its function stays uncached."""


# ---------------------------------------------------------------------------------------
# Describing values the same way in every process.
# ---------------------------------------------------------------------------------------


def describe(value: Any) -> str:
    """A text that is equal in two processes only for values that compile the same.

    Raises :class:`_Undescribed` for a value with no such text.
    """
    return _describe(value, set())


def _describe(value: Any, seen: set[int]) -> str:
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, (np.generic, np.dtype)):
        return f"np:{type(value).__name__}:{value!r}"
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"ndarray:{value.dtype.str}:{value.shape}:{digest}"
    if isinstance(value, (tuple, list, frozenset, set)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        inner = ",".join(_describe(item, seen) for item in items)
        return f"{type(value).__name__}({inner})"
    if isinstance(value, dict):
        inner = ",".join(
            f"{_describe(k, seen)}={_describe(v, seen)}"
            for k, v in sorted(value.items(), key=lambda item: repr(item[0]))
        )
        return f"dict({inner})"
    if isinstance(value, types.Type):
        return f"nbtype:{_named(type(value))}:{_describe(value.key, seen)}"
    if isinstance(value, pytypes.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, type):
        return f"class:{_named(value)}"
    if isinstance(value, Dispatcher):
        options = _describe(sorted(value.targetoptions.items()), seen)
        return f"dispatcher:{_describe(value.py_func, seen)}:{options}"
    if isinstance(value, DUFunc):
        kernel = value._dispatcher  # the scalar function and how it compiles
        options = _describe(sorted(kernel.targetoptions.items()), seen)
        return f"dufunc:{_describe(kernel.py_func, seen)}:{options}:{value.identity!r}"
    if isinstance(value, pytypes.FunctionType):
        return _describe_function(value, seen)
    if isinstance(value, _Intrinsic):  # what it compiles to is its definition's code
        return f"intrinsic:{_describe_function(value._defn, seen)}"
    description = getattr(value, "__numbax_description__", None)
    if description is not None:  # made by a numbax factory from values described here
        return f"made:{_describe(description, seen)}"
    if isinstance(value, (pytypes.BuiltinFunctionType, np.ufunc)):
        return f"builtin:{_named(value)}"
    raise _Undescribed(f"{type(value).__qualname__} object")


def _named(value: Any) -> str:
    """``module.qualname`` of a class or builtin that a new process finds by that name."""
    module = getattr(value, "__module__", None) or "builtins"
    qualname = getattr(value, "__qualname__", getattr(value, "__name__", ""))
    if isinstance(value, np.ufunc):
        module, qualname = "numpy", value.__name__
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as err:
        raise _Undescribed(f"{module}.{qualname} cannot be found by name") from err
    if found is not value:
        raise _Undescribed(f"{module}.{qualname} names another object")
    return f"{module}.{qualname}"


def _describe_function(fn: pytypes.FunctionType, seen: set[int]) -> str:
    """A function of numbax's or Numba's source by where it is (the stamp covers what it
    says), one numbax wrote at run time by its text and the globals it reads, one of a
    generated module by that module's name; with the values its closure holds. Anything
    else (the user's own functions) is undescribed."""
    if id(fn) in seen:
        return f"recursive:{fn.__qualname__}"
    seen = seen | {id(fn)}
    code = fn.__code__
    if code.co_filename.startswith(_GENERATED_FILE):
        text = "".join(linecache.getlines(code.co_filename))
        if not text:
            raise _Undescribed(f"the source of {fn.__qualname__} is gone")
        origin = _run_time_origin(code.co_filename)
        reads = _describe(_globals_read(fn), seen)
        where = f"written:{origin}:{hashlib.sha256(text.encode()).hexdigest()}:{reads}"
    elif _in_library(code.co_filename):
        where = f"library:{fn.__module__}:{code.co_firstlineno}"
    elif (fn.__module__ or "").startswith(GENERATED_PREFIX):
        # A generated module's name hashes its text and the values it binds, as the
        # disk cache of its own machine code does.
        where = f"generated:{fn.__module__}"
    else:
        raise _Undescribed(f"{fn.__qualname__} is not numbax's")
    closure = _describe(_closure_values(fn), seen) if fn.__closure__ else ""
    return f"function:{fn.__qualname__}:{where}:{closure}"


def _run_time_origin(filename: str) -> str:
    """``<numbax.reductions sum #12>`` without the counter, which differs by process."""
    return re.sub(r" #\d+>$", ">", filename)


def _in_library(filename: str) -> bool:
    try:
        path = Path(filename).resolve()
    except OSError:
        return False
    return any(path.is_relative_to(library) for library in _LIBRARIES)


def _closure_values(fn: pytypes.FunctionType) -> tuple:
    try:
        return tuple(cell.cell_contents for cell in fn.__closure__ or ())
    except ValueError as err:  # an empty cell: a name the function binds later
        raise _Undescribed(f"{fn.__qualname__} closes over an unbound name") from err


def _globals_read(fn: pytypes.FunctionType) -> dict[str, Any]:
    """The globals ``fn`` (and the functions defined inside it) reads, by name."""
    names: set[str] = set()
    stack = [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, pytypes.CodeType))
    scope = fn.__globals__
    return {name: scope[name] for name in sorted(names) if name in scope and name != "__name__"}


def _portable(value: Any) -> bool:
    """Whether a type a signature holds can be rebuilt by a new process from its pickle:
    made of classes found by name and values described above."""
    try:
        if isinstance(value, types.Omitted):  # its key holds the default's id
            _describe(value.value, set())
        elif isinstance(value, types.Type):
            _named(type(value))
            _describe(value.key, set())
        else:
            _describe(value, set())
    except _Undescribed:
        return False
    return True


# ---------------------------------------------------------------------------------------
# The cache.
# ---------------------------------------------------------------------------------------


@functools.cache
def _stamp() -> str:
    """numbax's source, Numba's and NumPy's versions: entries of another are stale."""
    return runtime_stamp()


class _RuntimeLocator(_CacheLocator):
    """``<cache>/runtime``, checked before every use."""

    def __init__(self, lineno: int) -> None:
        self._lineno = lineno

    def get_cache_path(self) -> str:
        return str(generated_dir() / RUNTIME_SUBDIR)

    def ensure_cache_path(self) -> None:
        ensure_private_directory(Path(self.get_cache_path()))

    def get_source_stamp(self) -> str:
        return _stamp()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> _RuntimeLocator:
        return cls(py_func.__code__.co_firstlineno)


class _RuntimeImpl(CompileResultCacheImpl):
    """Numba's compile-result pickling, with the entry named by numbax."""

    def __init__(self, py_func: Any, filename_base: str) -> None:  # noqa: D107
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = _RuntimeLocator(self._lineno)
        self._filename_base = filename_base

    def reduce(self, cres: Any) -> Any:
        return reduce_without_annotation(cres)

    def check_cachable(self, cres: Any) -> bool:
        """Machine code that holds addresses of this process's objects is not saved
        (Numba would warn; for numbax's own helpers there is nothing to say)."""
        lifted_ok = all(lifted.can_cache for lifted in cres.lifted)
        return lifted_ok and not cres.library.has_dynamic_globals


class _InstalledFiles(_CheckedFiles):
    """An entry of the installed runtime: checked as the user's own are, except that
    its files may belong to root (``codegen/installed_runtime.py``)."""

    _file_problem = staticmethod(installed_problem)


class RuntimeCache(TrustedCache):
    """The disk cache of one of numbax's implementations (see the module docstring)."""

    def __init__(self, py_func: Any, identity: str, own_options: frozenset[str]) -> None:  # noqa: D107
        # Cache.__init__ would look for Numba's locators; the entry is named here.
        digest = hashlib.sha256(identity.encode()).hexdigest()[:24]
        name = re.sub(r"[^A-Za-z0-9_]+", "_", py_func.__qualname__)[-60:]
        filename_base = f"{name}-{digest}"
        self._name = repr(py_func)
        self._py_func = py_func
        self._impl = _RuntimeImpl(py_func, filename_base)
        self._cache_path = self._impl.locator.get_cache_path()
        self._cache_file = _CheckedFiles(
            cache_path=self._cache_path, filename_base=filename_base, source_stamp=_stamp()
        )
        self._filename_base = filename_base
        self._identity = identity
        self._own_options = own_options
        self.enable()

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        """Numba's key with the closure described portably (Numba pickles it, and the
        pickle of a Numba type differs between processes), with the options a
        function compiled inside a caller inherits from it (Numba's key omits them: a
        helper compiled for a caller with Python's error model must not serve another),
        and Numba's settings that change all code (``disk_cache.CODE_SETTINGS``)."""
        code = hashlib.sha256(self._py_func.__code__.co_code).hexdigest()
        identity = hashlib.sha256(self._identity.encode()).hexdigest()
        inherited = _inherited_options(self._own_options)
        return (sig, codegen.magic_tuple(), (code, identity, inherited), code_settings())

    # Loads and saves hold the entry's lock: processes compiling one helper for two
    # signatures at once would otherwise both write its first data file.
    def load_overload(self, sig: Any, target_context: Any) -> Any:
        if not all(map(_portable, sig)):
            return None
        with entry_lock(self.lock_path):
            loaded = super().load_overload(sig, target_context)
        return loaded if loaded is not None else self._load_installed(sig, target_context)

    def _load_installed(self, sig: Any, target_context: Any) -> Any:
        """The entry for ``sig`` from the installed runtime, read in place, or None
        (none installed, none for ``sig``, or a file that fails its checks: then the
        helper compiles, as without one; installed files are never changed here)."""
        installed = usable_installed_runtime()
        if installed is None:
            return None
        files = _InstalledFiles(
            cache_path=str(installed), filename_base=self._filename_base, source_stamp=_stamp()
        )
        try:
            data = files.load(self._index_key(sig, target_context.codegen()))
            return None if data is None else self._impl.rebuild(target_context, data)
        except Exception:  # noqa: BLE001  (damaged, foreign or unloadable: compile instead)
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        if not all(map(_portable, (*sig, data.signature.return_type))):
            return  # a new process could not rebuild the index that held it
        with entry_lock(self.lock_path):
            try:
                super().save_overload(sig, data)
            except Exception:  # noqa: BLE001  (machine code whose environment does not
                pass  # pickle: it stays compiled in this process, as it was before)


_INHERITED = ("nrt", "fastmath", "error_model", "forceinline")
"""The options Numba's CPU target copies from the caller when the callee does not set
them (``CPUTargetOptions.finalize``)."""

_WITHOUT_CALLER = {"nrt": True, "error_model": "python"}
"""What ``CPUTargetOptions.finalize`` gives a function compiled with no caller, where it
differs from ``Flags``' own defaults."""

NEVER_INHERITED = {"fastmath": False}
"""What every implementation here compiles with unless it says otherwise. Numba keeps one
compiled version of a function per signature in a process, made with the options of
whichever caller compiled it first: an ``exp`` kernel first called from
``nx.jit(f, fastmath=True)`` was compiled with LLVM's fast-math flags, and every later
caller in the process, without them, got its ``exp(1000.0)`` as NaN. So implementations
never take a caller's ``fastmath``; a ``fastmath`` program's own code still has it."""


def _inherited_options(own_options: frozenset[str]) -> str:
    """The values a function compiled now takes from its caller, as it gets them
    (``TargetConfig.inherit_if_not_set``): the caller's, set or not, and with no caller
    :data:`_WITHOUT_CALLER` or the default. Keyed by value, not by whether the caller set
    it: a caller compiled inside another (an overload's implementation) has
    ``forceinline=False`` set, a generated function has it unset, and the helper both
    call is the same code (it was compiled twice, once for each key)."""
    caller = ConfigStack().top_or_none()
    if caller is None:
        caller = Flags()
        for name, value in _WITHOUT_CALLER.items():
            setattr(caller, name, value)
    return ";".join(
        f"{name}={getattr(caller, name)}" for name in _INHERITED if name not in own_options
    )


def cache_of(dispatcher: Dispatcher) -> RuntimeCache | NullCache:
    """The runtime cache of ``dispatcher``'s function, or none when what it compiles to
    cannot be described across processes."""
    try:
        options = describe(sorted(dispatcher.targetoptions.items()))
        identity = f"{describe(dispatcher.py_func)}|{options}|{describe(dispatcher.locals)}"
    except _Undescribed:
        return NullCache()
    try:
        return RuntimeCache(dispatcher.py_func, identity, frozenset(dispatcher.targetoptions))
    except OSError:
        return NullCache()


# ---------------------------------------------------------------------------------------
# How implementations get it: every ``@overload`` implementation and numbax's kernels.
# ---------------------------------------------------------------------------------------

_numba_enable_caching = Dispatcher.enable_caching


def _enable_caching(self: Dispatcher) -> None:
    """Numba's ``cache=True``: numbax's runtime cache for numbax's implementations."""
    if getattr(self.py_func, _MARK, False):
        self._cache = cache_of(self)
    else:
        _numba_enable_caching(self)


Dispatcher.enable_caching = _enable_caching  # type: ignore[method-assign]

_numba_jit_decorator = _OverloadFunctionTemplate._get_jit_decorator


def _jit_decorator(self: _OverloadFunctionTemplate) -> Callable:
    """The CPU's ``jit`` for an ``@overload``'s implementation, into the runtime cache.

    This serves Numba's own implementations too (``np.empty``, broadcasting, the text of
    its error messages): compiled once, not in every process. An implementation that
    cannot be described (one of the user's own overloads) is compiled as Numba would.
    """
    jitter = _numba_jit_decorator(self)
    if jitter is not numba_cpu_jit:
        return jitter

    def jit(*args: Any, **options: Any) -> Callable:
        options = {**NEVER_INHERITED, **options}
        if "cache" in options:  # an overload that chose its cache keeps Numba's
            return jitter(*args, **options)
        decorate = jitter(*args, cache=True, **options)
        return lambda pyfunc: decorate(_mark(pyfunc))

    return jit


_OverloadFunctionTemplate._get_jit_decorator = _jit_decorator  # type: ignore[method-assign]


def _mark(fn: Any) -> Any:
    if isinstance(fn, pytypes.FunctionType):
        setattr(fn, _MARK, True)
    return fn


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` into the runtime cache (for numbax's kernels, not generated code)."""
    options.setdefault("cache", True)
    options = {**NEVER_INHERITED, **options}
    if args and callable(args[0]):
        return numba.njit(**options)(_mark(args[0]))
    return lambda fn: numba.njit(**options)(_mark(fn))


__all__ = ["RuntimeCache", "cache_of", "describe", "njit"]
