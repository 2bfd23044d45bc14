"""Numba's disk cache for generated code, kept inside numbax's cache and trusted only there.

Numba saves machine code as pickles (an index ``.nbi`` per function, a data file
``.nbc`` per signature): loading one runs whatever it says, so they are read only from
the verified ``numba`` directory beside the generated modules (``codegen.trust``), only
when each file is a regular file of the current user that no one else may write, and
only when its checksum, written by numbax, matches: a data file must also name the entry
it was saved for, so another function's machine code is never loaded. Anything that fails
is discarded with one warning and compiled again; a save that fails is skipped with one
warning. Numba never moves this cache elsewhere (its own fallback is ``~/.cache/numba``).

Compiling a new signature holds an exclusive lock on the entry (``codegen.locks``), so
threads and processes that make the same first call at once wait for one compile and
then load it from here.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.util
import itertools
import pickle
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from numba.core import config
from numba.core.caching import (
    CompileResultCacheImpl,
    FunctionCache,
    IndexDataCacheFile,
    NullCache,
    _CacheLocator,
    _SourceFileBackedLocatorMixin,
)
from numba.core.sigutils import normalize_signature

from numbax.codegen.cache import NUMBA_SUBDIR, cannot_write, write_atomic
from numbax.codegen.gc_pause import fewer_full_collections
from numbax.codegen.load import GENERATED_PREFIX, restore_file
from numbax.codegen.locks import entry_lock, generation_lock
from numbax.codegen.ownership import open_no_follow
from numbax.codegen.trust import discard, ensure_private_directory, file_problem
from numbax.numba_backend.caching import (  # noqa: F401  (installed on import)
    compile_timers,
    inlining,
)
from numbax.numba_backend.caching.compiling import numbax_compiling
from numbax.numba_backend.caching.linking import linking_large_callees_late
from numbax.numba_backend.caching.symbol_names import start_numbering_at_random_offset
from numbax.numba_backend.loops.threads import launch as launch_threads

# Libraries loaded from here were compiled by other processes: their names must not meet ours.
start_numbering_at_random_offset()

_MAGIC = b"numbax-numba-cache 1\n"
_DIGEST = hashlib.sha256().digest_size


class DamagedEntry(Exception):
    """A cache file that is not numbax's, or not whole: it is discarded."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class _GeneratedModuleLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """The ``numba`` directory beside the generated module, checked before every use."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(Path(py_file).parent / NUMBA_SUBDIR)

    def get_cache_path(self) -> str:
        return self._cache_path

    def ensure_cache_path(self) -> None:
        ensure_private_directory(Path(self._cache_path))

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> _GeneratedModuleLocator:
        return cls(py_func, py_file)


ANNOTATION_NOT_KEPT = (
    "numbax's disk cache keeps no type annotation: compile without the cache "
    "(jit(..., cache=False)) to inspect the types"
)
"""What a function loaded from numbax's disk cache shows for its type annotation."""


def reduce_without_annotation(cres: Any) -> Any:
    """Numba's pickled form of a compile result, with a fixed line in place of the type
    annotation: Numba writes the function's source with the type of every variable on
    each line into the entry, which only ``inspect_types()`` reads back, and formatting
    it was a tenth of each save (more for a large generated function)."""
    return cres._replace(type_annotation=ANNOTATION_NOT_KEPT)._reduce()


class _Impl(CompileResultCacheImpl):
    _locator_classes = [_GeneratedModuleLocator]

    def reduce(self, cres: Any) -> Any:
        return reduce_without_annotation(cres)


class _CheckedFiles(IndexDataCacheFile):
    """Index and data files written with numbax's header and checksum and verified
    (owner, mode, checksum, entry) before they are unpickled."""

    _file_problem = staticmethod(file_problem)  # who may have written a file it reads

    def save(self, key: Any, data: Any) -> None:
        try:
            overloads = self._load_index()
        except DamagedEntry:
            overloads = {}  # replaced by the index written below
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(n for n in map(self._data_name, itertools.count(1)) if n not in taken)
            overloads[key] = name
            self._save_index(overloads)
        self._save_data(name, key, data)

    def load(self, key: Any) -> Any:
        name = self._load_index().get(key)
        if name is None:
            return None
        try:
            return self._load_data(name, key)
        except FileNotFoundError:
            return None

    def _load_index(self) -> dict:
        try:
            payload = self._read(Path(self._index_path), b"index")
        except FileNotFoundError:
            return {}
        version, stamp, overloads = self._unpickle(Path(self._index_path), payload)
        if version != self._version or stamp != self._source_stamp:
            return {}  # written by another Numba, or for other source: stale, not damaged
        return overloads

    def _save_index(self, overloads: dict) -> None:
        payload = self._dump((self._version, self._source_stamp, overloads))
        self._write(Path(self._index_path), b"index", payload)

    def _load_data(self, name: str, key: Any) -> Any:
        path = Path(self._data_path(name))
        return self._unpickle(path, self._read(path, _entry_tag(key)))

    def _save_data(self, name: str, key: Any, data: Any) -> None:
        self._write(Path(self._data_path(name)), _entry_tag(key), self._dump(data))

    def _write(self, path: Path, tag: bytes, payload: bytes) -> None:
        write_atomic(path, _MAGIC + _checksum(tag, path, payload) + payload)

    def _read(self, path: Path, tag: bytes) -> bytes:
        problem = self._file_problem(path)  # FileNotFoundError: no entry yet
        if problem is not None:
            raise DamagedEntry(path, problem)
        with open(path, "rb", opener=open_no_follow) as handle:
            blob = handle.read()
        if not blob.startswith(_MAGIC):
            raise DamagedEntry(path, "it was not written by numbax")
        digest = blob[len(_MAGIC) : len(_MAGIC) + _DIGEST]
        payload = blob[len(_MAGIC) + _DIGEST :]
        if digest != _checksum(tag, path, payload):
            raise DamagedEntry(path, "it is truncated, damaged, or belongs to another entry")
        return payload

    @staticmethod
    def _unpickle(path: Path, payload: bytes) -> Any:
        try:
            with _generated_modules_by_name():
                return pickle.loads(payload)
        except Exception as err:  # a checksum that matches a payload Numba cannot read
            raise DamagedEntry(path, f"it cannot be read: {err!r}") from err


class _GeneratedModuleStandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An empty module for a generated module this process has not made yet.

    Machine code compiled in another process names the generated modules of the
    functions it calls: Numba rebuilds each one's environment by importing its module,
    for the module's globals, which nopython code never reads. A module made while
    Numba typed a call (``vmap``'s, for the argument types) does not exist in a process
    that loads its caller instead of typing it, so the import gets this stand-in."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not name.startswith(GENERATED_PREFIX):
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> types.ModuleType:
        return types.ModuleType(spec.name, "stands in while compiled code is loaded")

    def exec_module(self, module: types.ModuleType) -> None:
        _stand_ins.add(module.__name__)


_STAND_IN = _GeneratedModuleStandIn()
_stand_ins: set[str] = set()


@contextlib.contextmanager
def _generated_modules_by_name() -> Iterator[None]:
    """While Numba's pickles load: generated modules not made yet import as stand-ins,
    taken out of ``sys.modules`` again afterwards (the real one is made when needed)."""
    sys.meta_path.append(_STAND_IN)
    try:
        yield
    finally:
        sys.meta_path.remove(_STAND_IN)
        while _stand_ins:
            sys.modules.pop(_stand_ins.pop(), None)


def _entry_tag(key: Any) -> bytes:
    """What a data file is for: the signature, target and bytecode hashes of its entry."""
    return repr(key).encode()


def _checksum(tag: bytes, path: Path, payload: bytes) -> bytes:
    digest = hashlib.sha256(tag)
    digest.update(b"\0" + path.name.encode() + b"\0")
    digest.update(payload)
    return digest.digest()


CODE_SETTINGS = (
    "BOUNDSCHECK",
    "OPT",
    "LOOP_VECTORIZE",
    "SLP_VECTORIZE",
    "DEBUGINFO_DEFAULT",
    "EXTEND_VARIABLE_LIFETIMES",
    "FULL_TRACEBACKS",
)
"""Numba's process-wide settings (``numba.config``, from ``NUMBA_*`` environment
variables) that change the machine code of every function it compiles: bounds checks on
every subscript (``NUMBA_BOUNDSCHECK``), the optimization level, the vectorizers, debug
information (which also turns bounds checks on) and what it keeps for it, and the
messages bounds checks print. Numba's key holds none of them (the CPU's name and
features are in it), so its cache served code compiled without ``NUMBA_BOUNDSCHECK=1``
to a process that set it."""


def code_settings() -> str:
    """The values of :data:`CODE_SETTINGS` in this process, as a cache key holds them."""
    return ";".join(f"{name}={getattr(config, name, None)!r}" for name in CODE_SETTINGS)


class TrustedCache(FunctionCache):
    """Numba's function cache for a generated function, in numbax's trusted directory."""

    _impl_class = _Impl

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)
        self._cache_file = _CheckedFiles(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp(),
        )

    @property
    def lock_path(self) -> Path:
        """The lock file of this function's entry."""
        return Path(self._cache_path) / f"{self._impl.filename_base}.lock"

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        """Numba's key (signature, CPU, bytecode) and the settings that change the code
        (:data:`CODE_SETTINGS`); the options the function compiles with are in its
        module's name (``pipeline.specialize``)."""
        return (*super()._index_key(sig, codegen), code_settings())

    def restore(self) -> None:
        """Make the module's file and this cache's directory again where they were
        removed (``cache clear`` while the module was loaded), and take the file's new
        stamp. Raises ``OSError`` when they cannot be made."""
        if restore_file(self._py_func):
            self._cache_file._source_stamp = self._impl.locator.get_source_stamp()
        self._impl.locator.ensure_cache_path()

    def _restored(self, action: Callable[[], Any]) -> Any:
        """``action()`` once the module's file and the directory are there: done again
        when they are removed meanwhile (``cache clear`` in another process)."""
        for attempt in range(3):
            try:
                self.restore()
                return action()
            except FileNotFoundError:
                if attempt == 2:
                    raise
        return None

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        launch_threads()  # machine code that may run in parallel names the layer's symbols
        try:
            self._restored(lambda: None)
        except OSError as err:
            cannot_write(Path(self._cache_path), err)
            return None
        try:
            return super().load_overload(sig, target_context)
        except DamagedEntry as err:
            discard(err.path, err.reason)
        except Exception as err:  # pickles that check out but do not rebuild
            discard(Path(self._cache_file._index_path), f"it cannot be loaded: {err!r}")
        return None

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            self._restored(lambda: super(TrustedCache, self).save_overload(sig, data))
        except OSError as err:
            cannot_write(Path(self._cache_path), err)


def attach(dispatcher: Any, cached: bool) -> None:
    """Give a dispatcher of generated code numbax's disk cache (when ``cached``) and make
    its compiles wait for the same compile in other threads and processes."""
    original = dispatcher.compile
    cache = _trusted_cache(dispatcher.py_func) if cached else None
    if cache is not None:
        dispatcher._cache = cache

    def compile(sig: Any) -> Any:
        existing = dispatcher.overloads.get(tuple(normalize_signature(sig)[0]))
        if existing is not None:  # Numba comes here for a call with an omitted argument
            return existing.entry_point
        # the lock before the entry's
        with (
            generation_lock,
            linking_large_callees_late(),
            numbax_compiling(),
            fewer_full_collections(),
        ):
            if cache is None or not _usable(cache):
                return original(sig)
            with entry_lock(cache.lock_path):
                return original(sig)

    dispatcher.compile = compile


def _usable(cache: TrustedCache) -> bool:
    try:
        cache.restore()
    except OSError:
        return False  # load_overload says why, once
    return True


def cache_for(py_func: Any) -> TrustedCache | NullCache:
    """numbax's trusted disk cache for ``py_func``, a function of a generated module (a
    fused kernel's)."""
    return _trusted_cache(py_func) or NullCache()


def _trusted_cache(py_func: Any) -> TrustedCache | None:
    """None when the module's file is gone (the cache was cleared while the module was
    loaded) and cannot be written again: the code still runs, compiled in this process
    only."""
    for attempt in range(3):
        try:
            restore_file(py_func)
            return TrustedCache(py_func)
        except FileNotFoundError as err:  # removed again meanwhile: written again
            if attempt == 2:
                cannot_write(Path(py_func.__code__.co_filename).parent, err)
        except OSError as err:
            cannot_write(Path(py_func.__code__.co_filename).parent, err)
            break
    return None
