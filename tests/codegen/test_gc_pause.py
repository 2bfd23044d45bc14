"""Full garbage collections are rarer while numbax generates code
(``numbax/codegen/gc_pause.py``), and Python's thresholds come back after."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import numpy as np
import pytest

import numbax as nx
from numbax.api import transformed
from numbax.codegen import gc_pause
from numbax.codegen.gc_pause import FULL_COLLECTION_FACTOR, fewer_full_collections


@pytest.fixture(autouse=True)
def known_thresholds():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_full_collections_are_rarer_within_the_block_and_restored_after():
    with fewer_full_collections():
        assert gc.get_threshold() == (700, 10, 10 * FULL_COLLECTION_FACTOR)
        with fewer_full_collections():  # nested: still paused after the inner block
            assert gc.get_threshold() == (700, 10, 10 * FULL_COLLECTION_FACTOR)
        assert gc.get_threshold() == (700, 10, 10 * FULL_COLLECTION_FACTOR)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_thresholds_come_back_after_an_error():
    with pytest.raises(ZeroDivisionError), fewer_full_collections():
        1 / 0  # noqa: B018
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_blocks_in_two_threads_restore_once_both_end():
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        with fewer_full_collections():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=other_thread)
    worker.start()
    inside.wait(10)
    with fewer_full_collections():
        assert gc.get_threshold() == (700, 10, 10 * FULL_COLLECTION_FACTOR)
    assert gc.get_threshold() == (700, 10, 10 * FULL_COLLECTION_FACTOR)  # the other is in
    release.set()
    worker.join(10)
    assert gc.get_threshold() == (700, 10, 10)


def cube_sum(x):
    return np.sum(x**3)


def test_a_derivative_is_generated_within_the_block(monkeypatch):
    seen = []
    normalize = transformed.normalize

    def recording(*args, **kwargs):
        seen.append(gc.get_threshold())
        return normalize(*args, **kwargs)

    monkeypatch.setattr(transformed, "normalize", recording)
    np.testing.assert_allclose(nx.grad(cube_sum)(np.array([1.0, 2.0])), [3.0, 12.0])
    assert seen and all(t == (700, 10, 10 * FULL_COLLECTION_FACTOR) for t in seen)
    assert gc.get_threshold() == (700, 10, 10)


def quartic_sum(x):
    return np.sum(x**4)


def _a_block_ends() -> None:
    """One outermost block, empty: what ends a generation or a compile, and settles."""
    with fewer_full_collections():
        pass


class Cycle:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_what_a_compile_leaves_is_frozen_so_full_collections_skip_it(monkeypatch):
    monkeypatch.setattr(gc_pause, "SETTLE_AFTER", 0.0)  # however fast its compile is here
    gc.unfreeze()
    gradient = nx.jit(nx.grad(quartic_sum))
    np.testing.assert_allclose(gradient(np.array([1.0, 2.0])), [4.0, 32.0])
    assert gc.get_freeze_count() > 100_000  # Numba's contexts, the compiled code...
    assert len(gc.get_objects()) < 5_000  # ... which the user's full collections skip


def test_a_later_block_thaws_and_frees_cycles_dropped_after_the_freeze(monkeypatch):
    """The block every generation and compile runs in (as the tests above show): one
    that ends :data:`THAW_AFTER` seconds after the last thaw unfreezes what an earlier
    one froze, and collects it. (Not through compiles: a compile opens dozens of such
    blocks, and each collection of a test process's whole heap takes a second.)"""
    monkeypatch.setattr(gc_pause, "SETTLE_AFTER", 0.0)
    dropped = Cycle()
    alive = weakref.ref(dropped)
    _a_block_ends()  # settles: what is alive now is frozen
    del dropped
    gc.collect()
    assert alive() is not None  # frozen: the collection skips it
    monkeypatch.setattr(gc_pause, "THAW_AFTER", 0.0)
    monkeypatch.setattr(gc_pause, "THAW_COST_FACTOR", 0.0)
    _a_block_ends()
    assert alive() is None


def test_a_thaw_waits_a_hundred_times_what_the_last_one_took(monkeypatch):
    monkeypatch.setattr(gc_pause, "SETTLE_AFTER", 0.0)
    monkeypatch.setattr(gc_pause, "THAW_AFTER", 0.0)
    monkeypatch.setattr(gc_pause, "_last_thaw_seconds", 2.0)
    dropped = Cycle()
    alive = weakref.ref(dropped)
    monkeypatch.setattr(gc_pause, "_last_thaw", time.monotonic() - 150.0)
    _a_block_ends()  # 150 s after a thaw of 2 s: none, a freeze
    del dropped
    _a_block_ends()
    assert alive() is not None
    monkeypatch.setattr(gc_pause, "_last_thaw", time.monotonic() - 250.0)
    _a_block_ends()  # 250 s after
    assert alive() is None


def test_nothing_is_frozen_while_the_collector_is_disabled(monkeypatch):
    monkeypatch.setattr(gc_pause, "SETTLE_AFTER", 0.0)
    gc.unfreeze()
    gc.disable()
    try:
        nx.jit(nx.hessian(cube_sum))(np.array([1.0, 2.0]))
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
