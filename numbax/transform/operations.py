"""What one core-language assignment computes, as the derivative transformations see it.

``normalize`` leaves one operation per assignment; :func:`classify` says which: a copy,
a constant, an operation with a derivative rule (its arguments bound to the rule's
parameters), a tuple built or indexed, a call to another function that is itself
differentiated (a user helper, a jitted or transformed function), or a call numbax has
no rule for.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import gast

from numbax.transform import rules
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver
from numbax.transform.rules.operators import BINARY, UNARY

COPY = "copy"
CONSTANT = "constant"
RULE = "rule"
PACK = "pack"  # (a, b, ...) or [a, b, ...]
SUBSCRIPT = "subscript"  # x[index]
FIELD = "field"  # p.w: a field of a pytree (NamedTuple, registered class)
POP = "pop"  # v = stack.pop(): the tapes of reverse mode, differentiated again
CALL = "call"  # a function differentiated by generating its own derivative
UNKNOWN = "unknown"  # a call without a rule: fine while no argument is active


@dataclass
class Operation:
    kind: str
    rule: rules.Rule | None = None
    bound: dict[str, gast.expr] = field(default_factory=dict)  # rule parameter → atom
    callee: Any = None  # CALL: the function object; UNKNOWN: what it resolved to
    node: gast.expr | None = None

    def differentiable_args(self) -> list[gast.expr]:
        """The argument atoms derivatives flow through (possibly repeated)."""
        if self.kind == COPY:
            return [self.node]
        if self.kind == PACK:
            return list(self.node.values if isinstance(self.node, gast.Dict) else self.node.elts)
        if self.kind == FIELD:
            return [self.node.value]
        if self.kind == SUBSCRIPT:
            return [self.node.value]
        if self.kind == POP:
            return [self.node.func.value]
        if self.kind == RULE:
            return [self.bound[p] for p in self.rule.differentiable if p in self.bound]
        if self.kind in (CALL, UNKNOWN):
            return list(self.node.args) + [k.value for k in self.node.keywords]
        return []

    def differentiable_names(self) -> set[str]:
        return {a.id for a in self.differentiable_args() if isinstance(a, gast.Name)}


_NO_DERIVATIVE_BUILTINS = (len, range, int, bool, isinstance, print, str, type, round)
_NO_DERIVATIVE_BUILTINS += (AssertionError, ValueError, TypeError, hash, id)


def is_transformable_function(target: Any) -> bool:
    """A function numbax differentiates by reading its source: user code, jitted or
    transformed functions (not NumPy, Numba or numbax's runtime)."""
    if hasattr(target, "__numbax_function__") or hasattr(target, "nested_dispatcher"):
        return True
    if not isinstance(target, types.FunctionType):
        return False
    module = getattr(target, "__module__", "") or ""
    if module.startswith("numbax_generated_"):  # derivative code calling its own parts
        return True
    return not module.startswith(("numpy", "numba", "numbax", "math"))


def classify(value: gast.expr, resolver: Resolver) -> Operation:
    """The :class:`Operation` of a core-language assignment's right-hand side."""
    if isinstance(value, gast.Name):
        return Operation(COPY, node=value)
    if isinstance(value, gast.Constant):
        return Operation(CONSTANT, node=value)
    if isinstance(value, gast.BinOp):
        rule = rules.rule_for(BINARY[type(value.op)])
        return Operation(RULE, rule, rule.bind([value.left, value.right], []), node=value)
    if isinstance(value, gast.UnaryOp):
        rule = rules.rule_for(UNARY[type(value.op)])
        return Operation(RULE, rule, rule.bind([value.operand], []), node=value)
    if isinstance(value, (gast.Compare, gast.Set)):
        return Operation(CONSTANT, node=value)
    if isinstance(value, (gast.Tuple, gast.List, gast.Dict)):
        return Operation(PACK, node=value)
    if isinstance(value, gast.Subscript):
        return Operation(SUBSCRIPT, node=value)
    if isinstance(value, gast.Attribute):
        if resolver.resolve(value) is LOCAL:  # x.T, x.shape
            rule = rules.attribute_rule(value.attr)
            if rule is None:  # a field of a NamedTuple or a registered class
                return Operation(FIELD, node=value)
            return Operation(RULE, rule, rule.bind([value.value], []), node=value)
        return Operation(CONSTANT, node=value)  # np.pi, np.newaxis, a global's attribute
    if isinstance(value, gast.Call):
        return _classify_call(value, resolver)
    return Operation(UNKNOWN, callee=type(value).__name__, node=value)


def _classify_call(call: gast.Call, resolver: Resolver) -> Operation:
    target = resolver.resolve(call.func)
    if target is LOCAL and isinstance(call.func, gast.Attribute):  # x.sum(axis=0)
        if call.func.attr == "pop" and not call.args and isinstance(call.func.value, gast.Name):
            return Operation(POP, node=call)
        rule = rules.method_rule(call.func.attr)
        if rule is None:
            return Operation(UNKNOWN, callee=f".{call.func.attr}()", node=call)
        return Operation(
            RULE, rule, rule.bind([call.func.value, *call.args], call.keywords), node=call
        )
    rule = rules.rule_for(target)
    if rule is not None:
        try:
            bound = rule.bind(call.args, call.keywords)
        except TypeError:  # a form the rule does not cover, e.g. max(a, b, c)
            return Operation(UNKNOWN, callee=target, node=call)
        return Operation(RULE, rule, bound, node=call)
    if target is UNRESOLVED or target is LOCAL:
        return Operation(UNKNOWN, callee=target, node=call)
    if any(target is b for b in _NO_DERIVATIVE_BUILTINS):
        return Operation(CONSTANT, node=call)
    if is_transformable_function(target):
        return Operation(CALL, callee=target, node=call)
    return Operation(UNKNOWN, callee=target, node=call)


def appended(stmt: gast.stmt) -> tuple[str, gast.expr] | None:
    """``(stack, value)`` for a statement ``stack.append(value)``, else None."""
    if not isinstance(stmt, gast.Expr) or not isinstance(stmt.value, gast.Call):
        return None
    call = stmt.value
    func = call.func
    if (
        isinstance(func, gast.Attribute)
        and func.attr == "append"
        and isinstance(func.value, gast.Name)
        and len(call.args) == 1
    ):
        return func.value.id, call.args[0]
    return None
