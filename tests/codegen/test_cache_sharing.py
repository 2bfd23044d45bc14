"""Concurrent first calls compile once; keys come from content, not from where the cache is;
huge static arguments cost what small ones do; ``python -m numbax cache`` reports and clears."""

import multiprocessing
import sys
import threading
import time

import gast
import numpy as np
import pytest

import numbax as nx
from numbax.__main__ import main
from numbax.codegen import cache
from numbax.transform.specialize import bake_static_arguments


def affine(x, k):
    return x * k + 1.0


def compiles(f, k: int) -> int:
    """How many times the specialization for ``k`` was compiled (not loaded) here."""
    return sum(f.specialize({"k": k}).dispatcher.stats.cache_misses.values())


def test_eight_threads_first_call_compile_once(cache_dir):
    f = nx.jit(affine, static_argnums=1)
    start = threading.Barrier(8)
    failures, results = [], []

    def first_calls():
        start.wait()
        for _ in range(6):
            try:
                results.append(f(np.float64(3.0), 201))
            except Exception as err:  # the test reports every failure
                failures.append(repr(err))

    threads = [threading.Thread(target=first_calls) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert results == [604.0] * 48
    assert compiles(f, 201) == 1


def _first_call_in_a_process(start, results) -> None:
    f = nx.jit(affine, static_argnums=1)
    start.wait()
    value = f(np.float64(3.0), 202)
    results.put((float(value), compiles(f, 202)))


@pytest.mark.skipif(sys.platform != "linux", reason="forks processes")
def test_eight_processes_on_a_cold_cache_compile_once(cache_dir):
    nx.jit(affine, static_argnums=1)  # the children fork with numbax loaded
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(8), context.Queue()
    processes = [
        context.Process(target=_first_call_in_a_process, args=(start, results)) for _ in range(8)
    ]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=240) for _ in processes]
    for process in processes:
        process.join()
    assert [p.exitcode for p in processes] == [0] * 8
    assert [value for value, _ in outcomes] == [607.0] * 8
    assert sum(n for _, n in outcomes) == 1  # one compiled, seven loaded its machine code


def cube(x):
    return np.sum(x * x * x)


def test_keys_do_not_depend_on_where_the_cache_is(cache_dir):
    """Nothing of the cache's location is in the generated text (of which the key is a
    hash): a cache copied elsewhere keeps its keys and stays warm."""
    compiled = nx.jit(nx.grad(cube)).specialize()
    assert "test_cache_sharing.py, line" in compiled.text  # names the user's file
    assert str(cache_dir) not in compiled.text
    assert cache.portable_path(compiled.path) == compiled.path.rsplit("/", 1)[-1]


def indexed(x, t):
    total = 0.0
    for v in t:
        total = total + v
    return x * len(t) + t[0] + t[-1] + np.sum(np.asarray(t)) + total


def test_a_huge_static_tuple_compiles_as_fast_as_a_small_one(cache_dir):
    f = nx.jit(indexed, static_argnums=1)
    huge = tuple(range(100_000))
    start = time.perf_counter()
    value = f(np.float64(2.0), huge)
    elapsed = time.perf_counter() - start
    assert value == 2.0 * 100_000 + 0 + 99_999 + 2 * sum(huge)
    assert elapsed < 10  # about 1 s alone; spelled out in the source it took minutes
    assert len(f.source) < 3000  # named by its content hash, not written out
    assert "tuple of 100000 items, sha256" in f.source


def quartic(x):
    return np.sum(x * x * x * x)


def test_cache_info_and_clear(cache_dir, capsys):
    nx.grad(quartic)(np.ones(3))
    assert main(["cache", "info"]) == 0
    info = capsys.readouterr().out
    assert str(cache_dir) in info and "generated modules" in info
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out
    assert not any(cache_dir.iterdir())
    nx.grad(lambda x: np.sum(x * x * x * x * x))(np.ones(3))  # the cache is made again
    assert any(cache_dir.iterdir())


@pytest.mark.parametrize(
    ("body", "bound_as"),
    [("x + t[1]", np.ndarray), ("x + len(t)", np.ndarray), ("x + t[1:]", tuple), ("t + t", tuple)],
)
def test_a_long_tuple_is_an_array_constant_only_where_it_means_the_same(body, bound_as):
    fn = gast.parse(f"def f(x, t):\n    return {body}\n").body[0]
    _, bound = bake_static_arguments(fn, {"t": tuple(range(100))})
    assert type(bound["t"]) is bound_as
    if bound_as is np.ndarray:
        assert not bound["t"].flags.writeable
    _, bound = bake_static_arguments(fn, {"t": (1, 2, 3)})
    assert bound == {}  # short: written into the source
