"""Lists and tuples that a NumPy function takes as arrays, in derivative templates.

``np.add(t, u)`` of two tuples adds them as arrays, where ``t + u`` joins them; the rule
templates are written with Python's operators for arrays (``dx + dy``, ``2 * x``). So
where an elementwise NumPy function's operand may hold a list or tuple, the operators of
its derivative that meet such a value, and nothing NumPy made, are written as their
NumPy functions (``np.add(_d_t, _d_u)``, ``np.multiply(2, t)``): the derivative reads as
the user's own call, and computes what NumPy computes. Transformations need no types:
which variables may hold a sequence is read from how they are assigned.
"""

from __future__ import annotations

import gast
import numpy as np

from numbax.transform.ad_common import runtime_call
from numbax.transform.normalize_nodes import load
from numbax.transform.operations import (
    CALL,
    COPY,
    FIELD,
    PACK,
    POP,
    RULE,
    SUBSCRIPT,
    Operation,
    classify,
)
from numbax.transform.resolve import Resolver
from numbax.transform.rules import Rule
from numbax.transform.walk import walk


def takes_sequences_as_arrays(op: Operation) -> bool:
    """Whether the operation is a ufunc or another elementwise NumPy (or numbax runtime)
    function: it takes a list or tuple operand as the array NumPy makes of it. Python's
    operators (``t + u``) and builtins keep a sequence's own meaning, for the primal and
    its derivatives alike; functions that take sequences of arrays (``np.stack``) have
    rules written for them."""
    if op.kind != RULE or not isinstance(op.node, gast.Call):
        return False
    if isinstance(op.callee, np.ufunc):
        return True
    module = getattr(op.callee, "__module__", None) or ""
    return op.rule.elementwise and module.split(".")[0] in ("numpy", "numbax")


def sequence_operands(op: Operation, maybe_sequences: set[str]) -> set[str]:
    """The operands of ``op`` that may be lists or tuples it takes as arrays (none when
    it takes none so)."""
    if not takes_sequences_as_arrays(op):
        return set()
    return {a.id for a in op.bound.values() if isinstance(a, gast.Name)} & maybe_sequences


def may_hold_sequences(fn: gast.FunctionDef, resolver: Resolver) -> set[str]:
    """Variables that may hold a list or tuple: parameters, displays, what a function,
    a field, a pop, a split or unpacking gives, an item or copy of such a variable."""
    found = {a.id for a in fn.args.posonlyargs + fn.args.args}
    for node in walk(fn):
        if not isinstance(node, gast.Assign):
            continue
        target, value = node.targets[0], node.value
        if isinstance(target, gast.Tuple):  # a, b = t
            found |= {n.id for n in target.elts if isinstance(n, gast.Name)}
            continue
        if not isinstance(target, gast.Name):
            continue
        op = classify(value, resolver)
        if op.kind == PACK and not isinstance(value, gast.Dict):
            found.add(target.id)
        elif op.kind in (CALL, FIELD, POP):
            found.add(target.id)
        elif op.kind in (COPY, SUBSCRIPT):
            source = value if op.kind == COPY else value.value
            if isinstance(source, gast.Name) and source.id in found:
                found.add(target.id)
        elif op.kind == RULE and _gives_sequence(op.rule):
            found.add(target.id)
    return found


def _gives_sequence(rule: Rule) -> bool:
    """Whether the operation returns a list of arrays (``np.split``): its cotangent is
    joined back (``nxrt.join_like``)."""
    return any(
        isinstance(n, gast.Attribute) and n.attr == "join_like"
        for template in rule.vjp.values()
        for n in gast.walk(template)
    )


_UFUNC_OF_OPERATOR = {
    gast.Add: "add",
    gast.Sub: "subtract",
    gast.Mult: "multiply",
    gast.Div: "divide",
    gast.Pow: "power",
    gast.USub: "negative",
    gast.UAdd: "positive",
    gast.Gt: "greater",
    gast.GtE: "greater_equal",
    gast.Lt: "less",
    gast.LtE: "less_equal",
    gast.Eq: "equal",
    gast.NotEq: "not_equal",
}
"""The NumPy function of each operator that derivative templates use."""


def on_sequences_as_arrays(expression: gast.expr, sequences: set[str]) -> gast.expr:
    """``expression`` computed as NumPy computes on lists and tuples: an operator whose
    operands may be sequences (the variables named in ``sequences``) and include no
    NumPy result is written as its NumPy function; a sequence that would be the whole
    value is converted (``nxrt.array_operand``). A NumPy result beside a sequence takes
    it as an array itself, so ``_d_t * np.cos(t)`` stays as it is."""

    def rewrite(node: gast.expr) -> tuple[gast.expr, str]:
        """The node rewritten, and whether its value may be a sequence ("sequence"),
        is NumPy's ("array") or neither ("other": a constant, a Python scalar)."""
        if isinstance(node, gast.Name):
            return node, "sequence" if node.id in sequences else "other"
        if isinstance(node, gast.Call):
            node.args = [rewrite(a)[0] for a in node.args]
            node.keywords = [gast.keyword(k.arg, rewrite(k.value)[0]) for k in node.keywords]
            return node, "array"
        if isinstance(node, gast.Compare) and len(node.ops) == 1:
            operands, op = [node.left, node.comparators[0]], node.ops[0]
        elif isinstance(node, gast.BinOp):
            operands, op = [node.left, node.right], node.op
        elif isinstance(node, gast.UnaryOp):
            operands, op = [node.operand], node.op
        else:
            return node, "other"
        rewritten = [rewrite(o) for o in operands]
        kinds = {kind for _, kind in rewritten}
        function = _UFUNC_OF_OPERATOR.get(type(op))
        if "sequence" in kinds and "array" not in kinds and function is not None:
            ufunc = gast.Attribute(load("np"), function, gast.Load())
            return gast.Call(ufunc, [o for o, _ in rewritten], []), "array"
        parts = [o for o, _ in rewritten]
        if isinstance(node, gast.Compare):
            node.left, node.comparators = parts[0], [parts[1]]
        elif isinstance(node, gast.BinOp):
            node.left, node.right = parts
        else:
            node.operand = parts[0]
        return node, "array" if "array" in kinds else "other"

    rewritten, kind = rewrite(expression)
    if kind == "sequence":
        return runtime_call("array_operand", rewritten)
    return rewritten
