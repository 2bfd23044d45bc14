"""What ``python -m numbax cache info`` and ``cache clear`` report and do.

The cache holds only what numbax can rebuild, so clearing it is always safe: the next
call of each function generates and compiles it again. Only what numbax creates under
the cache root is removed (the versioned directories and any moved aside as untrusted).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from numbax.codegen.cache import RUNTIME_SUBDIR, cache_root, forget_directories
from numbax.codegen.load import GENERATED_PREFIX


@dataclass
class CacheInfo:
    """Where the cache is, how many generated modules and compiled runtime helpers it
    holds, and how large it is."""

    location: Path
    entries: int
    size_bytes: int
    runtime_helpers: int = 0

    def __str__(self) -> str:
        return (
            f"location: {self.location}\n"
            f"entries:  {self.entries} generated modules, "
            f"{self.runtime_helpers} compiled runtime helpers\n"
            f"size:     {self.size_bytes / 1e6:.1f} MB"
        )


def _owned(root: Path) -> list[Path]:
    """The directories numbax made under ``root``."""
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and not p.is_symlink() and p.name.startswith(("py", ".untrusted-py"))
    )


def cache_info() -> CacheInfo:
    """What the cache at :func:`~numbax.codegen.cache.cache_root` holds now."""
    root = cache_root()
    entries = size = helpers = 0
    for directory in _owned(root):
        for dirpath, _, files in os.walk(directory):
            for name in files:
                path = Path(dirpath, name)
                size += path.lstat().st_size
                entries += dirpath == str(directory) and name.startswith(GENERATED_PREFIX)
                helpers += dirpath == str(directory / RUNTIME_SUBDIR) and name.endswith(".nbi")
    return CacheInfo(root, entries, size, helpers)


def clear_cache() -> CacheInfo:
    """Remove everything numbax cached; returns what there was."""
    before = cache_info()
    for directory in _owned(before.location):
        shutil.rmtree(directory)
    forget_directories()
    return before
