"""What ``python -m numbax cache info`` and ``cache clear`` report and do.

The cache holds only what numbax can rebuild, so clearing it is always safe: the next
call of each function generates and compiles it again. The cache root is often shared
with other tools and the user's own folders, so only numbax's directories are touched:
a real directory (not a link) named as numbax names them, holding numbax's marker
(``ownership``), and holding nothing but what numbax writes there. Anything else is left
as it is; ``clear`` says what it removed and what it left.

Another process may be using the cache meanwhile: each directory is first renamed (that
process sees the whole directory or none, and makes a new one where it needs it), then
removed under its new name.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from numbax.codegen.cache import (
    DERIVATIVES_SUBDIR,
    NUMBA_SUBDIR,
    RUNTIME_SUBDIR,
    cache_root,
    forget_directories,
)
from numbax.codegen.load import GENERATED_PREFIX
from numbax.codegen.ownership import MARKER, is_marked, mark

_OWN_DIRECTORY = re.compile(r"(\.untrusted-|\.cleared-)?py\d+(-[0-9a-f]{8})?")
"""The names numbax gives its directories under the root: the versioned one (``py311``),
one moved aside as untrusted (``.untrusted-py311-1a2b3c4d``), one being cleared."""

_OWN_FILE = re.compile(
    rf"{GENERATED_PREFIX}\w+\.py|\.{GENERATED_PREFIX}\w+\.\w+\.tmp|\.probe-\w+"
    rf"|{re.escape(MARKER)}(\.\w+\.tmp)?"
)
"""The files numbax writes in such a directory: generated modules, the temporary files
they are written through, its probes for write permission, its marker."""

_OWN_SUBDIR = re.compile(
    rf"(\.untrusted-)?({NUMBA_SUBDIR}|{RUNTIME_SUBDIR}|{DERIVATIVES_SUBDIR})(-[0-9a-f]{{8}})?"
)
"""The directories numbax makes in such a directory (all they hold is numbax's)."""


@dataclass
class CacheInfo:
    """Where the cache is and what numbax holds there: its directories, how many
    generated modules, compiled runtime helpers and files they hold, and how large they
    are; ``left``: the directories under the root that look like numbax's but are not
    touched, and why."""

    location: Path
    entries: int = 0
    size_bytes: int = 0
    runtime_helpers: int = 0
    files: int = 0
    directories: list[Path] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"location: {self.location}",
            f"entries:  {self.entries} generated modules, "
            f"{self.runtime_helpers} compiled runtime helpers ({self.files} files in "
            f"{', '.join(d.name for d in self.directories) or 'no directory'})",
            f"size:     {self.size_bytes / 1e6:.1f} MB",
        ]
        return "\n".join(lines + [f"left:     {reason}" for reason in self.left])


def layout_problem(directory: Path) -> str | None:
    """Why ``directory`` is not one numbax made (None: it is numbax's, all of it)."""
    try:
        info = directory.lstat()
    except OSError as err:
        return f"it cannot be read ({err.strerror})"
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return "it is not a directory (a link, or a file)"
    if not is_marked(directory):
        return f"it has no {MARKER} marker: numbax did not make it"
    try:
        entries = list(os.scandir(directory))
    except OSError as err:
        return f"it cannot be read ({err.strerror})"
    for entry in entries:
        own = _OWN_SUBDIR if entry.is_dir(follow_symlinks=False) else _OWN_FILE
        if not own.fullmatch(entry.name):
            return f"it holds {entry.name!r}, which numbax does not write"
    return None


def _candidates(root: Path) -> list[Path]:
    """The directories under ``root`` named as numbax names its own."""
    try:
        return sorted(p for p in root.iterdir() if _OWN_DIRECTORY.fullmatch(p.name))
    except OSError:  # no root (nothing cached yet), or not a directory
        return []


def cache_info() -> CacheInfo:
    """What numbax holds in the cache at :func:`~numbax.codegen.cache.cache_root` now."""
    info = CacheInfo(cache_root())
    for directory in _candidates(info.location):
        problem = layout_problem(directory)
        if problem is not None:
            info.left.append(f"{directory}: {problem}")
            continue
        info.directories.append(directory)
        _count(directory, info)
    return info


def _count(directory: Path, info: CacheInfo) -> None:
    for dirpath, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):  # removed meanwhile by another process
                info.size_bytes += Path(dirpath, name).lstat().st_size
                info.files += 1
                info.entries += dirpath == str(directory) and name.startswith(GENERATED_PREFIX)
                in_runtime = Path(dirpath).name == RUNTIME_SUBDIR
                info.runtime_helpers += in_runtime and name.endswith(".nbi")


def clear_cache() -> CacheInfo:
    """Remove numbax's directories from the cache; returns what they held (and what was
    left, and why)."""
    found = cache_info()
    cleared = CacheInfo(found.location, left=found.left)
    for directory in found.directories:
        aside = directory.with_name(f".cleared-{_version_name(directory)}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(directory, aside)
        except FileNotFoundError:
            continue  # removed meanwhile (by another clear)
        except OSError as err:
            cleared.left.append(f"{directory}: it cannot be renamed ({err.strerror})")
            continue
        cleared.directories.append(directory)
        _count(aside, cleared)
        _remove(aside)
    forget_directories()
    return cleared


def _version_name(directory: Path) -> str:
    return re.search(r"py\d+", directory.name).group()


def _remove(directory: Path) -> None:
    """Remove a directory renamed out of the way, its marker last: one that a process
    still writing to it keeps from being removed stays marked, for the next clear."""
    for _ in range(3):
        try:
            entries = list(directory.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.name != MARKER:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        (directory / MARKER).unlink(missing_ok=True)
        try:
            directory.rmdir()
            return
        except OSError:  # a file written into it meanwhile
            with contextlib.suppress(OSError):
                mark(directory)
