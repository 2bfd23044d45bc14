"""Which elementwise statements fuse into one loop, and the scalar kernel each loop runs.

The fusion pass (``fuse.py``) hands each block of straight-line code to a
:class:`Fuser`: it finds the runs of consecutive elementwise statements (a run may end
at a sum its loop can feed, a *sink*), splits a run into groups that each end at a value
needed outside it (or into *cones*, :func:`_cones`, where recomputing shared values is
cheaper than storing them), and writes each group as a scalar kernel function and one
call of it: the kernel's statements on one element (``np.where`` as ``a if c else b``,
a seed as one output's seed), its parameters the arrays and values the group reads.
"""

from __future__ import annotations

import types
from collections.abc import Container
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
)
from numbax.numba_backend.passes.rematerialize import MOST_COPIED, Kinds, rematerialize
from numbax.runtime import nxrt as runtime
from numbax.transform.analysis.shape_sources import is_elementwise_value
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


def assigns_one_name(stmt: gast.stmt) -> bool:
    """``name = value``."""
    return (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
    )


def _reads(node: gast.AST) -> list[str]:
    """The names ``node`` reads, each time it reads them, in the order of a walk."""
    return [n.id for n in walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]


def read_ids(node: gast.AST) -> list[str]:
    """The names ``node`` reads, each time it reads them, in no particular order (faster
    than :func:`_reads`, where the order does not matter)."""
    return [n.id for n in name_nodes(node, gast.Load)]


def _last_reads(stmts: list[gast.stmt]) -> dict[str, int]:
    """Each name read in ``stmts`` (nested blocks included), and the index of the last
    statement that reads it."""
    return {name: index for index, stmt in enumerate(stmts) for name in read_ids(stmt)}


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
    needed = set(read_ids(group[-1].value))
    kept = [group[-1]]
    for stmt in reversed(group[:-1]):
        target = stmt.targets[0].id
        if target in needed:
            needed.discard(target)
            needed.update(read_ids(stmt.value))
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


class Fuser:
    """The runs of elementwise statements of a function's blocks, each group of a run
    written as a call of a scalar kernel (:attr:`kernels`, which the call names)."""

    def __init__(
        self, fn: gast.FunctionDef, resolver: Resolver, namer: Namer, reductions: bool = False
    ) -> None:
        """``reductions``: also fuse sums over axes with the loop that makes their values
        (``@nxrt.elementwise(summed=...)``, ``unbroadcast=True``: ``loops/fused_sums.py``), and
        spread reduced values inside loops (``broadcast_reduced`` over constant axes): for
        Numba on the CPU, which has the loops that run them."""
        self.fn = fn
        self.resolver = resolver
        self.namer = namer
        self.reductions = reductions
        self.kinds = Kinds(self.is_elementwise, self.is_sink, self.whole_reads)
        self.kernels: list[gast.FunctionDef] = []

    def is_elementwise(self, stmt: gast.stmt) -> bool:
        if not assigns_one_name(stmt):
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
        value_reads = [set(read_ids(stmt.value)) for stmt in run]

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
                kernel.numbax_summed_after = summed  # see summed_after_the_loop
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
                expand = gast.Call(nxrt_attribute("expand_reduced"), [reduced, axis, keepdims], [])
                made = gast.Assign([gast.Name(spread.id, gast.Store(), None, None)], expand, None)
                made.lineno = getattr(stmt, "lineno", None)
                before.append(made)
            out.append(runtime_assign(stmt, "first", [spread, like]))
        return before, out

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
            return runtime_assign(stmt, "cotangent_as", value.args)
        seed = isinstance(value, gast.Call) and _seed_of_each(self.resolver.resolve(value.func))
        if seed:
            return runtime_assign(stmt, seed, value.args)
        if isinstance(value, gast.Call) and is_full_broadcast(value, self.resolver):
            return runtime_assign(stmt, "first", value.args[:2])
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


def _computed(group: list[gast.stmt]) -> set[str]:
    """The values a loop's statements compute, by their names in the code before fusing
    (a copy that computes a value again has a fresh name of its own)."""
    names = {stmt.targets[0].id for stmt in group}
    return names | {stmt.recomputes for stmt in group if hasattr(stmt, "recomputes")}


def nxrt_attribute(helper: str) -> gast.Attribute:
    """``nxrt.<helper>``."""
    return gast.Attribute(gast.Name("nxrt", gast.Load(), None, None), helper, gast.Load())


def runtime_assign(stmt: gast.Assign, helper: str, args: list[gast.expr]) -> gast.Assign:
    """``stmt``'s target assigned ``nxrt.<helper>(*args)``, on ``stmt``'s line."""
    assign = gast.Assign(stmt.targets, gast.Call(nxrt_attribute(helper), args, []), None)
    assign.lineno = getattr(stmt, "lineno", None)
    return assign
