"""Which functions are sums of elementwise terms of one argument, so that their
Hessian w.r.t. it is diagonal.

``f(x) = np.sum(g(x, w, ...))`` with ``g`` made of elementwise operations (each
element of a result reads the same element of each broadcast operand) is a sum of
terms each of which reads one element of ``x``: however the other operands broadcast,
the gradient's element ``k`` depends on ``x``'s element ``k`` alone. Its Hessian is
diagonal, and one JVP of the gradient along ``ones_like(x)`` gives that diagonal:
``hessian`` then costs one pass over ``x`` where the basis would cost ``size(x)``.

The test is on the normalized source, and conservative: a straight line of
assignments where every value that reads ``x`` is elementwise (an operator, a ufunc,
``np.where`` of three arguments, a comparison, a copy), then full sums or means of
such values (no ``axis``, ``keepdims``, ``dtype`` or ``initial``), then sums,
differences and products by constants of those sums, one of which is returned.
Anything else reading ``x`` (indexing, reshaping, a loop, a call of another function,
a sum along an axis, a square of a sum) says no, and the Hessian takes the general
path.
"""

from __future__ import annotations

import operator

import gast
import numpy as np

from numbax.transform import rules
from numbax.transform.analysis.dataflow import read_names
from numbax.transform.operations import CONSTANT, COPY, RULE, classify, held_globals
from numbax.transform.resolve import Resolver
from numbax.transform.rules.batch_kinds import elementwise

_FULL_REDUCTIONS = (np.sum, np.mean)
"""Reductions that keep a sum of terms a sum of terms (a mean: scaled by a count)."""

_OPTIONS_AT_DEFAULT = {"axis": None, "keepdims": False, "dtype": None, "initial": None, "out": None}
"""A full reduction's options that must be absent or at these values."""

_LINEAR_IN_A_SUM = (operator.add, operator.sub, operator.neg, operator.pos)
"""Operations that keep sums of terms sums of terms, whatever their operands."""

_SCALED_BY_CONSTANT = (operator.mul, operator.truediv)
"""Operations that keep a sum of terms one when the other operand is a literal number
(it is the divisor of a division)."""


def is_separable(fn: gast.FunctionDef, param: str, resolver: Resolver) -> bool:
    """Whether ``fn`` (normalized) returns a sum of terms each of which reads one element
    of its parameter ``param``: its Hessian w.r.t. ``param`` is then diagonal."""
    body = fn.body
    if not body or not isinstance(body[-1], gast.Return):
        return False
    returned = body[-1].value
    if not isinstance(returned, gast.Name):
        return False
    resolver.held = held_globals(fn, resolver)
    elementwise_of = {param}  # values each of whose elements reads one element of param
    sums: set[str] = set()  # scalars that are sums of such terms
    for stmt in body[:-1]:
        if not (
            isinstance(stmt, gast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name)
        ):
            return False
        target, value = stmt.targets[0].id, stmt.value
        read = read_names(value)
        kind = None
        if not read.isdisjoint(elementwise_of | sums):  # reads param
            kind = _kind(value, read, elementwise_of, sums, resolver)
            if kind is None:
                return False
        elementwise_of.discard(target)
        sums.discard(target)
        if kind is not None:
            (elementwise_of if kind == "elementwise" else sums).add(target)
    return returned.id in sums


def _kind(
    value: gast.expr, read: set[str], elementwise_of: set[str], sums: set[str], resolver: Resolver
) -> str | None:
    """``"elementwise"`` or ``"sum"`` for a value that reads ``param`` in a way that
    keeps the function separable, else None."""
    operation = classify(value, resolver)
    if operation.kind == COPY:
        return "sum" if value.id in sums else "elementwise"
    if operation.kind == CONSTANT:  # a comparison: elementwise, no derivative
        return "elementwise" if isinstance(value, gast.Compare) and not read & sums else None
    if operation.kind != RULE:
        return None
    rule, bound = operation.rule, operation.bound
    if not read & sums:
        if rule.batch is elementwise or _is_selection(rule, bound):
            return "elementwise"
        if _is_full_reduction(rule, bound, elementwise_of):
            return "sum"
        return None
    return "sum" if _keeps_a_sum(value, rule, bound, sums) else None


def _is_selection(rule: rules.Rule, bound: dict[str, gast.expr]) -> bool:
    """``np.where(condition, x, y)``: elementwise (``np.where(c)`` alone gives indices)."""
    unset = [bound.get(p) for p in ("x", "y")]
    return rule is rules.rule_for(np.where) and not any(_is_none(a) for a in unset)


def _is_full_reduction(
    rule: rules.Rule, bound: dict[str, gast.expr], elementwise_of: set[str]
) -> bool:
    """``np.sum(a)`` or ``np.mean(a)`` (or the methods) of every element of ``a``."""
    reductions = [rules.rule_for(r) for r in _FULL_REDUCTIONS]
    reductions += [rules.method_rule(r.__name__) for r in _FULL_REDUCTIONS]
    if not any(rule is r for r in reductions):
        return False
    a = bound.get("a")
    if not (isinstance(a, gast.Name) and a.id in elementwise_of):
        return False
    for option, default in _OPTIONS_AT_DEFAULT.items():
        given = bound.get(option)
        if given is not None and not (isinstance(given, gast.Constant) and given.value is default):
            return False
    return set(bound) <= {"a", *_OPTIONS_AT_DEFAULT}


def _keeps_a_sum(
    value: gast.expr, rule: rules.Rule, bound: dict[str, gast.expr], sums: set[str]
) -> bool:
    """A sum plus or minus another (or a constant), or a sum times or over a literal
    number: still a sum of terms of one element each."""
    operands = list(bound.values())
    if any(rule is rules.rule_for(op) for op in _LINEAR_IN_A_SUM):
        return all(_is_sum_or_number(a, sums) for a in operands)
    if any(rule is rules.rule_for(op) for op in _SCALED_BY_CONSTANT):
        scaled = [a for a in operands if isinstance(a, gast.Name) and a.id in sums]
        numbers = [a for a in operands if _is_number(a)]
        divides = rule is rules.rule_for(operator.truediv)
        if divides and not (isinstance(value, gast.BinOp) and _is_number(value.right)):
            return False
        return len(scaled) == 1 and len(numbers) == len(operands) - 1
    return False


def _is_none(node: gast.expr | None) -> bool:
    return node is None or (isinstance(node, gast.Constant) and node.value is None)


def _is_number(node: gast.expr) -> bool:
    return (
        isinstance(node, gast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


def _is_sum_or_number(node: gast.expr, sums: set[str]) -> bool:
    return _is_number(node) or (isinstance(node, gast.Name) and node.id in sums)
