"""Where generated source lives on disk, how it is named, and how it is written safely.

Generated modules are real files so that tracebacks and ``inspect.getsource`` show
them, and so that Numba's own disk cache (which keys on the source file) lets a new
process skip compilation. The directory is private to the user (mode 0700) because
numbax imports code from it; files are written atomically so a crash never leaves a
half-written module that a later process would import.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np

from numbax.version import __version__


def cache_root() -> Path:
    """``$NUMBAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/numbax``, else ``~/.cache/numbax``."""
    explicit = os.environ.get("NUMBAX_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "numbax"


def generated_dir() -> Path:
    """The private directory generated modules are written to (created on demand)."""
    directory = cache_root() / f"py{sys.version_info[0]}{sys.version_info[1]}"
    _ensure_private_dir(directory)
    return directory


def _ensure_private_dir(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = directory.stat()
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise PermissionError(
            f"numbax cache directory {directory} belongs to another user; numbax imports "
            "code from it, so it must be yours. Set NUMBAX_CACHE_DIR to a directory you own."
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.chmod(directory, 0o700)


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


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see either the old file or the whole new one.

    An unchanged file is left alone: rewriting it would change its modification time,
    and Numba's disk cache treats that as a changed source and compiles again.
    """
    if path.exists() and path.read_text() == text:
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
