"""OpenBLAS's thread count follows the cores other processes leave free
(``numba_backend/loops/blas_threads.py``)."""

import os

import pytest

from numbax.numba_backend.loops import blas_threads


def test_a_thread_is_given_up_per_busy_core_and_taken_back_once_they_are_free():
    assert blas_threads.threads_wanted(4, 4, 0.0) == 4
    assert blas_threads.threads_wanted(4, 4, 0.7) == 3
    assert blas_threads.threads_wanted(4, 4, 2.2) == 1
    assert blas_threads.threads_wanted(2, 2, 5.0) == 1  # never none
    assert blas_threads.threads_wanted(4, 3, 0.4) == 3  # between the bounds: kept
    assert blas_threads.threads_wanted(4, 1, 0.1) == 4


def test_busy_cores_are_the_machines_less_this_process():
    hz = os.sysconf("SC_CLK_TCK")
    before = (1000, 300, 10.0)
    after = (1000 + 2 * hz, 300 + hz, 11.0)  # two cores busy for 1 s, one of them ours
    assert blas_threads.other_busy_cores(before, after) == pytest.approx(1.0)
    assert blas_threads.other_busy_cores(before, (1000, 300 + hz, 11.0)) == 0.0
    assert blas_threads.other_busy_cores(before, before) == 0.0


def test_a_sample_reads_the_machine_and_this_process():
    busy, own, now = blas_threads._sample()
    assert busy >= own >= 0 and now > 0


def test_scipys_openblas_is_found_and_its_thread_count_set():
    library = blas_threads._openblas()  # SciPy is a dependency; its wheels bundle OpenBLAS
    assert library is not None
    full = library.get()
    try:
        library.set(1)
        assert library.get() == 1
    finally:
        library.set(full)
    assert library.get() == full


class _FakeOpenBLAS:
    def __init__(self, count: int) -> None:
        self.count = count
        self.sets: list[int] = []

    def get(self) -> int:
        return self.count

    def set(self, count: int) -> None:
        self.sets.append(count)
        self.count = count


def test_one_thread_within_overlapping_blocks_and_the_count_back_after_the_last(monkeypatch):
    fake = _FakeOpenBLAS(8)
    monkeypatch.setattr(blas_threads, "_openblas", lambda: fake)
    first, second = blas_threads.one_blas_thread(), blas_threads.one_blas_thread()
    first.__enter__()
    assert fake.count == 1
    second.__enter__()  # another map meanwhile (another Python thread)
    first.__exit__(None, None, None)
    assert fake.count == 1  # the other still runs
    second.__exit__(None, None, None)
    assert fake.count == 8 and fake.sets == [1, 8]


def test_a_count_someone_else_set_meanwhile_is_theirs(monkeypatch):
    fake = _FakeOpenBLAS(8)
    monkeypatch.setattr(blas_threads, "_openblas", lambda: fake)
    with pytest.raises(RuntimeError), blas_threads.one_blas_thread():
        fake.set(3)  # threadpoolctl, the program itself
        raise RuntimeError("the map failed")
    assert fake.count == 3
    with blas_threads.one_blas_thread():
        assert fake.count == 1
    assert fake.count == 3  # back after an error too
