"""``vmap``'s vectorized method, statement by statement: assignments, stores into
buffers, the return, and control flow (``vectorize.py``).

Mixed into ``vectorize.py``'s ``_Vectorizer``. An assignment records what its target
holds (its rank per example, whether it is batched, a tuple's elements, a list's
elements filled by append); a store into a buffer indexes past the batch axis, or makes
the buffer batched where it is allocated (:class:`_Grow` starts the rewrite again); the
return moves the batch axis to ``out_axes``. A shared line moves up past the batched
lines just before it that it does not depend on. An ``if`` or loop is kept when its test
and bounds are shared, a loop run to a fixpoint of what it makes batched. What cannot be
vectorized raises :class:`Decline` at its line (:func:`_at`).
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from numbax.runtime import nxrt
from numbax.runtime.batching import mapped_axis
from numbax.transform.nodes import assign, clone, expression, literal, load, names, template
from numbax.transform.operations import appended
from numbax.transform.rules.batch_kinds import SCALAR, UNKNOWN, Decline, Value, lift, text
from numbax.transform.source import FunctionSource

KEEP = "as computed"
"""``out_axes`` of a function called from vectorized code: each output leaf batched
(axis 0) where it depends on the batch, left as it is where the batch shares it."""


_ALLOCATORS = (
    np.zeros,
    np.ones,
    np.empty,
    np.full,
    np.zeros_like,
    np.ones_like,
    np.empty_like,
    np.full_like,
    np.copy,
    np.array,
    nxrt.zeros_like,
    nxrt.ones_like,
    nxrt.jac_buffer,
)
"""Functions that return a new array: a buffer made by one may be made batched."""


class _Grow(Exception):  # noqa: N818 (not an error: the vectorizer starts again)
    """A batched value stored into the shared buffer ``name``: vectorize again with the
    buffer batched where it is allocated."""

    def __init__(self, name: str, node: gast.AST) -> None:
        super().__init__(name)
        self.name = name
        self.node = node
        self.reason = f"a batched value stored into {name!r}, which is not allocated here"


def _at(node: gast.AST, reason: str, source: FunctionSource) -> Decline:
    line = getattr(node, "lineno", None)
    if line is None:
        return Decline(reason, source.filename)
    return Decline(f"{reason} (line {line}: {source.line(line)})", source.filename, line)


class _VectorizeStatements:
    """The statements of ``vectorize.py``'s ``_Vectorizer`` (mixed into it)."""

    # -- statements ---------------------------------------------------------------------
    def block(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out: list[tuple[gast.stmt, bool | None]] = []
        for stmt in stmts:
            try:
                new = self.statement(stmt)
            except Decline as decline:
                if decline.filename is not None:
                    raise
                raise _at(stmt, str(decline), self.source) from None
            for each in new if isinstance(new, list) else [new]:
                self._place(out, each)
        return [stmt for stmt, _ in out]

    def _place(self, out: list[tuple[gast.stmt, bool | None]], stmt: gast.stmt) -> None:
        """Append ``stmt`` to ``out`` (each statement with whether it assigns batched
        values; None: not an assignment to names). A shared computation moves up past
        the batched assignments just before it that only compute their values (a call
        may change its arguments in place) and neither read nor write what it writes
        nor write what it reads: the work the batch shares runs together, and the
        batched elementwise lines form one run, which ``jit`` fuses into one loop over
        the batch."""
        batched = self._assigns_batched(stmt)
        k = len(out)
        if batched is False and self.pure(stmt.value):
            read, written = set(names([stmt.value])), set(names([stmt], gast.Store))
            while k > 0 and out[k - 1][1] and self.pure(out[k - 1][0].value):
                before = out[k - 1][0]
                before_read, before_written = (
                    set(names([before.value])),
                    set(names([before], gast.Store)),
                )
                if written & (before_read | before_written) or read & before_written:
                    break
                k -= 1
        out.insert(k, (stmt, batched))

    def _assigns_batched(self, stmt: gast.stmt) -> bool | None:
        if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
            return None
        target = stmt.targets[0]
        elements = target.elts if isinstance(target, gast.Tuple) else [target]
        if not all(isinstance(e, gast.Name) for e in elements):
            return None
        return any(self.env.get(e.id, UNKNOWN).batched for e in elements)

    def statement(self, stmt: gast.stmt) -> gast.stmt | list[gast.stmt]:
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            return self.assign(stmt)
        if isinstance(stmt, gast.Return):
            return self.ret(stmt)
        if isinstance(stmt, gast.If):
            return self.branch(stmt)
        if isinstance(stmt, (gast.For, gast.While)):
            return self.loop(stmt)
        if isinstance(stmt, (gast.Break, gast.Continue, gast.Pass)):
            return stmt
        pushed = appended(stmt)
        if pushed is not None and pushed[0] in self.stacks:  # tape.append(v)
            self._push(*pushed)
            return stmt
        if self._mentions_batched(stmt):
            raise Decline(f"a {type(stmt).__name__.lower()} statement on a batched value")
        return stmt

    def _push(self, stack: str, atom: gast.expr) -> None:
        """A list holds values that are all batched or all shared, of one rank (a tape
        of a batched value is a list of batches)."""
        value, known = self._value(atom), self.stacks[stack]
        if known is not None and known.batched != value.batched:
            raise Decline(f"the list {stack!r} holds batched and shared values")
        if known is not None and known.rank != value.rank:
            value = Value(None, value.batched)
        self.stacks[stack] = value

    def _mentions_batched(self, node: gast.AST) -> bool:
        return any(self._value(load(name)).batched for name in names([node]))

    def assign(self, stmt: gast.Assign) -> gast.stmt | list[gast.stmt]:
        target = stmt.targets[0]
        if isinstance(target, gast.Name):
            value, new = self.expression(stmt.value, target.id)
            if not self._starts_list(stmt.value):  # rebound: a list filled by append no more
                self.stacks.pop(target.id, None)
            self.env[target.id] = value
            if new is not None:
                stmt.value = new
            if target.id in self.grown and not value.batched:
                return [stmt, self._batched_buffer(target.id, stmt)]
            return stmt
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name):
            return self._store(stmt, target)
        if isinstance(target, gast.Tuple) and isinstance(stmt.value, gast.Name):
            value = self._value(stmt.value)
            elements = value.elements
            if elements is None or len(elements) != len(target.elts):
                if value.batched:
                    raise Decline("unpacking a batched value of unknown structure")
                elements = (UNKNOWN,) * len(target.elts)
            for element, v in zip(target.elts, elements, strict=True):
                if not isinstance(element, gast.Name):
                    raise Decline("unpacking into something other than names")
                self.env[element.id] = v
            return stmt
        if self._mentions_batched(stmt):
            raise Decline("an in-place store into a batch (vmap loops over the examples)")
        return stmt

    def _starts_list(self, node: gast.expr) -> bool:
        """Whether ``node`` is a list that appends fill: ``[]``, or another name of one."""
        if isinstance(node, gast.List):
            return not node.elts
        return isinstance(node, gast.Name) and node.id in self.stacks

    def _listed(self, node: gast.expr) -> Value | None:
        """The value of the elements of a list filled by append (``UNKNOWN`` while it is
        empty); None when ``node`` is not such a list."""
        if isinstance(node, gast.Name) and node.id in self.stacks:
            return self.stacks[node.id] or UNKNOWN
        return None

    def _batched_buffer(self, name: str, stmt: gast.Assign) -> gast.stmt:
        """The new array ``name``, which receives batched values later, repeated over
        the batch (as one example's copy of it)."""
        call = stmt.value
        allocates = isinstance(call, gast.Call) and (
            self.resolver.resolve(call.func) in _ALLOCATORS
            or (isinstance(call.func, gast.Attribute) and call.func.attr == "copy")
        )
        if not allocates:  # a view or an alias: its owner would miss the stores
            raise Decline(f"a batched value stored into {name!r}, which may be a view")
        self.env[name] = Value(self.env[name].rank, True)
        repeated = template("nxrt.batch_repeat(x, _size)", x=load(name))
        return gast.copy_location(assign(name, repeated), stmt)

    def _store(self, stmt: gast.Assign, target: gast.Subscript) -> gast.stmt:
        """``buffer[index] = value`` with a shared index: into a batched buffer, past
        the batch axis (the value lifted to the stored region's rank); a batched value
        into a shared buffer makes the buffer batched (:class:`_Grow`)."""
        base, value = self._value(target.value), self._value(stmt.value)
        parts = list(target.slice.elts) if isinstance(target.slice, gast.Tuple) else [target.slice]
        if self._listed(target.value) is not None:  # lst[i] = v: an element replaced
            if isinstance(target.slice, gast.Slice) or self._mentions_batched(target.slice):
                raise Decline("a store into a list at a slice or a mapped index")
            self._push(target.value.id, stmt.value)
            return stmt
        if not (base.batched or value.batched or self._mentions_batched(target.slice)):
            return stmt
        if any(self._mentions_batched(p) for p in parts):
            raise Decline("a store at a mapped index (a scatter; vmap loops)")
        if base.elements is not None:
            raise Decline("a store into a tuple")
        if not base.batched:
            raise _Grow(target.value.id, stmt)
        read = gast.Subscript(load(target.value.id), clone(target.slice), gast.Load())
        region, _ = self._subscript(read)
        if value.batched and value.rank != region.rank:
            if value.rank is None or region.rank is None:
                raise Decline("a store of a batched value whose rank is not known")
            stmt.value = expression(lift(text(stmt.value), value, region.rank))
        every = gast.Slice(None, None, None)
        index = gast.Tuple([every, *clone(parts)], gast.Load())
        stmt.targets = [gast.Subscript(clone(target.value), index, gast.Store())]
        return stmt

    def ret(self, stmt: gast.Return) -> gast.stmt:
        if stmt.value is None:
            raise Decline("a function that returns nothing")
        self.output = self._value(stmt.value)
        stmt.value = self._output(stmt.value, self.out_axes)
        return stmt

    def _output(self, atom: gast.expr, axis: Any) -> gast.expr:
        """The batched output, its batch axis moved to ``axis``, leaf by leaf."""
        value = self._value(atom)
        elements = self.packed.get(atom.id) if isinstance(atom, gast.Name) else None
        if isinstance(axis, (tuple, list)) or value.elements is not None:
            if elements is None:
                raise Decline("an output whose structure is not known")
            if isinstance(axis, (tuple, list)):
                if len(axis) != len(elements):
                    raise Decline("out_axes does not match the output's structure")
                parts = [self._output(e, a) for e, a in zip(elements, axis, strict=True)]
            else:
                parts = [self._output(e, axis) for e in elements]
            return gast.Tuple(parts, gast.Load())
        output = clone(atom)
        if axis == KEEP:  # batched at 0 where it is, shared where it is
            return output
        if axis is None:
            if value.batched:
                raise Decline("out_axes=None for an output that depends on the batch")
            return output
        if not isinstance(axis, int):
            raise Decline(f"out_axes={axis!r}")
        if value.batched and axis == 0:  # where the batch axis already is
            return output
        if value.rank is None:
            raise Decline("an output whose rank is not known")
        if not value.batched:  # the same for every example: repeated over the batch
            output = template(
                "np.ascontiguousarray(np.broadcast_to(x, (_size,) + np.shape(x)))", x=output
            )
        where = mapped_axis(axis, value.rank + 1, "its output")  # JAX's ValueError
        if where:
            order = [*range(1, where + 1), 0, *range(where + 1, value.rank + 1)]
            output = template("np.transpose(x, order)", x=output, order=literal(tuple(order)))
        return output

    # -- control flow -------------------------------------------------------------------
    def _shared_test(self, test: gast.expr, what: str) -> None:
        if self._mentions_batched(test):
            raise Decline(f"{what} depends on a mapped value (vmap loops over the examples)")

    def branch(self, stmt: gast.If) -> gast.stmt:
        self._shared_test(stmt.test, "an if")
        before = dict(self.env)
        stmt.body = self.block(stmt.body)
        after_body, self.env = self.env, dict(before)
        stmt.orelse = self.block(stmt.orelse)
        self.env = self._merged(after_body, self.env)
        return stmt

    def _merged(self, a: dict[str, Value], b: dict[str, Value]) -> dict[str, Value]:
        merged = {}
        for name in a.keys() | b.keys():
            va, vb = a.get(name), b.get(name)
            if va is None or vb is None:
                merged[name] = va or vb
            elif va.batched != vb.batched:
                raise Decline(f"{name!r} is batched on one path and not on the other")
            else:
                merged[name] = va if va == vb else Value(None, va.batched)
        return merged

    def loop(self, stmt: gast.For | gast.While) -> list[gast.stmt]:
        """The loop, run once for the whole batch. A shared array that the loop makes
        batched (an accumulator) is repeated over the batch before it."""
        if isinstance(stmt, gast.For):
            self._shared_test(stmt.iter, "a for loop's range")
        original, repeated = clone(stmt), []
        for _ in range(8):  # to a fixpoint of what is batched and the ranks
            entry, entry_stacks = dict(self.env), dict(self.stacks)
            stmt = clone(original)
            if isinstance(stmt, gast.For) and isinstance(stmt.target, gast.Name):
                self.env[stmt.target.id] = self._iterated(stmt.iter)
            if isinstance(stmt, gast.While):
                self._shared_test(stmt.test, "a while loop's test")
            stmt.body = self.block(stmt.body)
            if isinstance(stmt, gast.While):
                self._shared_test(stmt.test, "a while loop's test")
            stmt.orelse = self.block(stmt.orelse)
            grown = [
                name
                for name, value in self.env.items()
                if name in entry and value.batched and not entry[name].batched
            ]
            if grown:
                for name in grown:
                    entry[name] = self._repeated(name, entry[name])
                repeated += grown
                self.env, self.stacks = entry, entry_stacks
                continue
            merged = self._merged(entry, self.env)
            self.env = merged
            if merged == entry and self.stacks == entry_stacks:
                before = [
                    assign(n, template("np.zeros((_size,) + x.shape, x.dtype) + x", x=load(n)))
                    for n in repeated
                ]
                return [gast.copy_location(b, original) for b in before] + [stmt]
        raise Decline("the ranks in a loop do not settle")

    def _repeated(self, name: str, value: Value) -> Value:
        """A shared array the loop makes batched, repeated over the batch before it (a
        shared scalar is not: a Python number adapts to the arrays it meets, which a
        repeated one would not)."""
        if not value.rank:
            what = "a scalar" if value.rank == 0 else "a value"
            raise Decline(
                f"{name!r} starts as {what} the batch shares and becomes batched inside the loop"
            )
        return Value(value.rank, True)

    def _iterated(self, iterable: gast.expr) -> Value:
        listed = self._listed(iterable)
        if listed is not None:  # for v in lst: each element
            return listed
        if isinstance(iterable, gast.Call):
            return SCALAR if self.resolver.resolve(iterable.func) is range else UNKNOWN
        value = self._value(iterable)
        return UNKNOWN if value.rank is None or value.rank == 0 else Value(value.rank - 1)
