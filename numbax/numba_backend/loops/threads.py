"""Large elementwise work on every core, through Numba's threading layer.

A fused elementwise loop over a large array (``elementwise.py``) splits its elements
into contiguous chunks, four per thread, and calls its chunk function on every thread
at once with the ``numba_parallel_for`` entry point of Numba's threading layer (the one
its ``parallel=True`` code uses); each call takes chunks until none is left. The chunk
function is written here in LLVM IR around the scalar kernel, so no ``prange`` (and no
parfor compile, close to a second per kernel) is involved, and the compiled code names
everything it calls by symbol, so it stays valid in the disk cache.

Threads are used only where that is safe:

* with the ``omp`` or ``tbb`` layer, which allow nested and concurrent parallel
  regions (the ``workqueue`` layer aborts the process on either, so under it every
  loop stays serial);
* not in a process forked from one that started the threads (GNU OpenMP terminates
  such a child when it enters a parallel region);
* when Numba's thread count (``numba.set_num_threads``) is above one, and for arrays of
  at least :data:`PARALLEL_MIN_ELEMENTS` elements, below which waking the threads costs
  more than it saves;
* with GNU OpenMP's idle threads spinning briefly (``GOMP_SPINCOUNT``, 1,000 turns rather
  than its default 300,000, unless set already): a thread that spins after its loop
  takes a core that, on a busy machine, the caller or other work needs;
* not for a while after the other threads came late to a loop (their cores busy with
  other work, the caller waited for them): 50 ms, doubling each time up to 5 s.
  Threads take chunks as they come, several per thread, so a late one finds less to do.
* not while a function compiled with ``jit(..., parallel=False)`` runs
  (:func:`one_thread`), nor in code compiled with ``parallel=True``, where Numba's own
  parallel loops run the work (:func:`threads_allowed`).

A chunk whose kernel reports an error stops and says where; the caller calls the kernel
there again, which raises the error as a serial loop would have. Small arrays go through
the same chunk function, called directly as one chunk, so each kernel's loop is compiled
once.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import llvmlite.binding as ll
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.targetconfig import ConfigStack
from numba.extending import intrinsic
from numba.np.ufunc.parallel import _launch_threads

from numbax.numba_backend.loops import blas_threads

__all__ = [
    "ALONE_NS",
    "PARALLEL_MIN_ELEMENTS",
    "alone_ns",
    "chunk_runner",
    "threads_for",
    "keeping_thread_count",
    "launch",
    "now",
    "one_thread",
    "threads_allowed",
    "usable_thread_count",
]

PARALLEL_MIN_ELEMENTS = 1 << 17
"""Elements of output below which a loop runs on one thread: 131,072 (half a megabyte
of float32) takes 20-130 µs on one core, against a few µs to wake the others."""
_CHUNKS_PER_THREAD = 4
_MIN_CHUNK = 1 << 14
"""Elements of a chunk at least: taking one is an atomic add, done once per chunk."""

_USABLE_SYMBOL = "numbax_threads_usable"
_NEST_SAFE_LAYERS = ("omp", "tbb")

_usable = ctypes.c_int32(0)  # read by compiled code through _USABLE_SYMBOL
_BACKOFF_SYMBOL = "numbax_threads_backoff"
_backoff = (ctypes.c_int64 * 2)(0, 0)  # until when loops run alone (ns), and how long last
_FIRST_BACKOFF_NS = 50_000_000
_LONGEST_BACKOFF_NS = 5_000_000_000
_SPIN_TURNS = "1000"
"""How long GNU OpenMP's idle threads spin before they sleep (``GOMP_SPINCOUNT``): long
enough for back-to-back loops, short enough that a thread waiting for work does not
take a core from the work itself (libgomp reads it once, when it loads)."""
_ALONE_SYMBOL = "numbax_examples_alone_ns"
ALONE_NS = ctypes.c_int64(50_000)
"""How long a map's calling thread runs examples alone before the other threads are
woken (``examples.py``), which costs tens of µs on many cores: a small map finishes
alone; a longer one loses at most this much of its parallel time. Compiled code reads it
by name (tests set it to 0 to run every map's examples on the threads)."""
_launched = False
_launch_lock = threading.Lock()


def launch() -> None:
    """Start Numba's threading layer and publish whether numbax may use it.

    Compiled code that may run in parallel refers to the layer's functions and to
    :data:`_USABLE_SYMBOL` by name, so this runs before such code is compiled or loaded
    from the disk cache (about 25 ms, once per process)."""
    global _launched
    if _launched:
        return
    with _launch_lock:
        if _launched:
            return
        os.environ.setdefault("GOMP_SPINCOUNT", _SPIN_TURNS)
        _launch_threads()
        blas_threads.add_symbols()
        ll.add_symbol(_USABLE_SYMBOL, ctypes.addressof(_usable))
        ll.add_symbol(_BACKOFF_SYMBOL, ctypes.addressof(_backoff))
        ll.add_symbol(_ALONE_SYMBOL, ctypes.addressof(ALONE_NS))
        _usable.value = int(numba.threading_layer() in _NEST_SAFE_LAYERS)
        os.register_at_fork(after_in_child=_serial_after_fork)
        _launched = True


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Within this block (this thread), numbax's loops run on one thread: what
    ``jit(..., parallel=False)`` asks for. (Numba's flags do not tell ``parallel=False``
    from the default while it compiles, so this is decided when the function runs.)"""
    launch()
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def _serial_after_fork() -> None:
    _usable.value = 0


def threads_allowed() -> bool:
    """Whether the function Numba is compiling may run its loops on several threads:
    not under ``parallel=True``, where Numba's parallel loops already spread the work
    and nesting inside them gains nothing."""
    flags = ConfigStack().top_or_none()
    return flags is None or not flags.is_set("auto_parallel")


def usable_thread_count(builder: ir.IRBuilder) -> ir.Value:
    """Numba's thread count (``numba.set_num_threads``) where this process may use the
    threads (:func:`launch`'s flag), else 0, as an i64. (``numba.get_num_threads`` itself
    would tie the machine code to this process: its error message is a Python object.)"""
    flag = builder.module.globals.get(_USABLE_SYMBOL)
    if flag is None:
        flag = ir.GlobalVariable(builder.module, ir.IntType(32), _USABLE_SYMBOL)
        flag.linkage = "external"
    usable = builder.icmp_signed("!=", builder.load(flag), ir.Constant(ir.IntType(32), 0))
    count = cgutils.alloca_once_value(builder, ir.Constant(ir.IntType(32), 0))
    with builder.if_then(usable):
        builder.store(builder.call(_get_num_threads(builder.module), []), count)
    return builder.sext(builder.load(count), _I64)


def _backoff_state(builder: ir.IRBuilder) -> tuple[ir.Value, ir.Value]:
    """Pointers to the two counters of :data:`_backoff`, linked by name."""
    state = builder.module.globals.get(_BACKOFF_SYMBOL)
    if state is None:
        state = ir.GlobalVariable(builder.module, ir.ArrayType(_I64, 2), _BACKOFF_SYMBOL)
        state.linkage = "external"
    return cgutils.gep_inbounds(builder, state, 0, 0), cgutils.gep_inbounds(builder, state, 0, 1)


def alone_ns(builder: ir.IRBuilder) -> ir.Value:
    """:data:`ALONE_NS`, read by name, as an i64."""
    alone = builder.module.globals.get(_ALONE_SYMBOL)
    if alone is None:
        alone = ir.GlobalVariable(builder.module, _I64, _ALONE_SYMBOL)
        alone.linkage = "external"
    return builder.load(alone)


def now(builder: ir.IRBuilder) -> ir.Value:
    """The monotonic clock in nanoseconds (libc's ``clock_gettime``, linked by name)."""
    timespec = ir.LiteralStructType([_I64, _I64])
    clock = cgutils.get_or_insert_function(
        builder.module,
        ir.FunctionType(ir.IntType(32), [ir.IntType(32), timespec.as_pointer()]),
        "clock_gettime",
    )
    slot = cgutils.alloca_once(builder, timespec)
    builder.call(clock, [ir.Constant(ir.IntType(32), 1), slot])  # CLOCK_MONOTONIC
    seconds = builder.load(cgutils.gep_inbounds(builder, slot, 0, 0))
    nanoseconds = builder.load(cgutils.gep_inbounds(builder, slot, 0, 1))
    return builder.add(builder.mul(seconds, ir.Constant(_I64, 1_000_000_000)), nanoseconds)


def _backing_off(builder: ir.IRBuilder) -> ir.Value:
    """Whether loops run alone for now, because the other threads came late to the last
    one (their cores were busy): an i1."""
    until, _ = _backoff_state(builder)
    deadline = builder.load(until)
    waiting = builder.icmp_signed("!=", deadline, ir.Constant(_I64, 0))
    result = cgutils.alloca_once_value(builder, cgutils.false_bit)
    with builder.if_then(waiting, likely=False):
        builder.store(builder.icmp_signed("<", now(builder), deadline), result)
    return builder.load(result)


@intrinsic
def threads_for(typingctx, n):
    """How many threads to run a loop over ``n`` elements on: all of Numba's, or 1 (too
    few elements, threads not usable, only one, or backing off). Lowered in place: no
    function of its own for a program to compile."""
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        count = context.cast(builder, args[0], signature.args[0], types.int64)
        threads = cgutils.alloca_once_value(builder, ir.Constant(_I64, 1))
        large = builder.icmp_signed(">=", count, ir.Constant(_I64, PARALLEL_MIN_ELEMENTS))
        with builder.if_then(large):
            usable = usable_thread_count(builder)
            several = builder.icmp_signed(">=", usable, ir.Constant(_I64, 2))
            with builder.if_then(several):
                with builder.if_then(builder.not_(_backing_off(builder))):
                    builder.store(usable, threads)
        return builder.load(threads)

    return types.int64(n), codegen


@functools.cache
def chunk_runner(kernel: Any) -> Any:
    """``run(out, units, inputs)``, usable in compiled code: ``out[k] = kernel(*inputs at
    k)`` over every element, in ``units`` chunks (on all threads when there are several,
    else on this one); -1, or the index of an element where the kernel failed (the
    caller calls the kernel there again, which raises its error). ``out`` and the array
    inputs are flat and contiguous, the other inputs scalars. The one loop serves both
    cases, so LLVM compiles (and vectorizes) the kernel's loop once."""

    @intrinsic
    def run(typingctx, out, units, inputs):
        element_types = tuple(t.dtype if isinstance(t, types.Array) else t for t in inputs)
        kernel.compile(element_types)
        compiled = kernel.overloads[element_types]

        def codegen(context, builder, signature, args):
            return _run_chunks(context, builder, compiled, out, inputs, *args)

        return types.intp(out, units, inputs), codegen

    run.__numbax_description__ = ("chunk_runner", kernel)  # for the runtime cache's key
    return run


_BYTE_PTR = ir.IntType(8).as_pointer()
_CHUNK_FUNCTION = ir.FunctionType(
    ir.VoidType(),
    [_BYTE_PTR.as_pointer(), ir.IntType(64).as_pointer(), ir.IntType(64).as_pointer(), _BYTE_PTR],
)
_I64 = ir.IntType(64)
_SHARED = ir.LiteralStructType(
    [_BYTE_PTR.as_pointer(), _I64.as_pointer(), _I64, _I64, _I64, _I64, _I64, _I64]
)
"""What every call of the chunk function reads and writes (by field, :data:`_FIELDS`)."""
_FIELDS = {
    name: k
    for k, name in enumerate(
        ["bases", "strides", "size", "chunk", "chunks", "next", "failed", "others"]
    )
}
"""``bases``: the arrays' first elements (the output first; a scalar input's slot);
``strides``: their bytes per chunk (0 for a scalar); ``size``: the output's elements;
``chunk``: elements per chunk; ``chunks``: how many; ``next``: the next chunk to take
(atomic); ``failed``: where a kernel failed, or -1; ``others``: the chunks threads other
than the caller's took."""
_PARALLEL_FOR = ir.FunctionType(
    ir.VoidType(), [_BYTE_PTR] * 5 + [ir.IntType(64)] * 2 + [ir.IntType(32)]
)


def _run_chunks(context, builder, compiled, out, inputs, out_value, calls, packed):
    """The chunk function called ``calls`` times: at once through ``numba_parallel_for``
    when more than once, else here; -1 or where a kernel failed."""
    context.add_linking_libs([compiled.library])
    chunk_function = _chunk_function(context, builder.module, compiled, inputs, out.dtype)
    intp = context.get_value_type(types.intp)
    out_array = context.make_array(out)(context, builder, out_value)
    size = out_array.nitems
    # chunks of at least MIN_CHUNK elements, several per call: a thread that started late
    # (the machine is busy) finds fewer left, instead of holding up the others
    per_call = builder.mul(calls, ir.Constant(intp, _CHUNKS_PER_THREAD))
    chunk = builder.sdiv(builder.sub(builder.add(size, per_call), ir.Constant(intp, 1)), per_call)
    small = builder.icmp_signed("<", chunk, ir.Constant(intp, _MIN_CHUNK))
    chunk = builder.select(small, ir.Constant(intp, _MIN_CHUNK), chunk)
    chunks = builder.sdiv(builder.sub(builder.add(size, chunk), ir.Constant(intp, 1)), chunk)

    bases = [builder.bitcast(out_array.data, _BYTE_PTR)]
    strides = [builder.mul(chunk, ir.Constant(intp, _itemsize(context, out.dtype)))]
    for value, kind in zip(cgutils.unpack_tuple(builder, packed, len(inputs)), inputs, strict=True):
        if isinstance(kind, types.Array):
            array = context.make_array(kind)(context, builder, value)
            bases.append(builder.bitcast(array.data, _BYTE_PTR))
            strides.append(builder.mul(chunk, ir.Constant(intp, _itemsize(context, kind.dtype))))
        else:  # a scalar: every chunk reads the same slot
            slot = cgutils.alloca_once(builder, context.get_data_type(kind))
            context.pack_value(builder, kind, value, slot)
            bases.append(builder.bitcast(slot, _BYTE_PTR))
            strides.append(ir.Constant(intp, 0))

    def on_stack(values: list) -> ir.Value:
        return cgutils.alloca_once_value(builder, cgutils.pack_array(builder, values))

    shared = cgutils.alloca_once(builder, _SHARED)
    fields = {
        "bases": builder.bitcast(on_stack(bases), _BYTE_PTR.as_pointer()),
        "strides": builder.bitcast(on_stack(strides), _I64.as_pointer()),
        "size": size,
        "chunk": chunk,
        "chunks": chunks,
        "next": ir.Constant(_I64, 0),
        "failed": ir.Constant(_I64, -1),
        "others": ir.Constant(_I64, 0),
    }
    for name, value in fields.items():
        builder.store(value, cgutils.gep_inbounds(builder, shared, 0, _FIELDS[name]))
    data = builder.bitcast(shared, _BYTE_PTR)
    with builder.if_else(builder.icmp_signed(">", calls, ir.Constant(intp, 1))) as (
        threaded,
        here,
    ):
        with threaded:
            parallel_for = cgutils.get_or_insert_function(
                builder.module, _PARALLEL_FOR, "numba_parallel_for"
            )
            no_steps = on_stack([ir.Constant(_I64, 0)] * len(bases))
            builder.call(
                parallel_for,
                [
                    builder.bitcast(chunk_function, _BYTE_PTR),
                    builder.bitcast(on_stack(bases), _BYTE_PTR),
                    builder.bitcast(on_stack([calls, ir.Constant(_I64, 0)]), _BYTE_PTR),
                    builder.bitcast(no_steps, _BYTE_PTR),
                    data,
                    ir.Constant(_I64, 1),  # dimensions after the count of calls
                    ir.Constant(_I64, len(bases)),
                    builder.call(_get_num_threads(builder.module), []),
                ],
            )
            _update_backoff(builder, shared, chunks)
        with here:
            null = [ir.Constant(t, None) for t in _CHUNK_FUNCTION.args[:3]]
            builder.call(chunk_function, [*null, data])
    return builder.load(cgutils.gep_inbounds(builder, shared, 0, _FIELDS["failed"]))


def _update_backoff(builder: ir.IRBuilder, shared: ir.Value, chunks: ir.Value) -> None:
    """After a loop on several threads: when the others took under a quarter of the
    chunks, they started late (their cores were busy) and the caller waited for them at
    the end. Loops then run alone for a while: 50 ms, twice as long each time it happens
    again (up to 5 s), so that on a busy machine a thread that comes late costs a loop
    now and then, not every loop."""
    until, last = _backoff_state(builder)
    others = builder.load(cgutils.gep_inbounds(builder, shared, 0, _FIELDS["others"]))
    late = builder.icmp_signed("<", builder.mul(others, ir.Constant(_I64, 4)), chunks)
    with builder.if_else(late) as (was_late, in_time):
        with was_late:
            first, longest = (
                ir.Constant(_I64, t) for t in (_FIRST_BACKOFF_NS, _LONGEST_BACKOFF_NS)
            )
            doubled = builder.mul(builder.load(last), ir.Constant(_I64, 2))
            doubled = builder.select(builder.icmp_signed("<", doubled, first), first, doubled)
            doubled = builder.select(builder.icmp_signed(">", doubled, longest), longest, doubled)
            builder.store(doubled, last)
            builder.store(builder.add(now(builder), doubled), until)
        with in_time:
            builder.store(ir.Constant(_I64, 0), last)
            builder.store(ir.Constant(_I64, 0), until)


def _get_num_threads(module: ir.Module) -> ir.Function:
    """The threading layer's ``int get_num_threads(void)``, linked by name."""
    return cgutils.get_or_insert_function(
        module, ir.FunctionType(ir.IntType(32), []), "get_num_threads"
    )


def keeping_thread_count(builder: ir.IRBuilder, run: Callable[[], None]) -> None:
    """``run()`` (a ``numba_parallel_for`` call on fewer threads than Numba's count),
    then the calling thread's count as it was: the layer's team sets each member's count
    to the team's size, the caller's included, so a map limited to two threads would
    otherwise leave every later parallel loop of this thread on two."""
    module = builder.module
    previous = builder.call(_get_num_threads(module), [])
    run()
    setter = cgutils.get_or_insert_function(
        module, ir.FunctionType(ir.VoidType(), [ir.IntType(32)]), "set_num_threads"
    )
    builder.call(setter, [previous])


def _itemsize(context: Any, dtype: types.Type) -> int:
    return context.get_abi_sizeof(context.get_data_type(dtype))


def _chunk_function(context, module, compiled, inputs, out_dtype) -> ir.Function:
    """``void chunks(char **, intp *, intp *, shared *data)``: takes chunks (``data``'s
    ``next``, atomically) until none is left, and runs the kernel over each: the same for
    every call, however the threading layer splits its calls. One per kernel and input
    types in a module."""
    name = f"numbax.chunks.{compiled.fndesc.mangled_name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    function = ir.Function(module, _CHUNK_FUNCTION, name=name)
    function.linkage = "internal"
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    kernel = context.declare_function(module, compiled.fndesc)
    intp = context.get_value_type(types.intp)
    restype, argtypes = compiled.signature.return_type, compiled.signature.args
    shared = builder.bitcast(function.args[3], _SHARED.as_pointer())

    def field(name: str) -> ir.Value:
        return cgutils.gep_inbounds(builder, shared, 0, _FIELDS[name])

    bases, strides = builder.load(field("bases")), builder.load(field("strides"))
    size, chunk, chunks = (builder.load(field(n)) for n in ("size", "chunk", "chunks"))
    count_args = len(inputs) + 1
    base = [builder.load(builder.gep(bases, [ir.Constant(intp, i)])) for i in range(count_args)]
    stride = [builder.load(builder.gep(strides, [ir.Constant(intp, i)])) for i in range(count_args)]
    out_type = context.get_data_type(out_dtype).as_pointer()
    input_types = [context.get_data_type(_element(kind)).as_pointer() for kind in inputs]

    take = function.append_basic_block("take")
    done = function.append_basic_block("done")
    builder.branch(take)
    builder.position_at_end(take)
    index = builder.atomic_rmw("add", field("next"), ir.Constant(_I64, 1), "monotonic")
    with builder.if_then(builder.icmp_signed(">=", index, chunks), likely=False):
        builder.branch(done)
    thread_id = ir.FunctionType(ir.IntType(32), [])
    thread = builder.call(cgutils.get_or_insert_function(module, thread_id, "get_thread_id"), [])
    with builder.if_then(builder.icmp_signed("!=", thread, ir.Constant(ir.IntType(32), 0))):
        builder.atomic_rmw("add", field("others"), ir.Constant(_I64, 1), "monotonic")
    first = builder.mul(index, chunk)
    left = builder.sub(size, first)
    count = builder.select(builder.icmp_signed("<", left, chunk), left, chunk)
    starts = [builder.gep(b, [builder.mul(index, s)]) for b, s in zip(base, stride, strict=True)]
    out_pointer = builder.bitcast(starts[0], out_type)
    input_pointers = [builder.bitcast(p, t) for p, t in zip(starts[1:], input_types, strict=True)]
    with cgutils.for_range(builder, count) as element:
        values = []
        for pointer, kind in zip(input_pointers, inputs, strict=True):
            if isinstance(kind, types.Array):
                pointer = builder.gep(pointer, [element.index], inbounds=True)
            values.append(context.unpack_value(builder, _element(kind), pointer))
        status, result = context.call_conv.call_function(builder, kernel, restype, argtypes, values)
        with builder.if_then(builder.not_(status.is_ok), likely=False):
            builder.store(builder.add(first, element.index), field("failed"))
            builder.branch(done)
        result = context.cast(builder, result, restype, out_dtype)
        target = builder.gep(out_pointer, [element.index], inbounds=True)
        context.pack_value(builder, out_dtype, result, target)
    builder.branch(take)
    builder.position_at_end(done)
    builder.ret_void()
    return function


def _element(kind):
    return kind.dtype if isinstance(kind, types.Array) else kind
