"""What one core-language assignment computes, as the derivative transformations see it.

``normalize`` leaves one operation per assignment; :func:`classify` says which: a copy,
a constant, an operation with a derivative rule (its arguments bound to the rule's
parameters), a tuple built or indexed, a call to another function that is itself
differentiated (a user helper, a jitted or transformed function), or an operation numbax
has no rule for.

Only what is proven derivative-free is a constant: literals, comparisons, globals and
their attributes, functions declared without derivative. Everything else that numbax
does not understand (a call, a method, an array attribute or an object indexed like
``np.r_[x, x]``) is :data:`UNKNOWN`, with every value it reads among its arguments, so
that the derivative transformations refuse it when one of them carries a derivative,
instead of taking its result for a constant.
"""

from __future__ import annotations

import copy
import types
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from numbax.runtime.callbacks import debug_callback, debug_print, io_callback
from numbax.transform import compositions, rules
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver
from numbax.transform.rules.operators import BINARY, UNARY
from numbax.transform.walk import walk

COPY = "copy"
CONSTANT = "constant"
RULE = "rule"
PACK = "pack"  # (a, b, ...) or [a, b, ...]
SUBSCRIPT = "subscript"  # x[index]
FIELD = "field"  # p.w: a field of a pytree (NamedTuple, registered class)
POP = "pop"  # v = stack.pop(): the tapes of reverse mode, differentiated again
CALL = "call"  # a function differentiated by generating its own derivative
UNKNOWN = "unknown"  # no rule: fine while nothing it reads is active

ARRAY_ONLY_ATTRIBUTES = frozenset({"base", "flat", "mT"})
"""Array attributes without a rule that no pytree field is expected to be called; any
other attribute of a local without a rule is read as a field of a pytree (``p.w``)."""


@dataclass
class Operation:
    kind: str
    rule: rules.Rule | None = None
    bound: dict[str, gast.expr] = field(default_factory=dict)  # rule parameter → atom
    callee: Any = None  # CALL, RULE of a call: the function object; UNKNOWN: what it resolved to
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
        if self.kind == CALL:
            return list(self.node.args) + [k.value for k in self.node.keywords]
        if self.kind == UNKNOWN:
            return _read(self.node)
        return []

    def differentiable_names(self) -> set[str]:
        return {a.id for a in self.differentiable_args() if isinstance(a, gast.Name)}


_NO_DERIVATIVE_BUILTINS = (len, range, int, bool, isinstance, print, str, type, round)
_NO_DERIVATIVE_BUILTINS += (AssertionError, ValueError, TypeError, hash, id)


def _read(node: gast.expr) -> list[gast.expr]:
    """Every value an operation without a rule reads: a call's arguments and, for a
    method, its object (``y.copy()`` reads ``y``); an index and the indexed object."""
    if isinstance(node, gast.Call):
        read = list(node.args) + [k.value for k in node.keywords]
        if isinstance(node.func, gast.Attribute):
            read.append(node.func.value)
        return read
    return [n for n in walk(node) if isinstance(n, gast.Name)]


def held_globals(fn: gast.FunctionDef, resolver: Resolver) -> dict[str, Any]:
    """The locals of ``fn`` that hold one global object wherever they are read: assigned
    once, from a global or an attribute of one (``normalize`` names ``np.r_`` before it
    is indexed: ``_np_r_ = np.r_``)."""
    params = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    stores: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            stores[node.id] = stores.get(node.id, 0) + 1
    held = {}
    for stmt in walk(fn):
        if not isinstance(stmt, gast.Assign) or not isinstance(stmt.targets[0], gast.Name):
            continue
        name = stmt.targets[0].id
        if name in params or stores.get(name) != 1:
            continue
        if isinstance(stmt.value, (gast.Name, gast.Attribute)):
            target = resolver.resolve(stmt.value)
            if target is not LOCAL and target is not UNRESOLVED:
                held[name] = target
    return held


def _global(node: gast.expr, resolver: Resolver) -> Any:
    """What a name or attribute chain denotes, a local holding a global included."""
    target = resolver.resolve(node)
    if target is LOCAL and isinstance(node, gast.Name):
        return resolver.held.get(node.id, LOCAL)
    return target


# Global objects whose items are data: indexing one by any value gives a constant (an
# index is an integer, a boolean or a slice, which carry no derivative).
_DATA = (np.ndarray, np.generic, list, tuple, dict, str, bytes, int, float, complex)


READ_AS_USER_CODE = frozenset({"numbax.nn", "numbax.flatten_util"})
"""numbax's own modules written as plain NumPy for the transformations to read like a
user's helper functions (``nx.nn.relu``), with every module of the compositions
(``transform/compositions/``: what ``np.kron`` or ``scipy.stats.norm.logpdf`` is read
as): a call is differentiated, batched and compiled with its caller, so they need no
rules of their own."""


def is_transformable_function(target: Any) -> bool:
    """A function numbax differentiates by reading its source: user code, jitted or
    transformed functions, numbax's :data:`READ_AS_USER_CODE` (not NumPy, SciPy, Numba
    or numbax's runtime)."""
    if hasattr(target, "__numbax_function__") or hasattr(target, "nested_dispatcher"):
        return True
    if not isinstance(target, types.FunctionType):
        return False
    module = getattr(target, "__module__", "") or ""
    if module.startswith("numbax_generated_"):  # derivative code calling its own parts
        return True
    if module in READ_AS_USER_CODE or compositions.is_composition_module(module):
        return True
    return not module.startswith(("numpy", "numba", "numbax", "math", "scipy"))


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
    if isinstance(value, gast.Compare):
        return Operation(CONSTANT, node=value)
    if isinstance(value, (gast.Tuple, gast.List, gast.Dict)):
        return Operation(PACK, node=value)
    if isinstance(value, gast.Subscript):
        base = _global(value.value, resolver)
        if base is LOCAL or base is UNRESOLVED or isinstance(base, _DATA):
            return Operation(SUBSCRIPT, node=value)
        # np.r_[x, y], np.mgrid[0:n]: an object that computes from its index
        return Operation(UNKNOWN, callee=f"{rules.qualified_name(base)}[...]", node=value)
    if isinstance(value, gast.Attribute):
        if resolver.resolve(value) is LOCAL:  # x.T, x.shape
            rule = rules.attribute_rule(value.attr)
            if rule is not None:
                return Operation(RULE, rule, rule.bind([value.value], []), node=value)
            if value.attr in ARRAY_ONLY_ATTRIBUTES:
                return Operation(UNKNOWN, callee=f".{value.attr}", node=value)
            return Operation(FIELD, node=value)  # of a NamedTuple or a registered class
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
        method = f".{call.func.attr}()"
        if rule is None:
            return Operation(UNKNOWN, callee=method, node=call)
        return _ruled(rule, [call.func.value, *call.args], call, method)
    if target is LOCAL and isinstance(call.func, gast.Name):  # f = np.sin; f(x)
        target = resolver.held.get(call.func.id, LOCAL)
    rule = rules.rule_for(target)
    if rule is not None:
        return _ruled(rule, call.args, call, target)
    if target is UNRESOLVED or target is LOCAL:
        return Operation(UNKNOWN, callee=target, node=call)
    if any(target is b for b in _NO_DERIVATIVE_BUILTINS):
        return Operation(CONSTANT, node=call)
    if is_transformable_function(target):
        return Operation(CALL, callee=target, node=call)
    return Operation(UNKNOWN, callee=target, node=call)


def _ruled(rule: rules.Rule, args: list[gast.expr], call: gast.Call, callee: Any) -> Operation:
    """A call to an operation with a rule, unless it is in a form the rule does not
    cover (``max(a, b, c)``) or writes into an array (``np.sum(x, out=y)``)."""
    try:
        bound = rule.bind(args, call.keywords)
    except TypeError:
        return Operation(UNKNOWN, callee=callee, node=call)
    chosen = rules.registry.variant(rule, bound)
    if isinstance(chosen, str):
        return Operation(UNKNOWN, callee=f"{_callee_name(callee)} with {chosen}", node=call)
    if chosen is not rule:
        return _ruled(chosen, args, call, callee)
    out = rule.signature.parameters.get("out")
    written = bound.get("out") if out is not None and out.default is None else None
    if written is not None and not (isinstance(written, gast.Constant) and written.value is None):
        return Operation(UNKNOWN, callee=f"{_callee_name(callee)} with out=", node=call)
    return Operation(RULE, rule, bound, callee=callee, node=call)


def _callee_name(callee: Any) -> str:
    return callee if isinstance(callee, str) else rules.qualified_name(callee)


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


_HOST_EFFECTS = (print, debug_print, debug_callback, io_callback)


def without_host_effects(stmts: list[gast.stmt], resolver: Resolver) -> list[gast.stmt]:
    """``stmts`` (and their blocks) without the calls made only for what they show or
    do outside (``print``, ``nx.debug.print``, a discarded ``io_callback``): for code
    that runs the user's lines a second time (reverse mode recomputing a loop body or a
    helper), which JAX runs once."""
    kept = []
    for stmt in stmts:
        if (
            isinstance(stmt, gast.Expr)
            and isinstance(stmt.value, gast.Call)
            and any(resolver.resolve(stmt.value.func) is e for e in _HOST_EFFECTS)
        ):
            continue
        blocks = {
            name: getattr(stmt, name)
            for name in ("body", "orelse")
            if isinstance(getattr(stmt, name, None), list) and getattr(stmt, name)
        }
        if blocks:  # a copy: the statements may be shared with the primal
            stmt = copy.copy(stmt)
            for name, block in blocks.items():
                setattr(stmt, name, without_host_effects(block, resolver) or [gast.Pass()])
        kept.append(stmt)
    return kept
