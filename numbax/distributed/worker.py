"""What runs on a Dask worker: the shipped text compiled once per process, batches of
examples through it, and a failing example found and placed.

A worker loads the text as a generated module (``codegen/load.py``: written to numbax's
cache under its content key, executed from the text itself) and maps it with
``nx.jit(nx.vmap(f, method="loop"), nogil=True)``, numbax's own path (the same
arithmetic, holding no Python lock while it runs, so that the threads of a worker run
batches at once): its generated modules and their machine code go to numbax's trusted
disk cache like any other, so with a cache directory the workers share, the first
worker to need a function compiles it under the entry's file lock and the others wait
and load it (one compile across the cluster).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from distributed import WorkerPlugin, get_worker
from numba.core import event
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target

from numbax import tree_util
from numbax.api.jit import jit
from numbax.api.vmap import vmap
from numbax.codegen.cache import cache_root
from numbax.codegen.load import GENERATED_PREFIX, load_module, module_name
from numbax.distributed.shipping import Shipped
from numbax.errors import TransformError
from numbax.transform.provenance import resolve
from numbax.version import __version__


class VersionMismatch(RuntimeError):
    """A worker runs other versions of numbax, Numba or NumPy than the client."""


def versions() -> dict[str, str]:
    """The versions a worker must share with the client: they decide the code and the
    machine code compiled from the shipped text."""
    return {"numbax": __version__, "numba": numba.__version__, "numpy": np.__version__}


def check_versions(client: dict[str, str], where: str) -> None:
    """Raise :class:`VersionMismatch` naming each package whose version differs."""
    mine = versions()
    differ = [
        f"{name} {client.get(name)} on the client, {mine[name]} on the worker"
        for name in mine
        if client.get(name) != mine[name]
    ]
    if differ:
        raise VersionMismatch(
            f"numbax's distributed map refuses worker {where}: {'; '.join(differ)}. Install "
            "the same versions on the client and every worker (pip install numbax[distributed] "
            "with the same pins)."
        )


class VersionCheck(WorkerPlugin):
    """Checks each worker's versions against the client's when it joins (registered
    by the client before its first map)."""

    name = "numbax-versions"

    def __init__(self, client_versions: dict[str, str]) -> None:
        self.client_versions = client_versions

    def setup(self, worker: Any) -> None:
        check_versions(self.client_versions, str(getattr(worker, "address", "?")))
        threading.Thread(target=_warm_up, name="numbax-warm-up", daemon=True).start()


def _warm_up() -> None:
    """Set up Numba's CPU target (load its registries: 0.2 s of a worker process's first
    batch, whichever function it maps) while the worker waits for work."""
    try:
        with global_compiler_lock:  # as a compile would: not beside one
            cpu_target.target_context.refresh()
    except Exception:  # noqa: BLE001 - the first batch sets it up then, and says what fails
        _log.warning("setting up Numba's CPU target ahead of the first batch failed", exc_info=True)


_log = logging.getLogger(__name__)


@dataclass
class BatchInfo:
    """What a batch tells the client besides its results: where it ran, whether it
    made the program in its process (and how many generated functions Numba compiled
    for it there, not loaded from the cache), and how long it took."""

    worker: str
    first: bool
    compiles: int
    seconds: float
    ready_seconds: float | None = None  # first: until the code could run (load, compile)


@dataclass
class Failure:
    """An example whose call raised: its index in the whole map, the exception, and
    the line of the shipped text where it was raised (None where no frame says); index
    -1: numbax could not compile the shipped function (a ``CompileError``)."""

    index: int
    error_type: str
    message: str
    line: int | None
    function: str | None
    info: BatchInfo | None = field(default=None)


@dataclass
class _Program:
    module_file: str
    function: Any  # the shipped function, interpreted (to place an exception)
    mapped: Any  # nx.jit(nx.vmap(function, method="loop"))
    lock: threading.Lock = field(default_factory=threading.Lock)
    called: bool = False


_programs: dict[str, _Program] = {}
_programs_lock = threading.Lock()


def run_batch(
    start: int,
    args: tuple,
    *,
    shipped: Shipped,
    client_versions: dict[str, str],
    cache_dir: str | None,
    client_pid: int,
) -> tuple[Any, BatchInfo] | Failure:
    """Run examples ``start...`` (the mapped arguments' batch, the others whole) on this
    worker: the task a distributed map submits."""
    began = time.perf_counter()
    try:
        address = str(get_worker().address)
    except ValueError:  # called outside a worker (a test calling it directly)
        address = "local"
    program, first = _program(shipped, client_versions, cache_dir, client_pid, address)
    ready = None
    with _counting() as counted:
        if first:  # compiled (or loaded) before it runs, to time that apart
            try:
                program.mapped.lower(*args).compile()
            except Exception:  # noqa: BLE001 - the call says what fails, in numbax's words
                # ... and where lowering fails but the call does not, the log says so
                _log.warning(
                    "lowering %s ahead of its first batch failed", shipped.name, exc_info=True
                )
            ready = time.perf_counter() - began
        try:
            out = program.mapped(*args)
        except TransformError as error:  # numbax cannot compile it: no example's fault
            line = error.lineno if error.filename == program.module_file else None
            info = BatchInfo(address, first, counted.compiles, time.perf_counter() - began)
            return Failure(-1, type(error).__name__, error.detail, line, error.function, info)
        except Exception as error:  # noqa: BLE001 - placed, then reported to the client
            failure = _place(program, shipped, start, args, error)
            seconds = time.perf_counter() - began
            failure.info = BatchInfo(address, first, counted.compiles, seconds, ready)
            return failure
    seconds = time.perf_counter() - began
    return out, BatchInfo(address, first, counted.compiles, seconds, ready)


def _program(
    shipped: Shipped,
    client_versions: dict[str, str],
    cache_dir: str | None,
    client_pid: int,
    address: str,
) -> tuple[_Program, bool]:
    """The compiled map of the shipped text in this process (made by its first batch)."""
    with _programs_lock:
        program = _programs.get(shipped.key)
        if program is None:
            check_versions(client_versions, address)
            _use_cache(cache_dir, client_pid)
            name = module_name(f"shipped_{shipped.name}", shipped.key)
            module = load_module(name, shipped.text, {})
            function = getattr(module, shipped.name)
            # nogil: worker threads of one process run their batches at once
            batched = vmap(function, shipped.in_axes, shipped.out_axes, method="loop")
            mapped = jit(batched, nogil=True)
            program = _programs[shipped.key] = _Program(module.__file__, function, mapped)
    with program.lock:  # the first call compiles (or loads): the program's first batch
        first = not program.called
        program.called = True
    return program, first


def _use_cache(cache_dir: str | None, client_pid: int) -> None:
    """Make ``cache_dir`` this worker process's numbax cache (a worker in the client's
    own process keeps the client's, which must then be the one asked for)."""
    if cache_dir is None:
        return
    if os.path.abspath(os.path.expanduser(cache_dir)) == os.path.abspath(cache_root()):
        return
    if os.getpid() == client_pid:
        raise ValueError(
            f"cache_dir={cache_dir!r}: this worker runs in the client's process, whose numbax "
            f"cache is {cache_root()}; leave cache_dir unset (or set NUMBAX_CACHE_DIR before "
            "starting) for workers in this process"
        )
    os.environ["NUMBAX_CACHE_DIR"] = cache_dir


# -- counting compiles -------------------------------------------------------------------


class _Count:
    compiles = 0


_counts = threading.local()


class _GeneratedCompiles(event.Listener):
    """Counts Numba compiling a generated function (a load from the disk cache is no
    compile) in the thread that counts."""

    def on_start(self, ev: event.Event) -> None:
        count = getattr(_counts, "current", None)
        dispatcher = ev.data.get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if count is not None and module.startswith(GENERATED_PREFIX):
            count.compiles += 1

    def on_end(self, ev: event.Event) -> None:
        """Nothing: a compile is counted when it starts."""


event.register("numba:compile", _GeneratedCompiles())


class _counting:
    def __enter__(self) -> _Count:
        self.count = _Count()
        _counts.current = self.count
        return self.count

    def __exit__(self, *exc: object) -> None:
        _counts.current = None


# -- a failing example -------------------------------------------------------------------


def _place(
    program: _Program, shipped: Shipped, start: int, args: tuple, error: Exception
) -> Failure:
    """The first example of the batch whose call raises, found by calling the compiled
    map on one example at a time, and the line it raised at: from the frames of the
    compiled code, else of the shipped function run interpreted on that example."""
    one_by_one = _examples(args, shipped.in_axes)
    index, raised = 0, error  # raised for the batch only: reported at its first example
    for k, example in enumerate(one_by_one):
        try:
            program.mapped(*example)
        except Exception as found:  # noqa: BLE001
            index, raised = k, found
            break
    line, function = _line(raised, program.module_file)
    if line is None and one_by_one:
        try:
            program.function(*_squeezed(one_by_one[index], shipped.in_axes))
        except Exception as again:  # noqa: BLE001
            line, function = _line(again, program.module_file)
    return Failure(start + index, type(raised).__name__, str(raised), line, function)


def _line(error: BaseException, module_file: str) -> tuple[int | None, str | None]:
    """The innermost frame of ``error`` in the shipped text (a frame of code numbax
    generated from it resolves to its line there)."""
    found: tuple[int | None, str | None] = (None, None)
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.lineno is None:
            continue
        origin = resolve(frame.filename, frame.lineno)
        if origin.filename == module_file:
            found = (origin.line, frame.name)
    return found


def _examples(args: tuple, in_axes: Any) -> list[tuple]:
    """The batch as batches of one example each."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = batch_size(args, axes)
    return [
        tuple(take(arg, axis, k, k + 1) for arg, axis in zip(args, axes, strict=True))
        for k in range(size)
    ]


def _squeezed(example: tuple, in_axes: Any) -> tuple:
    """One example's arguments without their mapped axis (as the function takes them)."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(example)
    return tuple(
        tree_util.tree_map(
            lambda axis, sub: (
                sub
                if axis is None
                else tree_util.tree_map(lambda leaf: np.squeeze(leaf, axis), sub)
            ),
            axis,
            arg,
            is_leaf=lambda a: a is None,
        )
        for arg, axis in zip(example, axes, strict=True)
    )


def batch_size(args: tuple, axes: tuple) -> int:
    """The length of the mapped axis (the same for every mapped leaf)."""
    sizes = set()
    for arg, axis in zip(args, axes, strict=True):
        tree_util.tree_map(
            lambda a, sub: (
                sub
                if a is None
                else tree_util.tree_map(lambda leaf: sizes.add(np.shape(leaf)[a]), sub)
            ),
            axis,
            arg,
            is_leaf=lambda a: a is None,
        )
    if len(sizes) != 1:
        raise ValueError(
            "nx.distributed.map got mapped arguments of different sizes along their mapped "
            f"axes ({sorted(sizes)}), or none mapped"
            if sizes
            else "no argument is mapped"
        )
    return sizes.pop()


def take(arg: Any, axis: Any, lo: int, hi: int) -> Any:
    """Examples ``lo:hi`` of ``arg`` mapped over ``axis`` (a prefix of its pytree)."""
    return tree_util.tree_map(
        lambda a, sub: (
            sub
            if a is None
            else tree_util.tree_map(
                lambda leaf: np.asarray(leaf)[
                    (slice(None),) * (a % np.ndim(leaf)) + (slice(lo, hi),)
                ],
                sub,
            )
        ),
        axis,
        arg,
        is_leaf=lambda a: a is None,
    )
