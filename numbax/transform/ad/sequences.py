"""Lists and tuples that a NumPy function takes as arrays, in derivative templates.

``np.add(t, u)`` of two tuples adds them as arrays, where ``t + u`` joins them; the rule
templates are written with Python's operators for arrays (``dx + dy``, ``2 * x``). So
where an elementwise NumPy function's operand may hold a list or tuple, each operator of
its derivative that meets such a value and nothing NumPy made takes it as its array
(``nxrt.array_operand(_d_t) + nxrt.array_operand(_d_u)``): the derivative computes what
NumPy computes, and a Python scalar in its place stays a weakly typed Python scalar.
Transformations need no types: which variables may hold a sequence is read from how
they are assigned.
"""

from __future__ import annotations

import gast
import numpy as np

from numbax.transform.ad.common import runtime_call
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
from numbax.transform.rules import Rule, vjp_helpers
from numbax.transform.walk import walk


def _takes_sequences_as_arrays(op: Operation) -> bool:
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
    if not _takes_sequences_as_arrays(op):
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
    return any("join_like" in vjp_helpers(rule, param) for param in rule.vjp)


def on_sequences_as_arrays(
    expression: gast.expr, sequences: set[str], made_by_numpy: frozenset[str] = frozenset()
) -> gast.expr:
    """``expression`` computed as NumPy computes on lists and tuples: where an operator
    meets a variable that may be a sequence (named in ``sequences``) and nothing NumPy
    made, that variable is taken as its array (``nxrt.array_operand(_d_t) + ...``), as is
    a sequence that would be the whole value. A NumPy result beside it (a call, or a
    name in ``made_by_numpy``: the operation's own result) takes it as an array itself,
    so ``_d_t * np.cos(t)`` stays as it is. The operator stays Python's: a Python scalar
    stays a weakly typed Python scalar, which a NumPy function would make float64."""

    def rewrite(node: gast.expr) -> tuple[gast.expr, str]:
        """The node rewritten, and whether its value may be a sequence ("sequence"),
        is NumPy's ("array") or neither ("other": a constant, a Python scalar)."""
        if isinstance(node, gast.Name):
            if node.id in sequences:
                return node, "sequence"
            return node, "array" if node.id in made_by_numpy else "other"
        if isinstance(node, gast.Call):
            node.args = [rewrite(a)[0] for a in node.args]
            node.keywords = [gast.keyword(k.arg, rewrite(k.value)[0]) for k in node.keywords]
            return node, "array"
        if isinstance(node, gast.Compare) and len(node.comparators) == 1:
            fields = ["left", "comparators"]
            operands = [node.left, node.comparators[0]]
        elif isinstance(node, gast.BinOp):
            fields, operands = ["left", "right"], [node.left, node.right]
        elif isinstance(node, gast.UnaryOp):
            fields, operands = ["operand"], [node.operand]
        else:
            return node, "other"
        rewritten = [rewrite(o) for o in operands]
        kinds = {kind for _, kind in rewritten}
        if "array" in kinds:
            parts = [o for o, _ in rewritten]
        else:  # a sequence meets Python scalars or other sequences: take it as an array
            parts = [array_operand(o) if k == "sequence" else o for o, k in rewritten]
        for name, part in zip(fields, parts, strict=True):
            setattr(node, name, [part] if name == "comparators" else part)
        return node, "array" if "array" in kinds else "other"

    rewritten, kind = rewrite(expression)
    return array_operand(rewritten) if kind == "sequence" else rewritten


def array_operand(node: gast.expr) -> gast.Call:
    """``nxrt.array_operand(node)``: a list or tuple as its array, anything else as is."""
    return runtime_call("array_operand", node)
