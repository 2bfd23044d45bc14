"""numbax's runtime compiled at installation: a read-only runtime cache that each new
cache falls back on.

Generated code calls numbax's helpers (allocation, products, reductions, the derivative
helpers, the pieces the fused loops share), which Numba compiles for the argument types
a program meets; the runtime cache (``numba_backend/caching/runtime_cache.py``) keeps them for
later processes. A user's first program still compiled them all, 1 to 4 s of its first
call. ``python -m numbax precompile`` (``make demo`` runs it) compiles them once for the
common dtypes and ranks (``numbax/precompile_programs.py``) into
``numbax/_installed/<python>/runtime``, beside numbax's source. A helper that the
user's cache does not have is then loaded from there (``RuntimeCache``), never copied:
the installed entries are read in place.

Trust. The installed directory is read only when it and each file in it belong to the
current user or to root, nobody else may write them, none is a symbolic link, and its
stamp says it was compiled for this numbax source, Numba and NumPy; each file is then
checked as every cache file is (``numba_backend/caching/disk_cache.py``: checksum, entry, and
the owner and mode above). ``install`` assembles it in a directory of its own and
renames it into place, so no process sees half of one.

``NUMBAX_INSTALLED_RUNTIME``: ``0`` turns the installed runtime off (the test suite's
caches start from nothing); a path puts it elsewhere.
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from pathlib import Path

from numbax.codegen.cache import RUNTIME_SUBDIR, cache_key, version_dirname
from numbax.codegen.trust import installed_problem

INSTALLED_ENV = "NUMBAX_INSTALLED_RUNTIME"
STAMP_FILE = "stamp"
_ENTRY_SUFFIXES = (".nbi", ".nbc")  # Numba's index and data files: all that is installed


def runtime_stamp() -> str:
    """What the runtime cache's entries were compiled for: numbax's source, Numba's and
    NumPy's versions (an entry of another is stale)."""
    return cache_key("runtime")


def installed_runtime_dir() -> Path | None:
    """Where the installed runtime is (it may not exist), or None when it is turned off."""
    setting = os.environ.get(INSTALLED_ENV)
    if setting == "0":
        return None
    if setting:
        return Path(setting).expanduser()
    return Path(__file__).resolve().parents[1] / "_installed" / version_dirname() / RUNTIME_SUBDIR


@functools.cache
def usable_installed_runtime() -> Path | None:
    """The installed runtime's directory when this process may load from it (it exists,
    passes the checks of the module docstring, and its stamp is current); else None.
    Each of its files is checked again as it is read (``trust.installed_problem``)."""
    source = installed_runtime_dir()
    if source is None:
        return None
    try:
        if installed_problem(source) or installed_problem(source / STAMP_FILE):
            return None
        current = (source / STAMP_FILE).read_text(encoding="utf-8") == runtime_stamp()
    except OSError:
        return None
    return source if current else None


def install(built: Path, target: Path) -> int:
    """Make the runtime cache ``built`` (compiled by this numbax) the installed runtime at
    ``target``, replacing what was there; readable by everyone, writable by its owner.
    Returns the number of entries installed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}-{uuid.uuid4().hex[:8]}"
    staging.mkdir(mode=0o755)
    count = 0
    for source in sorted(built.iterdir()):
        if source.name.endswith(_ENTRY_SUFFIXES) and source.is_file():
            shutil.copyfile(source, staging / source.name, follow_symlinks=False)
            (staging / source.name).chmod(0o644)
            count += source.name.endswith(".nbi")
    (staging / STAMP_FILE).write_text(runtime_stamp(), encoding="utf-8")
    (staging / STAMP_FILE).chmod(0o644)
    staging.chmod(0o755)
    previous = target.parent / f".{target.name}-old-{uuid.uuid4().hex[:8]}"
    if os.path.lexists(target):
        os.rename(target, previous)
    os.rename(staging, target)
    shutil.rmtree(previous, ignore_errors=True)
    usable_installed_runtime.cache_clear()
    return count
