"""Fused elementwise loops over large arrays run on every thread (``threads.py``): the
same numbers as one thread, each element computed once, errors raised as on one thread,
and one thread where threads are not safe or not wanted."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.loops import threads
from numbax.numba_backend.loops.elementwise import elementwise
from numbax.numba_backend.loops.threads import PARALLEL_MIN_ELEMENTS, launch

LARGE = PARALLEL_MIN_ELEMENTS * 3 + 7  # not a multiple of the thread count


@elementwise
def _thread_of(x):
    """Which thread computed the element (x is read so the loop has an input)."""
    return numba.get_thread_id() + 0 * x


@elementwise
def _checked_log(x):
    if x < 0.0:
        raise ValueError("negative input")
    return np.log(x)


@elementwise(weak=("scale",))
def _scaled_where(flag, x, scale):
    return x * scale if flag else -x


@numba.njit
def _threads_used(x):
    return _thread_of(x)


@numba.njit
def _log_all(x):
    return _checked_log(x)


@numba.njit
def _mixed(flag, x, scale):
    return _scaled_where(flag, x, scale)


@pytest.fixture
def two_threads():
    launch()
    if numba.threading_layer() not in ("omp", "tbb") or numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numbax uses threads with the omp or tbb layer, on two cores or more")
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    yield
    numba.set_num_threads(previous)


def _both_threads_take_part(function, x) -> bool:
    """Whether some call of ``function`` ran on both threads: a thread takes chunks as it
    comes, so on a busy machine (the other core compiling, in a test run) the second may
    find none left when the system wakes it, and loops then run alone for a while. Calls
    over a longer array, each after that while, for up to five seconds, make it sure."""
    x = np.resize(x, max(x.size, 40 * PARALLEL_MIN_ELEMENTS + 7))  # ~10 ms a call
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        threads._backoff[0] = 0  # the while is over
        if set(np.unique(function(x))) == {0, 1}:
            return True
        time.sleep(0.01)
    return False


def test_a_large_loop_runs_on_every_thread_and_a_small_one_on_one(two_threads):
    x = np.ones(LARGE)
    assert set(np.unique(_threads_used(x))) <= {0, 1}
    assert _both_threads_take_part(_threads_used, x)
    assert set(np.unique(_threads_used(np.ones(PARALLEL_MIN_ELEMENTS - 1)))) == {0}


def _threads_of_jitted(x):
    return _threads_used(x)


def test_one_thread_when_numba_is_told_so_or_the_function_asks(two_threads):
    numba.set_num_threads(1)
    assert set(np.unique(_threads_used(np.ones(LARGE)))) == {0}
    numba.set_num_threads(2)
    assert _both_threads_take_part(nx.jit(_threads_of_jitted), np.ones(LARGE))
    serial = nx.jit(_threads_of_jitted, parallel=False)
    assert set(np.unique(serial(np.ones(LARGE)))) == {0}
    assert numba.get_num_threads() == 2  # as it was


@numba.njit(parallel=True)
def _threads_under_prange(x):
    total = 0.0
    for i in numba.prange(2):
        total += i
    return _thread_of(x) + 0.0 * total


def test_no_threads_of_its_own_inside_numbas_parallel_code(two_threads):
    assert set(np.unique(_threads_under_prange(np.ones(LARGE)))) == {0}


def test_the_numbers_are_those_of_one_thread(two_threads):
    rng = np.random.default_rng(0)
    flag = rng.random(LARGE) > 0.5  # booleans are bytes in memory, bits in registers
    x = rng.standard_normal(LARGE).astype(np.float32)
    together = _mixed(flag, x, 1.5)
    numba.set_num_threads(1)
    alone = _mixed(flag, x, 1.5)
    assert together.dtype == np.float32
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(together, np.where(flag, x * np.float32(1.5), -x))


def test_an_error_in_any_chunk_is_raised_as_on_one_thread(two_threads):
    x = np.ones(LARGE)
    np.testing.assert_allclose(_log_all(x), 0.0)
    x[-1] = -1.0  # in the last thread's chunk
    with pytest.raises(ValueError, match="negative input"):
        _log_all(x)


def _child(queue):
    queue.put(sorted(np.unique(_threads_used(np.ones(LARGE))).tolist()))


def test_a_forked_child_runs_on_one_thread(two_threads):
    """GNU OpenMP terminates a forked child that enters a parallel region its parent
    started: numbax's loops stay on the child's own thread."""
    assert _both_threads_take_part(_threads_used, np.ones(LARGE))  # the parent's threads
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [0]


def test_jit_runs_a_large_fused_line_on_every_thread(two_threads):
    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)

    x = np.random.default_rng(1).standard_normal(LARGE).astype(np.float32)
    fast = nx.jit(selu)
    together = fast(x)
    numba.set_num_threads(1)
    np.testing.assert_array_equal(together, fast(x))
    np.testing.assert_allclose(
        together, selu(x), rtol=2e-6, atol=1e-6
    )  # alpha * exp(x) - alpha cancels near 0


def test_after_the_other_threads_came_late_loops_run_alone_for_a_while(two_threads):
    x = np.ones(LARGE)
    threads._backoff[0] = threads._backoff[1] = 0
    assert _both_threads_take_part(_threads_used, x)
    # as if the other threads had come late just now: 50 ms (and more) of loops alone
    threads._backoff[0] = time.monotonic_ns() + 10**9
    assert set(np.unique(_threads_used(x))) == {0}
    threads._backoff[0] = 0
    assert _both_threads_take_part(_threads_used, x)


_SPIN_SETTING = """
import os
from numbax.numba_backend.loops.threads import launch
launch()
print(os.environ.get("GOMP_SPINCOUNT"))
"""


@pytest.mark.parametrize(("given", "kept"), [(None, "1000"), ("250000", "250000")])
def test_idle_threads_spin_briefly_unless_the_user_says_otherwise(given, kept):
    """GNU OpenMP reads ``GOMP_SPINCOUNT`` when Numba's threading layer loads it: numbax
    sets a short spin before that, and keeps a value the user set."""
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    if given is not None:
        env["GOMP_SPINCOUNT"] = given
    run = subprocess.run(
        [sys.executable, "-c", _SPIN_SETTING], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == kept
