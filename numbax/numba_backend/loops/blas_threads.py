"""BLAS on as many threads as there are cores free, on a busy machine too.

Compiled code multiplies matrices with the OpenBLAS that SciPy ships (Numba calls it
through ``scipy.linalg.cython_blas``), which splits each product across every core.
When other work holds a core, the product waits for the thread that runs there:
``vmap(grad(mlp_loss))`` over 2,000 examples took a median of 5.0 ms against a
minimum of 1.9 ms on two cores with one busy, and 2.8 ms / 2.3 ms with OpenBLAS on one
thread.

So a daemon thread (:func:`watch`) looks every quarter of a second at how much of the
machine other processes use (``/proc/stat`` less this process's own time,
``/proc/self/stat``) and gives OpenBLAS the cores left: fewer threads when more than
half a core is busy elsewhere, all of them again once less than a quarter is. It only
lowers the count OpenBLAS had when it started, and stops changing it once someone else
has (``threadpoolctl``, the program itself). Linux only; elsewhere, or without SciPy's
OpenBLAS, nothing changes.

A map on every core (``pmap``) gives OpenBLAS one thread for the whole call
(:func:`one_blas_thread`), its first example included: that one runs before the others
start, and a product on OpenBLAS's threads leaves them spinning for a while after it
returns, on the cores the map's threads then need. On 13 cores the per-example MLP
gradients of ``benchmarks/scale.py`` took 0.169 s so, 0.122 s with OpenBLAS on one
thread for the whole call; a map on one thread took 0.96 s with OpenBLAS on 13 threads
(not one core), 1.07 s on one. Compiled code that runs examples within compiled code (a
``pmap`` inside ``jit``: ``loops/examples.py``) does the same around its threads, through
:func:`set_blas_threads` (OpenBLAS's functions linked by name, so the machine code stays
valid in the disk cache). The watcher leaves the count alone meanwhile.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import importlib.util
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import llvmlite.binding as ll
from llvmlite import ir
from numba.core import cgutils

_PERIOD_S = 0.25
_BUSY_CORES = 0.5  # used by other processes, above which a thread is given up
_FREE_CORES = 0.25  # below which the threads given up are taken back

_started = False
_lock = threading.Lock()
_GET_SYMBOL = "numbax_blas_get_num_threads"
_SET_SYMBOL = "numbax_blas_set_num_threads"
_symbols_added = False
_no_blas: list[Any] = []  # the stand-ins linked where SciPy's OpenBLAS is not found
_holding_lock = threading.Lock()
_holders = 0  # blocks of one_blas_thread running now, in any thread
_restore_to = 1  # OpenBLAS's thread count when the first of them began


def watch() -> None:
    """Start the watching thread, once per process (no-op where it cannot work)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    if os.path.exists("/proc/stat"):
        threading.Thread(target=_watch, name="numbax-blas-threads", daemon=True).start()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS on one thread within the block; its count comes back when the last such
    block (of any thread) ends, unless someone else changed it meanwhile. Without SciPy's
    OpenBLAS, nothing changes."""
    global _holders, _restore_to
    library = _openblas()
    if library is None:
        yield
        return
    with _holding_lock:
        if _holders == 0:
            _restore_to = library.get()
            if _restore_to != 1:
                library.set(1)
        _holders += 1
    try:
        yield
    finally:
        with _holding_lock:
            _holders -= 1
            if _holders == 0 and _restore_to != 1 and library.get() == 1:
                library.set(_restore_to)


@functools.cache
def _openblas() -> Any:
    """SciPy's OpenBLAS, with its thread-count functions typed; None if not found."""
    spec = importlib.util.find_spec("scipy")  # where it is, without importing it
    if spec is None or spec.origin is None:
        return None
    pattern = os.path.join(os.path.dirname(spec.origin) + ".libs", "*openblas*.so*")
    for path in glob.glob(pattern):
        try:
            library = ctypes.CDLL(path)
            library.get = library.scipy_openblas_get_num_threads
            library.set = library.scipy_openblas_set_num_threads
        except (OSError, AttributeError):
            continue
        library.get.restype, library.set.argtypes = ctypes.c_int, [ctypes.c_int]
        return library
    return None


def add_symbols() -> None:
    """Link :func:`set_blas_threads`'s two symbols to SciPy's OpenBLAS (or, without it, to
    functions that do nothing): before code calling it is compiled or loaded from the
    disk cache (``loops/threads.py``'s ``launch``)."""
    global _symbols_added
    with _lock:
        if _symbols_added:
            return
        library = _openblas()
        if library is not None:
            get, set_ = library.get, library.set
        else:
            get = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 1)
            set_ = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda n: None)
            _no_blas.extend([get, set_])  # kept alive: compiled code calls them
        ll.add_symbol(_GET_SYMBOL, ctypes.cast(get, ctypes.c_void_p).value)
        ll.add_symbol(_SET_SYMBOL, ctypes.cast(set_, ctypes.c_void_p).value)
        _symbols_added = True


def set_blas_threads(builder: ir.IRBuilder, count: ir.Value) -> ir.Value:
    """In compiled code (LLVM IR): give OpenBLAS ``count`` threads (an i32) and return
    how many it had (an i32), by the symbols :func:`add_symbols` links."""
    i32 = ir.IntType(32)
    module = builder.module
    get = cgutils.get_or_insert_function(module, ir.FunctionType(i32, []), _GET_SYMBOL)
    set_ = cgutils.get_or_insert_function(
        module, ir.FunctionType(ir.VoidType(), [i32]), _SET_SYMBOL
    )
    previous = builder.call(get, [])
    with builder.if_then(builder.icmp_signed("!=", count, previous)):
        builder.call(set_, [count])
    return previous


def other_busy_cores(before: tuple[int, int, float], after: tuple[int, int, float]) -> float:
    """Cores that other processes kept busy between two :func:`_sample` readings."""
    busy, own, wall = (a - b for a, b in zip(after, before, strict=True))
    if wall <= 0:
        return 0.0
    return max(0.0, (busy - own) / (os.sysconf("SC_CLK_TCK") * wall))


def _sample() -> tuple[int, int, float]:
    """(Jiffies every core spent busy, jiffies this process spent, seconds now)."""
    with open("/proc/stat", encoding="ascii") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
    with open("/proc/self/stat", encoding="ascii") as own:
        after_name = own.read().rsplit(")", 1)[1].split()
    mine = int(after_name[11]) + int(after_name[12])  # utime, stime
    return sum(fields[:8]) - idle, mine, time.monotonic()


def threads_wanted(full: int, chosen: int, busy: float) -> int:
    """OpenBLAS's thread count, now ``chosen`` of at most ``full``, when other processes
    keep ``busy`` cores busy: a thread less per busy core above :data:`_BUSY_CORES`,
    all of them below :data:`_FREE_CORES`, unchanged between (no flapping)."""
    if busy > _BUSY_CORES:
        return max(1, full - math.ceil(busy))
    if busy < _FREE_CORES:
        return full
    return chosen


def _watch() -> None:
    library = _openblas()  # here, so that finding it delays no call
    full = library.get() if library is not None else 1
    if full <= 1:
        return
    chosen = full
    before = _sample()
    while True:
        time.sleep(_PERIOD_S)
        after = _sample()
        busy = other_busy_cores(before, after)
        before = after
        current = library.get()
        if current == 1 and chosen != 1:  # a map on every core, for now (see above)
            continue
        if current != chosen:  # someone else set it: theirs to decide
            return
        wanted = threads_wanted(full, chosen, busy)
        if wanted != chosen:
            library.set(wanted)
            chosen = wanted
