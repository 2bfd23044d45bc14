"""Fuse chains of elementwise operations into one loop over the elements.

Numba compiles each array statement of ``_mul = alpha * _exp`` / ``_sub = _mul - alpha``
into its own loop with its own temporary array: it fuses array expressions only within
one source expression, never across named variables, and never through ``np.where``.
Normalized code names every intermediate, so without this pass a SELU would make six
passes over memory (about 10x slower than one). Here each run of consecutive
elementwise statements whose intermediates are not needed afterwards becomes a scalar
*kernel* function, compiled as a Numba ufunc (which broadcasts like NumPy), and the run
becomes one call:

    @nxrt.elementwise
    def _selu_line19(x, alpha, lmbda):
        ...one statement per operation, on scalars...

    _mul_2 = _selu_line19(x, alpha, lmbda)

Only straight-line code outside loops is fused: inside a loop, values are mostly
scalars, and the loop is already compiled to one pass. Before a block is fused, a run
that reads values an earlier run computed gets its own copy of their computation
(``rematerialize.py``): recomputing is cheaper than storing and reading them back.

A run may end at a sum of its value over constant axes (``np.sum(x, axis=2)``) or at an
``unbroadcast`` that may sum: the kernel is then declared to sum its values as it makes
them (``@nxrt.elementwise(summed=2)``, ``unbroadcast=True``; ``loops/fused_sums.py``), and no
array of values is stored. Two such loops of the same arguments become one (``also=``).
An ``unbroadcast`` into the shape of a value the loop itself computes (the cotangent of
``out`` in ``(out - y) ** 2``, ``out`` recomputed in the loop), unless it shares its
loop with another, stays a statement after the loop.

A run whose values are read after it in several places (the JVP of a VJP returns a
cotangent and its tangent) makes a loop for each such value, computing it from what
it is computed from (its *cone*): the values the loops share are computed in each
rather than stored, within a bound.

This module is the pass in order (its preparations, and the declarations on the loops
it made); the runs, their groups and cones and the kernels they become are
``fused_loops.py``'s, and reverse mode's sums and seeds around the loops
``reverse_sums.py``'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.passes.fused_loops import (
    Fuser,
    assigns_one_name,
    read_ids,
)
from numbax.numba_backend.passes.kept_shapes import (
    constant_axes,
    mark_kept_shapes,
)
from numbax.numba_backend.passes.reverse_sums import (
    in_one_loop,
    one_expansion_each,
    seeds_without_sums,
    summed_after_the_loop,
)
from numbax.numba_backend.passes.stand_ins import shape_stand_ins, stand_ins
from numbax.runtime import nxrt as runtime
from numbax.transform.ad.reverse import COTANGENT_OF
from numbax.transform.analysis.dataflow import read_names
from numbax.transform.analysis.shape_sources import ShapeSources, constant_int
from numbax.transform.names import Namer
from numbax.transform.nodes import clone
from numbax.transform.resolve import Resolver
from numbax.transform.walk import walk


def fuse_elementwise(
    fn: gast.FunctionDef, resolver: Resolver, namer: Namer
) -> tuple[gast.FunctionDef, list[gast.FunctionDef]]:
    """Rewrite ``fn`` in place; return it and the scalar kernels it now calls."""
    _axes_written_out(fn, resolver)
    fuser = Fuser(fn, resolver, namer, reductions=True)
    params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    cotangents = getattr(resolver.source.func, COTANGENT_OF, None)  # a VJP's (reverse.py)
    mark_kept_shapes(fn.body, params, resolver, fuser.is_elementwise, cotangents)
    fn.body = _parameters_unpacked_early(fn.body, params, fuser.is_elementwise)
    fn.body = seeds_without_sums(fuser.block(fn.body, frozenset()), fn, resolver, fuser.kernels)
    stand_ins(fn, resolver)
    fn.body = one_expansion_each(fn.body, fuser.kernels)
    fn.body = in_one_loop(fn.body, {k.name: k for k in fuser.kernels})
    fn.body = summed_after_the_loop(fn.body, {k.name: k for k in fuser.kernels})
    _declare_same_shapes(fn.body, params, resolver, fuser, cotangents)
    shape_stand_ins(fn, resolver, fuser.kernels)
    return fn, fuser.kernels


def _axes_written_out(fn: gast.FunctionDef, resolver: Resolver) -> None:
    """Each ``axis`` of ``np.sum`` and ``nxrt.broadcast_reduced`` that normalized code
    names (``_tuple = 0, 2`` ... ``np.sum(x, axis=_tuple)``) written as its constant, and
    the name's assignment removed when nothing else reads it: a sum over constant axes
    can join the loop before it, and compiles to loops for those axes. In place."""
    stores = Counter(
        n.id for n in walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    )
    constants = {
        node.targets[0].id: node.value
        for node in walk(fn)
        if isinstance(node, gast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], gast.Name)
        and stores[node.targets[0].id] == 1
        and constant_axes(node.value) is not None
    }
    if not constants:
        return

    def written(arg: gast.expr) -> gast.expr:
        return (
            clone(constants[arg.id]) if isinstance(arg, gast.Name) and arg.id in constants else arg
        )

    for node in walk(fn):
        if not isinstance(node, gast.Call):
            continue
        target = resolver.resolve(node.func)
        if target is np.sum:
            node.args[1:2] = [written(arg) for arg in node.args[1:2]]
            for keyword in node.keywords:
                if keyword.arg == "axis":
                    keyword.value = written(keyword.value)
        elif target is runtime.broadcast_reduced and len(node.args) == 4:
            node.args[2] = written(node.args[2])
    still_read = set(read_ids(fn))
    unread = {name for name in constants if name not in still_read}
    for node in walk(fn):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                block[:] = [
                    stmt
                    for stmt in block
                    if not (
                        isinstance(stmt, gast.Assign)
                        and isinstance(stmt.targets[0], gast.Name)
                        and stmt.targets[0].id in unread
                    )
                ]


def _parameters_unpacked_early(
    body: list[gast.stmt], params: list[str], elementwise: Callable[[gast.stmt], bool]
) -> list[gast.stmt]:
    """``body`` with the copies of parameters and their constant items
    (``_ct_tuple = _ct_out_2``, ``_ct_ct_x = _ct_tuple[0]``) moved up, above the
    elementwise statements before them.

    The adjoint of an adjoint unpacks each tuple of cotangents where the first adjoint
    read it, in the middle of a run of elementwise statements. An item is not
    elementwise, so it ended the run, and every value the rest read from before it had
    to be stored: the 4th derivative of ``tanh`` was four runs and more than a hundred
    loops. Moved up, the runs are one. Only names assigned once are moved, from
    parameters never assigned, and only across elementwise statements, which change
    nothing (``p[0] = v`` or a call, which might, stays above what it preceded): every
    read sees the value it saw before."""
    assigned = Counter(
        name.id
        for stmt in body
        for name in walk(stmt)
        if isinstance(name, gast.Name) and isinstance(name.ctx, gast.Store)
    )
    available = {p for p in params if p not in assigned}
    out: list[gast.stmt] = []
    above = 0  # where the next moved statement goes: after the last one not elementwise
    for stmt in body:
        read = _unpacked_from(stmt)
        if read in available and assigned[stmt.targets[0].id] == 1:
            out.insert(above, stmt)
            above += 1
            available.add(stmt.targets[0].id)
            continue
        out.append(stmt)
        if not elementwise(stmt):
            above = len(out)
    return out


def _unpacked_from(stmt: gast.stmt) -> str | None:
    """The name ``stmt`` copies (``t = p``) or takes a constant item of (``t = p[0]``)."""
    if not assigns_one_name(stmt):
        return None
    value = stmt.value
    if isinstance(value, gast.Subscript) and constant_int(value.slice) is not None:
        value = value.value
    return value.id if isinstance(value, gast.Name) else None


def _declare_same_shapes(
    body: list[gast.stmt],
    params: list[str],
    resolver: Resolver,
    fuser: Fuser,
    cotangents: Any,
) -> None:
    """Declare ``same_shapes`` (``elementwise.py``) on each loop, called in ``body``'s
    straight-line code, whose array arguments the program shows to have one shape:
    each computed elementwise from the same values (``ShapeSources``). Its compiled
    loop then has no broadcasting loop nest. The declaration only chooses the faster
    code to compile: where the shapes differ after all (a cotangent smaller than its
    value), the loop broadcasts its arguments first, so a wrong guess costs time only."""
    plain = {k.name: k for k in fuser.kernels if not getattr(k, "numbax_sum", None)}

    def calls_plain(stmt: gast.stmt) -> bool:
        value = getattr(stmt, "value", None)
        return (
            isinstance(stmt, gast.Assign)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Name)
            and value.func.id in plain
        )

    def elementwise(stmt: gast.stmt) -> bool:  # a plain loop's value has its arguments' shape
        return calls_plain(stmt) or fuser.is_elementwise(stmt)

    shapes = ShapeSources(params, resolver, elementwise, cotangents)
    for stmt in body:
        if calls_plain(stmt):
            sources = [shapes.of(arg) for arg in stmt.value.args if isinstance(arg, gast.Name)]
            if len(sources) > 1 and sources[0] and all(s == sources[0] for s in sources):
                plain[stmt.value.func.id].numbax_same_shapes = True
        shapes.follow(stmt)


def first_not_elementwise(fn: gast.FunctionDef, resolver: Resolver) -> gast.stmt | None:
    """The first statement of normalized ``fn`` that is not one elementwise operation
    (a branch, a loop, a reduction, a call without an elementwise rule), or None when the
    whole body is: then ``fn`` applied to arrays is ``fn`` applied to each element of
    the broadcast of the arguments its result reads (:func:`parameters_read`), which is
    how the GPU target runs it."""
    fuser = Fuser(fn, resolver, Namer.for_function(fn))
    *body, last = fn.body
    for stmt in body:
        constant = isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Constant)
        if not (constant or fuser.is_elementwise(stmt)):
            return stmt
    if not (isinstance(last, gast.Return) and isinstance(last.value, gast.Name)):
        return last
    return None


def parameters_read(fn: gast.FunctionDef) -> set[str]:
    """The parameters the result of straight-line ``fn`` is computed from."""
    reads: dict[str, set[str]] = {a.id: {a.id} for a in fn.args.posonlyargs + fn.args.args}
    *body, last = fn.body
    for stmt in body:
        sources = [reads.get(name, set()) for name in read_names(stmt.value)]
        reads[stmt.targets[0].id] = set().union(*sources)
    return reads.get(last.value.id, set())


def scalar_selects(fn: gast.FunctionDef, resolver: Resolver) -> gast.FunctionDef:
    """Every ``t = np.where(c, a, b)`` of ``fn`` as ``t = a if c else b``, as in a fused
    kernel: for device code, whose values are one thread's numbers (numba-cuda has no
    ``np.where`` of scalars); in place."""
    for node in walk(fn):
        value = getattr(node, "value", None)
        if (
            isinstance(node, gast.Assign)
            and isinstance(value, gast.Call)
            and len(value.args) == 3
            and resolver.resolve(value.func) is np.where
        ):
            cond, a, b = value.args
            node.value = gast.IfExp(cond, a, b)
    return fn
