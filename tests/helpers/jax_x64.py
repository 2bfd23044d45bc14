"""JAX as the reference to compare with, in the precision asked for."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType

import pytest


@contextlib.contextmanager
def jax_x64(enabled: bool = True) -> Iterator[ModuleType]:
    """``jax`` with ``jax_enable_x64`` set to ``enabled`` (JAX computes in float32
    unless it is on), restored afterwards rather than left to whichever test runs next;
    the test is skipped where JAX is not installed."""
    jax = pytest.importorskip("jax")
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield jax
    finally:
        jax.config.update("jax_enable_x64", previous)
