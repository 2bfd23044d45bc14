"""Which directories under the cache root are numbax's: those that carry its marker.

The cache root is often a folder the user shares with other tools (``~/.cache``, a
project's folder given as ``NUMBAX_CACHE_DIR``), so a name is no proof of ownership:
``python -m numbax cache clear`` once removed every directory whose name began with
``py``. Each directory numbax makes at the top of the cache (the versioned one, and
those it moves aside as untrusted) holds a small file, :data:`MARKER`, with a fixed
text; a directory made by an older numbax is marked at its next use. Only a marked
directory is ever removed, and only when what it holds is laid out as numbax lays it
out (``cache_admin``).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

MARKER = ".numbax-cache"
"""The marker file's name."""

TAG = (
    b"numbax cache directory: everything here can be rebuilt; "
    b"`python -m numbax cache clear` removes it\n"
)
"""The marker file's whole text."""


def is_marked(directory: Path) -> bool:
    """Whether ``directory`` holds numbax's marker: a regular file with :data:`TAG`."""
    path = directory / MARKER
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return False
        with open(path, "rb", opener=open_no_follow) as handle:
            return handle.read(len(TAG) + 1) == TAG
    except OSError:
        return False


def mark(directory: Path) -> None:
    """Put the marker in ``directory`` (atomically; nothing to do when it is there).

    Raises ``OSError`` when it cannot be written."""
    if is_marked(directory):
        return
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f"{MARKER}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(TAG)
        os.replace(tmp, directory / MARKER)  # replaces a link planted there, not its target
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def open_no_follow(path: str, flags: int) -> int:
    """An ``opener`` for ``open`` that refuses a symbolic link in the file's place."""
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
