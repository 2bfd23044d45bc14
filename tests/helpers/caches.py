"""Looking into caches: how often a Numba dispatcher loaded its machine code from its
disk cache or compiled it, and generated modules of numbax's cache unique to a test."""

from __future__ import annotations

from numbax.codegen import cache
from numbax.codegen.load import module_name


def hits(dispatcher) -> int:
    """How many of ``dispatcher``'s signatures were loaded from its disk cache."""
    return sum(dispatcher.stats.cache_hits.values())


def misses(dispatcher) -> int:
    """How many of ``dispatcher``'s signatures were compiled, not found in its cache."""
    return sum(dispatcher.stats.cache_misses.values())


def fresh_module(tag: str) -> tuple[str, str]:
    """A generated module unique to ``tag``: its name and text (not loaded yet)."""
    text = f"def f(x):\n    return x + 1  # {tag}\n"
    return module_name("f", cache.cache_key(text)), text
