"""Pieces both derivative transformations share: naming, runtime calls, rule errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast
import numpy as np

from numbax.errors import TransformError
from numbax.transform import rules
from numbax.transform.analysis.activity import assignments
from numbax.transform.analysis.dataflow import names
from numbax.transform.methods import method_of_value_error
from numbax.transform.nodes import at, load
from numbax.transform.normalize.aliases import IN_PLACE, WRITE_BACK
from numbax.transform.operations import UNKNOWN, Operation, classify
from numbax.transform.provenance import mark_adjoint
from numbax.transform.resolve import LOCAL
from numbax.transform.rules.batch_kinds import text
from numbax.transform.source import FunctionSource, display_name
from numbax.transform.walk import walk

RUNTIME = "nxrt"
"""The generated module's name for numbax's runtime helpers."""

DeriveCallee = Callable[[Any, str, tuple[int, ...]], str]
"""``derive(function, "jvp" | "vjp", active positions)``: the name under which the
generated module calls that function's derivative (generated and bound on demand)."""


def runtime_call(name: str, *args: gast.expr) -> gast.Call:
    """``nxrt.<name>(args)``."""
    func = gast.Attribute(load(RUNTIME), name, gast.Load())
    return gast.Call(func, list(args), [])


def zeros_like(node: gast.expr) -> gast.Call:
    return runtime_call("zeros_like", _copy_atom(node))


def _copy_atom(node: gast.expr) -> gast.expr:
    if isinstance(node, gast.Name):
        return load(node.id)
    return gast.Constant(node.value, None) if isinstance(node, gast.Constant) else node


def add(left: gast.expr, right: gast.expr) -> gast.expr:
    return gast.BinOp(left, gast.Add(), right)


def total(terms: list[gast.expr], combine: str | None = None) -> gast.expr:
    """The sum of ``terms``; with ``combine="nxrt.tree_add"``, added by that helper."""
    result = terms[0]
    for term in terms[1:]:
        if combine is None:
            result = add(result, term)
        else:
            result = runtime_call(combine.rsplit(".", 1)[-1], result, term)
    return result


def located(stmts: list[gast.stmt], line: int | None, adjoint: bool = False) -> list[gast.stmt]:
    """Give generated statements the user's line; ``adjoint`` ones are commented as the
    adjoint of that line (nested blocks keep the lines their statements already have;
    those made without one get ``line`` too)."""
    for stmt in stmts:
        if line is not None and getattr(stmt, "lineno", None) is None:
            at(stmt, line)
            for block in ("body", "orelse"):
                unlocated = [s for s in getattr(stmt, block, []) if not hasattr(s, "lineno")]
                located(unlocated, line, adjoint)
        elif line is not None and not isinstance(stmt, (gast.If, gast.For, gast.While)):
            at(stmt, line)
        if adjoint:
            mark_adjoint(stmt)
    return stmts


def derivative_name(var: str, prefix: str) -> str:
    """Hint for a derivative variable: ``x`` → ``d_x``/``ct_x``, ``_exp`` → ``d_exp``."""
    return f"{prefix}_{var.lstrip('_') or var}"


def no_rule_error(op: Operation, source: FunctionSource, line: int, mode: str) -> TransformError:
    callee = op.callee
    if _method_of_value(op):
        return method_of_value_error(op.node, source, line, mode)
    if callee is LOCAL and isinstance(op.node, gast.Call):  # f = make(); f(x)
        what = text(op.node.func)
        advice = (
            f"{what} is a value of the function (a parameter, or made while it runs), "
            "whose code numbax cannot know before it runs. Call a function defined in the "
            f"module instead (for an object, through its class: `MyClass.__call__({what}, "
            "...)`); a transformation such as nx.vmap(model, (None, 0)) may be built in "
            "place when all its arguments are constants or globals."
        )
    else:
        what = callee if isinstance(callee, str) else rules.qualified_name(callee)
        advice = getattr(callee, "__numbax_advice__", None) or (
            f"{what} has no derivative rule, and one of its arguments carries a derivative. "
            "Wrap the computation in a function decorated with nx.custom_jvp or "
            "nx.custom_vjp that supplies its derivative, or register a rule with "
            "numbax.transform.rules.registry.define."
        )
    return TransformError(
        advice,
        function=display_name(source.func),
        transformation=mode,
        filename=source.filename,
        lineno=line,
        construct=what,
    )


def _method_of_value(op: Operation) -> bool:
    """``value.method(...)`` without a rule, on a value that is not an array: not a
    NumPy method (those numbax lacks are named as such), nor a function refused for the
    arguments it was given (its callee reads ``"numpy.linalg.eigh with UPLO='U'"``; a
    method of a value reads ``".method()"``)."""
    node = op.node
    return (
        isinstance(node, gast.Call)
        and isinstance(node.func, gast.Attribute)
        and isinstance(op.callee, str)
        and op.callee.startswith(".")
        and not hasattr(np.ndarray, node.func.attr)
    )


def refuse_made_functions(
    fn: gast.FunctionDef,
    activity: Any,
    resolver: Any,
    source: FunctionSource,
    mode: str,
) -> None:
    """Raise for a call of a function the body made from values that carry a
    derivative (``f = make(a); y = f(x)``) whose result reaches the output: the
    derivative flows through the function itself, which numbax cannot read, so the
    call would silently count as constant in ``a``."""
    for stmt in assignments(fn.body):
        if not isinstance(stmt, gast.Assign) or not isinstance(stmt.value, gast.Call):
            continue
        func, target = stmt.value.func, stmt.targets[0]
        if not isinstance(func, gast.Name) or func.id not in activity.varied:
            continue
        targets = names(target)
        op = classify(stmt.value, resolver)
        if op.kind == UNKNOWN and targets & activity.useful:
            raise no_rule_error(op, source, getattr(stmt, "lineno", None), mode)


def stored_into(fn: gast.FunctionDef) -> set[str]:
    """The variables ``fn`` stores into (``x[i] = v``, ``x op= v``, which changes an
    array in place, and ``x = c`` writing back a change made through a view ``c`` of
    ``x``): a parameter among them is an array of the caller, which derivative code must
    not change."""
    stored = set()
    for n in walk(fn):
        if isinstance(n, gast.Assign) and isinstance(n.targets[0], gast.Subscript):
            stored.add(n.targets[0].value.id)
        elif isinstance(n, gast.Assign) and (
            getattr(n, IN_PLACE, False) or getattr(n, WRITE_BACK, False)
        ):
            stored.add(n.targets[0].id)
    return stored
