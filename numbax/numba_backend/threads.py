"""Large elementwise work on every core, through Numba's threading layer.

A fused elementwise loop over a large array (``elementwise.py``) splits its elements
into one contiguous chunk per thread and runs the chunks at once with the
``numba_parallel_for`` entry point of Numba's threading layer, the one its
``parallel=True`` code uses. The chunk function is written here in LLVM IR around the
scalar kernel, so no ``prange`` (and no parfor compile, close to a second per kernel)
is involved, and the compiled code names everything it calls by symbol, so it stays
valid in the disk cache.

Threads are used only where that is safe:

* with the ``omp`` or ``tbb`` layer, which allow nested and concurrent parallel
  regions (the ``workqueue`` layer aborts the process on either, so under it every
  loop stays serial);
* not in a process forked from one that started the threads (GNU OpenMP terminates
  such a child when it enters a parallel region);
* when Numba's thread count (``numba.set_num_threads``) is above one, and for arrays of
  at least :data:`PARALLEL_MIN_ELEMENTS` elements, below which waking the threads costs
  more than it saves;
* not while a function compiled with ``jit(..., parallel=False)`` runs
  (:func:`one_thread`), nor in code compiled with ``parallel=True``, where Numba's own
  parallel loops run the work (:func:`threads_allowed`).

A chunk whose kernel reports an error stops; the caller then runs the whole serial loop,
which raises the error as it would have.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from collections.abc import Iterator
from typing import Any

import llvmlite.binding as ll
import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.targetconfig import ConfigStack
from numba.extending import intrinsic, register_jitable

__all__ = [
    "PARALLEL_MIN_ELEMENTS",
    "chunk_runner",
    "chunks_for",
    "launch",
    "one_thread",
    "threads_allowed",
]

PARALLEL_MIN_ELEMENTS = 1 << 17
"""Elements of output below which a loop runs on one thread: 131,072 (half a megabyte
of float32) takes 20-130 µs on one core, against a few µs to wake the others."""

_USABLE_SYMBOL = "numbax_threads_usable"
_NEST_SAFE_LAYERS = ("omp", "tbb")

_usable = ctypes.c_int32(0)  # read by compiled code through _USABLE_SYMBOL
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
        from numba.np.ufunc.parallel import _launch_threads  # noqa: PLC0415 (Numba's own)

        _launch_threads()
        ll.add_symbol(_USABLE_SYMBOL, ctypes.addressof(_usable))
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


@intrinsic
def _usable_threads(typingctx):
    """Numba's thread count (``numba.set_num_threads``) where this process may use the
    threads (:func:`launch`'s flag), else 0. (``numba.get_num_threads`` itself would
    tie the machine code to this process: its error message is a Python object.)"""

    def codegen(context, builder, signature, args):
        flag = builder.module.globals.get(_USABLE_SYMBOL)
        if flag is None:
            flag = ir.GlobalVariable(builder.module, ir.IntType(32), _USABLE_SYMBOL)
            flag.linkage = "external"
        usable = builder.icmp_signed("!=", builder.load(flag), ir.Constant(ir.IntType(32), 0))
        count = cgutils.alloca_once_value(builder, ir.Constant(ir.IntType(32), 0))
        with builder.if_then(usable):
            builder.store(builder.call(_get_num_threads(builder.module), []), count)
        return builder.sext(builder.load(count), ir.IntType(64))

    return types.intp(), codegen


@register_jitable
def chunks_for(n):
    """How many chunks to split ``n`` elements into: one per thread, or 0 to run them on
    this thread (too few, threads not usable or only one)."""
    if n < PARALLEL_MIN_ELEMENTS:
        return 0
    threads = _usable_threads()
    return threads if threads > 1 else 0


@functools.cache
def chunk_runner(kernel: Any) -> Any:
    """``run(out, units, inputs)``, usable in compiled code: ``out[k] = kernel(*inputs at
    k)`` over every element in ``units`` chunks on all threads, True unless a chunk
    failed (the caller then runs its serial loop, which raises the error). ``out`` and
    the array inputs are flat and contiguous, the other inputs scalars."""

    @intrinsic
    def run(typingctx, out, units, inputs):
        element_types = tuple(t.dtype if isinstance(t, types.Array) else t for t in inputs)
        kernel.compile(element_types)
        compiled = kernel.overloads[element_types]

        def codegen(context, builder, signature, args):
            return _run_chunks(context, builder, compiled, out, inputs, *args)

        return types.boolean(out, units, inputs), codegen

    run.__numbax_description__ = ("chunk_runner", kernel)  # for the runtime cache's key
    return run


_BYTE_PTR = ir.IntType(8).as_pointer()
_CHUNK_FUNCTION = ir.FunctionType(
    ir.VoidType(),
    [_BYTE_PTR.as_pointer(), ir.IntType(64).as_pointer(), ir.IntType(64).as_pointer(), _BYTE_PTR],
)
_SHARED = ir.LiteralStructType([_BYTE_PTR, ir.IntType(32)])
"""What every chunk reads and writes: the output's end, and a flag a failed kernel sets."""
_PARALLEL_FOR = ir.FunctionType(
    ir.VoidType(), [_BYTE_PTR] * 5 + [ir.IntType(64)] * 2 + [ir.IntType(32)]
)


def _run_chunks(context, builder, compiled, out, inputs, out_value, units, packed):
    """Call ``numba_parallel_for`` over ``units`` chunks of the output (the last may be
    shorter); True unless a chunk's kernel failed."""
    context.add_linking_libs([compiled.library])
    chunk_function = _chunk_function(context, builder.module, compiled, inputs, out.dtype)
    intp = context.get_value_type(types.intp)
    out_array = context.make_array(out)(context, builder, out_value)
    total = out_array.nitems
    chunk = builder.sdiv(builder.sub(builder.add(total, units), ir.Constant(intp, 1)), units)

    pointers = [builder.bitcast(out_array.data, _BYTE_PTR)]
    steps = [builder.mul(chunk, ir.Constant(intp, _itemsize(context, out.dtype)))]
    for value, kind in zip(cgutils.unpack_tuple(builder, packed, len(inputs)), inputs, strict=True):
        if isinstance(kind, types.Array):
            array = context.make_array(kind)(context, builder, value)
            pointers.append(builder.bitcast(array.data, _BYTE_PTR))
            steps.append(builder.mul(chunk, ir.Constant(intp, _itemsize(context, kind.dtype))))
        else:  # a scalar: every chunk reads the same slot
            slot = cgutils.alloca_once(builder, context.get_data_type(kind))
            context.pack_value(builder, kind, value, slot)
            pointers.append(builder.bitcast(slot, _BYTE_PTR))
            steps.append(ir.Constant(intp, 0))
    out_bytes = builder.mul(total, ir.Constant(intp, _itemsize(context, out.dtype)))

    shared = cgutils.alloca_once(builder, _SHARED)
    builder.store(
        builder.gep(pointers[0], [out_bytes]), cgutils.gep_inbounds(builder, shared, 0, 0)
    )
    failed = cgutils.gep_inbounds(builder, shared, 0, 1)
    builder.store(ir.Constant(ir.IntType(32), 0), failed)

    def on_stack(values: list) -> ir.Value:
        return builder.bitcast(
            cgutils.alloca_once_value(builder, cgutils.pack_array(builder, values)), _BYTE_PTR
        )

    parallel_for = cgutils.get_or_insert_function(
        builder.module, _PARALLEL_FOR, "numba_parallel_for"
    )
    builder.call(
        parallel_for,
        [
            builder.bitcast(chunk_function, _BYTE_PTR),
            on_stack(pointers),
            on_stack([units, chunk]),
            on_stack(steps),
            builder.bitcast(shared, _BYTE_PTR),
            ir.Constant(ir.IntType(64), 1),  # dimensions after the count of chunks: chunk
            ir.Constant(ir.IntType(64), len(pointers)),
            builder.call(_get_num_threads(builder.module), []),
        ],
    )
    return builder.icmp_signed("==", builder.load(failed), ir.Constant(ir.IntType(32), 0))


def _get_num_threads(module: ir.Module) -> ir.Function:
    """The threading layer's ``int get_num_threads(void)``, linked by name."""
    return cgutils.get_or_insert_function(
        module, ir.FunctionType(ir.IntType(32), []), "get_num_threads"
    )


def _itemsize(context: Any, dtype: types.Type) -> int:
    return context.get_abi_sizeof(context.get_data_type(dtype))


def _chunk_function(context, module, compiled, inputs, out_dtype) -> ir.Function:
    """``void chunks(char **args, intp *dims, intp *steps, shared *data)``: ``dims[0]``
    chunks from the ``args`` pointers on, each ``dims[1]`` elements or what is left
    before the output's end (``data``). One per kernel and input types in a module."""
    name = f"numbax.chunks.{compiled.fndesc.mangled_name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    function = ir.Function(module, _CHUNK_FUNCTION, name=name)
    function.linkage = "internal"
    args, dims, steps, data = function.args
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    kernel = context.declare_function(module, compiled.fndesc)
    intp = context.get_value_type(types.intp)
    restype, argtypes = compiled.signature.return_type, compiled.signature.args
    shared = builder.bitcast(data, _SHARED.as_pointer())
    out_end = builder.load(cgutils.gep_inbounds(builder, shared, 0, 0))
    failed = cgutils.gep_inbounds(builder, shared, 0, 1)
    units = builder.load(dims)
    chunk = builder.load(builder.gep(dims, [ir.Constant(intp, 1)]))
    count_args = len(inputs) + 1
    base = [builder.load(builder.gep(args, [ir.Constant(intp, i)])) for i in range(count_args)]
    step = [builder.load(builder.gep(steps, [ir.Constant(intp, i)])) for i in range(count_args)]
    out_item = ir.Constant(intp, _itemsize(context, out_dtype))
    out_type = context.get_data_type(out_dtype).as_pointer()
    input_types = [context.get_data_type(_element(kind)).as_pointer() for kind in inputs]

    with cgutils.for_range(builder, units) as unit:
        starts = [
            builder.gep(b, [builder.mul(unit.index, s)]) for b, s in zip(base, step, strict=True)
        ]
        left = builder.sdiv(
            builder.sub(builder.ptrtoint(out_end, intp), builder.ptrtoint(starts[0], intp)),
            out_item,
        )
        count = builder.select(builder.icmp_signed("<", left, chunk), left, chunk)
        out_pointer = builder.bitcast(starts[0], out_type)
        input_pointers = [
            builder.bitcast(p, t) for p, t in zip(starts[1:], input_types, strict=True)
        ]
        with cgutils.for_range(builder, count) as element:
            values = []
            for pointer, kind in zip(input_pointers, inputs, strict=True):
                if isinstance(kind, types.Array):
                    pointer = builder.gep(pointer, [element.index], inbounds=True)
                values.append(context.unpack_value(builder, _element(kind), pointer))
            status, result = context.call_conv.call_function(
                builder, kernel, restype, argtypes, values
            )
            with builder.if_then(builder.not_(status.is_ok), likely=False):
                builder.store(ir.Constant(ir.IntType(32), 1), failed)
                builder.ret_void()
            result = context.cast(builder, result, restype, out_dtype)
            target = builder.gep(out_pointer, [element.index], inbounds=True)
            context.pack_value(builder, out_dtype, result, target)
    builder.ret_void()
    return function


def _element(kind):
    return kind.dtype if isinstance(kind, types.Array) else kind
