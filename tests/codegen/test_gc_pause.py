"""Full garbage collections are rarer while numbax generates code
(``numbax/codegen/gc_pause.py``), and Python's thresholds come back after."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import numbax as nx
from numbax.api import transformed
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
