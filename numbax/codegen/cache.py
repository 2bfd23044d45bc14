"""Where generated source lives on disk, how it is named, and how it is written safely.

Generated modules are real files so that tracebacks and ``inspect.getsource`` show
them, and so that Numba's own disk cache (which keys on the source file) lets a new
process skip compilation. Everything sits under one versioned directory, private to the
user (``trust.py`` checks it before anything in it is used); files are written atomically
so a crash never leaves a half-written module. When that directory cannot be created or
written, numbax warns once and uses a private temporary directory for the process.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import numba
import numpy as np

from numbax.codegen.ownership import mark
from numbax.codegen.trust import (
    directory_problem,
    discard,
    ensure_private_directory,
    file_problem,
    warn_once,
)
from numbax.version import __version__

NUMBA_SUBDIR = "numba"
"""Numba's index and data files, inside the versioned directory."""

RUNTIME_SUBDIR = "runtime"
"""Numba's index and data files of numbax's own runtime helpers (compiled for the
argument types a program met, then loaded by later processes), beside ``numba``."""

DERIVATIVES_SUBDIR = "derivatives"
"""Generated derivatives kept for later processes (``api/generation_cache.py``)."""


def cache_root() -> Path:
    """``$NUMBAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/numbax``, else ``~/.cache/numbax``."""
    explicit = os.environ.get("NUMBAX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "numbax"


def version_dirname() -> str:
    """The versioned directory's name: generated code and pickles are per Python version."""
    return f"py{sys.version_info[0]}{sys.version_info[1]}"


def generated_dir() -> Path:
    """The private directory generated modules are written to (created on demand; a
    private temporary one when the configured cache cannot be used). It is checked again
    at every use: one that stopped being trustworthy is replaced."""
    root = cache_root()
    directory = _usable_dir(root)
    if directory_problem(directory) is not None:
        _usable_dir.cache_clear()
        directory = _usable_dir(root)
    return directory


_dir_lock = threading.Lock()


@functools.cache
def _usable_dir(root: Path) -> Path:
    with _dir_lock:
        try:
            directory = _made_dir(root)
        except OSError as err:
            fallback = _temporary_dir()
            warn_once(
                f"numbax cannot use its cache directory {root} ({err}); compiled code is cached "
                f"in {fallback} for this process only. Set NUMBAX_CACHE_DIR to a directory "
                "you own and can write.",
                kind=("cannot use", root),
            )
            return fallback
        return directory


def _made_dir(root: Path) -> Path:
    """The versioned directory under ``root``, made, checked and marked as numbax's
    (``cache clear`` may remove it; one made by an older numbax is marked now): made
    again when it is removed meanwhile (``cache clear`` in another process)."""
    attempts = 3
    while True:
        attempts -= 1
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            problem = _root_problem(root)
            if problem is not None:
                raise PermissionError(problem)
            directory = root / version_dirname()
            ensure_private_directory(directory)
            _mark(directory)
            return directory
        except FileNotFoundError:
            if not attempts:
                raise


def _mark(directory: Path) -> None:
    try:
        mark(directory)
    except FileNotFoundError:
        raise
    except OSError as err:  # a full disk: the directory still serves
        cannot_write(directory, err)


def _root_problem(root: Path) -> str | None:
    """Why the cache root may not hold numbax's directories (it may be a symbolic link
    to a directory: the user chose it; what numbax makes inside is never one)."""
    return directory_problem(root.resolve())


@functools.cache
def _temporary_dir() -> Path:
    """A private directory removed when the process exits."""
    root = Path(tempfile.mkdtemp(prefix="numbax-cache-"))  # mode 0700
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    directory = root / version_dirname()
    ensure_private_directory(directory)
    return directory


def forget_directories() -> None:
    """Check the cache directories again at their next use (after they were cleared)."""
    _usable_dir.cache_clear()


def portable_path(filename: str) -> str:
    """``filename`` as cache keys and generated text may spell it: a generated module's
    file by its name alone (its name is a content hash), so a cache keeps its keys when
    it is moved or copied elsewhere; any other path as it is."""
    path = Path(filename)
    if path.name.startswith("numbax_generated_") and path.suffix == ".py":
        return path.name
    return filename


@functools.cache
def _package_fingerprint() -> str:
    """A hash of numbax's own source: compiled code inlines its runtime helpers, so a
    changed helper must not reuse machine code cached before the change."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(*parts: object) -> str:
    """A short stable hash of everything that determines a generated module's text."""
    digest = hashlib.sha256()
    versions = (__version__, _package_fingerprint(), numba.__version__, np.__version__)
    for part in (*versions, *parts):
        digest.update(repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:20]


def store_module(name: str, text: str) -> Path:
    """Write a generated module's ``text`` to its file ``<name>.py`` in the cache, where
    it can be; returns the path. Nothing needs the file to run the module (``load``
    executes numbax's text, and ``linecache`` holds it for ``inspect`` and tracebacks):
    when the cache cannot be written, numbax warns once and goes on without it."""
    for attempt in range(3):
        path = generated_dir() / f"{name}.py"
        try:
            store_source(path, text)
            return path
        except FileNotFoundError as err:  # its directory was removed since (cache clear)
            if attempt == 2:
                cannot_write(path.parent, err)
        except OSError as err:
            cannot_write(path.parent, err)
            return path
    return path


def cannot_write(directory: Path, err: OSError) -> None:
    """Say, once in a process, that the cache could not be written and numbax goes on
    without what it could not keep (a full disk, a directory that went away): one
    failure is followed by many more of the same cause, each file numbax writes."""
    what = (
        "was removed while numbax wrote to it (a cache clear?)"
        if isinstance(err, FileNotFoundError)
        else "could not be written"
    )
    warn_once(
        f"numbax's cache in {directory} {what} ({err}); numbax goes on without caching what "
        "it could not write (later processes compile it again).",
        kind="cannot write",
    )


def store_source(path: Path, text: str) -> None:
    """Make ``path`` hold exactly ``text``, as a trusted file.

    A file already there is kept when it is trusted and holds ``text`` (rewriting it would
    change its modification time for nothing); one that is not ours, unreadable or holds
    anything else is discarded with a warning and written again.
    """
    data = text.encode()
    try:
        problem = file_problem(path)
    except FileNotFoundError:
        write_atomic(path, data)
        return
    if problem is None:
        try:
            if path.read_bytes() == data:
                return
            problem = "its text is not what numbax generated for this name"
        except OSError as err:
            problem = f"it cannot be read: {err}"
    discard(path, problem)
    write_atomic(path, data)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode 0600) so readers see either the old file or the
    whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
