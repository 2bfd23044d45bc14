"""Derivative rules, one module per family of operations; importing this package
registers them all (see registry.py for what a rule is)."""

from numbax.transform.rules import (  # noqa: F401
    collectives,
    constants,
    elementwise,
    jacobians,
    linalg,
    operators,
    reductions,
    runtime,
    shapes,
)
from numbax.transform.rules.registry import (
    ANS,
    COTANGENT,
    SELF_ADJOINT,
    Rule,
    all_attributes,
    all_methods,
    all_rules,
    attribute_rule,
    batching_rule,
    instantiate,
    method_rule,
    qualified_name,
    rule_for,
    tangent_name,
)

__all__ = [
    "ANS",
    "COTANGENT",
    "SELF_ADJOINT",
    "Rule",
    "all_attributes",
    "all_methods",
    "all_rules",
    "attribute_rule",
    "batching_rule",
    "instantiate",
    "method_rule",
    "qualified_name",
    "rule_for",
    "tangent_name",
]
