"""The Numba implementations numbax's generated code calls are tested through plain
``numba.njit`` wrappers; they compile here as they do under ``nx.jit``, with large
callees linked after optimization (``numbax/numba_backend/caching/linking.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from numbax.numba_backend.caching.linking import linking_large_callees_late


@pytest.fixture(autouse=True)
def linked_as_numbax_links(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.module.__name__.endswith("test_linking"):  # tests the linking itself
        yield
        return
    with linking_large_callees_late():
        yield
