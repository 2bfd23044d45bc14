"""``vmap``'s loop method: a generated loop over the batch that calls the function once
per example.

    def vmap_model(w, x):
        _size = nxrt.batch_size('model', (x,), (0,), ('x',))
        _out = _model(w, nxrt.batch_take(x, 0, 0))
        _batch = nxrt.batch_empty(_out, _size, 0)
        nxrt.batch_put(_batch, 0, 0, _out, 'model')
        for _i in range(1, _size):
            _out = _model(w, nxrt.batch_take(x, _i, 0))
            nxrt.batch_put(_batch, _i, 0, _out, 'model')
        return _batch

The first example is computed before the loop because the batched output is allocated
from its shape and dtype; unmapped arguments are passed as they are. It needs nothing
of the function's body, so it batches whatever numbax can call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast

from numbax.transform.ad.common import runtime_call
from numbax.transform.batch.axes import Leaf, batch_size, elements, is_prefix, rebuilt
from numbax.transform.cleanup import cleanup
from numbax.transform.nodes import assign, clone, const, function, load, store

INDEX = "index"
"""An argument's axis that passes the example's position itself (``axis_index``)."""

SIZE = "_size"
"""The generated code's name for the batch size."""


def loop_function(
    name: str,
    callee: str,
    short: str,
    params: list[str],
    axes: tuple,
    out_axes: Any,
    axis_size: int | None,
    loop: str = "range",
) -> gast.FunctionDef:
    """``def <name>(<params>)``: ``callee`` called once per example, ``params`` mapped
    over ``axes``; ``short`` names the function in errors; ``loop`` is ``range`` or, for
    the compiled loop, ``prange`` (parallel under ``jit(parallel=True)``)."""
    arguments = [Leaf(load(p), p, a) for p, a in zip(params, axes, strict=True)]
    body = [
        assign(SIZE, batch_size(short, params, axes, axis_size)),
        *examples_loop(callee, arguments, "_batch", out_axes, short, loop),
        gast.Return(load("_batch")),
    ]
    return cleanup(function(name, params, body))


def examples_loop(
    callee: str,
    arguments: list[Leaf],
    batch: str,
    out_axes: Any,
    short: str,
    loop: str = "range",
) -> list[gast.stmt]:
    """Statements calling ``callee`` once per example, with each argument mapped over
    its axis (None: passed as it is; :data:`INDEX`: the example's position), the
    outputs stacked into ``batch`` at ``out_axes``."""
    first, each = const(0), load("_i")
    outputs = _outputs(Leaf(load("_out"), "_out", out_axes), load(batch))
    return [
        assign("_out", _call(callee, arguments, first)),
        assign(batch, _empty(Leaf(load("_out"), "_out", out_axes))),
        *(_put(target, first, out, short) for out, target in outputs),
        gast.For(
            store("_i"),
            gast.Call(load(loop), [const(1), load(SIZE)], []),
            [
                assign("_out", _call(callee, arguments, each)),
                *(_put(target, each, out, short) for out, target in outputs),
            ],
            [],
            None,
        ),
    ]


# Each node goes into the tree once (a copy where it recurs), so that the tree can be
# rewritten in place like any other.
def _call(callee: str, arguments: list[Leaf], index: gast.expr) -> gast.Call:
    return gast.Call(
        load(callee),
        [clone(index) if a.axis == INDEX else _take(a, index) for a in arguments],
        [],
    )


def _take(leaf: Leaf, index: gast.expr) -> gast.expr:
    """One example of an argument (as it is where not mapped)."""
    if leaf.axis is None:
        return clone(leaf.node)
    if is_prefix(leaf.axis):
        return rebuilt(leaf.axis, [(k, _take(e, index)) for k, e in elements(leaf)])
    return runtime_call("batch_take", clone(leaf.node), clone(index), const(leaf.axis))


def _empty(out: Leaf) -> gast.expr:
    """The batch of outputs, allocated from the first example's."""
    if is_prefix(out.axis):
        return rebuilt(out.axis, [(k, _empty(e)) for k, e in elements(out)])
    return runtime_call("batch_empty", clone(out.node), load(SIZE), const(out.axis))


def _outputs(out: Leaf, batch: gast.expr) -> list[tuple[Leaf, gast.expr]]:
    """(example's output leaf, where the batch keeps it) per leaf of ``out_axes``."""
    if not is_prefix(out.axis):
        return [(out, batch)]
    whole = Leaf(batch, "", out.axis)
    return [
        pair
        for (_, o), (_, b) in zip(elements(out), elements(whole), strict=True)
        for pair in _outputs(o, b.node)
    ]


def _put(batch: gast.expr, index: gast.expr, out: Leaf, short: str) -> gast.Expr:
    call = runtime_call(
        "batch_put", clone(batch), clone(index), const(out.axis), clone(out.node), const(short)
    )
    return gast.Expr(call)


class ThreadedExamples:
    """:func:`examples_loop`'s statements for a map whose examples after the first run
    on several threads (``pmap``): called like it, it returns the statements that fill
    the batch, and keeps the function of one example each call needs
    (:attr:`functions`: the function, what it calls, and the runner calling it)::

        _out = _model(w, nxrt.batch_take(x, 0, 0))   # the first sizes the batch
        _batch = nxrt.batch_empty(_out, _size, 0)
        nxrt.batch_put(_batch, 0, 0, _out, 'model')
        _failed = run_examples(_size, (_batch, w, x), 8)   # the others, on 8 threads
        if _failed >= 0:
            _pmap_model_example(_failed, _batch, w, x)    # raises its error here

        def _pmap_model_example(_i, _batch, w, x):   # one example, stored in place
            _out = _model(w, nxrt.batch_take(x, _i, 0))
            nxrt.batch_put(_batch, _i, 0, _out, 'model')

    ``names(callee)`` gives the example function's name and its runner's (named
    ``run_examples`` above), which calls the example for every index from 1 on, on at
    most ``threads`` threads, and returns -1, or an index whose example failed: called
    again on this thread, it raises its error as the serial loop would. Each example is
    a call of the same compiled function, so the results are those of the serial loop,
    whichever thread runs it."""

    def __init__(self, names: Callable[[str], tuple[str, str]], threads: int) -> None:
        self.names = names
        self.threads = threads
        self.functions: list[tuple[gast.FunctionDef, str, str]] = []  # and callee, runner

    def __call__(
        self, callee: str, arguments: list[Leaf], batch: str, out_axes: Any, short: str
    ) -> list[gast.stmt]:
        example, runner = self.names(callee)
        passed = list({_parameter(a): a for a in arguments if a.axis != INDEX}.values())
        params = [_parameter(a) for a in passed]  # each value once
        inside = [
            a if a.axis == INDEX else Leaf(load(_parameter(a)), a.label, a.axis) for a in arguments
        ]
        first, index = const(0), load("_i")
        outputs = _outputs(Leaf(load("_out"), "_out", out_axes), load(batch))
        values = [load(batch), *(clone(a.node) for a in passed)]
        run = gast.Call(
            load(runner), [load(SIZE), gast.Tuple(values, gast.Load()), const(self.threads)], []
        )
        again = gast.Call(load(example), [load("_failed"), *map(clone, values)], [])
        one = [
            assign("_out", _call(callee, inside, index)),
            *(_put(target, index, out, short) for out, target in outputs),
        ]
        tree = cleanup(function(example, ["_i", batch, *params], one))
        self.functions.append((tree, callee, runner))
        return [
            assign("_out", _call(callee, arguments, first)),
            assign(batch, _empty(Leaf(load("_out"), "_out", out_axes))),
            *(_put(target, first, out, short) for out, target in outputs),
            assign("_failed", run),
            gast.If(
                gast.Compare(load("_failed"), [gast.GtE()], [const(0)]), [gast.Expr(again)], []
            ),
        ]


def _parameter(argument: Leaf) -> str:
    """The name an example function takes an argument by: its own, or, for an element
    of a batch (``_part1[0]``), one made of it (``_part1_0``)."""
    if isinstance(argument.node, gast.Name):
        return argument.node.id
    return "".join(c if c.isalnum() or c == "_" else "_" for c in argument.label).rstrip("_")


def threaded_loop_functions(
    names: tuple[str, str],
    callee: str,
    short: str,
    params: list[str],
    axes: tuple,
    out_axes: Any,
    axis_size: int | None,
    runner: str,
    threads: int,
) -> tuple[gast.FunctionDef, gast.FunctionDef]:
    """The loop of :func:`loop_function` in two functions, for a map whose examples
    run on several threads (``pmap``, :class:`ThreadedExamples`): ``names`` are (the
    map, one example), ``runner`` the name of what runs the examples on the threads."""
    name, example = names
    threaded = ThreadedExamples(lambda _: (example, runner), threads)
    arguments = [Leaf(load(p), p, a) for p, a in zip(params, axes, strict=True)]
    driver = [
        assign(SIZE, batch_size(short, params, axes, axis_size)),
        *threaded(callee, arguments, "_batch", out_axes, short),
        gast.Return(load("_batch")),
    ]
    return cleanup(function(name, params, driver)), threaded.functions[0][0]
