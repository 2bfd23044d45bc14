"""Lower every ``for`` loop to a loop over ``range``, the only loop the core language has.

The iterable is read once, before the loop, into a *plan* that knows the loop's length
and how to compute its k-th element:

* ``range(a, b, s)`` (the builtin, by identity) loops directly;
* a sequence (array, list, tuple, anything with ``len`` and ``[k]``): ``_n = len(xs)``,
  then ``x = xs[_i]`` at the top of the body;
* ``enumerate(it, start)``, ``zip(a, b, ...)`` (length ``min`` of the parts) and
  ``reversed(seq or range)`` combine those (``zip``'s ``strict=True`` checks the
  lengths, as Python does), and tuple targets
  (``for i, (a, b) in enumerate(zip(xs, ys))``) are bound part by part, never built as
  tuples. ``for i, x in enumerate(xs)`` loops over ``i`` itself.

Only the builtins themselves are recognised: a user's own ``zip`` is just a sequence.
Because the length is read once, a loop must not change the length of the sequence it
walks (Python would see the change; Numba, like this lowering, would not).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from dataclasses import dataclass, field

import gast

from numbax.transform.nodes import builtin_call, call, const, if_, load, store

_FOLD = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul}
_DICT_VIEWS = {"items", "keys", "values"}


@dataclass
class _Plan:
    length: gast.expr | None = field(default=None, init=False)  # memo: an atom


@dataclass
class _Sequence(_Plan):
    base: gast.Name


@dataclass
class _Range(_Plan):
    args: list[gast.expr]  # atoms: stop | start, stop | start, stop, step


@dataclass
class _Enumerate(_Plan):
    inner: _Plan
    start: gast.expr | None


@dataclass
class _Zip(_Plan):
    parts: list[_Plan]
    strict: bool = False  # zip(..., strict=True): unequal lengths raise ValueError


@dataclass
class _Reversed(_Plan):
    inner: _Sequence | _Range
    last: gast.expr | None = None  # atom: index of the last element


# An element: an expression (atom or one operation on atoms), or a tuple of elements
# kept apart so that tuple targets bind their parts directly.
_Element = gast.expr | list


class LoopLowering:
    """The ``for`` part of the flattener (mixed into it; uses its emit/atom/bind tools)."""

    def loop(
        self,
        target: gast.expr,
        iterable: gast.expr,
        body: Callable[[], None],
        comprehension: bool = False,
    ) -> None:
        """Emit ``for target in iterable: body()`` as a range loop."""
        plan = self._plan(iterable)
        if comprehension:
            self.bind_comprehension_names(target)
        var, bounds, bind = self._header(plan, target)
        stmts = self.block_of(lambda: (bind(), body()))
        self.emit(
            gast.For(
                store(var),
                builtin_call(self.builtin("range"), *bounds),
                self.nonempty(stmts),
                [],
                None,
            )
        )

    # -- reading the iterable ----------------------------------------------------
    def _plan(self, node: gast.expr) -> _Plan:
        if isinstance(node, gast.Call):
            plan = self._builtin_plan(node)
            if plan is not None:
                return plan
            func = node.func
            if isinstance(func, gast.Attribute) and func.attr in _DICT_VIEWS and not node.args:
                raise self.unsupported(
                    f"a for loop over .{func.attr}()",
                    f"loops walk sequences by index: loop over list(d.{func.attr}()) instead",
                )
        return _Sequence(self.name_of(node))

    def _builtin_plan(self, node: gast.Call) -> _Plan | None:
        args, keywords = node.args, {k.arg: k.value for k in node.keywords}
        if self.resolves_to(node.func, builtins.range) and not keywords and 1 <= len(args) <= 3:
            return _Range([self.atom(a) for a in args])
        if self.resolves_to(node.func, builtins.enumerate) and set(keywords) <= {"start"}:
            if 1 <= len(args) + len(keywords) <= 2 and args:
                inner = self._plan(args[0])
                start = args[1] if len(args) == 2 else keywords.get("start")
                return _Enumerate(inner, None if start is None else self.atom(start))
        if self.resolves_to(node.func, builtins.zip) and set(keywords) <= {"strict"} and args:
            strict = keywords.get("strict", const(False))
            if isinstance(strict, gast.Constant) and isinstance(strict.value, bool):
                return _Zip([self._plan(a) for a in args], strict.value)
        if self.resolves_to(node.func, builtins.reversed) and not keywords and len(args) == 1:
            inner = self._plan(args[0])
            if not isinstance(inner, (_Sequence, _Range)):
                raise self.unsupported(
                    "reversed() of enumerate() or zip()",
                    "Python cannot reverse those either: reverse the sequences inside",
                )
            return _Reversed(inner)
        return None

    def _length(self, plan: _Plan) -> gast.expr:
        if plan.length is None:
            plan.length = self._compute_length(plan)
        return plan.length

    def _compute_length(self, plan: _Plan) -> gast.expr:
        if isinstance(plan, _Sequence):
            return self.computed("n", builtin_call(self.builtin("len"), plan.base))
        if isinstance(plan, _Range):
            if len(plan.args) == 1:
                return plan.args[0]
            span = self.computed("range", builtin_call(self.builtin("range"), *plan.args))
            return self.computed("n", builtin_call(self.builtin("len"), span))
        if isinstance(plan, _Zip):
            lengths = [self._length(part) for part in plan.parts]
            if plan.strict:
                for other in lengths[1:]:
                    self._check_equal(lengths[0], other)
            if len(lengths) == 1:
                return lengths[0]
            return self.computed("n", builtin_call(self.builtin("min"), *lengths))
        return self._length(plan.inner)  # enumerate, reversed

    def _check_equal(self, length: gast.expr, other: gast.expr) -> None:
        """Raise Python's ValueError of ``zip(..., strict=True)`` unless equal."""
        differs = self.computed("differs", gast.Compare(length, [gast.NotEq()], [other]))
        message = const("zip() arguments have different lengths")
        error = call(load(self.builtin("ValueError")), [message])
        self.emit(if_(differs.id, [gast.Raise(error, None)]))

    def _prepare(self, plan: _Plan) -> None:
        """Compute, before the loop, what the elements need (the last index of reversals)."""
        if isinstance(plan, _Reversed):
            plan.last = self.arith(self._length(plan.inner), gast.Sub(), const(1))
        for inner in _children(plan):
            self._prepare(inner)

    # -- the loop header ---------------------------------------------------------
    def _header(
        self, plan: _Plan, target: gast.expr
    ) -> tuple[str, list[gast.expr], Callable[[], None]]:
        """Loop variable, ``range`` bounds, and the binding of ``target`` in the body."""
        if isinstance(plan, _Range):
            return self._direct(target, plan.args)
        if isinstance(plan, _Reversed) and isinstance(plan.inner, _Range):
            return self._direct(target, self._reversed_bounds(plan.inner))
        if isinstance(plan, _Reversed):
            last = self.arith(self._length(plan.inner), gast.Sub(), const(1))
            var = self.namer.fresh("i")
            element = self._element(plan.inner, load(var))
            return var, [last, const(-1), const(-1)], lambda: self.bind(target, element)
        length = self._length(plan)
        self._prepare(plan)
        if (
            isinstance(plan, _Enumerate)
            and plan.start is None
            and isinstance(target, (gast.Tuple, gast.List))
            and len(target.elts) == 2
            and isinstance(target.elts[0], gast.Name)
        ):
            var = self.rename(target.elts[0].id)
            second = target.elts[1]
            return var, [length], lambda: self.bind(second, self._element(plan.inner, load(var)))
        var = self.namer.fresh("i")
        return var, [length], lambda: self.bind(target, self._element(plan, load(var)))

    def _direct(
        self, target: gast.expr, bounds: list[gast.expr]
    ) -> tuple[str, list[gast.expr], Callable[[], None]]:
        """Loop over ``range(*bounds)`` whose values are the elements themselves."""
        if isinstance(target, gast.Name):
            return self.rename(target.id), bounds, lambda: None
        var = self.namer.fresh("i")
        return var, bounds, lambda: self.bind(target, load(var))

    def _reversed_bounds(self, plan: _Range) -> list[gast.expr]:
        """``range`` bounds that walk ``plan``'s elements backwards."""
        one = const(1)
        if len(plan.args) == 1:
            return [self.arith(plan.args[0], gast.Sub(), one), const(-1), const(-1)]
        if len(plan.args) == 2:
            start, stop = plan.args
            return [
                self.arith(stop, gast.Sub(), one),
                self.arith(start, gast.Sub(), one),
                const(-1),
            ]
        start, _, step = plan.args
        last = self.arith(self._length(plan), gast.Sub(), one)
        first = self.arith(start, gast.Add(), self.arith(last, gast.Mult(), step))
        return [first, self.arith(start, gast.Sub(), step), self.negated(step)]

    # -- elements ----------------------------------------------------------------
    def _element(self, plan: _Plan, k: gast.Name) -> _Element:
        if isinstance(plan, _Sequence):
            return gast.Subscript(plan.base, k, gast.Load())
        if isinstance(plan, _Range):
            if len(plan.args) == 1:
                return k
            offset = k if len(plan.args) == 2 else self.arith(k, gast.Mult(), plan.args[2])
            return _sum(plan.args[0], offset)
        if isinstance(plan, _Enumerate):
            count = k if plan.start is None else _sum(k, plan.start)
            return [count, self._element(plan.inner, k)]
        if isinstance(plan, _Zip):
            return [self._element(part, k) for part in plan.parts]
        assert isinstance(plan, _Reversed)
        return self._element(plan.inner, self.arith(plan.last, gast.Sub(), k))

    def arith(self, left: gast.expr, op: gast.operator, right: gast.expr) -> gast.expr:
        """An atom for ``left op right`` on integer index arithmetic, folded where it can."""
        if isinstance(left, gast.Constant) and isinstance(right, gast.Constant):
            return const(_FOLD[type(op)](left.value, right.value))
        if _is_literal(right, 1 if isinstance(op, gast.Mult) else 0):
            return left
        if not isinstance(op, gast.Sub) and _is_literal(
            left, 1 if isinstance(op, gast.Mult) else 0
        ):
            return right
        value = gast.BinOp(left, op, right)
        return self.computed(self.hint(value), value)

    def negated(self, value: gast.expr) -> gast.expr:
        if isinstance(value, gast.Constant):
            return const(-value.value)
        return self.computed("neg", gast.UnaryOp(gast.USub(), value))


def _children(plan: _Plan) -> list[_Plan]:
    if isinstance(plan, (_Enumerate, _Reversed)):
        return [plan.inner]
    if isinstance(plan, _Zip):
        return plan.parts
    return []


def _sum(left: gast.expr, right: gast.expr) -> gast.expr:
    """``left + right`` as one operation, or just ``right`` when ``left`` is literal 0."""
    return right if _is_literal(left, 0) else gast.BinOp(left, gast.Add(), right)


def _is_literal(node: gast.expr, value: int) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) is int and node.value == value
