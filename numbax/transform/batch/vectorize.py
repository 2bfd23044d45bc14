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

This module runs the rewrite to its fixpoint (:func:`vectorize`) and holds its state
(``_Vectorizer``: what is known of each name, the function's parameters moved to batch
axis first); the rewrite of statements and control flow is mixed in from
``vectorize_statements.py``, that of each assignment's value, by its batching rule, from
``vectorize_expressions.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast

from numbax.runtime.batching import mapped_axis
from numbax.transform.batch.axes import batch_size
from numbax.transform.batch.loop import SIZE
from numbax.transform.batch.vectorize_expressions import _VectorizeExpressions, rank_of
from numbax.transform.batch.vectorize_statements import KEEP, _at, _Grow, _VectorizeStatements
from numbax.transform.cleanup import cleanup, pure_values
from numbax.transform.nodes import assign, clone, literal, load, names, template
from numbax.transform.resolve import Resolver
from numbax.transform.rules.batch_kinds import UNKNOWN, Decline, Value
from numbax.transform.source import FunctionSource
from numbax.transform.walk import walk

__all__ = ["KEEP", "OUTPUT", "BatchedCall", "Decline", "rank_of", "vectorize"]


OUTPUT = "numbax_batched_output"
"""The attribute of a vectorized tree holding the :class:`Value` of what it returns."""


BatchedCall = Callable[[Any, tuple, tuple], tuple[str, Value]]
"""``call_batched(function, axes, ranks)``: the name under which the generated module
calls ``function`` vectorized (in_axes ``axes``, arguments of these per-example ranks,
out_axes :data:`KEEP`), and the :class:`Value` of its result; raises :class:`Decline`
where the function cannot be vectorized."""


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


class _Vectorizer(_VectorizeStatements, _VectorizeExpressions):
    """One try at vectorizing a function: what is known of each name as its body is
    rewritten."""

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
