"""Locks that make concurrent first calls wait for one piece of work instead of racing.

:data:`generation_lock` serializes generating and loading code within a process (one
thread generates a module, the others then find it). :func:`entry_lock` guards one cache
entry across threads and processes: an exclusive ``flock`` on a lock file beside the
entry, so a second process waits for the first to compile and then loads what it wrote.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from numba.core.compiler_lock import global_compiler_lock

try:
    import fcntl
except ImportError:  # Windows: threads still wait on each other, processes do not
    fcntl = None

generation_lock = global_compiler_lock
"""Held while code is generated and loaded (reentrant: generation nests). It is Numba's
own compiler lock: Numba types calls of generated code while holding it, and that typing
may generate code in turn, so one lock for both cannot be taken in two orders."""


class _EntryLock:
    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.depth = 0  # how deeply the holding thread has entered it
        self.fd: int | None = None


_entries: dict[Path, _EntryLock] = {}
_entries_lock = threading.Lock()


@contextlib.contextmanager
def entry_lock(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` exclusively, against other threads and processes
    (reentrant within a thread). Without permission to create the file, only threads are
    kept apart."""
    with _entries_lock:
        entry = _entries.setdefault(path, _EntryLock())
    with entry.thread_lock:
        if entry.depth == 0:
            entry.fd = _lock_file(path)
        entry.depth += 1
        try:
            yield
        finally:
            entry.depth -= 1
            if entry.depth == 0 and entry.fd is not None:
                os.close(entry.fd)  # releases the flock
                entry.fd = None


def _lock_file(path: Path) -> int | None:
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        return None
    return fd
