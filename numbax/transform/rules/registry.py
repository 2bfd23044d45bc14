"""The derivative rule table: for each operation, its JVP and VJP as source templates.

A rule is looked up by the Python object a call resolves to (``numpy.exp`` the object,
``operator.mul`` for ``*``), by an array method's name (``x.sum``) or by an attribute
(``x.T``), never by spelling. Each rule states the operation's parameters as a Python
signature, so a call's positional and keyword arguments bind to names, and then, per
differentiable parameter, two expressions:

* ``jvp``: the tangent that parameter contributes to the output, written with the
  parameter's tangent as ``d<param>`` (``dx``);
* ``vjp``: the cotangent the output's cotangent ``g`` sends back to the parameter.

Both may also use the other parameters, the output ``ans``, ``np`` and ``nxrt`` (the
runtime helpers). The transformations sum the terms of all active parameters; for
``elementwise`` rules they also undo broadcasting (``nxrt.unbroadcast``) so a
cotangent has its parameter's shape and dtype. Rules without terms declare functions
that have no derivative (``np.floor``, comparisons, ``x.shape``): their results are
constants to the transformations.
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gast

ANS = "ans"
"""Template name of the operation's output."""

COTANGENT = "g"
"""Template name of the output's cotangent in VJP templates."""


def tangent_name(param: str) -> str:
    """Template name of a parameter's tangent in JVP templates: ``x`` → ``dx``."""
    return f"d{param}"


@dataclass(frozen=True)
class Rule:
    """How one operation differentiates (see the module docstring)."""

    name: str
    signature: inspect.Signature
    jvp: Mapping[str, gast.expr] = field(default_factory=dict)
    vjp: Mapping[str, gast.expr] = field(default_factory=dict)
    elementwise: bool = False
    combine: str | None = None  # how terms add up, if not with + (tuples: nxrt.tree_add)

    @property
    def differentiable(self) -> tuple[str, ...]:
        """Parameters through which derivatives flow, in signature order."""
        return tuple(p for p in self.signature.parameters if p in self.vjp or p in self.jvp)

    def bind(self, args: list[gast.expr], keywords: list[gast.keyword]) -> dict[str, gast.expr]:
        """Each parameter's argument node (defaults as constants) for one call."""
        try:
            bound = self.signature.bind(*args, **{k.arg: k.value for k in keywords})
        except TypeError as err:
            raise TypeError(f"{self.name}: {err}") from None
        bound.apply_defaults()
        nodes = {}
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                nodes[name] = gast.Tuple(list(value), gast.Load())
            elif isinstance(value, gast.AST):
                nodes[name] = value
            else:
                nodes[name] = gast.Constant(value, None)
        return nodes

    def uses(self, mode: str, name: str) -> bool:
        """Whether any template of ``mode`` ("jvp" or "vjp") mentions ``name``."""
        templates = self.jvp if mode == "jvp" else self.vjp
        return any(
            isinstance(n, gast.Name) and n.id == name
            for t in templates.values()
            for n in gast.walk(t)
        )


def instantiate(template: gast.expr, names: Mapping[str, gast.expr]) -> gast.expr:
    """A copy of ``template`` with each name in ``names`` replaced by its node."""

    class _Substitute(gast.NodeTransformer):
        def visit_Name(self, node: gast.Name) -> gast.expr:
            if isinstance(node.ctx, gast.Load) and node.id in names:
                return copy.deepcopy(names[node.id])
            return node

    return _Substitute().visit(copy.deepcopy(template))


# -- the tables ----------------------------------------------------------------------

_BY_ID: dict[int, Rule] = {}
_KEEP_ALIVE: list[Any] = []  # ids stay valid while the objects live
_METHODS: dict[str, Rule] = {}
_ATTRIBUTES: dict[str, Rule] = {}
_BATCHING: dict[int, Any] = {}  # id of a Rule → its batching rule (they live as long)


def _parse_signature(text: str) -> inspect.Signature:
    namespace: dict[str, Any] = {}
    exec(f"def _rule({text}): pass", {"inf": float("inf")}, namespace)  # noqa: S102
    return inspect.signature(namespace["_rule"])


def _parse_template(text: str) -> gast.expr:
    return gast.ast_to_gast(ast.parse(text, mode="eval")).body


def _templates(spec: str | Mapping[str, str] | None, first: str) -> dict[str, gast.expr]:
    if spec is None:
        return {}
    if isinstance(spec, str):
        spec = {first: spec}
    return {param: _parse_template(text) for param, text in spec.items()}


def define(
    targets: Any | Iterable[Any],
    signature: str,
    *,
    jvp: str | Mapping[str, str] | None = None,
    vjp: str | Mapping[str, str] | None = None,
    elementwise: bool = False,
    combine: str | None = None,
    methods: Iterable[str] = (),
    attributes: Iterable[str] = (),
    name: str | None = None,
) -> Rule:
    """Register one rule for ``targets`` (one object or several aliases, e.g. ``np.abs``
    and ``abs``), and for array methods/attributes of the same meaning, whose object
    binds to the first parameter. A ``str`` template belongs to the first parameter.
    """
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    sig = _parse_signature(signature)
    first = next(iter(sig.parameters))
    rule = Rule(
        name=name or qualified_name(targets[0]) if targets else (name or signature),
        signature=sig,
        jvp=_templates(jvp, first),
        vjp=_templates(vjp, first),
        elementwise=elementwise,
        combine=combine,
    )
    unknown = (set(rule.jvp) | set(rule.vjp)) - set(sig.parameters)
    if unknown:
        raise ValueError(f"rule {rule.name}: templates for unknown parameters {unknown}")
    for target in targets:
        _BY_ID[id(target)] = rule
        _KEEP_ALIVE.append(target)
    for method in methods:
        _METHODS[method] = rule
    for attribute in attributes:
        _ATTRIBUTES[attribute] = rule
    return rule


def nondifferentiable(targets: Iterable[Any], methods: Iterable[str] = (), attributes=()) -> None:
    """Declare functions whose results carry no derivative (shapes, comparisons,
    rounding, constructors): any arguments, no terms."""
    for target in targets:
        define(target, "*args, **kwargs")
    for method in methods:
        _METHODS[method] = define([], "*args, **kwargs", name=f".{method}()")
    for attribute in attributes:
        _ATTRIBUTES[attribute] = define([], "x", name=f".{attribute}")


def batching(batch_rule: Any, *targets: Any) -> None:
    """Give each target (an object with a rule, or a :class:`Rule` itself: a method's)
    its batching rule, for vmap's vectorized method (``rules/batch_kinds.py``)."""
    for target in targets:
        rule = target if isinstance(target, Rule) else rule_for(target)
        if rule is None:
            raise ValueError(f"batching rule for {target!r}, which has no rule")
        _BATCHING[id(rule)] = batch_rule


def batching_rule(rule: Rule) -> Any:
    """The batching rule of an operation's rule, or None (vmap then loops)."""
    return _BATCHING.get(id(rule))


def rule_for(target: Any) -> Rule | None:
    """The rule of the object a call resolves to, if there is one."""
    return _BY_ID.get(id(target))


def method_rule(name: str) -> Rule | None:
    """The rule of array method ``name`` (``x.sum(...)``), the array as first argument."""
    return _METHODS.get(name)


def attribute_rule(name: str) -> Rule | None:
    """The rule of array attribute ``name`` (``x.T``)."""
    return _ATTRIBUTES.get(name)


def all_rules() -> list[tuple[Any, Rule]]:
    """Every registered (object, rule) pair, for tests that walk the table."""
    by_id = {id(t): t for t in _KEEP_ALIVE}
    return [(by_id[i], r) for i, r in _BY_ID.items()]


def qualified_name(target: Any) -> str:
    """``numpy.linalg.norm``, ``operator.mul``: how messages name a function."""
    import numpy as np

    namespaces = (("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft))
    name = getattr(target, "__name__", None)
    if not isinstance(name, str):  # an object such as np.r_: found by identity
        for prefix, namespace in namespaces:
            for key, value in vars(namespace).items():
                if value is target and not key.startswith("_"):
                    return f"{prefix}.{key}"
        return repr(target)
    for prefix, namespace in namespaces:
        if getattr(namespace, name, None) is target:
            return f"{prefix}.{name}"
    module = getattr(target, "__module__", None) or ""
    qualname = getattr(target, "__qualname__", None) or name
    if module == "builtins":
        return qualname
    return f"{module}.{qualname}" if module else qualname
