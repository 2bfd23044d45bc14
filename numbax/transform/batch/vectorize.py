"""``vmap``'s vectorized method: the function's body rewritten to run on the whole batch.

Each mapped argument gets its batch axis first; then every statement is rewritten by
its operation's batching rule (``rules/batch_kinds.py``, which writes the batched
operation as source, parsed here once), knowing each value's rank per example and
whether it is batched:

    def apply_matrix(v):                      def vmap_apply_matrix(v):
        return np.dot(VMAP_MAT, v)     →          _size = nxrt.batch_size(...)
                                                  _dot = v @ VMAP_MAT.T
                                                  return _dot

Values the batch shares stay as they are, so work that does not depend on the mapped
arguments runs once. Control flow is kept when its tests and bounds are shared. A call
to another function with batched arguments calls that function's own vectorized
version (``call_batched``, which ``vmap`` supplies: in_axes 0 where an argument is
batched, its outputs batched where they depend on the batch); a call on shared values
runs once. A buffer that receives batched values in place (``jac[row, :] = v``, found by
a small fixpoint: each try that meets such a store starts again with the buffer batched)
is made batched where it is allocated, and its stores index past the batch axis::

    _d_jac = nxrt.zeros_like(_jac)     →     _d_jac = nxrt.zeros_like(_jac)
                                             _d_jac = nxrt.batch_repeat(_d_jac, _size)
    _d_jac[_row, :] = _d_row                 _d_jac[:, _row, :] = _d_row

A line the batch shares moves up past the batched lines just before it that it does
not depend on: shared work runs together, and batched elementwise lines stay one run
for ``jit`` to fuse into one loop over the batch.

A branch or loop that depends on a mapped value, a store into a buffer that is not
freshly allocated (a view or a parameter, whose owner would miss the store), a
recursive call or an operation without a batching rule raises :class:`Decline` naming
it, and ``vmap`` loops over the batch instead (always correct).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from numbax import lax
from numbax.runtime import nxrt
from numbax.runtime.batching import mapped_axis
from numbax.runtime.callbacks import pure_callback
from numbax.transform import rules
from numbax.transform.batch.axes import batch_size
from numbax.transform.batch.loop import SIZE
from numbax.transform.cleanup import cleanup, pure_values
from numbax.transform.nodes import assign, clone, expression, literal, load, names, template
from numbax.transform.operations import (
    CALL,
    CONSTANT,
    COPY,
    FIELD,
    PACK,
    POP,
    RULE,
    SUBSCRIPT,
    appended,
    classify,
)
from numbax.transform.operations import UNKNOWN as UNKNOWN_OP
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver
from numbax.transform.rules.batch_kinds import (
    SCALAR,
    UNKNOWN,
    BatchOp,
    Decline,
    Value,
    elementwise,
    lift,
    text,
)
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk

__all__ = ["KEEP", "OUTPUT", "BatchedCall", "Decline", "rank_of", "vectorize"]

_SCALARS = (bool, int, float, complex, np.number, np.bool_)

KEEP = "as computed"
"""``out_axes`` of a function called from vectorized code: each output leaf batched
(axis 0) where it depends on the batch, left as it is where the batch shares it."""

OUTPUT = "numbax_batched_output"
"""The attribute of a vectorized tree holding the :class:`Value` of what it returns."""

BatchedCall = Callable[[Any, tuple, tuple], tuple[str, Value]]
"""``call_batched(function, axes, ranks)``: the name under which the generated module
calls ``function`` vectorized (in_axes ``axes``, arguments of these per-example ranks,
out_axes :data:`KEEP`), and the :class:`Value` of its result; raises :class:`Decline`
where the function cannot be vectorized."""

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


def rank_of(value: Any) -> Any:
    """The rank of a value the vectorized code may meet; for a tuple or list, a tuple of
    its elements' (None: neither an array nor a number)."""
    if isinstance(value, np.ndarray):
        return value.ndim
    if isinstance(value, _SCALARS):
        return 0
    if isinstance(value, (tuple, list)):
        return tuple(rank_of(v) for v in value)
    return None


def _rank(value: Value) -> Any:
    """The rank :func:`rank_of` gives the value (a tuple's: its elements')."""
    if value.elements is not None:
        return tuple(_rank(e) for e in value.elements)
    return value.rank


def _described(rank: Any) -> Value:
    """What is known of an argument the batch shares, of this rank (tuples: each)."""
    if isinstance(rank, tuple):
        return Value(None, False, tuple(_described(r) for r in rank))
    return Value(rank)


def vectorize(
    fn: gast.FunctionDef,
    source: FunctionSource,
    resolver: Resolver,
    name: str,
    axes: tuple,
    ranks: tuple,
    out_axes: Any,
    axis_name: Any = None,
    call_batched: BatchedCall | None = None,
) -> gast.FunctionDef:
    """``fn`` (normalized) rewritten for a batch: parameter ``k`` mapped over
    ``axes[k]`` (None: shared), of rank ``ranks[k]`` per example; the result's batch
    axes at ``out_axes`` (:data:`KEEP`: where computed; the tree's :data:`OUTPUT` says
    which); the collectives over ``axis_name`` reduce over the batch; ``call_batched``
    vectorizes the functions it calls on batched values (None: such a call declines).
    Raises :class:`Decline` where it cannot."""
    grown: set[str] = set()
    while True:  # to a fixpoint of the buffers that receive batched values
        vectorizer = _Vectorizer(fn, source, resolver, axis_name, call_batched, frozenset(grown))
        try:
            tree = vectorizer.function(name, axes, ranks, out_axes)
        except _Grow as grow:
            if grow.name in grown:  # not made batched where it is allocated: a parameter
                raise _at(grow.node, grow.reason, source) from None
            grown.add(grow.name)
            continue
        setattr(tree, OUTPUT, vectorizer.output)
        return tree


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


_LIST_CHANGES = frozenset(
    ["append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"]
)


def _changed_in_place(fn: gast.FunctionDef) -> frozenset[str]:
    """The names the function changes in place: stored into (``xs[i] = v``) or changed
    by a list's methods (``xs.append(v)``)."""
    changed = set()
    for node in walk(fn):
        if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
            base = node.value
        elif isinstance(node, gast.Attribute) and node.attr in _LIST_CHANGES:
            base = node.value
        else:
            continue
        if isinstance(base, gast.Name):
            changed.add(base.id)
    return frozenset(changed)


class _Vectorizer:
    def __init__(
        self,
        fn: gast.FunctionDef,
        source: FunctionSource,
        resolver: Resolver,
        axis_name: Any,
        call_batched: BatchedCall | None = None,
        grown: frozenset[str] = frozenset(),
    ) -> None:
        self.fn = fn
        self.call_batched = call_batched
        self.grown = grown  # buffers made batched where they are allocated
        self.pure = pure_values(fn, source)
        self.output = UNKNOWN
        self.axis_name = axis_name
        self.source = source
        self.resolver = resolver
        self.env: dict[str, Value] = {}
        self.packed: dict[str, list[gast.expr]] = {}  # a tuple's element atoms
        self.stacks: dict[str, Value | None] = {}  # a list's elements (reverse mode's tapes)
        self.changed_lists = _changed_in_place(fn)
        self.out_axes: Any = 0

    # -- the function -------------------------------------------------------------------
    def function(self, name: str, axes: tuple, ranks: tuple, out_axes: Any) -> gast.FunctionDef:
        fn = clone(self.fn)
        params = [a.id for a in fn.args.args]
        self.out_axes = out_axes
        prologue: list[gast.stmt] = [assign(SIZE, batch_size(fn.name, params, axes, None))]
        for param, axis, rank in zip(params, axes, ranks, strict=True):
            if axis is not None and not isinstance(axis, int):
                raise Decline(f"argument {param!r} is mapped by a pytree prefix")
            if axis is not None and (rank is None or isinstance(rank, tuple)):
                raise Decline(f"argument {param!r} is mapped but not an array or a number")
            if isinstance(rank, tuple):  # a shared tuple of parameters
                self.env[param] = _described(rank)
                continue
            self.env[param] = Value(rank, axis is not None)
            where = None if axis is None else mapped_axis(axis, rank + 1, repr(param))
            if where:  # the batch axis goes first
                order = [where] + [k for k in range(rank + 1) if k != where]
                moved = template(
                    "np.transpose(x, order)", x=load(param), order=literal(tuple(order))
                )
                prologue.append(assign(param, moved))
        body = self.block(fn.body)
        for stmt in prologue:
            gast.copy_location(stmt, fn)
        fn.body = prologue + body
        fn.name = name
        fn.decorator_list = []
        # what the batching rules left unread (a tuple spelled out element by element:
        # np.concatenate((x, w), ...)) goes
        cleanup(fn, self.source)
        if SIZE not in names(fn.body[1:]):
            fn.body[0] = gast.copy_location(gast.Expr(fn.body[0].value), fn.body[0])
        return fn

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

    # -- expressions --------------------------------------------------------------------
    def _value(self, atom: gast.expr) -> Value:
        if isinstance(atom, gast.Name):
            found = self.resolver.lookup(atom.id)
            listed = self._listed(atom) if found is LOCAL else None
            if listed is not None and listed.batched:  # a list of batches: no array's rank
                return Value(None, True)
            if found is LOCAL:
                return self.env.get(atom.id, UNKNOWN)
            return self._global(found)
        if isinstance(atom, gast.Constant):
            return SCALAR if isinstance(atom.value, _SCALARS) else UNKNOWN
        if isinstance(atom, gast.Attribute):
            return self._global(self.resolver.resolve(atom))
        if isinstance(atom, (gast.Tuple, gast.List)):
            elements = tuple(self._value(e) for e in atom.elts)
            return Value(None, any(e.batched for e in elements), elements)
        if self._mentions_batched(atom):
            return Value(None, True)
        return UNKNOWN

    def _global(self, value: Any) -> Value:
        if value is LOCAL or value is UNRESOLVED:
            return UNKNOWN
        if isinstance(value, (tuple, list)):  # a global list of weights reads as a tuple
            return Value(None, False, tuple(self._global(v) for v in value))
        return Value(rank_of(value))

    def _elements(self, node: gast.expr) -> list[gast.expr] | None:
        """The element atoms of a tuple written here or packed into a name."""
        if isinstance(node, gast.Tuple):
            return list(node.elts)
        if isinstance(node, gast.Name):
            return self.packed.get(node.id)
        return None

    def _constant(self, node: gast.expr) -> Any:
        if isinstance(node, gast.Constant):
            return node.value
        if isinstance(node, gast.Tuple):
            return tuple(self._constant(e) for e in node.elts)
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            return -self._constant(node.operand)
        if isinstance(node, (gast.Name, gast.Attribute)):
            value = self.resolver.resolve(node)
            if value is not LOCAL and value is not UNRESOLVED:
                return value
        raise Decline(f"{text(node)} is not a constant")

    def expression(self, node: gast.expr, target: str) -> tuple[Value, gast.expr | None]:
        """What an assignment's right-hand side gives, and its batched form (None:
        unchanged)."""
        if isinstance(node, gast.Call):
            callee = self.resolver.resolve(node.func)
            if callee is lax.axis_index or callee in lax.COLLECTIVES:
                return self._collective(node, callee)
            if callee is pure_callback:
                return self._pure_callback(node)
        op = classify(node, self.resolver)
        if op.kind == COPY:
            if node.id in self.packed:
                self.packed[target] = self.packed[node.id]
            if node.id in self.stacks:  # a second name of a list filled by append
                if self.changed_lists & {node.id, target}:
                    raise Decline(f"{target!r} names the list {node.id!r}, which appends change")
                self.stacks[target] = self.stacks[node.id]
            return self._value(node), None
        if op.kind == CONSTANT:
            return self._constant_op(node)
        if op.kind == PACK:
            if isinstance(node, gast.Dict):
                if self._mentions_batched(node):
                    raise Decline("a dict of batched values")
                return UNKNOWN, None
            if isinstance(node, gast.List) and not node.elts:  # a tape, filled by append
                self.stacks[target] = None
                return UNKNOWN, None
            self.packed[target] = list(node.elts)
            elements = tuple(self._value(e) for e in node.elts)
            if isinstance(node, gast.List) and any(e.batched for e in elements):
                # a list of the values an operation takes (np.array([a, b]), np.select's
                # lists) made a tuple: its elements differ in shape once some are
                # batches, which compiled code holds in a tuple only. A list the
                # function changes (append, a store) has no batching rule and loops.
                if target in self.changed_lists:
                    raise Decline("a list of batched values that the function changes")
                tuple_node = gast.Tuple([clone(e) for e in node.elts], gast.Load())
                return Value(None, True, elements), tuple_node
            return Value(None, any(e.batched for e in elements), elements), None
        if op.kind == SUBSCRIPT:
            return self._subscript(node)
        if op.kind == RULE:
            return self._rule(op, node)
        if op.kind == POP and node.func.value.id in self.stacks:
            return self.stacks[node.func.value.id] or UNKNOWN, None
        if op.kind == FIELD and not self._mentions_batched(node):
            return UNKNOWN, None
        if op.kind == CALL and self.call_batched is not None and self._mentions_batched(node):
            return self._call(node)
        if op.kind in (CALL, UNKNOWN_OP, POP, FIELD):
            if not self._mentions_batched(node):
                return UNKNOWN, None
            what = {CALL: "a call to another function", FIELD: "a field of a batched value"}
            raise Decline(what.get(op.kind, f"{text(node)}, which has no batching rule"))
        raise Decline(f"{text(node)}, which has no batching rule")

    def _call(self, call: gast.Call) -> tuple[Value, gast.expr]:
        """A call to another function with batched arguments: a call to its vectorized
        version, mapped over the arguments that are batched."""
        if call.keywords or any(isinstance(a, gast.Starred) for a in call.args):
            raise Decline(f"a call to {text(call.func)} with keyword or starred arguments")
        callee = self.resolver.resolve(call.func)
        if callee is LOCAL or callee is UNRESOLVED:
            raise Decline(f"a call to {text(call.func)}, a function made while it runs")
        values = [self._value(a) for a in call.args]
        if any(v.batched and (v.rank is None or v.elements is not None) for v in values):
            raise Decline(f"a call to {text(call.func)} with a batched argument of unknown rank")
        axes = tuple(0 if v.batched else None for v in values)
        ranks = tuple(_rank(v) for v in values)
        name, value = self.call_batched(callee, axes, ranks)
        return value, gast.Call(load(name), [clone(a) for a in call.args], [])

    def _pure_callback(self, call: gast.Call) -> tuple[Value, gast.expr | None]:
        """``pure_callback(fun, spec, *args, vmap_method=...)`` on batched arguments:
        one call on the whole batch for ``"expand_dims"`` (the shared arguments get a
        leading axis of size 1) and ``"broadcast_all"`` (repeated over the batch), the
        declared result given the batch axis; any other method calls it per example."""
        keywords = {k.arg: k.value for k in call.keywords}
        try:
            bound = inspect.signature(pure_callback).bind(*call.args, **keywords).arguments
        except TypeError as error:  # the loop's call says so again, for the user
            raise Decline(f"pure_callback: {error}") from None
        spec, args = bound["result_shape_dtypes"], list(bound.get("args", ()))
        declared = self._value(spec)
        if not any(self._value(a).batched for a in args + list(bound.get("kwargs", {}).values())):
            if declared.batched:
                raise Decline("a pure_callback of shared values declared by a batched one")
            return Value(declared.rank), None
        method = self._constant(keywords["vmap_method"]) if "vmap_method" in keywords else None
        if method not in ("expand_dims", "broadcast_all"):
            raise Decline(f"a pure_callback with vmap_method={method!r} (one call per example)")
        if any(self._value(v).batched for v in bound.get("kwargs", {}).values()):
            raise Decline("a pure_callback with a batched keyword argument")
        if declared.rank is None or declared.elements is not None:
            raise Decline("a pure_callback whose result's rank is not known")
        shared = (
            "np.expand_dims(np.asarray(a), 0)"
            if method == "expand_dims"
            else "np.broadcast_to(a, (_size,) + np.shape(a))"
        )
        batched_args = [a if self._value(a).batched else template(shared, a=a) for a in args]
        batched_spec = spec if declared.batched else template("nxrt.batch_spec(s, _size)", s=spec)
        batched = gast.Call(
            clone(call.func),
            [clone(bound["callback"]), batched_spec, *batched_args],
            [clone(k) for k in call.keywords if k.arg not in ("callback", "result_shape_dtypes")],
        )
        return Value(declared.rank, True), batched

    def _collective(self, call: gast.Call, target: Any) -> tuple[Value, gast.expr]:
        """``psum(x, name)``: a reduction over the batch axis, the same for every
        example; ``axis_index(name)``: each example's position."""
        *args, name = [*call.args, *(k.value for k in call.keywords)]
        if self._constant(name) != self.axis_name or self.axis_name is None:
            raise Decline(
                f"{text(call)}: the collective is over an axis other than this vmap's "
                f"(axis_name={self.axis_name!r})"
            )
        if target is lax.axis_index:
            return Value(0, True), template("np.arange(_size)")
        value = self._value(args[0])
        reduce, unmapped = lax.COLLECTIVES[target]
        if not value.batched:
            return Value(value.rank), template(unmapped.format(x="x"), x=args[0])
        return Value(value.rank), template(f"{reduce}(x, axis=0)", x=args[0])

    def _constant_op(self, node: gast.expr) -> tuple[Value, gast.expr | None]:
        if isinstance(node, gast.Compare):  # elementwise, like the operators
            operands = [node.left, *node.comparators]
            bound = {f"x{k}": a for k, a in enumerate(operands)}
            return self._apply(elementwise, "a comparison", node, bound)
        if isinstance(node, gast.Constant):
            return self._value(node), None
        if isinstance(node, gast.Attribute):
            return self._global(self.resolver.resolve(node)), None
        if isinstance(node, gast.Call) and self.resolver.resolve(node.func) is len:
            argument = node.args[0] if node.args else None
            if argument is not None and self._listed(argument) is not None:
                return SCALAR, None  # a list of batches is as long as each example's
            if argument is not None and self._value(argument).batched:
                return SCALAR, template("x.shape[1]", x=argument)
            return SCALAR, None
        if self._mentions_batched(node):
            raise Decline(f"{text(node)} of a batched value")
        return UNKNOWN, None

    def _subscript(self, node: gast.Subscript) -> tuple[Value, gast.expr | None]:
        listed = self._listed(node.value)
        if listed is not None and listed.batched:  # lst[i]: one of the batches it holds
            if isinstance(node.slice, (gast.Slice, gast.Tuple)) or self._mentions_batched(
                node.slice
            ):
                raise Decline("a list of batched values indexed by a slice or a mapped index")
            return listed, None
        base = self._value(node.value)
        index = node.slice
        if base.elements is not None:  # a tuple's element
            position = self._constant(index)
            if not isinstance(position, int):
                raise Decline("a tuple indexed by a slice")
            return base.elements[position], None
        parts = list(index.elts) if isinstance(index, gast.Tuple) else [index]
        if any(self._mentions_batched(p) for p in parts):
            return self._gather(node, base, parts)
        rank = base.rank
        for part in parts:
            if isinstance(part, gast.Slice):
                continue
            if isinstance(part, gast.Constant) and part.value is None:
                rank = None if rank is None else rank + 1
            elif self._value(part).rank == 0:
                rank = None if rank is None else rank - 1
            else:
                if base.batched:
                    raise Decline("indexing a batch by an array or an ellipsis")
                rank = None
        if not base.batched:
            return Value(rank), None
        every = gast.Slice(None, None, None)
        index = gast.Tuple([every, *clone(parts)], gast.Load())
        return Value(rank, True), gast.Subscript(clone(node.value), index, gast.Load())

    def _gather(
        self, node: gast.Subscript, base: Value, parts: list[gast.expr]
    ) -> tuple[Value, gast.expr | None]:
        """``table[i]`` with ``i`` an integer per example and ``table`` shared (an
        embedding lookup): NumPy's integer-array indexing puts the batch first, as it
        is. Other gathers by mapped values are left to the loop."""
        first = self._value(parts[0])
        rest = [self._value(p) for p in parts[1:] if not isinstance(p, gast.Slice)]
        if base.batched or not first.batched or first.rank != 0 or base.rank is None:
            raise Decline("indexing by a mapped value (a gather; vmap loops)")
        if any(v.batched or v.rank != 0 for v in rest):
            raise Decline("indexing by a mapped value and by arrays (a gather; vmap loops)")
        return Value(base.rank - 1 - len(rest), True), None

    def _rule(self, op: Any, node: gast.expr) -> tuple[Value, gast.expr | None]:
        if isinstance(node, gast.Attribute) and node.attr in ("shape", "ndim"):
            value = self._value(node.value)
            if not value.batched:  # the shape's length is the rank
                elements = None if value.rank is None else (SCALAR,) * value.rank
                return (SCALAR if node.attr == "ndim" else Value(None, False, elements)), None
            if node.attr == "ndim":
                return SCALAR, template("x.ndim - 1", x=node.value)
            elements = None if value.rank is None else (SCALAR,) * value.rank
            return Value(None, False, elements), template("x.shape[1:]", x=node.value)
        bound = {}
        for param, atom in op.bound.items():
            kind = op.rule.signature.parameters[param].kind
            if kind is kind.VAR_POSITIONAL and isinstance(atom, gast.Tuple):
                bound.update({f"{param}{k}": a for k, a in enumerate(atom.elts)})
            elif kind is not kind.VAR_KEYWORD:
                bound[param] = atom
        batch_rule = rules.batching_rule(op.rule)
        if batch_rule is None:
            if any(self._value(a).batched for a in bound.values()):
                raise Decline(f"{op.rule.name}, which has no batching rule")
            return UNKNOWN, None
        return self._apply(batch_rule, op.rule.name, node, bound)

    def _apply(
        self, batch_rule: Any, name: str, node: gast.expr, bound: dict[str, gast.expr]
    ) -> tuple[Value, gast.expr | None]:
        values = {param: self._value(atom) for param, atom in bound.items()}
        batch_op = BatchOp(name, node, bound, values, self._constant, self._elements)
        result = batch_rule(batch_op)
        source, rank = result[0], result[1]
        if isinstance(rank, Value):  # a structured result (a tuple of pieces)
            return rank, expression(source) if batch_op.batched else None
        batched = result[2] if len(result) > 2 else batch_op.batched
        if not batch_op.batched:
            return Value(rank), None
        return Value(rank, batched), expression(source)
