"""Numba's per-compile timers are off during numbax's compiles only
(``numba_backend/caching/compile_timers.py``)."""

from __future__ import annotations

import contextlib

import numba
import numpy as np
import pytest
from numba.core import event

import numbax as nx
from numbax.numba_backend.caching import compile_timers
from numbax.numba_backend.caching.compiling import numbax_compiling


def _fresh():
    @numba.njit
    def twice(x):
        return 2.0 * x

    return twice


def _metadata(dispatcher):
    return dispatcher.get_metadata(dispatcher.signatures[0])


def test_a_compile_within_numbax_compiling_installs_no_timers():
    function = _fresh()
    with numbax_compiling():
        assert function(1.5) == 3.0
    assert "timers" not in _metadata(function)


def test_a_users_own_compile_keeps_numbas_timers():
    function = _fresh()
    assert function(1.5) == 3.0
    timers = _metadata(function)["timers"]
    assert timers["compiler_lock"] > 0 and timers["llvm_lock"] > 0


def test_numbax_compiling_ends_with_its_block_even_on_an_error():
    with pytest.raises(ValueError, match="inside"), numbax_compiling():
        raise ValueError("inside")
    function = _fresh()
    function(1.0)
    assert "timers" in _metadata(function)


def test_numbax_compiles_its_programs_untimed(monkeypatch, cache_dir):
    installed = []

    def install(kind, callback):
        installed.append(kind)
        return contextlib.nullcontext()

    monkeypatch.setattr(compile_timers, "_numba_install_timer", install)

    def scaled(x):
        return np.sum(x * 3.0 + 0.25)

    with event.install_recorder("numba:compile") as compiles:
        assert nx.jit(scaled)(np.arange(4.0)) == scaled(np.arange(4.0))
    assert compiles.buffer  # compiled here, from an empty cache
    assert installed == []
    _fresh()(1.0)  # outside: Numba's timers
    assert installed == ["numba:compiler_lock", "numba:llvm_lock"]
