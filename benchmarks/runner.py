"""A small side-by-side benchmark framework: numbax against NumPy, JAX and hand-written Numba.

A workload is one computation implemented by several *peers*. The runner builds the
inputs once, checks every peer's output against NumPy's (values, and for every peer the
dtype too: a float32 computation that comes back float64 did different work), and only
then times each peer: the first call (which includes compilation), then the median and
minimum of repeated runs after warm-up. Ratios numbax/peer are what to quote, because
the machines these run on are shared and noisy.

JAX's ``jax_enable_x64`` flag is global, so each JAX measurement runs inside
:func:`jax_x64`, which turns the flag on only when an input is a 64-bit array and
restores it afterwards. A float32 workload therefore runs exactly as JAX's default
configuration runs it, a float64 workload computes in float64 (with x64 off JAX would
silently demote it), and JAX's compilation cache keys on the flag, so one workload's
setting never leaks into another's compiled code.

Workload files (``workloads_jit.py``, later grad and vmap files) each define a
``WORKLOADS`` list; add a file's module name to :data:`WORKLOAD_MODULES` to register it.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import math
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from benchmarks import report

PEERS = ("numpy", "numbax", "jax", "autograd", "numba")
"""Every peer a workload may implement, in the order they are run and printed."""

WORKLOAD_MODULES = (
    "benchmarks.bandwidth",
    "benchmarks.workloads_jit",
    "benchmarks.workloads_grad",
    "benchmarks.workloads_loops",
    "benchmarks.workloads_md",
    "benchmarks.workloads_vmap",
)
"""Modules whose ``WORKLOADS`` lists make up the suite, run in this order."""

MIN_SAMPLE_S = 1e-3
"""A timed sample repeats the call until it lasts this long, so timer resolution is moot."""

MIN_REPEATS = 5
"""Fewest samples behind a median, however slow the call."""


@dataclass(frozen=True)
class Config:
    """Run-wide settings. ``quick`` shrinks inputs and time budgets for a smoke run;
    ``repeat`` is how many times each workload's whole measurement runs (``--repeat``)."""

    quick: bool = False
    repeat: int = 1

    @property
    def target_s(self) -> float:
        """Least total time spent on the repeated runs of one measurement."""
        return 0.02 if self.quick else 0.2


@dataclass
class Row:
    """One line of the results table (and one object of the ``--json`` output).

    ``ratio`` is numbax's time divided by this peer's: above 1, numbax is slower.
    ``faults_per_call`` is the minor page faults of the whole process during the timed
    samples, per call (see :func:`time_steady`). ``error`` is non-empty when the peer
    failed or disagreed with NumPy; ``extra`` holds workload-specific numbers
    (bandwidths, byte counts, each run's median under ``--repeat``) for the JSON file.
    """

    workload: str
    peer: str
    first_s: float | None = None
    median_s: float | None = None
    min_s: float | None = None
    faults_per_call: float | None = None
    ratio: float | None = None
    note: str = ""
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Workload(Protocol):
    """Anything with an id, a description and a ``run`` producing table rows."""

    id: str
    description: str

    def run(self, config: Config) -> list[Row]: ...


@dataclass(frozen=True)
class Timing:
    """Per-call times of the steady state: ``number`` calls per sample, ``repeats`` samples;
    ``faults_per_call``: minor page faults during those samples, per call."""

    median_s: float
    min_s: float
    repeats: int
    number: int
    faults_per_call: float


# -- timing ----------------------------------------------------------------------------


def _sample(call: Callable[[], Any], number: int) -> float:
    """Seconds for ``number`` back-to-back calls, with the garbage collector off (as timeit)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            call()
        return time.perf_counter() - start
    finally:
        if was_enabled:
            gc.enable()


def _calibrate(call: Callable[[], Any]) -> tuple[int, float]:
    """Calls per sample (a power of ten) for a sample of at least MIN_SAMPLE_S; warms up too."""
    number = 1
    while True:
        elapsed = _sample(call, number)
        if elapsed >= MIN_SAMPLE_S:
            return number, elapsed
        number *= 10


def time_steady(call: Callable[[], Any], target_s: float, number: int | None = None) -> Timing:
    """Median and minimum per-call time of ``call`` after warm-up, and its page faults.

    ``number`` fixes the calls per sample (for microsecond calls, where the loop must be
    long); otherwise it is calibrated. The sample count adapts so that all samples
    together take at least ``target_s``. Minor page faults (``ru_minflt``) are counted
    around the timed samples only, warm-up excluded: a call that keeps faulting in fresh
    pages for its temporaries pays for it in every call, which the times alone do not
    explain. ``RUSAGE_SELF`` counts the whole process, so threads the peer runs (JAX's,
    BLAS's) are included.
    """
    if number is None:
        number, elapsed = _calibrate(call)
    else:
        elapsed = _sample(call, number)
    repeats = max(MIN_REPEATS, math.ceil(target_s / max(elapsed, 1e-9)))
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    per_call = [_sample(call, number) / number for _ in range(repeats)]
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
    return Timing(
        statistics.median(per_call), min(per_call), repeats, number, faults / (repeats * number)
    )


def time_first(call: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken by one call (the first: compilation included) and its result."""
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


# -- correctness -----------------------------------------------------------------------


def tolerance(dtype: np.dtype) -> float:
    """Relative and absolute tolerance: a few dozen ulps for floats, exact otherwise.

    Peers use different ``exp`` implementations (NumPy's SIMD one, libm's, XLA's), each
    within a few ulps; anything beyond 64 ulps is a real difference.
    """
    if np.issubdtype(dtype, np.inexact):
        return 64 * float(np.finfo(dtype).eps)
    return 0.0


def disagreement(expected: Any, got: Any, args: Sequence[Any], rtol: float | None = None) -> str:
    """Empty when ``got`` matches NumPy's ``expected`` in dtype, shape and value; else why not.

    The message names the first differing element and, for elementwise workloads (first
    argument of the output's shape), the input value there, so a bug report can be written
    straight from it.
    """
    if isinstance(expected, tuple | list | dict):  # gradients of several parameters
        from numbax.tree_util import tree_leaves

        want_leaves, have_leaves = tree_leaves(expected), tree_leaves(got)
        if len(want_leaves) != len(have_leaves):
            return f"{len(have_leaves)} results, NumPy gives {len(want_leaves)}"
        for i, (w, h) in enumerate(zip(want_leaves, have_leaves, strict=True)):
            problem = disagreement(w, h, (), rtol)
            if problem:
                return f"result {i}: {problem}"
        return ""
    want, have = np.asarray(expected), np.asarray(got)
    if have.dtype != want.dtype:
        return f"dtype {have.dtype}, NumPy gives {want.dtype}"
    if have.shape != want.shape:
        return f"shape {have.shape}, NumPy gives {want.shape}"
    tol = tolerance(want.dtype) if rtol is None else rtol
    close = np.isclose(have, want, rtol=tol, atol=tol, equal_nan=True)
    if close.all():
        return ""
    index = tuple(int(i) for i in np.argwhere(~close)[0])
    where = f"at index {index}" if index else "value"
    first = args[0] if args else None
    if isinstance(first, np.ndarray) and first.shape == want.shape:
        where += f" (input {first[index]!r})"
    return (
        f"{int((~close).sum())} of {want.size} values differ beyond rtol=atol={tol:.1e}; "
        f"{where}: NumPy {want[index]!r}, got {have[index]!r}"
    )


# -- peers -----------------------------------------------------------------------------


def peer_available(peer: str) -> bool:
    """JAX and autograd are optional (the ``compare`` extra); the others are core."""
    if peer in ("jax", "autograd"):
        return importlib.util.find_spec(peer) is not None
    return True


def needs_x64(args: Sequence[Any]) -> bool:
    """Whether any argument (or a leaf of one) is 64-bit (JAX would demote it)."""
    from numbax.tree_util import tree_leaves

    wide = (np.float64, np.int64, np.uint64, np.complex128)
    leaves = tree_leaves(list(args))
    return any(isinstance(a, np.ndarray | np.generic) and a.dtype in wide for a in leaves)


@contextmanager
def jax_x64(enabled: bool) -> Iterator[None]:
    """Set JAX's global ``jax_enable_x64`` for the duration, then restore it."""
    import jax

    previous = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", previous)


def bind(peer: str, fun: Callable[..., Any], args: Sequence[Any]) -> Callable[[], Any]:
    """A no-argument call of ``fun`` on ``args`` as that peer's users would time it.

    JAX's inputs are moved to the device beforehand (as arrays made by ``jax.random``
    would already be), and each call waits for its result: JAX dispatches asynchronously.
    """
    if peer != "jax":
        return lambda: fun(*args)
    import jax

    device_args = [jax.device_put(a) if isinstance(a, np.ndarray | tuple) else a for a in args]
    return lambda: jax.block_until_ready(fun(*device_args))


@dataclass
class PeerWorkload:
    """One computation, one implementation per peer, timed side by side in this process.

    ``inputs(quick)`` builds the arguments. ``impls`` maps a peer name to a factory that
    returns the callable: factories defer JAX imports and Numba compilation until the peer
    is measured, and make the first call's time include compilation. ``calls_per_sample``
    fixes the loop length for microsecond-scale calls (divided by ten under ``--quick``).
    ``bandwidth_bound`` workloads get their achieved bandwidth compared with the triad.
    """

    id: str
    description: str
    inputs: Callable[[bool], tuple[Any, ...]]
    impls: dict[str, Callable[[], Callable[..., Any]]]
    calls_per_sample: int | None = None
    bandwidth_bound: bool = False
    rtol: float | None = None  # for results that sum in different orders (gradients)

    def run(self, config: Config) -> list[Row]:
        """Measure every available peer; NumPy's output is the reference for all."""
        args = self.inputs(config.quick)
        expected = self.impls["numpy"]()(*args)
        rows = []
        for peer in PEERS:
            if peer in self.impls and peer_available(peer):
                progress(f"  {self.id}: {peer}")
                rows.append(self._measure_safely(peer, args, expected, config))
                if self.bandwidth_bound:
                    rows[-1].extra["bytes_moved"] = bytes_moved(args, expected)
        set_ratios(rows)
        return rows

    def _measure_safely(self, peer: str, args: tuple, expected: Any, config: Config) -> Row:
        """A failing peer becomes a row with its error, so the other peers still run."""
        try:
            return self._measure(peer, args, expected, config)
        except Exception as err:  # any failure is reported, not raised
            return Row(self.id, peer, error=f"{type(err).__name__}: {first_line(err)}")

    def _measure(self, peer: str, args: tuple, expected: Any, config: Config) -> Row:
        context = jax_x64(needs_x64(args)) if peer == "jax" else nullcontext()
        with context:
            call = bind(peer, self.impls[peer](), args)
            first_s, result = time_first(call)
            mismatch = disagreement(expected, result, args, self.rtol)
            timing = time_steady(call, config.target_s, self._number(config))
        return Row(
            self.id,
            peer,
            first_s=first_s,
            median_s=timing.median_s,
            min_s=timing.min_s,
            faults_per_call=timing.faults_per_call,
            note=f"MISMATCH: {mismatch}" if mismatch else "",
            error=mismatch,
            extra={"repeats": timing.repeats, "number": timing.number},
        )

    def _number(self, config: Config) -> int | None:
        if self.calls_per_sample is None:
            return None
        return max(1, self.calls_per_sample // 10) if config.quick else self.calls_per_sample


def bytes_moved(args: Sequence[Any], result: Any) -> int:
    """Bytes an elementwise computation must move at least: array inputs read, result written."""
    return sum(a.nbytes for a in args if isinstance(a, np.ndarray)) + np.asarray(result).nbytes


def set_ratios(rows: list[Row]) -> None:
    """Fill ``ratio``: numbax's median time over each other peer's."""
    numbax = next((r for r in rows if r.peer == "numbax" and r.median_s), None)
    if numbax is None:
        return
    for row in rows:
        if row is not numbax and row.median_s:
            row.ratio = numbax.median_s / row.median_s


def first_line(err: BaseException) -> str:
    """The first line of an exception's message (Numba's run to dozens of lines)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else repr(err)


def progress(message: str) -> None:
    """Progress goes to stderr so stdout holds only the table."""
    print(message, file=sys.stderr, flush=True)


# -- registry and selection ------------------------------------------------------------


def all_workloads() -> list[Workload]:
    """Every registered workload, in registration order; ids must be unique."""
    workloads: list[Workload] = []
    for name in WORKLOAD_MODULES:
        workloads.extend(importlib.import_module(name).WORKLOADS)
    ids = [w.id for w in workloads]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate workload ids: {duplicates}")
    return workloads


def select(workloads: list[Workload], only: str | None) -> list[Workload]:
    """The workloads named in ``--only`` (comma-separated), plus the triad when a
    bandwidth-bound one is among them (its numbers are quoted against the triad)."""
    if not only:
        return workloads
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    unknown = wanted - {w.id for w in workloads}
    if unknown:
        known = ", ".join(w.id for w in workloads)
        raise SystemExit(f"unknown workload(s) {sorted(unknown)}; known: {known}")
    if any(getattr(w, "bandwidth_bound", False) for w in workloads if w.id in wanted):
        wanted.add("triad")
    return [w for w in workloads if w.id in wanted]


def run_workload(workload: Workload, config: Config) -> list[Row]:
    """Run one workload; a failure outside any peer becomes a single error row."""
    progress(f"{workload.id}: {workload.description}")
    try:
        return workload.run(config)
    except Exception as err:  # keep going with the other workloads
        return [Row(workload.id, "-", error=f"{type(err).__name__}: {first_line(err)}")]


def run_repeated(workload: Workload, config: Config) -> list[Row]:
    """Run one workload ``config.repeat`` times in this process and merge the runs' rows."""
    if config.repeat == 1:
        return run_workload(workload, config)
    runs = []
    for index in range(config.repeat):
        progress(f"[run {index + 1}/{config.repeat}]")
        runs.append(run_workload(workload, config))
    return merge_runs(runs)


def merge_runs(runs: list[list[Row]]) -> list[Row]:
    """One row per (workload, peer) of the first run, summarizing every run's.

    The median is the median of the runs' medians and the minimum the minimum of their
    minimums: from three runs on, one run slowed by other work on the shared machine no
    longer moves the median, and never the minimum. Page faults per call are the median
    of the runs'. Ratios numbax/peer are recomputed from the merged medians; rows of a
    workload without a ``numbax`` row (``coldstart`` and ``lorenz_compile`` compare
    against their own baselines) get the median of their runs' ratios. The first call,
    the note and ``extra`` are the first run's (later runs find numbax's disk cache and
    JAX's in-memory cache filled), plus every run's median in ``extra["run_medians"]``;
    a failure or mismatch in any run makes the row an error row.
    """
    merged = []
    for first in runs[0]:
        same = [
            r for run in runs for r in run if (r.workload, r.peer) == (first.workload, first.peer)
        ]
        source = next((r for r in same if r.error), first)
        medians = [r.median_s for r in same if r.median_s is not None]
        mins = [r.min_s for r in same if r.min_s is not None]
        faults = [r.faults_per_call for r in same if r.faults_per_call is not None]
        ratios = [r.ratio for r in same if r.ratio is not None]
        merged.append(
            replace(
                first,
                median_s=statistics.median(medians) if medians else None,
                min_s=min(mins) if mins else None,
                faults_per_call=statistics.median(faults) if faults else None,
                ratio=statistics.median(ratios) if ratios else None,
                note=source.note,
                error=source.error,
                extra={**first.extra, "run_medians": [r.median_s for r in same]},
            )
        )
    if any(r.peer == "numbax" for r in merged):
        for row in merged:
            row.ratio = None
        set_ratios(merged)
    return merged


def positive_int(text: str) -> int:
    """``--repeat``'s argument: a whole number of runs, at least one."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


# -- command line ----------------------------------------------------------------------


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time numbax against NumPy, JAX and hand-written Numba; print ratios.",
    )
    parser.add_argument("--only", metavar="ID[,ID]", help="run only these workloads")
    parser.add_argument("--quick", action="store_true", help="small inputs, short timings")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument(
        "--repeat",
        metavar="N",
        type=positive_int,
        default=1,
        help="run each workload N times; report the median of medians, min of mins",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected workloads and print the table; exit status 1 if any peer failed.

    numbax's disk cache is pointed at a fresh temporary directory, so that each numbax
    "first call" is a real compilation however often the suite has run before; the
    ``coldstart`` workload measures the cache separately, in subprocesses.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parse_args(argv)
    workloads = all_workloads()
    if options.list:
        for workload in workloads:
            print(f"{workload.id:12} {workload.description}")
        return 0
    config = Config(quick=options.quick, repeat=options.repeat)
    with tempfile.TemporaryDirectory(prefix="numbax-bench-") as cache_dir:
        os.environ["NUMBAX_CACHE_DIR"] = cache_dir
        rows = [row for w in select(workloads, options.only) for row in run_repeated(w, config)]
    report.annotate_bandwidth(rows)
    print(report.format_table(rows))
    if options.json:
        report.write_json(options.json, rows, argv, config.repeat)
    return 1 if any(r.error for r in rows) else 0
