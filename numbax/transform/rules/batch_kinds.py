"""Batching rules: how one operation runs on a whole batch at once (``vmap``'s vectorized
method, ``transform/batch/vectorize.py``).

A batched value carries the batch as its leading axis; an unbatched value is the same
for every example. A rule sees, for each argument, its *per-example rank* (the rank
one example has; known because the vectorized function is generated for the ranks of
its arguments) and whether it is batched, and writes the operation on the batch:

* elementwise operations lift a batched argument of lower rank by new axes after the
  batch axis (``x[:, None] * m``), because NumPy aligns shapes from the right;
* reductions and scans shift their axes by one (``np.sum(x, axis=1)``);
* ``dot`` and ``@`` become one matrix product over the batch (``v @ m.T``);
* runtime helpers of derivative code are rewritten as the operations they stand for.

A rule returns the batched source and the result's per-example rank, or raises
:class:`Decline` for a form it does not batch: ``vmap`` then loops over the batch
instead. Each operation's declaration names its rule (``define(..., batch=...)`` in
elementwise.py, reductions.py...; elementwise rules are batched elementwise).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import astor
import gast


class Decline(Exception):
    """The operation cannot be batched as written (the reason says why): vmap loops.
    ``filename`` and ``lineno``: where, once the statement is known."""

    def __init__(self, reason: str, filename: str | None = None, lineno: int | None = None):
        super().__init__(reason)
        self.filename = filename
        self.lineno = lineno


@dataclass(frozen=True)
class Value:
    """What the vectorizer knows of a value: its rank per example (None: unknown) and
    whether it is batched; a tuple's elements, when it is one."""

    rank: int | None
    batched: bool = False
    elements: tuple[Value, ...] | None = None


SCALAR = Value(0)
UNKNOWN = Value(None)


def text(node: gast.AST) -> str:
    """The source of an expression node."""
    return astor.to_source(gast.gast_to_ast(node)).strip()


def parse(source: str) -> gast.expr:
    return gast.ast_to_gast(ast.parse(source, mode="eval")).body


def lift(source: str, value: Value, rank: int) -> str:
    """A batched value of lower per-example rank with new axes after the batch axis,
    so that it broadcasts against per-example shapes of ``rank`` as one example does:
    ``x[:, None]``."""
    if not value.batched or value.rank is None or value.rank >= rank:
        return source
    return f"{source}[:, {', '.join(['None'] * (rank - value.rank))}]"


def repeated(source: str) -> str:
    """A value the batch shares, repeated over it (a read-only view): for operations
    whose other operands are batched, or that need a batch-shaped ``like``."""
    return f"np.broadcast_to({source}, (_size,) + np.shape({source}))"


class BatchOp:
    """One operation to batch: its bound arguments (rule parameter → atom node) with
    what is known of each."""

    def __init__(
        self,
        name: str,
        node: gast.expr,
        bound: dict[str, gast.expr],
        values: dict[str, Value],
        constant: Callable[[gast.expr], Any],
        elements: Callable[[gast.expr], list[gast.expr] | None] = lambda node: None,
    ) -> None:
        self.name = name
        self.node = node
        self.bound = bound
        self.values = values
        self._constant = constant
        self._elements = elements

    @property
    def batched(self) -> bool:
        return any(v.batched for v in self.values.values())

    def value(self, param: str) -> Value:
        return self.values.get(param, SCALAR)

    def rank(self, param: str) -> int:
        """A parameter's per-example rank, which the rule needs to know."""
        rank = self.value(param).rank
        if rank is None:
            raise Decline(f"the rank of {param!r} of {self.name} is not known")
        return rank

    def text(self, param: str) -> str:
        return text(self.bound[param])

    def lifted(self, param: str, rank: int) -> str:
        return lift(self.text(param), self.value(param), rank)

    def constant(self, param: str) -> Any:
        """The value of an argument that must be a constant (an axis)."""
        if param not in self.bound:
            return None
        return self._constant(self.bound[param])

    def nested_constant(self, param: str) -> Any:
        """The value of an argument that must be a constant, which may be a tuple of
        constants held in names (``pad_width``)."""

        def value(node: gast.expr) -> Any:
            atoms = self._elements(node)
            if atoms is not None:
                return tuple(value(atom) for atom in atoms)
            return self._constant(node)

        return None if param not in self.bound else value(self.bound[param])

    def elements(self, param: str) -> list[tuple[str, Value]] | None:
        """The source and what is known of each element of a tuple argument (None: not
        a tuple whose elements are known)."""
        atoms = self._elements(self.bound[param])
        if atoms is None:
            return None
        return list(zip(map(text, atoms), self.value(param).elements or (), strict=True))

    def is_none(self, param: str) -> bool:
        """Whether the argument is absent or ``None``."""
        return param not in self.bound or _is_none(self.bound[param])

    def is_batched(self, param: str) -> bool:
        return self.value(param).batched

    def replaced(self, sources: dict[str, str]) -> str:
        """The operation as written, with some arguments' atoms replaced by source."""
        by_node = {id(self.bound[p]): s for p, s in sources.items() if p in self.bound}
        return text(_rebuilt(self.node, by_node))


def _rebuilt(node: gast.AST, by_node: dict[int, str]) -> gast.AST:
    """A copy of ``node`` with the nodes ``by_node`` names (by id) replaced by source."""
    if id(node) in by_node:
        return parse(by_node[id(node)])
    twin = copy.copy(node)
    for name, child in gast.iter_fields(node):
        if isinstance(child, list):
            child = [_rebuilt(c, by_node) if isinstance(c, gast.AST) else c for c in child]
        elif isinstance(child, gast.AST):
            child = _rebuilt(child, by_node)
        setattr(twin, name, child)
    return twin


Rule = Callable[[BatchOp], tuple[str, int | None]]


# -- elementwise ------------------------------------------------------------------------
def elementwise(op: BatchOp) -> tuple[str, int | None]:
    """Every array argument broadcast: the result has the largest rank; batched
    arguments of lower rank are lifted to it."""
    arrays = [p for p in op.bound if op.value(p).rank != 0 or op.is_batched(p)]
    arrays = [p for p in arrays if not _is_none(op.bound[p])]
    ranks = [op.value(p).rank for p in arrays]
    rank = None if None in ranks else max(ranks, default=0)
    if not op.batched:
        return "", rank
    if rank is None:
        raise Decline(f"{op.name} of arguments whose ranks are not known")
    return op.replaced({p: op.lifted(p, rank) for p in arrays if op.is_batched(p)}), rank


def elementwise_of_tuples(arrays: tuple[str, ...], tuples: tuple[str, ...]) -> Rule:
    """An operation that broadcasts its ``arrays`` and the elements of its ``tuples``
    against each other as elementwise ones do (``np.choose(a, (x, y))``, ``np.select``'s
    lists of conditions and choices and its default): each batched array of lower rank
    lifted, in its tuple."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        items: dict[str, list[tuple[str, Value]]] = {}
        for param in tuples:
            parts = op.elements(param) if param in op.bound else None
            if parts is None and param in op.bound:
                if op.batched:
                    raise Decline(f"{op.name} of a {param} whose elements are not known")
                return "", None
            items[param] = parts or []
        singles = [p for p in arrays if p in op.bound and not _is_none(op.bound[p])]
        values = [op.value(p) for p in singles] + [v for ps in items.values() for _, v in ps]
        ranks = [v.rank for v in values]
        rank = None if None in ranks else max(ranks, default=0)
        if not op.batched:
            return "", rank
        if rank is None:
            raise Decline(f"{op.name} of arguments whose ranks are not known")
        sources = {p: op.lifted(p, rank) for p in singles if op.is_batched(p)}
        for param, parts in items.items():
            lifted = [lift(source, value, rank) for source, value in parts]
            sources[param] = f"({', '.join(lifted)},)"
        return op.replaced(sources), rank

    return rule


def elementwise_as(function: str) -> Rule:
    """A function of Python numbers only (``math.exp``), batched elementwise as
    ``function``, the NumPy or SciPy function of the same meaning on arrays."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        source, rank = elementwise(op)
        if not op.batched:
            return source, rank
        call = parse(source)
        call.func = parse(function)
        return text(call), rank

    return rule


def _is_none(node: gast.expr) -> bool:
    return isinstance(node, gast.Constant) and node.value is None


def same_shape(param: str) -> Rule:
    """An operation whose result has the shape of ``param`` (``zeros_like``), applied
    to the batch as it is."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        return op.replaced({}), op.value(param).rank

    return rule


def constructor(shape: str, rank: int | None = None) -> Rule:
    """A new array from a shape the batch shares (``np.zeros(3)``): its rank is the
    shape's length (``rank``: a fixed one, ``np.eye``)."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        if op.batched:
            raise Decline(f"{op.name} of a shape that depends on the batch")
        if rank is not None:
            return "", rank
        value = op.value(shape)
        if value.elements is not None:
            return "", len(value.elements)
        return "", 1 if value.rank == 0 else None

    return rule


def joined(new_axis: bool) -> Rule:
    """``np.concatenate`` (``new_axis``: ``np.stack``) of a tuple of arrays along
    ``axis``: the axis shifted past the batch's, shared arrays repeated over the batch."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        parts = op.elements("arrays")
        ranks = {v.rank for _, v in parts} if parts else {None}
        rank = None if len(ranks) != 1 or None in ranks else ranks.pop()
        out_rank = None if rank is None else rank + new_axis
        if not op.batched:
            return "", out_rank
        if rank is None or parts is None:
            raise Decline(f"{op.name} of a tuple whose elements are not known")
        axis = op.constant("axis")
        if not isinstance(axis, int):
            raise Decline(f"{op.name} along axis {axis!r}")
        where = shifted_axis(axis, out_rank, op.name)
        sources = [s if v.batched else repeated(s) for s, v in parts]
        function = "np.stack" if new_axis else "np.concatenate"
        return f"{function}(({', '.join(sources)},), axis={where})", out_rank

    return rule


# -- axes -------------------------------------------------------------------------------
def shifted_axis(axis: Any, rank: int, what: str) -> Any:
    """A per-example axis (or tuple of axes) as an axis of the batch."""
    if isinstance(axis, tuple):
        return tuple(shifted_axis(a, rank, what) for a in axis)
    if not isinstance(axis, int):
        raise Decline(f"{what}: axis {axis!r} is not a constant")
    if not -rank <= axis < rank:
        raise Decline(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank + 1


def reduction(
    param: str = "a", axis: str = "axis", keepdims: str | None = "keepdims", nests: bool = True
) -> Rule:
    """A reduction over ``axis`` (None: every axis): the batch's axes are the
    example's shifted by one; the batch axis itself is never reduced. ``nests``: a
    reduction over several axes is the reduction over each in turn (sum, max...: not
    var), which is how compiled code, reducing one axis at a time, does it."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        rank = op.value(param).rank
        axes = op.constant(axis)
        keep = bool(op.constant(keepdims)) if keepdims else False
        if rank is None:
            if op.batched:
                raise Decline(f"{op.name} of an argument whose rank is not known")
            return "", None
        if axes is None:
            axes = tuple(range(rank))
        count = len(axes) if isinstance(axes, tuple) else 1
        out_rank = rank if keep else rank - count
        if not op.batched:
            return "", out_rank
        if rank == 0:
            raise Decline(f"{op.name} of a scalar per example")
        shifted = shifted_axis(axes, rank, op.name)
        if not isinstance(shifted, tuple):
            return _with_arguments(op, {axis: repr(shifted)}), out_rank
        if len(shifted) > 1 and not nests:
            raise Decline(f"{op.name} over several axes")
        source = op.text(param)
        for k in sorted(shifted, reverse=True):  # the last axis first: the others stay put
            source = _with_arguments(op, {param: source, axis: repr(k)})
        return source, out_rank

    return rule


def scan(param: str = "a", axis: str = "axis") -> Rule:
    """A scan along one axis (``cumsum``): same rank, the axis shifted."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        rank = op.value(param).rank
        if not op.batched:
            return "", rank
        where = op.constant(axis)
        if where is None or rank is None:
            raise Decline(f"{op.name} of the flattened array")
        return _with_arguments(op, {axis: repr(shifted_axis(where, rank, op.name))}), rank

    return rule


def _with_arguments(op: BatchOp, sources: dict[str, str]) -> str:
    """The call with these arguments replaced by source; those the call left at their
    defaults are added as keywords."""
    given = {p for p in sources if p in op.bound and _passed(op, p)}
    call = parse(op.replaced({p: s for p, s in sources.items() if p in given}))
    call.keywords += [gast.keyword(p, parse(s)) for p, s in sources.items() if p not in given]
    return text(call)


def _passed(op: BatchOp, param: str) -> bool:
    return any(op.bound[param] is a for a in _arguments(op.node)) or (
        isinstance(op.node, gast.Call)
        and isinstance(op.node.func, gast.Attribute)
        and op.bound[param] is op.node.func.value
    )


def _arguments(call: gast.expr) -> list[gast.expr]:
    if not isinstance(call, gast.Call):
        return []
    return list(call.args) + [k.value for k in call.keywords]


# -- products ---------------------------------------------------------------------------
def matrix_product(x: str, y: str, xv: Value, yv: Value, name: str) -> tuple[str, int]:
    """``x @ y`` (or ``np.dot``) of vectors and matrices per example, on the batch: one
    matrix product where one side is shared, a sum of products where both are batched
    (NumPy's ``@`` would broadcast, but compiled code multiplies 2-d arrays only)."""
    rx, ry = xv.rank, yv.rank
    if rx is None or ry is None or not (1 <= rx <= 2 and 1 <= ry <= 2):
        raise Decline(f"{name} of per-example ranks {rx} and {ry}")
    out = rx + ry - 2
    stack = f"{name} of a batch of matrices and a shared matrix (a stack of products)"
    if xv.batched and not yv.batched:  # (B, [n,] k) @ (k[, m])
        if rx == 1:
            return f"{x} @ {y}", out
        if ry == 1:
            return f"np.sum({x} * {y}, axis=2)", out
        raise Decline(stack)
    if yv.batched and not xv.batched:  # ([n,] k) @ (B, k[, m])
        if ry == 1:  # the batch's rows times the matrix's transpose: a C-ordered result
            return (f"{y} @ {x}.T" if rx == 2 else f"{y} @ {x}"), out
        if rx == 1:
            return f"np.sum({x}[:, None] * {y}, axis=1)", out
        raise Decline(stack)
    if rx == 1 and ry == 1:
        return f"np.sum({x} * {y}, axis=1)", 0
    if rx == 2 and ry == 1:
        return f"np.sum({x} * {y}[:, None, :], axis=2)", 1
    if rx == 1 and ry == 2:
        return f"np.sum({x}[:, :, None] * {y}, axis=1)", 1
    raise Decline(f"{name} of two batches of matrices (a stack of matrix products)")


def product(x: str = "x", y: str = "y") -> Rule:
    """``x @ y``, ``np.matmul``, ``np.dot`` (scalars multiply)."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        xv, yv = op.value(x), op.value(y)
        if xv.rank == 0 or yv.rank == 0:  # np.dot of a scalar multiplies
            rank = None if None in (xv.rank, yv.rank) else max(xv.rank, yv.rank)
            if not op.batched:
                return "", rank
            if rank is None:
                raise Decline(f"{op.name} of arguments whose ranks are not known")
            return f"{op.lifted(x, rank)} * {op.lifted(y, rank)}", rank
        if not op.batched:
            ranks = (xv.rank, yv.rank)
            return "", None if None in ranks or max(ranks) > 2 else sum(ranks) - 2
        return matrix_product(op.text(x), op.text(y), xv, yv, op.name)

    return rule


# -- linear algebra on stacks -------------------------------------------------------------
def on_matrices(params: dict[str, int], out: int | tuple[int, ...]) -> Rule:
    """A function of ``numpy.linalg`` that works on the last axes of its arguments and
    takes stacks of them (``np.linalg.svd`` of a ``(..., m, n)`` array): ``params`` gives
    the rank of one operand of each parameter (2 for a matrix), ``out`` that of the
    result (a tuple for a tuple of results). On the batch, the call is the same, the
    batch one more axis of the stack; a shared operand is repeated over the batch when
    another is batched (NumPy would broadcast it; compiled code wants one stack)."""

    def rule(op: BatchOp) -> tuple[str, Any]:
        present = [p for p in params if not op.is_none(p)]
        ranks = [op.value(p).rank for p in present]
        leading = {r - params[p] for p, r in zip(present, ranks, strict=True) if r is not None}
        stack = leading.pop() if len(leading) == 1 and None not in ranks else None
        if stack is None or stack < 0:
            if op.batched:
                raise Decline(f"{op.name} of operands whose stacks are not known or differ")
            return "", None
        if isinstance(out, tuple):
            ranks: Any = Value(None, op.batched, tuple(Value(stack + r, op.batched) for r in out))
        else:
            ranks = stack + out
        if not op.batched:
            return "", ranks
        sources = {p: repeated(op.text(p)) for p in present if not op.is_batched(p)}
        return op.replaced(sources), ranks

    return rule


def solve(op: BatchOp) -> tuple[str, int | None]:
    """``np.linalg.solve(a, b)``: ``b`` is a vector only when it is 1-d (NumPy 2), so a
    batch of vectors is solved as a batch of one-column matrices."""
    a, b = op.value("a").rank, op.value("b").rank
    if a is None or b is None:
        if op.batched:
            raise Decline(f"{op.name} of operands whose ranks are not known")
        return "", None
    if not op.batched:
        return "", a - 1 if b == 1 else max(a, b)
    if a != 2 or b not in (1, 2):
        raise Decline(f"{op.name} of stacks within each example")
    left = op.text("a") if op.is_batched("a") else repeated(op.text("a"))
    right = op.text("b") if op.is_batched("b") else repeated(op.text("b"))
    if b == 1:
        return f"np.linalg.solve({left}, {right}[:, :, None])[:, :, 0]", 1
    return f"np.linalg.solve({left}, {right})", 2
