"""What numbax may load from its cache: only what the current user alone could have written.

numbax executes the generated modules and Numba's machine code it finds in its cache, so
the cache is a trust boundary, as ``sys.path`` is for CPython. A directory or file is
trusted when it is what it claims to be (a real directory, a regular file: no symlink
leading elsewhere), belongs to the current user, and no group or other user may write
it. Whatever fails is never read: it is moved aside or deleted, rebuilt, and reported by
a :class:`CacheWarning` naming the path (once per directory in a process: what damaged
one file has usually damaged its neighbours, and one event is one warning).
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
import uuid
import warnings
from pathlib import Path

from numbax.codegen.ownership import mark


class CacheWarning(UserWarning):
    """numbax found something in its cache it will not use, or could not use its cache."""


class UntrustedPath(OSError):
    """A cache directory that fails the checks and could not be replaced."""


_warned: set[object] = set()
_warned_lock = threading.Lock()


def warn(message: str) -> None:
    """Report something the cache healed (each time: it was put right, so it does not
    repeat unless it happens again)."""
    warnings.warn(message, CacheWarning, stacklevel=3)


def warn_once(message: str, kind: object = None) -> None:
    """Report a condition the first time this process meets it: a condition of the same
    ``kind`` (by default: the same message) is not reported again, whatever file or
    function it concerns this time. One event (a cache cleared, a disk full, a directory
    copied with the wrong modes) touches many files: it is one warning."""
    key = message if kind is None else kind
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, CacheWarning, stacklevel=3)


def _foreign(info: os.stat_result, root_too: bool = False) -> str | None:
    if hasattr(os, "getuid"):
        owners = (os.getuid(), 0) if root_too else (os.getuid(),)
        if info.st_uid not in owners:
            return f"it belongs to user id {info.st_uid}, not to you"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users may write it (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def directory_problem(path: Path) -> str | None:
    """Why ``path`` is not a directory numbax may load code from (None: it may)."""
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):  # or what holds it is not a directory
        return "it does not exist"
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    return _foreign(info)


def file_problem(path: Path) -> str | None:
    """Why the existing ``path`` is not a file numbax may load (None: it may)."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    return _foreign(info)


def installed_problem(path: Path) -> str | None:
    """Why ``path``, installed with numbax for every user, may not be read (None: it
    may): it must be a real directory or regular file that belongs to the current user
    or to root and that no one else may write, as numbax's own source.

    Raises ``FileNotFoundError`` when it does not exist."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return "it is neither a directory nor a regular file"
    return _foreign(info, root_too=True)


def ensure_private_directory(path: Path) -> None:
    """Make ``path`` a trusted directory: create it (mode 0700), or, when what is there
    fails the checks, move it aside (the name starts with ``.untrusted-``), warn, and
    create a fresh one. What was inside is never read.

    Raises ``OSError`` when the directory cannot be created, replaced or written.
    """
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        problem = directory_problem(path)
        if problem is not None:
            _replace(path, problem)
    _check_writable(path)


def _replace(path: Path, problem: str) -> None:
    aside = path.with_name(f".untrusted-{path.name}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, aside)
        path.mkdir(mode=0o700)
    except FileNotFoundError:
        raise  # removed meanwhile (a cache clear): not planted, and made again
    except OSError as err:
        raise UntrustedPath(f"numbax cache directory {path} is not trusted: {problem}") from err
    _mark_aside(aside)
    warn(
        f"numbax ignored its cache directory {path} ({problem}); nothing in it was loaded. "
        f"It was moved to {aside} and the cache is rebuilt."
    )
    problem = directory_problem(path)
    if problem is not None:  # lost a race with whoever planted it
        raise UntrustedPath(f"numbax cache directory {path} is not trusted: {problem}")


def _mark_aside(aside: Path) -> None:
    """Mark a directory numbax moved aside as numbax's (``cache clear`` removes it), when
    it is a directory of the current user's: never through a link, never another's."""
    try:
        info = aside.lstat()
        mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
        if stat.S_ISDIR(info.st_mode) and mine:
            mark(aside)
    except OSError:
        pass  # left where it is: ``cache clear`` leaves what it cannot tell is numbax's


def _check_writable(path: Path) -> None:
    probe = path / f".probe-{uuid.uuid4().hex[:8]}"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    probe.unlink()


def discard(path: Path, reason: str) -> None:
    """Delete the cache entry ``path`` (it will be rebuilt), warning why: once per
    directory in a process, as what damaged one file (a copy, a change of modes, a full
    disk) has usually damaged its neighbours too."""
    _remove_entry(path)
    warn_once(
        f"numbax discarded {path} from its cache ({reason}); it is rebuilt. Other entries "
        f"of {path.parent} it discards in this process are not reported.",
        kind=("discarded", str(path.parent)),
    )


def _remove_entry(path: Path) -> None:
    """Remove whatever is at ``path`` inside numbax's own directory (a file, a symbolic
    link, or a directory in a file's place), if anything is."""
    try:
        if stat.S_ISDIR(path.lstat().st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass  # gone already, or the rebuilt entry, written under its name, replaces it
