"""Test-wide set-up: a private numbax cache per test session, so runs start cold."""

import functools
import inspect
import os
import re
import tempfile
from typing import Any

import pytest

# Before numbax is imported anywhere: generated modules and Numba's disk cache go to a
# fresh directory per test process (xdist workers each get their own).
os.environ.setdefault("NUMBAX_CACHE_DIR", tempfile.mkdtemp(prefix="numbax-test-cache-"))


# -- the `jit` marker: tests that compile with Numba ----------------------------------
# Numba's first compile of a function takes 0.2-2 s, so compiled checks are most of the
# suite's time. A test is marked `jit` when its own code, a fixture it uses, or its
# parameters mention jit, so `pytest -m "not jit"` runs the interpreted half in a few
# minutes (the README's "fast half") and `pytest -m jit` the rest. Marking by reading the
# code keeps new tests classified without anyone remembering a decorator.
_COMPILES = re.compile(r"\bjit\b|\bnjit\b|backend=|\bnumba\b")


@functools.cache
def _mentions_jit(function: Any) -> bool:
    try:
        return bool(_COMPILES.search(inspect.getsource(function)))
    except (OSError, TypeError):
        return False


def _fixture_functions(item: pytest.Item) -> list[Any]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [d.func for defs in info.name2fixturedefs.values() for d in defs]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        compiled = (
            _mentions_jit(getattr(item, "function", None))
            or any(_mentions_jit(f) for f in _fixture_functions(item))
            or (callspec is not None and "jit" in callspec.id)
        )
        if compiled:
            item.add_marker(pytest.mark.jit)
