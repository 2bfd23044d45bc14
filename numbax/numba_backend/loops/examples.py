"""A map's examples on every core (``nx.pmap``): the runner its generated code calls
(``transform/batch/loop.py``'s ``threaded_loop_functions``).

``examples_runner(example)(size, arguments, limit)`` calls the compiled function of one
example, ``example(i, *arguments)``, for every ``i`` from 1 to ``size - 1`` (the first
example ran before, to allocate the batch each call writes into), on at most ``limit``
of Numba's threads at once, through the ``numba_parallel_for`` entry point of its
threading layer, as ``threads.py``'s fused loops do: no ``prange``, so no parfor compile,
and nothing of the arguments (lists, records, any pytree) that a ``prange`` would have to
pass. Each thread takes the next examples when it finishes its last (an atomic counter;
a share of those left, down to one at a time at the end: guided scheduling): examples
of uneven cost (a ``while`` to a tolerance, an ODE with its own step count) balance over
the threads. OpenBLAS has one thread meanwhile (``blas_threads.py``), so a
matrix product inside an example starts no threads on cores the other examples hold.

The calling thread runs examples alone first, for ``threads.ALONE_NS`` (50 µs): waking the
other threads costs tens of µs on many cores, so a small map finishes without them, and
a longer one loses at most that much of its parallel time.

The examples run on the threads only where numbax may use them (``threads.py``: the
``omp`` or ``tbb`` layer, which allow a map within a map and maps from several Python
threads at once, where ``workqueue`` aborts the process; not in a forked child; more than
one thread), and when at least two are left; else one after the other on the caller's
thread. Either way each is the same compiled code, so the results are the same bits.

An example that fails stops the others from starting: the runner returns its index, and
the generated code calls it again on its own thread, which raises the error as the
serial loop would. Everything is linked by symbol name, so the machine code stays valid
in the disk cache.
"""

from __future__ import annotations

import functools
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from numbax.numba_backend.loops.blas_threads import set_blas_threads
from numbax.numba_backend.loops.threads import (
    alone_ns,
    keeping_thread_count,
    now,
    usable_thread_count,
)

__all__ = ["examples_runner"]

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_BYTE_PTR = ir.IntType(8).as_pointer()
_SHARED = ir.LiteralStructType([_BYTE_PTR, _I64, _I64, _I64, _I64])
"""What every thread's call reads and writes: the arguments (a tuple, in memory), the
next example to take (atomic), the number of examples, a failed example or -1, and
what the examples left are divided by to make the next take (:func:`_taker`)."""
_ARGUMENTS, _NEXT, _SIZE, _FAILED, _DIVISOR = range(5)
_TAKES_PER_THREAD = 4
"""A take is the examples left over this many times the threads (at least one): few
atomic operations, and neighbouring examples, whose results may share a cache line, on
one thread, while the last takes, one example each, balance examples of uneven cost."""
_TAKER = ir.FunctionType(
    ir.VoidType(), [_BYTE_PTR.as_pointer(), _I64.as_pointer(), _I64.as_pointer(), _BYTE_PTR]
)
_PARALLEL_FOR = ir.FunctionType(ir.VoidType(), [_BYTE_PTR] * 5 + [_I64] * 2 + [_I32])


@functools.cache
def examples_runner(example: Any) -> Any:
    """``run(size, arguments, limit)`` for compiled code: ``example(i, *arguments)`` for
    ``i`` in ``1..size-1`` on at most ``limit`` threads; -1, or a failed example's index."""

    @intrinsic
    def run(typingctx, size, arguments, limit):
        if not isinstance(arguments, types.BaseTuple):
            return None
        argtypes = (types.intp, *arguments.types)
        example.compile(argtypes)
        compiled = example.overloads[argtypes]

        def codegen(context, builder, signature, args):
            context.add_linking_libs([compiled.library])
            return _run(context, builder, signature, compiled, *args)

        return types.intp(types.intp, arguments, types.intp), codegen

    py_func = example.py_func
    identity = f"examples_runner({py_func.__module__}.{py_func.__qualname__})"
    run.__numbax_identity__ = lambda: identity  # for the disk cache's key of callers
    run.__numbax_description__ = ("examples_runner", example)
    return run


def _run(context, builder, signature, compiled, size, arguments, limit) -> ir.Value:
    """Every example after the first: on this thread for the first ``threads.ALONE_NS`` (a map
    that finishes by then wakes no thread), then the rest on ``min(limit, usable
    threads)`` threads when at least two are left and two threads may run, else here."""
    taker = _taker(context, builder.module, compiled, signature.args[1])
    slot = cgutils.alloca_once_value(builder, arguments)
    shared = cgutils.alloca_once(builder, _SHARED)
    after, failed = _alone(context, builder, compiled, signature.args[1], size, arguments)
    fields = {
        _ARGUMENTS: builder.bitcast(slot, _BYTE_PTR),
        _NEXT: after,
        _SIZE: size,
        _FAILED: failed,
    }
    usable = usable_thread_count(builder)
    threads = builder.select(builder.icmp_signed("<", limit, usable), limit, usable)
    left = builder.sub(size, after)
    threads = builder.select(builder.icmp_signed("<", left, threads), left, threads)
    several = builder.icmp_signed(">=", threads, ir.Constant(_I64, 2))
    fields[_DIVISOR] = builder.select(
        several, builder.mul(threads, ir.Constant(_I64, _TAKES_PER_THREAD)), ir.Constant(_I64, 1)
    )
    for index, value in fields.items():
        builder.store(value, cgutils.gep_inbounds(builder, shared, 0, index))
    data = builder.bitcast(shared, _BYTE_PTR)

    with builder.if_else(several) as (threaded, here):
        with threaded:
            blas = set_blas_threads(builder, ir.Constant(_I32, 1))
            parallel_for = cgutils.get_or_insert_function(
                builder.module, _PARALLEL_FOR, "numba_parallel_for"
            )

            def on_stack(values: list) -> ir.Value:
                stacked = cgutils.alloca_once_value(builder, cgutils.pack_array(builder, values))
                return builder.bitcast(stacked, _BYTE_PTR)

            arguments = [
                builder.bitcast(taker, _BYTE_PTR),
                on_stack([ir.Constant(_BYTE_PTR, None)]),
                on_stack([threads, ir.Constant(_I64, 0)]),  # one call a thread
                on_stack([ir.Constant(_I64, 0)]),
                data,
                ir.Constant(_I64, 1),
                ir.Constant(_I64, 1),
                builder.trunc(threads, _I32),
            ]
            keeping_thread_count(builder, lambda: builder.call(parallel_for, arguments))
            set_blas_threads(builder, blas)
        with here:
            nulls = [ir.Constant(t, None) for t in _TAKER.args[:3]]
            builder.call(taker, [*nulls, data])
    return builder.load(cgutils.gep_inbounds(builder, shared, 0, _FAILED))


def _alone(context, builder, compiled, argtypes, size, arguments) -> tuple[ir.Value, ir.Value]:
    """Run examples from 1 on this thread until ``threads.ALONE_NS`` have passed, all are done,
    or one failed; return the next example to run (``size`` after a failure) and the
    failed one's index or -1."""
    example = context.declare_function(builder.module, compiled.fndesc)
    values = cgutils.unpack_tuple(builder, arguments, len(argtypes))
    deadline = builder.add(now(builder), alone_ns(builder))
    next_slot = cgutils.alloca_once_value(builder, ir.Constant(_I64, 1))
    failed_slot = cgutils.alloca_once_value(builder, ir.Constant(_I64, -1))
    check = builder.append_basic_block("alone.check")
    run = builder.append_basic_block("alone.run")
    done = builder.append_basic_block("alone.done")
    builder.branch(check)
    builder.position_at_end(check)
    index = builder.load(next_slot)
    with builder.if_then(builder.icmp_signed(">=", index, size)):
        builder.branch(done)
    builder.cbranch(builder.icmp_signed("<", now(builder), deadline), run, done)
    builder.position_at_end(run)
    status, _ = context.call_conv.call_function(
        builder, example, compiled.signature.return_type, compiled.signature.args, [index, *values]
    )
    with builder.if_then(builder.not_(status.is_ok), likely=False):
        builder.store(index, failed_slot)
        builder.store(size, next_slot)  # nothing left for the threads
        builder.branch(done)
    builder.store(builder.add(index, ir.Constant(_I64, 1)), next_slot)
    builder.branch(check)
    builder.position_at_end(done)
    return builder.load(next_slot), builder.load(failed_slot)


def _taker(context, module, compiled, arguments: types.BaseTuple) -> ir.Function:
    """``void take(char **, intp *, intp *, shared *data)``: takes the next examples
    (``data``'s counter, atomically; the examples left over ``data``'s divisor, at
    least one: guided scheduling) and runs them, until none is left or one failed.
    Every thread's call is the same."""
    name = f"numbax.examples.{compiled.fndesc.mangled_name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    function = ir.Function(module, _TAKER, name=name)
    function.linkage = "internal"
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    example = context.declare_function(module, compiled.fndesc)
    shared = builder.bitcast(function.args[3], _SHARED.as_pointer())

    def field(index: int) -> ir.Value:
        return cgutils.gep_inbounds(builder, shared, 0, index)

    tuple_type = context.get_value_type(arguments).as_pointer()
    packed = builder.bitcast(builder.load(field(_ARGUMENTS)), tuple_type)
    size = builder.load(field(_SIZE))
    divisor = builder.load(field(_DIVISOR))
    one = ir.Constant(_I64, 1)
    take = function.append_basic_block("take")
    done = function.append_basic_block("done")
    builder.branch(take)
    builder.position_at_end(take)
    seen = builder.load_atomic(field(_NEXT), "monotonic", 8)
    count = builder.sdiv(builder.sub(size, seen), divisor)
    count = builder.select(builder.icmp_signed("<", count, one), one, count)
    start = builder.atomic_rmw("add", field(_NEXT), count, "monotonic")
    with builder.if_then(builder.icmp_signed(">=", start, size), likely=False):
        builder.branch(done)
    stop = builder.add(start, count)
    stop = builder.select(builder.icmp_signed(">", stop, size), size, stop)
    values = cgutils.unpack_tuple(builder, builder.load(packed), len(arguments))
    with cgutils.for_range_slice(builder, start, stop, one, inc=True) as (index, _):
        status, _ = context.call_conv.call_function(
            builder,
            example,
            compiled.signature.return_type,
            compiled.signature.args,
            [index, *values],
        )
        with builder.if_then(builder.not_(status.is_ok), likely=False):
            builder.store(index, field(_FAILED))  # any failed example will do
            builder.atomic_rmw("xchg", field(_NEXT), size, "monotonic")  # the others stop
            builder.branch(done)
    builder.branch(take)
    builder.position_at_end(done)
    builder.ret_void()
    return function
