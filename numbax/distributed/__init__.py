"""``nx.distributed``: the map of ``nx.pmap``, on the workers of a Dask cluster.

``nx.distributed.map(f, *args, in_axes=0, out_axes=0)`` returns what
``nx.pmap(f, in_axes=in_axes, out_axes=out_axes)(*args)`` returns, bit for bit (and
``nx.jit(nx.vmap(f, method="loop"))``), computed by the workers of Dask's current client
(``client=`` another); ``nx.pmap(f, devices=nx.distributed.devices(client))`` is the same
map in JAX's spelling.

What travels is source text and its content key (``shipping.py``), never a pickled
function; each worker compiles it once per process, or loads the machine code a worker
left in a cache directory they share (``worker.py``). The examples go in batches,
several per worker thread, with their slices of the mapped arguments; the unmapped
arguments are scattered to the workers once. A worker that dies mid-map has its batches
computed again by Dask (the same code on the same inputs: the same results). An
exception in the user's code comes back as :class:`ExampleError`, naming the example,
the user's function, file and line. Dask is an optional dependency
(``pip install numbax[distributed]``); ``import numbax`` never imports it.
"""

from __future__ import annotations

import functools
import math
import os
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:
    import distributed as _dask
except ImportError as _missing:  # pragma: no cover - the optional dependency
    raise ImportError(
        "nx.distributed needs Dask's distributed scheduler: pip install numbax[distributed]"
    ) from _missing

import numpy as np

from numbax import tree_util
from numbax.distributed.shipping import ship
from numbax.distributed.worker import (
    BatchInfo,
    Failure,
    VersionCheck,
    VersionMismatch,
    batch_size,
    run_batch,
    take,
    versions,
)
from numbax.errors import CompileError
from numbax.transform.provenance import Origin
from numbax.transform.source import display_name

__all__ = [
    "DaskDevice",
    "ExampleError",
    "MapReport",
    "VersionMismatch",
    "devices",
    "last_report",
    "map",
]

BATCHES_PER_THREAD = 4
"""Batches a map makes per worker thread (without ``batch_size``), at most: enough that
a slow or lost worker's share is taken up by the others, few enough that Dask's cost per
task stays a small part of each."""

BATCH_SECONDS = 0.05
"""The shortest batch worth a task of its own, once a function's cost per example is
known from an earlier map of it: Dask's round trip for a map of a dozen batches took
about 27 ms (12 in-process workers, tasks doing nothing), so a batch shorter than this
is mostly overhead. A map of 10^4 Lorenz gradients (73 ms of work on each of 12 worker
threads) went from 51% to 66% parallel efficiency with one batch a thread instead of
four."""

_seconds_per_example: dict[str, float] = {}
"""What an example of each shipped function took on a worker, by the shipment's key:
measured on the batches of its last map that ran compiled code already there."""

PROGRESS_AFTER = 2.0
"""Seconds after which a map still running shows a progress bar (``progress=None``)."""


class ExampleError(RuntimeError):
    """An example's call raised on a worker: ``index`` is its position along the mapped
    axis; ``error_type`` and ``remote_message`` are the exception's; ``filename`` and
    ``lineno`` the user's line where it was raised, where known (None otherwise)."""

    def __init__(self, label: str, failure: Failure, origin: Origin | None) -> None:
        self.index, self.error_type = failure.index, failure.error_type
        self.remote_message = failure.message
        self.filename = origin.filename if origin is not None else None
        self.lineno = origin.line if origin is not None else None
        within = failure.function or label  # the function (of the shipped text) it raised in
        where = f"\n  at {self.filename}, line {self.lineno}, in {within}" if origin else ""
        super().__init__(
            f"nx.distributed.map of {label}: example {self.index} raised {self.error_type}: "
            f"{self.remote_message}{where}"
        )


@dataclass(frozen=True)
class DaskDevice:
    """One thread of a Dask worker, as ``nx.pmap``'s ``devices`` takes it."""

    worker: str
    thread: int
    client: Any = field(compare=False, repr=False)
    platform: str = "dask"

    def __repr__(self) -> str:
        return f"DaskDevice(worker={self.worker!r}, thread={self.thread})"

    def __numbax_pmap__(self, fun: Callable, devices: list, **options: Any) -> Callable:
        """What ``nx.pmap(fun, devices=...)`` returns for devices of a Dask cluster."""
        return _DistributedPmap(fun, devices, **options)


def devices(client: Any = None) -> list[DaskDevice]:
    """One device per thread of each worker of ``client`` (None: Dask's current client)."""
    client = _client(client)
    return [
        DaskDevice(address, k, client)
        for address, threads in sorted(client.nthreads().items())
        for k in range(threads)
    ]


@dataclass
class MapReport:
    """What the last map did: its batches, the threads of each worker they ran on,
    the generated functions Numba compiled on the workers for it (not loaded from a
    cache), and each worker's seconds to its first batch (from the start of that task:
    loading or compiling the code, and running the batch) and, of those, until the
    code was ready to run."""

    examples: int = 0
    batches: int = 0
    batch_size: int = 0
    seconds: float = 0.0
    compiles: int = 0
    batches_per_worker: dict[str, int] = field(default_factory=dict)
    compiles_per_worker: dict[str, int] = field(default_factory=dict)
    first_batch_seconds: dict[str, float] = field(default_factory=dict)
    ready_seconds: dict[str, float] = field(default_factory=dict)


_last = MapReport()


def last_report() -> MapReport:
    """The :class:`MapReport` of the last map this process ran."""
    return _last


def map(  # noqa: A001 - the name a Dask and a JAX user look for (client.map, jax's maps)
    f: Callable,
    *args: Any,
    client: Any = None,
    in_axes: Any = 0,
    out_axes: Any = 0,
    batch_size: int | None = None,
    cache_dir: str | os.PathLike | None = None,
    progress: bool | None = None,
    timeout: float | None = None,
) -> Any:
    """``nx.pmap(f, in_axes=in_axes, out_axes=out_axes)(*args)``, on a Dask cluster.

    ``client``: a ``distributed.Client`` (None: Dask's current client). ``in_axes``,
    ``out_axes``: as ``vmap``'s. ``batch_size``: examples per task (None: about four
    batches per worker thread). ``cache_dir``: the numbax cache directory of worker
    processes (None: their own, ``NUMBAX_CACHE_DIR`` or ``~/.cache/numbax``), which with
    a directory they share means one compile of each generated function for the whole
    cluster. ``progress``: tqdm's progress bar over the batches (where tqdm is
    installed) for maps running longer than a few seconds (None), always (True) or
    never (False). ``timeout``: seconds after which the map gives up (``TimeoutError``;
    its batches are cancelled).

    Raises :class:`ExampleError` when an example raised on a worker, naming it, and
    numbax's ``CompileError`` when the workers cannot compile ``f``. ``f`` travels as
    source (``def`` functions, what they read copied as source or literals, numbax's own
    objects imported there): a lambda, or a value that cannot be written as source, is
    refused (``ExportError``); large arrays are best passed as unmapped arguments
    (``in_axes=None``: scattered to the workers once) rather than read as globals.
    """
    client = _client(client)
    return _run(f, args, client, in_axes, out_axes, batch_size, cache_dir, progress, timeout, None)


class _DistributedPmap:
    """``nx.pmap(fun, devices=nx.distributed.devices(client))``: the map of those
    workers' threads."""

    def __init__(
        self,
        fun: Callable,
        devices: list,
        in_axes: Any = 0,
        out_axes: Any = 0,
        axis_name: Any = None,
        static_broadcasted_argnums: Any = (),
    ) -> None:
        if static_broadcasted_argnums not in ((), None):
            raise TypeError(
                f"pmap of {display_name(fun)} on a Dask cluster: static_broadcasted_argnums "
                "is not supported; define a function with the static values bound (def)"
            )
        if any(not isinstance(d, DaskDevice) for d in devices):
            raise ValueError(f"pmap of {display_name(fun)}: devices mix Dask's with others")
        self.fun = fun
        self.devices = devices
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.axis_name = axis_name

    def __call__(self, *args: Any) -> Any:
        client = self.devices[0].client
        workers: list[str] | None = sorted({d.worker for d in self.devices})
        if set(workers) == set(client.nthreads()):  # all of them: a replaced one too
            workers = None
        return _run(
            self.fun,
            args,
            client,
            self.in_axes,
            self.out_axes,
            None,
            None,
            None,
            None,
            (workers, len(self.devices)),
        )

    def __repr__(self) -> str:
        return f"<numbax.pmap of {display_name(self.fun)!r} on {len(self.devices)} Dask threads>"


def _client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        return _dask.default_client()
    except ValueError:
        raise ValueError(
            "nx.distributed needs a Dask client: start one (distributed.Client(...)) or pass "
            "client="
        ) from None


_checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _register_check(client: Any) -> None:
    """The version check, registered once per client (workers that join later run it)."""
    if client not in _checked:
        client.register_plugin(VersionCheck(versions()), name=VersionCheck.name)
        _checked[client] = True


def _run(
    f: Callable,
    args: tuple,
    client: Any,
    in_axes: Any,
    out_axes: Any,
    size: int | None,
    cache_dir: Any,
    progress: bool | None,
    timeout: float | None,
    restricted: tuple[list[str] | None, int] | None,
) -> Any:
    global _last
    began = time.perf_counter()
    axes = _axes(in_axes, len(args), f)
    n = batch_size(args, axes)
    shipped, lines = ship(f, axes, out_axes)
    _register_check(client)
    workers, threads = restricted or (None, sum(client.nthreads().values()))
    if threads == 0:
        raise RuntimeError(f"nx.distributed.map of {shipped.label}: the cluster has no workers")
    per_batch = size or max(
        1, math.ceil(n / (_batches_per_thread(shipped.key, n, threads) * threads))
    )
    starts = list(range(0, n, per_batch)) or [0]
    unmapped = {
        k: client.scatter(arg, broadcast=True, hash=False)
        for k, (arg, axis) in enumerate(zip(args, axes, strict=True))
        if axis is None and _worth_scattering(arg)
    }
    token = uuid.uuid4().hex[:8]
    batches = [
        tuple(
            unmapped.get(k, arg)
            if axis is None
            else take(arg, axis, start, min(start + per_batch, n))
            for k, (arg, axis) in enumerate(zip(args, axes, strict=True))
        )
        for start in starts
    ]
    # one message to the scheduler for every batch (a submit each cost ~1 ms of its time)
    futures = client.map(
        run_batch,
        starts,
        batches,
        shipped=shipped,
        client_versions=versions(),
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        client_pid=os.getpid(),
        key=[f"{shipped.name}-batch-{number}-{token}" for number in range(len(starts))],
        workers=workers,
        pure=False,
    )
    results = _gather(futures, shipped.label, lines, progress, timeout)
    outs = [out for out, _ in results]
    infos = [info for _, info in results]
    _remember_cost(shipped.key, [min(per_batch, n - start) for start in starts], infos)
    _last = _report(n, per_batch, infos, began)
    return _concatenated(outs, out_axes)


def _batches_per_thread(key: str, n: int, threads: int) -> int:
    """:data:`BATCHES_PER_THREAD`, or fewer where an earlier map of the function says
    its batches would last less than :data:`BATCH_SECONDS` (at least one a thread)."""
    per_example = _seconds_per_example.get(key)
    if per_example is None:
        return BATCHES_PER_THREAD
    worth = int(n * per_example / (threads * BATCH_SECONDS))
    return max(1, min(BATCHES_PER_THREAD, worth))


def _remember_cost(key: str, sizes: list[int], infos: list[BatchInfo]) -> None:
    """Keep the seconds per example of the batches that found their program made."""
    ran = [(size, info.seconds) for size, info in zip(sizes, infos, strict=True) if not info.first]
    examples = sum(size for size, _ in ran)
    if examples:
        _seconds_per_example[key] = sum(seconds for _, seconds in ran) / examples


def _worth_scattering(value: Any) -> bool:
    """Arrays and pytrees of them go to the workers once; small values with each task."""
    return sum(np.asarray(leaf).nbytes for leaf in tree_util.tree_leaves(value)) > 1024


def _axes(in_axes: Any, n: int, f: Callable) -> tuple:
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple):
        if len(in_axes) != n:
            raise ValueError(
                f"nx.distributed.map of {display_name(f)}: in_axes has {len(in_axes)} entries "
                f"for {n} arguments"
            )
        return in_axes
    return (in_axes,) * n


def _gather(
    futures: list, label: str, lines: Any, progress: bool | None, timeout: float | None
) -> list[tuple[Any, BatchInfo]]:
    """The batches' results in order; the first failure raised as :class:`ExampleError`
    (the other batches cancelled)."""
    results: dict[Any, Any] = {}
    order = {future.key: k for k, future in enumerate(futures)}
    began = time.perf_counter()
    bar = _Bar(len(futures), progress)
    try:
        for future, result in _dask.as_completed(futures, with_results=True, timeout=timeout):
            if isinstance(result, Failure):
                raise _example_error(result, label, lines)
            results[order[future.key]] = result
            bar.update(time.perf_counter() - began)
    except BaseException:  # a failure, a timeout, an interrupt: the rest is not wanted
        for future in futures:
            future.cancel()
        raise
    finally:
        bar.close()
    return [results[k] for k in range(len(futures))]


def _example_error(failure: Failure, label: str, lines: Any) -> Exception:
    origin = lines.origin(failure.line) if failure.line is not None else None
    if failure.index < 0:  # numbax's refusal on the worker, at the user's line
        return CompileError(
            failure.message,
            function=label,
            transformation="jit",
            filename=origin.filename if origin else None,
            lineno=origin.line if origin else None,
        )
    return ExampleError(label, failure, origin)


class _Bar:
    """tqdm's progress bar over the batches, shown after :data:`PROGRESS_AFTER`
    seconds (``progress=None``), from the start (True) or never (False)."""

    def __init__(self, total: int, progress: bool | None) -> None:
        self.total = total
        self.progress = progress
        self.done = 0
        self.bar: Any = None

    def update(self, elapsed: float) -> None:
        self.done += 1
        if self.progress is False or self.done == self.total:
            return
        if self.bar is None and (self.progress or elapsed > PROGRESS_AFTER):
            bar = _tqdm()
            if bar is None:
                return
            self.bar = bar(total=self.total, initial=self.done, unit="batch", leave=False)
        elif self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@functools.cache
def _tqdm() -> Any:
    """tqdm's bar (in Jupyter its widget), imported when a map first shows one: importing
    it warns in a notebook without ipywidgets; None without tqdm (no progress bar)."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _report(n: int, per_batch: int, infos: list[BatchInfo], began: float) -> MapReport:
    report = MapReport(n, len(infos), per_batch, time.perf_counter() - began)
    for info in infos:
        report.batches_per_worker[info.worker] = report.batches_per_worker.get(info.worker, 0) + 1
        report.compiles += info.compiles
        report.compiles_per_worker[info.worker] = (
            report.compiles_per_worker.get(info.worker, 0) + info.compiles
        )
        if info.first:
            report.first_batch_seconds[info.worker] = info.seconds
            if info.ready_seconds is not None:
                report.ready_seconds[info.worker] = info.ready_seconds
    return report


def _concatenated(outs: list, out_axes: Any) -> Any:
    """The batches' results joined along their mapped axes (unmapped: the first's)."""
    if len(outs) == 1:
        return outs[0]
    return tree_util.tree_map(
        lambda axis, *subs: (
            subs[0]
            if axis is None
            else tree_util.tree_map(lambda *leaves: np.concatenate(leaves, axis), *subs)
        ),
        out_axes,
        *outs,
        is_leaf=lambda a: a is None,
    )
