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
them (``@nxrt.elementwise(summed=2)``, ``unbroadcast=True``; ``fused_sums.py``), and no
array of values is stored. Two such loops of the same arguments become one (``also=``).
An ``unbroadcast`` into the shape of a value the loop itself computes (the cotangent of
``out`` in ``(out - y) ** 2``, ``out`` recomputed in the loop), unless it shares its
loop with another, stays a statement after the loop (:func:`_summed_after_the_loop`).

A run whose values are read after it in several places (the JVP of a VJP returns a
cotangent and its tangent) makes a loop for each such value, computing it from what
it is computed from (its *cone*, :func:`_cones`): the values the loops share are
computed in each rather than stored, within a bound.
"""

from __future__ import annotations

import types
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from numbax.numba_backend.passes.kept_shapes import (
    constant_axes,
    copy_mark,
    is_axes_broadcast,
    is_full_broadcast,
    keeps_shape,
    mark_kept_shapes,
)
from numbax.numba_backend.passes.rematerialize import MOST_COPIED, Kinds, rematerialize
from numbax.numba_backend.passes.stand_ins import shape_stand_ins, stand_ins
from numbax.runtime import nxrt as runtime
from numbax.transform.ad.reverse import COTANGENT_OF
from numbax.transform.analysis.dataflow import read_names
from numbax.transform.analysis.shape_sources import (
    ShapeSources,
    constant_int,
    is_elementwise_value,
)
from numbax.transform.names import Namer
from numbax.transform.nodes import clone
from numbax.transform.resolve import Resolver
from numbax.transform.walk import name_nodes, walk

_SEEDS_OF_EACH = (
    (runtime.grad_seeds, "grad_seed"),
    (runtime.holomorphic_seeds, "holomorphic_seed"),
)
"""``vmap(grad(f))``'s seeds, one per example's output, and the seed of one output: in a
loop, a seed is computed from the output's dtype alone, so the loop that makes the
outputs only for it computes nothing that is stored."""


def _seed_of_each(target: Any) -> str | None:
    """The helper seeding one output, where ``target`` seeds a batch of outputs (by
    identity: a callee may be any object, hashable or not)."""
    return next((one for each, one in _SEEDS_OF_EACH if target is each), None)


MOST_INPUTS = 32
"""Arrays one fused loop reads at most: a longer run is split into loops, the value
between them stored. A loop is typed as a ufunc, and NumPy allows 64 operands; a run
reading more arrays than this is memory-bound anyway (high-order derivatives make them)."""


def _assigns_one_name(stmt: gast.stmt) -> bool:
    """``name = value``."""
    return (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
    )


def _reads(node: gast.AST) -> list[str]:
    """The names ``node`` reads, each time it reads them, in the order of a walk."""
    return [n.id for n in walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]


def _read_ids(node: gast.AST) -> list[str]:
    """The names ``node`` reads, each time it reads them, in no particular order (faster
    than :func:`_reads`, where the order does not matter)."""
    return [n.id for n in name_nodes(node, gast.Load)]


def _is_name(args: list[gast.expr], name: str) -> bool:
    """Whether ``args`` is the one name ``name``."""
    return len(args) == 1 and isinstance(args[0], gast.Name) and args[0].id == name


def _last_reads(stmts: list[gast.stmt]) -> dict[str, int]:
    """Each name read in ``stmts`` (nested blocks included), and the index of the last
    statement that reads it."""
    return {name: index for index, stmt in enumerate(stmts) for name in _read_ids(stmt)}


@dataclass(frozen=True)
class _ReadFrom:
    """The names read from statement ``start`` of a block on, or after the block: what a
    run of statements before ``start`` must keep. A membership test, not a set, so that
    each block is walked once instead of once per run."""

    last_read: dict[str, int]  # of the block's statements: see _last_reads
    start: int
    after: Container[str]

    def __contains__(self, name: object) -> bool:
        return self.last_read.get(name, -1) >= self.start or name in self.after


def _contributing(group: list[gast.Assign]) -> list[gast.Assign]:
    """The statements of ``group`` that its last one (the kernel's result) depends on.

    A kernel's result has the broadcast shape of all its inputs, so a statement whose
    value nothing reads must not be fused in: its inputs would broadcast the result (a
    dead array copy beside an integer copy made the integer an array). Such a statement
    is dead code, as its value is read neither in the group nor after it."""
    needed = set(_read_ids(group[-1].value))
    kept = [group[-1]]
    for stmt in reversed(group[:-1]):
        target = stmt.targets[0].id
        if target in needed:
            needed.discard(target)
            needed.update(_read_ids(stmt.value))
            kept.append(stmt)
    return kept[::-1]


def _cones(
    run: list[gast.Assign], targets: list[str], needed: set[int], reads: list[set[str]]
) -> list[list[int]] | None:
    """For each statement of ``run`` whose value is ``needed`` after it (in order), the
    statements of the run it is computed from (its *cone*, itself last), each read of a
    needed value before it reading the stored value instead; None where that does not
    hold or costs too much.

    Splitting a run at each value two of its loops read stores that value, a pass over
    memory each way, and leaves it as one more loop (or a lone operation) to compile.
    The JVP of a VJP (a Hessian's) computes two outputs from one chain: split, it made
    four loops and nine lone operations; as cones, two loops that each compute the chain
    again. Each cone's loop computes exactly what its value is computed from, so its
    shape is that value's, as NumPy's would be. None (the split is kept) when a statement
    is in no cone, when a cone would read a value the run changes before the cone's
    place (the last statement's), when the copies exceed ``rematerialize.MOST_COPIED``
    statements, or when a cone reads more than :data:`MOST_INPUTS` arrays."""
    assignments: dict[str, list[int]] = {}
    for index, name in enumerate(targets):
        assignments.setdefault(name, []).append(index)

    def source(name: str, before: int) -> int | None:
        earlier = [k for k in assignments.get(name, []) if k < before]
        return earlier[-1] if earlier else None

    def changed(name: str, after: int, until: int) -> bool:
        """Whether the run assigns ``name`` after statement ``after`` up to ``until``."""
        return any(after < k <= until for k in assignments.get(name, []))

    cones: list[list[int]] = []
    for last in sorted(needed):
        cone: set[int] = set()
        inputs: set[str] = set()
        todo = [last]
        while todo:
            k = todo.pop()
            if k in cone:
                continue
            cone.add(k)
            for name in reads[k]:
                made = source(name, k)
                if made is None or (made in needed and made != last):  # read as stored
                    if changed(name, -1 if made is None else made, last - 1):
                        return None
                    inputs.add(name)
                else:
                    todo.append(made)
        if len(inputs) > MOST_INPUTS:
            return None
        cones.append(sorted(cone))
    in_cones = [k for cone in cones for k in cone]
    if set(in_cones) != set(range(len(run))) or len(in_cones) - len(run) > MOST_COPIED:
        return None
    return cones


@dataclass(frozen=True)
class _Sink:
    """A sum of an elementwise value over axes that its loop can feed: the name summed,
    how the loop is declared (``@nxrt.elementwise``'s ``summed=axis, keepdims=...``,
    or ``unbroadcast=True``), and ``like``, which a call of an unbroadcasting loop gets
    before the kernel's arguments."""

    summed: str
    declared: dict[str, gast.expr]
    like: gast.Name | None = None


class _Fuser:
    def __init__(
        self, fn: gast.FunctionDef, resolver: Resolver, namer: Namer, reductions: bool = False
    ) -> None:
        """``reductions``: also fuse sums over axes with the loop that makes their values
        (``@nxrt.elementwise(summed=...)``, ``unbroadcast=True``: ``fused_sums.py``), and
        spread reduced values inside loops (``broadcast_reduced`` over constant axes): for
        Numba on the CPU, which has the loops that run them."""
        self.fn = fn
        self.resolver = resolver
        self.namer = namer
        self.reductions = reductions
        self.kinds = Kinds(self.is_elementwise, self.is_sink, self.whole_reads)
        self.kernels: list[gast.FunctionDef] = []

    def is_elementwise(self, stmt: gast.stmt) -> bool:
        if not _assigns_one_name(stmt):
            return False
        value = stmt.value
        if isinstance(value, gast.Call) and not value.keywords:
            if is_full_broadcast(value, self.resolver) or keeps_shape(value):
                return True
            if _seed_of_each(self.resolver.resolve(value.func)) and len(value.args) == 1:
                return True
            if self.resolver.resolve(value.func) is runtime.mul_pow and len(value.args) == 3:
                return True  # c * x ** p: a power's derivative, elementwise
            if self.reductions and is_axes_broadcast(value, self.resolver):
                return isinstance(value.args[0], gast.Name)
        return is_elementwise_value(value, self.resolver)  # a copy: derivative code has many

    def sink(self, stmt: gast.stmt) -> _Sink | None:
        """``t = np.sum(x, axis=...)`` over constant axes, or ``t = nxrt.unbroadcast(x,
        like)`` that may change the shape, when fusing reductions."""
        if not (self.reductions and isinstance(stmt, gast.Assign) and len(stmt.targets) == 1):
            return None
        value = stmt.value
        if not (isinstance(stmt.targets[0], gast.Name) and isinstance(value, gast.Call)):
            return None
        if not (value.args and isinstance(value.args[0], gast.Name)):
            return None
        summed = value.args[0].id
        target = self.resolver.resolve(value.func)
        if target is runtime.unbroadcast:
            if value.keywords or len(value.args) != 2 or keeps_shape(value):
                return None
            like = value.args[1]
            if not isinstance(like, gast.Name):
                return None
            return _Sink(summed, {"unbroadcast": gast.Constant(True, None)}, like)
        if target is not np.sum:
            return None
        options = {k.arg: k.value for k in value.keywords}
        if len(value.args) == 2 and "axis" not in options:
            options["axis"] = value.args[1]
        elif len(value.args) != 1:
            return None
        axis = options.pop("axis", None)
        keepdims = options.pop("keepdims", gast.Constant(False, None))
        if options or axis is None or constant_axes(axis) is None:
            return None
        if not (isinstance(keepdims, gast.Constant) and type(keepdims.value) is bool):
            return None
        return _Sink(summed, {"summed": axis, "keepdims": keepdims})

    def is_sink(self, stmt: gast.stmt) -> bool:
        return self.sink(stmt) is not None

    def whole_reads(self, stmt: gast.stmt) -> frozenset[str]:
        """The names an elementwise statement or a sink reads as whole arrays: ``like``
        of an ``unbroadcast`` (its shape), the reduced value that ``broadcast_reduced``
        spreads (of a smaller shape than the loop's)."""
        value = getattr(stmt, "value", None)
        sink = self.sink(stmt)
        if sink is not None and sink.like is not None:
            return frozenset([sink.like.id])
        if self.reductions and isinstance(value, gast.Call):
            spread = is_axes_broadcast(value, self.resolver)
            if spread and isinstance(value.args[0], gast.Name):
                return frozenset([value.args[0].id])
        return frozenset()

    def block(self, stmts: list[gast.stmt], live_after: Container[str]) -> list[gast.stmt]:
        """Fuse runs in ``stmts``; ``live_after`` are names read after this block."""
        stmts = rematerialize(stmts, self.kinds, self._is_local, self.namer, live_after)
        last_read = _last_reads(stmts)
        out: list[gast.stmt] = []
        run: list[gast.stmt] = []
        for index, stmt in enumerate(stmts):
            if self.is_elementwise(stmt):
                run.append(stmt)
                continue
            if self.is_sink(stmt):  # ends the run: its loop feeds the sum
                out += self._fuse_run([*run, stmt], _ReadFrom(last_read, index + 1, live_after))
                run = []
                continue
            out += self._fuse_run(run, _ReadFrom(last_read, index, live_after))
            run = []
            if isinstance(stmt, gast.If):
                rest = _ReadFrom(last_read, index + 1, live_after)
                stmt.body = self.block(stmt.body, rest)
                stmt.orelse = self.block(stmt.orelse, rest)
            out.append(stmt)
        out += self._fuse_run(run, live_after)
        return out

    def _fuse_run(self, run: list[gast.stmt], live: Container[str]) -> list[gast.stmt]:
        """Split ``run`` into groups that each end at a value needed outside the group,
        and fuse each group of two or more statements into one kernel call."""
        targets = [stmt.targets[0].id for stmt in run]
        last_assigned = {name: j for j, name in enumerate(targets)}
        outputs = {j for j, name in enumerate(targets) if name in live and last_assigned[name] == j}
        for j, stmt in enumerate(run):  # what is read as a whole array is stored
            for name in self.whole_reads(stmt):
                outputs.update(k for k in range(j) if targets[k] == name)
        value_reads = [set(_read_ids(stmt.value)) for stmt in run]

        def too_wide(group: list[int]) -> bool:
            """Whether the group's loop could read more than MOST_INPUTS arrays."""
            defined: set[str] = set()
            inputs: set[str] = set()
            for k in group:
                inputs |= value_reads[k] - defined
                defined.add(targets[k])
            return len(group) > 1 and len(inputs) > MOST_INPUTS

        needed = set(outputs)  # stored in any case: read after the run, or as a whole
        while True:  # a value read by a later group must end its own group
            groups = self._split(run, outputs)
            extra = set()
            read_later: set[str] = set()  # by the groups after the one at hand
            for group in reversed(groups):
                extra.update(j for j in group[:-1] if targets[j] in read_later)
                for k in group:
                    read_later |= value_reads[k]
                if too_wide(group):  # two loops, the first's value stored for the second
                    extra.add(group[len(group) // 2 - 1])
            if extra <= outputs:
                break
            outputs |= extra
        if outputs != needed and not self.is_sink(run[-1]):
            cones = _cones(run, targets, needed, value_reads)
            if cones is not None:
                return self._cone_calls(run, cones)
        out: list[gast.stmt] = []
        for group in groups:
            if group[-1] not in outputs:  # nothing of it is read: dead, left as it was
                out += [run[j] for j in group]
                continue
            stmts = _contributing([run[j] for j in group])
            copies = all(isinstance(stmt.value, gast.Name) for stmt in stmts)
            # a loop of copies only would copy an array to name it: left as they are
            out += self._kernel_call(stmts) if len(stmts) > 1 and not copies else stmts
        return out

    def _cone_calls(self, run: list[gast.stmt], cones: list[list[int]]) -> list[gast.stmt]:
        """Each cone (see :func:`_cones`) as one kernel call, or as its statement when it
        is one; a statement in several cones is copied into the later ones."""
        out: list[gast.stmt] = []
        placed: set[int] = set()
        for cone in cones:
            stmts = []
            for k in cone:
                stmt = run[k]
                if k in placed:
                    stmt = clone(stmt)
                    stmt.recomputed = True  # the loop is named for its own first line
                    copy_mark(run[k], stmt)
                placed.add(k)
                stmts.append(stmt)
            copies = all(isinstance(stmt.value, gast.Name) for stmt in stmts)
            out += self._kernel_call(stmts) if len(stmts) > 1 and not copies else stmts
        return out

    @staticmethod
    def _split(run: list[gast.stmt], outputs: set[int]) -> list[list[int]]:
        groups, current = [], []
        for j in range(len(run)):
            current.append(j)
            if j in outputs:
                groups.append(current)
                current = []
        return groups + ([current] if current else [])

    def _kernel_call(self, group: list[gast.stmt]) -> list[gast.stmt]:
        sink = self.sink(group[-1])
        if sink is not None:
            *group, summed = group
        before, group = self._expanded(group)
        defined: set[str] = set()
        inputs: list[str] = []
        for stmt in group:
            value = stmt.value
            if isinstance(value, gast.Call) and is_full_broadcast(value, self.resolver):
                value = gast.Tuple(value.args[:2], gast.Load())  # reads g and a only
            for name in _reads(value):
                if name not in defined and name not in inputs and self._is_data(name):
                    inputs.append(name)
            defined.add(stmt.targets[0].id)
        output = group[-1].targets[0].id
        # the run's own first line, not that of a value it recomputes
        first = next((stmt for stmt in group if not getattr(stmt, "recomputed", False)), group[0])
        line = getattr(first, "lineno", None)
        kernel_name = self.namer.fresh(f"{self.fn.name}_line{line}" if line else self.fn.name)
        body = [self._scalar_statement(stmt) for stmt in group]
        ret = gast.Return(gast.Name(output, gast.Load(), None, None))
        ret.lineno = getattr(group[-1], "lineno", None)
        params = [gast.Name(n, gast.Param(), None, None) for n in inputs]
        kernel = gast.FunctionDef(
            name=kernel_name,
            args=gast.arguments(params, [], None, [], [], None, []),
            body=body + [ret],
            decorator_list=[],
            returns=None,
            type_comment=None,
            type_params=[],
        )
        kernel.lineno = line
        self.kernels.append(kernel)
        args = [gast.Name(n, gast.Load(), None, None) for n in inputs]
        if sink is not None:  # the loop's values summed as they are made
            output = summed.targets[0].id
            kernel.numbax_sum = sink.declared  # for its declaration (lower.py)
            if sink.like is not None and sink.like.id in _computed(group):
                kernel.numbax_summed_after = summed  # see _summed_after_the_loop
            args = [gast.Name(sink.like.id, gast.Load(), None, None), *args] if sink.like else args
        call = gast.Call(gast.Name(kernel_name, gast.Load(), None, None), args, [])
        assign = gast.Assign([gast.Name(output, gast.Store(), None, None)], call, None)
        assign.lineno = line
        return [*before, assign]

    def _expanded(self, group: list[gast.stmt]) -> tuple[list[gast.stmt], list[gast.stmt]]:
        """``group`` with each ``t = nxrt.broadcast_reduced(g, a, axis, keepdims)`` as
        ``t = nxrt.first(g_kept, a)``, and the statements before the loop that make
        ``g_kept = nxrt.expand_reduced(g, axis, keepdims)``: ``g`` with the reduced axes
        back, of length 1, so that the loop broadcasts it over them."""
        before: list[gast.stmt] = []
        out: list[gast.stmt] = []
        for stmt in group:
            value = stmt.value
            if not (isinstance(value, gast.Call) and is_axes_broadcast(value, self.resolver)):
                out.append(stmt)
                continue
            reduced, like, axis, keepdims = value.args
            spread = reduced
            if not keepdims.value:
                spread = gast.Name(self.namer.fresh(f"{reduced.id}_kept"), gast.Load(), None, None)
                self.resolver.locals.add(spread.id)
                expand = gast.Call(_nxrt("expand_reduced"), [reduced, axis, keepdims], [])
                made = gast.Assign([gast.Name(spread.id, gast.Store(), None, None)], expand, None)
                made.lineno = getattr(stmt, "lineno", None)
                before.append(made)
            out.append(_runtime_assign(stmt, "first", [spread, like]))
        return before, out

    def seeds_without_sums(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        """``_k = _kernel(x)``, ``_sum = nxrt.sum(_k)``, ``_ct = nxrt.grad_seed(_sum)``,
        with ``_k`` and ``_sum`` read nowhere else, become ``_ct =
        nxrt.seed_of_sum(_kernel, x)``: ``grad`` of a sum needs only its dtype, known
        when compiling, so neither the fused loop nor the sum runs (the reverse pass
        computes what it needs of them again, ``rematerialize.py``). Without the loop
        (``_k`` read again, or made otherwise), ``_ct = nxrt.seed_of_total(_k)``: the sum
        does not run. A mean read by its adjoint's ``reduced_count`` too is not taken
        either (``_seed_of_mean``)."""
        kernels = {kernel.name for kernel in self.kernels}
        reads = Counter(_read_ids(self.fn))
        out: list[gast.stmt] = []
        index = 0
        while index < len(stmts):
            window = stmts[index : index + 3]
            merged = self._seed_of_sum(window, kernels, reads) if len(window) == 3 else None
            if merged is not None:
                out.append(merged)
                index += 3
                continue
            merged = self._seed_of_total(window[:2], reads)
            if merged is not None:
                out.append(merged)
                index += 2
                continue
            merged = self._seed_of_mean(stmts, index, reads)
            if merged is not None:
                out.append(merged)
                index += 2
                continue
            out.append(stmts[index])
            index += 1
        return out

    def _reduced_then_seeded(
        self, window: list[gast.stmt], reduction: Any
    ) -> tuple[str, list[gast.expr]] | None:
        """``_r = reduction(v)``, ``_ct = nxrt.grad_seed(_r)`` (``window``'s two
        statements): the reduction's target and its argument list ``[v]``; else None."""
        if len(window) < 2:
            return None
        reduced, seed = (self._single_call(stmt) for stmt in window[:2])
        if reduced is None or seed is None:
            return None
        if self.resolver.resolve(reduced[1].func) is not reduction or reduced[1].keywords:
            return None
        if self.resolver.resolve(seed[1].func) is not runtime.grad_seed:
            return None
        args = reduced[1].args
        if len(args) != 1 or not isinstance(args[0], gast.Name):
            return None
        return (reduced[0], args) if _is_name(seed[1].args, reduced[0]) else None

    def _seed_of_total(self, window: list[gast.stmt], reads: Counter) -> gast.Assign | None:
        matched = self._reduced_then_seeded(window, np.sum)
        if matched is None or reads[matched[0]] != 1:
            return None
        return _runtime_assign(window[1], "seed_of_total", matched[1])

    def _seed_of_mean(
        self, stmts: list[gast.stmt], index: int, reads: Counter
    ) -> gast.Assign | None:
        """``_mean = np.mean(v)``, ``_ct = nxrt.grad_seed(_mean)`` at ``index``, with
        ``_mean`` read again only as ``like`` of the adjoint's ``nxrt.reduced_count(a,
        _mean)`` (its size, which the seed has), as ``_ct = nxrt.seed_of_mean(v)``; those
        counts then read ``_ct``. In place for the counts."""
        matched = self._reduced_then_seeded(stmts[index : index + 2], np.mean)
        if matched is None:
            return None
        mean, seed = matched[0], stmts[index + 1].targets[0].id
        counts = [
            call
            for stmt in stmts[index + 2 :]
            if (found := self._single_call(stmt)) is not None
            and self.resolver.resolve((call := found[1]).func) is runtime.reduced_count
            and len(call.args) == 2
            and _is_name(call.args[1:], mean)
            and mean not in _read_ids(call.args[0])
        ]
        if reads[mean] != 1 + len(counts):
            return None
        stores = Counter(n.id for n in name_nodes(self.fn, gast.Store))
        if stores[mean] != 1 or stores[seed] != 1:  # each count reads these values
            return None
        for call in counts:
            call.args[1] = gast.Name(seed, gast.Load(), None, None)
        return _runtime_assign(stmts[index + 1], "seed_of_mean", matched[1])

    def _seed_of_sum(
        self, window: list[gast.stmt], kernels: set[str], reads: Counter
    ) -> gast.Assign | None:
        loop = self._single_call(window[0])
        matched = self._reduced_then_seeded(window[1:], np.sum)
        if loop is None or matched is None:
            return None
        values, call = loop
        if not (isinstance(call.func, gast.Name) and call.func.id in kernels):
            return None
        total, summed = matched
        if not _is_name(summed, values) or reads[values] != 1 or reads[total] != 1:
            return None
        return _runtime_assign(window[2], "seed_of_sum", [call.func, *call.args])

    @staticmethod
    def _single_call(stmt: gast.stmt) -> tuple[str, gast.Call] | None:
        """``name = f(args)`` without keywords, as its target and call."""
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1):
            return None
        target, value = stmt.targets[0], stmt.value
        if not (isinstance(target, gast.Name) and isinstance(value, gast.Call)) or value.keywords:
            return None
        return target.id, value

    def _is_local(self, name: str) -> bool:
        return name in self.resolver.locals

    def _is_data(self, name: str) -> bool:
        """Locals and global/closure *values* are per-element inputs; modules and
        functions are not."""
        if name in self.resolver.locals:
            return True
        value = self.resolver.lookup(name)
        return not (callable(value) or isinstance(value, types.ModuleType))

    def _scalar_statement(self, stmt: gast.Assign) -> gast.Assign:
        """On scalars, ``np.where(c, a, b)`` is ``a if c else b``, a full reduction's
        spread cotangent is the cotangent (``a`` stays an input, for the shape), an
        ``unbroadcast`` that keeps the shape converts the dtype alone, the seeds of a
        batch of outputs are each output's seed, and the slope of a square,
        ``nxrt.mul_pow(2, x, 1)``, is ``2 * x`` (for a sequence ``x`` it is not: only
        here, where ``x`` is one element)."""
        value = stmt.value
        if isinstance(value, gast.Call) and _first_power_slope(value, self.resolver):
            factor, base, _ = value.args
            line = getattr(stmt, "lineno", None)
            stmt = gast.Assign(stmt.targets, gast.BinOp(factor, gast.Mult(), base), None)
            stmt.lineno = line
            return stmt
        if isinstance(value, gast.Call) and keeps_shape(value):
            return _runtime_assign(stmt, "cotangent_as", value.args)
        seed = isinstance(value, gast.Call) and _seed_of_each(self.resolver.resolve(value.func))
        if seed:
            return _runtime_assign(stmt, seed, value.args)
        if isinstance(value, gast.Call) and is_full_broadcast(value, self.resolver):
            return _runtime_assign(stmt, "first", value.args[:2])
        if isinstance(value, gast.Call) and self.resolver.resolve(value.func) is np.where:
            cond, a, b = value.args
            line = getattr(stmt, "lineno", None)
            stmt = gast.Assign(stmt.targets, gast.IfExp(cond, a, b), None)
            stmt.lineno = line
        return stmt


def _first_power_slope(call: gast.Call, resolver: Resolver) -> bool:
    """Whether ``call`` is ``nxrt.mul_pow(c, x, 1)`` with ``c`` a nonzero number: ``c *
    x ** 1``, whose guard (0 where ``c`` is 0, even where ``x ** p`` is not finite) has
    nothing to guard. On scalars it is ``c * x``, which compiles no kernel of its own."""
    if resolver.resolve(call.func) is not runtime.mul_pow:
        return False
    if call.keywords or len(call.args) != 3:
        return False
    factor, _, power = call.args
    return (
        isinstance(factor, gast.Constant)
        and type(factor.value) in (int, float)
        and factor.value != 0
        and isinstance(power, gast.Constant)
        and type(power.value) is int
        and power.value == 1
    )


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
    still_read = set(_read_ids(fn))
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


def _one_expansion_each(stmts: list[gast.stmt], kernels: list[gast.FunctionDef]) -> list[gast.stmt]:
    """``stmts`` without a second ``y = nxrt.expand_reduced(g, axis, keepdims)`` of a ``g``
    not assigned since the first, ``x``; what reads ``y`` reads ``x``, and the parameter
    of a loop named after ``y`` is named ``x``. Two loops that spread one reduced value
    then read the same arguments (see :func:`_in_one_loop`)."""
    made: dict[str, tuple[str, str]] = {}  # expansion's name: (its key, g)
    renamed: dict[str, str] = {}
    out = []
    for stmt in stmts:
        for node in walk(stmt):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                node.id = renamed.get(node.id, node.id)
        value = getattr(stmt, "value", None)
        is_expansion = (
            isinstance(stmt, gast.Assign)
            and isinstance(stmt.targets[0], gast.Name)
            and isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute)
            and value.func.attr == "expand_reduced"
            and isinstance(value.args[0], gast.Name)
        )
        if is_expansion:
            key = gast.dump(value)
            earlier = next((name for name, (k, _) in made.items() if k == key), None)
            if earlier is not None:
                renamed[stmt.targets[0].id] = earlier
                continue
        assigned = {
            n.id for n in walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
        }
        made = {
            name: (k, g)
            for name, (k, g) in made.items()
            if name not in assigned and g not in assigned
        }
        if is_expansion:
            made[stmt.targets[0].id] = (gast.dump(value), value.args[0].id)
        out.append(stmt)
    for node in (n for kernel in kernels for n in walk(kernel) if isinstance(n, gast.Name)):
        node.id = renamed.get(node.id, node.id)  # expansions' names are fresh: no clash
    return out


def _summed_after_the_loop(
    stmts: list[gast.stmt], kernels: dict[str, gast.FunctionDef]
) -> list[gast.stmt]:
    """Each call ``t = kernel(like, *args)`` of a loop that would sum its values into the
    shape of a value it computes itself, alone in its loop (not declared ``also=``), as
    the plain loop's values and the ``unbroadcast`` of them after it.

    That value (``out`` in ``(out - y) ** 2``) usually has the loop's shape, which
    ``unbroadcast`` sees and returns the values as they are; the summing loop would be
    compiled for every program and seldom run. ``jit(grad)`` of the MLP of a dict (a
    squared error) took 0.5 s less on an empty cache: the loop nest, its machine code in
    the caller, and the call choosing between it and the plain loop. The ``unbroadcast``
    of the same values into ``like``'s shape after the loop shares its compiled code with
    the other ``unbroadcast`` calls of those types. Two loops into one (``also=``, the
    cotangents of ``f(x) * w`` into ``f(x)``'s shape and ``w``'s) stay one."""
    out: list[gast.stmt] = []
    for stmt in stmts:
        call = _unbroadcasting_call(stmt, kernels)
        kernel = kernels[call[1]] if call is not None else None
        summed = getattr(kernel, "numbax_summed_after", None)
        if summed is None or "also" in kernel.numbax_sum:
            out.append(stmt)
            continue
        del kernel.numbax_sum  # a plain loop
        stmt.targets[0].id = summed.value.args[0].id  # what the kernel returns
        stmt.value.args = stmt.value.args[1:]
        out += [stmt, summed]
    return out


def _computed(group: list[gast.stmt]) -> set[str]:
    """The values a loop's statements compute, by their names in the code before fusing
    (a copy that computes a value again has a fresh name of its own)."""
    names = {stmt.targets[0].id for stmt in group}
    return names | {stmt.recomputes for stmt in group if hasattr(stmt, "recomputes")}


def _in_one_loop(stmts: list[gast.stmt], kernels: dict[str, gast.FunctionDef]) -> list[gast.stmt]:
    """Two consecutive calls of loops that sum their values into a like's shape, given
    the same arguments, as one loop (the second declared ``also=`` the first): the
    arguments are read and the shared values computed once (the two cotangents of
    ``pos[:, None, :] - pos[None, :, :]``, summed onto the particles from both sides)."""
    out: list[gast.stmt] = []
    for stmt in stmts:
        merged = _merged(out[-1], stmt, kernels) if out else None
        if merged is None:
            out.append(stmt)
        else:
            out[-1] = merged
    return out


def _merged(
    first: gast.stmt, second: gast.stmt, kernels: dict[str, gast.FunctionDef]
) -> gast.Assign | None:
    calls = [_unbroadcasting_call(stmt, kernels) for stmt in (first, second)]
    if None in calls:
        return None
    (target_a, kernel_a, like_a, args_a), (target_b, kernel_b, like_b, args_b) = calls
    if args_a != args_b or target_a in args_a or target_a == like_b or target_a == target_b:
        return None
    if "also" in kernels[kernel_b].numbax_sum or "also" in kernels[kernel_a].numbax_sum:
        return None
    kernels[kernel_b].numbax_sum = {
        **kernels[kernel_b].numbax_sum,
        "also": gast.Name(kernel_a, gast.Load(), None, None),
    }
    targets = gast.Tuple(
        [gast.Name(t, gast.Store(), None, None) for t in (target_a, target_b)], gast.Store()
    )
    names = [like_a, like_b, *args_b]
    call = gast.Call(
        gast.Name(kernel_b, gast.Load(), None, None),
        [gast.Name(n, gast.Load(), None, None) for n in names],
        [],
    )
    assign = gast.Assign([targets], call, None)
    assign.lineno = getattr(first, "lineno", None)
    return assign


def _unbroadcasting_call(
    stmt: gast.stmt, kernels: dict[str, gast.FunctionDef]
) -> tuple[str, str, str, list[str]] | None:
    """``t = kernel(like, *args)`` of a loop declared ``unbroadcast=True``, all names: its
    target, kernel, like and arguments."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name)):
        return None
    call = stmt.value
    if not (isinstance(call, gast.Call) and isinstance(call.func, gast.Name)):
        return None
    kernel = kernels.get(call.func.id)
    if kernel is None or "unbroadcast" not in getattr(kernel, "numbax_sum", {}):
        return None
    if not call.args or not all(isinstance(a, gast.Name) for a in call.args):
        return None
    like, *args = [a.id for a in call.args]
    return stmt.targets[0].id, call.func.id, like, args


def _nxrt(helper: str) -> gast.Attribute:
    """``nxrt.<helper>``."""
    return gast.Attribute(gast.Name("nxrt", gast.Load(), None, None), helper, gast.Load())


def _runtime_assign(stmt: gast.Assign, helper: str, args: list[gast.expr]) -> gast.Assign:
    """``stmt``'s target assigned ``nxrt.<helper>(*args)``, on ``stmt``'s line."""
    assign = gast.Assign(stmt.targets, gast.Call(_nxrt(helper), args, []), None)
    assign.lineno = getattr(stmt, "lineno", None)
    return assign


def fuse_elementwise(
    fn: gast.FunctionDef, resolver: Resolver, namer: Namer
) -> tuple[gast.FunctionDef, list[gast.FunctionDef]]:
    """Rewrite ``fn`` in place; return it and the scalar kernels it now calls."""
    _axes_written_out(fn, resolver)
    fuser = _Fuser(fn, resolver, namer, reductions=True)
    params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    cotangents = getattr(resolver.source.func, COTANGENT_OF, None)  # a VJP's (reverse.py)
    mark_kept_shapes(fn.body, params, resolver, fuser.is_elementwise, cotangents)
    fn.body = _parameters_unpacked_early(fn.body, params, fuser.is_elementwise)
    fn.body = fuser.seeds_without_sums(fuser.block(fn.body, frozenset()))
    stand_ins(fn, resolver)
    fn.body = _one_expansion_each(fn.body, fuser.kernels)
    fn.body = _in_one_loop(fn.body, {k.name: k for k in fuser.kernels})
    fn.body = _summed_after_the_loop(fn.body, {k.name: k for k in fuser.kernels})
    _declare_same_shapes(fn.body, params, resolver, fuser, cotangents)
    shape_stand_ins(fn, resolver, fuser.kernels)
    return fn, fuser.kernels


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
    if not _assigns_one_name(stmt):
        return None
    value = stmt.value
    if isinstance(value, gast.Subscript) and constant_int(value.slice) is not None:
        value = value.value
    return value.id if isinstance(value, gast.Name) else None


def _declare_same_shapes(
    body: list[gast.stmt],
    params: list[str],
    resolver: Resolver,
    fuser: _Fuser,
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
    fuser = _Fuser(fn, resolver, Namer.for_function(fn))
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
