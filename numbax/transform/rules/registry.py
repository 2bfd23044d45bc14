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

Most templates follow a few patterns, which ``define`` writes from one expression:

* ``derivative=D``: an elementwise operation given by its local derivative ``D``: the
  JVP is ``dx * D``, the VJP ``g * D`` (no conjugate: JAX's convention for complex
  numbers, where the VJP is the JVP's transpose; ``np.abs``, whose VJP is not, writes
  both). It is batched elementwise.
* ``linear=E``: an operation linear in its first parameter, ``E`` the operation in its
  parameters (``"np.flip(m, axis)"``): the JVP is ``E`` applied to the tangent.
* ``vjp=SELF_ADJOINT``: the JVP, as a linear map of the tangent, is its own transpose
  (a product with the local derivative, ``np.flip``, ``np.triu``): the VJP is the JVP
  with each tangent replaced by ``g``.

The declaration also carries the operation's batching rule (``batch=``, the kinds of
``batch_kinds.py``; elementwise for elementwise rules) and where to check its
derivatives (``samples=``, ``domain=``), so that the tests walk this table instead of
lists of their own (``tests/autodiff/test_rule_table.py``):

* ``samples``: calls to check, each the text of a call's arguments in which an input
  is written ``name[shape]`` (``"a[3, 4], axis=1"``, ``"x[]"`` for a scalar): it
  becomes an argument of the function checked, an array of that shape; the other
  arguments are constants. Elementwise rules without samples are checked on inputs
  of shape (3, 2), and (2,) for their other parameters (broadcast against the first).
* ``domain``: where inputs are drawn, ``(low, high)`` (default ``(-2, 2)``, values apart
  and away from 0), one per parameter (a dict), or a kind of matrix: ``"invertible"``,
  ``"spd"`` (symmetric positive definite), ``"bool"`` (a condition, not differentiated).
* :func:`checked_elsewhere`: for the few rules a generic call cannot exercise (a named
  batch axis, a tuple or complex result, a custom_vjp rule), the test that checks them.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import math
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import gast
import numpy as np

from numbax.transform.nodes import clone
from numbax.transform.rules.batch_kinds import elementwise as batch_elementwise

ANS = "ans"
"""Template name of the operation's output."""

COTANGENT = "g"
"""Template name of the output's cotangent in VJP templates."""


class _SelfAdjoint:
    def __repr__(self) -> str:
        return "SELF_ADJOINT"


SELF_ADJOINT: Any = _SelfAdjoint()
"""``vjp=SELF_ADJOINT``: the VJP is the JVP with each tangent replaced by ``g``."""


class _Otherwise:
    def __repr__(self) -> str:
        return "OTHERWISE"


OTHERWISE: Any = _Otherwise()
"""A ``by_constant`` choice for every value not listed, constant or not."""


@dataclass(frozen=True)
class CheckedElsewhere:
    """Derivatives checked by a test of their own (``where``), not from samples."""

    where: str


def checked_elsewhere(where: str) -> CheckedElsewhere:
    """``samples=checked_elsewhere("tests/test_vmap_collectives.py")``."""
    return CheckedElsewhere(where)


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
    # vmap's vectorized method (batch_kinds.py), and where the tests check derivatives
    batch: Any = field(default=None, compare=False, repr=False)
    samples: tuple[str, ...] | CheckedElsewhere | None = field(default=None, compare=False)
    domain: Any = field(default=None, compare=False)
    # parameter → {constant value: the rule of the call with that value (None: this one)}
    by_constant: Mapping[str, Mapping[Any, Any]] = field(default_factory=dict, compare=False)

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


_vjp_helpers: dict[tuple[int, str], tuple[Rule, frozenset[str]]] = {}
""":func:`vjp_helpers`' answers by rule (its id: rules live as long as the registry, and
the entry keeps its rule) and parameter."""


def vjp_helpers(rule: Rule, param: str) -> frozenset[str]:
    """The attributes (``nxrt.<name>``, ``np.<name>``) the rule's VJP for ``param`` reads:
    what its cotangent is made with. Found once per rule and parameter, as the
    transformations ask it of every operation they meet (and a template is parsed when
    first read)."""
    known = _vjp_helpers.get((id(rule), param))
    if known is None:
        template = rule.vjp.get(param)
        names = (
            frozenset(n.attr for n in gast.walk(template) if isinstance(n, gast.Attribute))
            if template is not None
            else frozenset()
        )
        known = _vjp_helpers[id(rule), param] = (rule, names)
    return known[1]


def instantiate(template: gast.expr, names: Mapping[str, gast.expr]) -> gast.expr:
    """A copy of ``template`` with each name in ``names`` replaced by its node."""

    class _Substitute(gast.NodeTransformer):
        def visit_Name(self, node: gast.Name) -> gast.expr:
            if isinstance(node.ctx, gast.Load) and node.id in names:
                return clone(names[node.id])
            return node

    return _Substitute().visit(clone(template))


# -- the tables ----------------------------------------------------------------------

_BY_ID: dict[int, Rule] = {}
_KEEP_ALIVE: list[Any] = []  # ids stay valid while the objects live
_METHODS: dict[str, Rule] = {}
_ATTRIBUTES: dict[str, Rule] = {}


@functools.cache  # signatures are immutable, and many rules share one ("x", "*args, **kwargs")
def _parse_signature(text: str) -> inspect.Signature:
    namespace: dict[str, Any] = {}
    exec(f"def _rule({text}): pass", {"inf": float("inf")}, namespace)  # noqa: S102
    return inspect.signature(namespace["_rule"])


def _parse_template(text: str) -> gast.expr:
    return gast.ast_to_gast(ast.parse(text, mode="eval")).body


class _ParsedOnUse(Mapping[str, gast.expr]):
    """Each parameter's template, parsed the first time it is asked for.

    Parsing every rule's templates into gast trees would cost every program that
    imports the transformations a good part of a second, and a program uses a few dozen
    rules of several hundred: so a template stays a recipe (its text, or how it is
    written from another template) until a transformation reads it. The parameters are
    known at once, so which parameters a rule differentiates is too."""

    def __init__(self, recipes: Mapping[str, Callable[[], gast.expr]]) -> None:
        self._recipes = dict(recipes)
        self._parsed: dict[str, gast.expr] = {}

    def __getitem__(self, param: str) -> gast.expr:
        template = self._parsed.get(param)
        if template is None:
            template = self._parsed[param] = self._recipes[param]()
        return template

    def __iter__(self) -> Iterator[str]:
        return iter(self._recipes)

    def __len__(self) -> int:
        return len(self._recipes)

    def __contains__(self, param: object) -> bool:
        return param in self._recipes

    def __repr__(self) -> str:
        return repr(dict(self))


Templates = str | Mapping[str, str] | None


def _per_parameter(spec: Templates, first: str) -> dict[str, str]:
    if spec is None:
        return {}
    return {first: spec} if isinstance(spec, str) else dict(spec)


def _templates(spec: Templates, first: str, prepare: Callable[[str], str]) -> _ParsedOnUse:
    return _ParsedOnUse(
        {
            param: functools.partial(_parse_prepared, text, prepare)
            for param, text in _per_parameter(spec, first).items()
        }
    )


def _parse_prepared(text: str, prepare: Callable[[str], str]) -> gast.expr:
    return _parse_template(prepare(text))


def _unchanged(text: str) -> str:
    return text


_LOOSER_THAN_PRODUCT = (ast.BoolOp, ast.Compare, ast.IfExp, ast.Lambda, ast.NamedExpr)


def _factor(text: str) -> str:
    """``text`` as the right operand of ``*``: parenthesized where it binds looser
    (``ans + 1``); a chain of products stays flat, as written (``ans * c``)."""
    node = ast.parse(text, mode="eval").body
    looser = isinstance(node, _LOOSER_THAN_PRODUCT) or (
        isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Mult, ast.Div, ast.Pow))
    )
    return f"({text})" if looser else text


def _from_derivative(spec: Templates, first: str) -> tuple[dict[str, str], dict[str, str]]:
    """JVP ``d<param> * D`` and VJP ``g * D`` of each parameter's local derivative D."""
    derivatives = _per_parameter(spec, first)
    for param, text in derivatives.items():
        names = {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
        if names & {tangent_name(param), COTANGENT}:
            raise ValueError(f"derivative of {param}: {text!r} is the factor, without the tangent")
    jvp = {p: f"{tangent_name(p)} * {_factor(d)}" for p, d in derivatives.items()}
    vjp = {p: f"{COTANGENT} * {_factor(d)}" for p, d in derivatives.items()}
    return jvp, vjp


def _substituted(templates: Mapping[str, gast.expr]) -> _ParsedOnUse:
    """Each parameter's template with its tangent replaced by the cotangent."""
    return _ParsedOnUse({p: functools.partial(_transposed, templates, p) for p in templates})


def _transposed(templates: Mapping[str, gast.expr], param: str) -> gast.expr:
    cotangent = gast.Name(COTANGENT, gast.Load(), None, None)
    return instantiate(templates[param], {tangent_name(param): cotangent})


def _linear_templates(linear: str, first: str, prepare: Callable[[str], str]) -> _ParsedOnUse:
    """The JVP of an operation linear in ``first``: ``linear`` applied to its tangent."""
    return _ParsedOnUse({first: functools.partial(_applied_to_tangent, linear, first, prepare)})


def _applied_to_tangent(linear: str, first: str, prepare: Callable[[str], str]) -> gast.expr:
    params = {first: gast.Name(tangent_name(first), gast.Load(), None, None)}
    return instantiate(_parse_prepared(linear, prepare), params)


def define(
    targets: Any | Iterable[Any],
    signature: str,
    *,
    jvp: Templates = None,
    vjp: Templates | _SelfAdjoint = None,
    derivative: Templates = None,
    linear: str | None = None,
    elementwise: bool = False,
    combine: str | None = None,
    batch: Any = None,
    samples: Iterable[str] | CheckedElsewhere | None = None,
    domain: Any = None,
    methods: Iterable[str] = (),
    attributes: Iterable[str] = (),
    name: str | None = None,
    by_constant: Mapping[str, Mapping[Any, Rule | None]] | None = None,
    prepare: Callable[[str], str] = _unchanged,
) -> Rule:
    """Register one rule for ``targets`` (one object or several aliases, e.g. ``np.abs``
    and ``abs``), and for array methods/attributes of the same meaning, whose object
    binds to the first parameter. A ``str`` template belongs to the first parameter.
    ``derivative``, ``linear`` and ``vjp=SELF_ADJOINT`` write templates from one
    expression; ``batch``, ``samples`` and ``domain``: see the module docstring.

    ``by_constant``: for operations whose derivative depends on an argument that changes
    what they compute (``np.linalg.svd(a, compute_uv=False)`` returns only the singular
    values), each value the argument may take, written as a constant, and the rule of
    the call with it (None: this rule). Any other value, or a variable, is refused when
    the call carries a derivative (:func:`variant`).

    ``prepare``: how the text of each template given as ``jvp``, ``vjp`` or ``linear`` is
    rewritten before it is parsed (``linalg.stack_products``); templates are parsed when a
    transformation first reads them (:class:`_ParsedOnUse`).
    """
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    sig = _parse_signature(signature)
    first = next(iter(sig.parameters))
    if derivative is not None:
        if jvp is not None or vjp is not None or linear is not None:
            raise ValueError("a derivative= gives both templates: no jvp=, vjp= or linear=")
        jvp, vjp = _from_derivative(derivative, first)
        prepare = _unchanged  # templates written here, not given
        batch = batch_elementwise if batch is None else batch
    if linear is not None:
        if jvp is not None:
            raise ValueError("linear= is the JVP: no jvp= besides")
        jvp_templates = _linear_templates(linear, first, prepare)
    else:
        jvp_templates = _templates(jvp, first, prepare)
    if elementwise and batch is None:
        batch = batch_elementwise
    rule = Rule(
        name=name or qualified_name(targets[0]) if targets else (name or signature),
        signature=sig,
        jvp=jvp_templates,
        vjp=_substituted(jvp_templates) if vjp is SELF_ADJOINT else _templates(vjp, first, prepare),
        elementwise=elementwise,
        combine=combine,
        batch=batch,
        samples=samples
        if samples is None or isinstance(samples, CheckedElsewhere)
        else tuple(samples),
        domain=domain,
        by_constant=dict(by_constant or {}),
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


def alias(targets: Any | Iterable[Any], like: Any, **changes: Any) -> Rule:
    """Register for ``targets`` the rule of ``like`` (``math.exp``: ``np.exp``'s), named
    after the first target; ``changes``: fields that differ (``batch``, ``samples``)."""
    targets = list(targets) if isinstance(targets, (list, tuple)) else [targets]
    original = rule_for(like)
    if original is None:
        raise ValueError(f"{qualified_name(like)} has no rule to alias")
    rule = dataclasses.replace(original, name=qualified_name(targets[0]), **changes)
    for target in targets:
        _BY_ID[id(target)] = rule
        _KEEP_ALIVE.append(target)
    return rule


def nondifferentiable(
    targets: Iterable[Any], methods: Iterable[str] = (), attributes=(), batch: Any = None
) -> None:
    """Declare functions whose results carry no derivative (shapes, comparisons,
    rounding, constructors): any arguments, no terms; ``batch``: their batching rule."""
    for target in targets:
        define(target, "*args, **kwargs", batch=batch)
    for method in methods:
        _METHODS[method] = define([], "*args, **kwargs", name=f".{method}()", batch=batch)
    for attribute in attributes:
        _ATTRIBUTES[attribute] = define([], "x", name=f".{attribute}", batch=batch)


def variant(rule: Rule, bound: Mapping[str, gast.expr]) -> Rule | str:
    """The rule of a call whose arguments are ``bound``, following the rule's
    ``by_constant``; or, for an argument it does not cover, the form refused
    (``"compute_uv=x"``) for the error message."""
    for param, choices in rule.by_constant.items():
        node = bound.get(param)
        if (  # -1
            isinstance(node, gast.UnaryOp)
            and isinstance(node.op, gast.USub)
            and isinstance(node.operand, gast.Constant)
            and isinstance(node.operand.value, int | float)
        ):
            node = gast.Constant(-node.operand.value, None)
        listed = isinstance(node, gast.Constant) and any(
            node.value == value and type(node.value) is type(value) for value in choices
        )
        if not listed and OTHERWISE in choices:
            chosen = choices[OTHERWISE]
        elif not isinstance(node, gast.Constant):
            return f"{param} not a constant"
        elif not listed:
            return f"{param}={node.value!r}"
        else:
            chosen = next(r for v, r in choices.items() if node.value == v)
        if chosen is not None:
            return chosen
    return rule


def batching_rule(rule: Rule) -> Any:
    """The batching rule of an operation's rule, or None (vmap then loops)."""
    return rule.batch


def rule_for(target: Any) -> Rule | None:
    """The rule of the object a call resolves to, if there is one."""
    rule = _BY_ID.get(id(target))
    if rule is None and _load_family_of(target):
        rule = _BY_ID.get(id(target))
    return rule


# -- families loaded when first needed ------------------------------------------------
# The rules of SciPy's functions need SciPy's objects (rules are found by identity), and
# importing scipy.special costs about half a second, which a program that never calls it
# should not pay. So those rules are loaded the first time a lookup misses while the
# user's program has imported scipy.special (or asks for one of the few functions of
# ``math`` whose derivatives are SciPy's).

_FAMILIES_BY_MODULE = {"scipy.special": "numbax.transform.rules.special"}
_FAMILIES_BY_FUNCTION = {
    id(f): "numbax.transform.rules.special" for f in (math.erf, math.erfc, math.lgamma, math.gamma)
}
_LOADED: set[str] = set()


def _load_family_of(target: Any) -> bool:
    """Load the rule families ``target`` may belong to; whether any was loaded."""
    wanted = [f for m, f in _FAMILIES_BY_MODULE.items() if m in sys.modules]
    wanted += [_FAMILIES_BY_FUNCTION[id(target)]] if id(target) in _FAMILIES_BY_FUNCTION else []
    loaded = False
    for family in wanted:
        if family not in _LOADED:
            _LOADED.add(family)
            importlib.import_module(family)
            loaded = True
    return loaded


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


def all_methods() -> dict[str, Rule]:
    """Every array method's rule, by the method's name."""
    return dict(_METHODS)


def all_attributes() -> dict[str, Rule]:
    """Every array attribute's rule, by the attribute's name."""
    return dict(_ATTRIBUTES)


def qualified_name(target: Any) -> str:
    """``numpy.linalg.norm``, ``operator.mul``: how messages name a function."""
    namespaces = [("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft)]
    namespaces += [(m, sys.modules[m]) for m in ("scipy.special",) if m in sys.modules]
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
