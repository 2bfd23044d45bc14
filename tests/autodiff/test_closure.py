"""The closure invariant, checked on the rule table itself: everything a derivative
emits — each NumPy function and each ``nxrt`` helper its templates call, and each
helper the transformations write — has a rule of its own, so derivatives of
derivatives never meet an operation without one."""

import ast

import gast
import numpy as np
import pytest

from numbax.runtime import nxrt
from numbax.transform import rules
from numbax.transform.rules import special  # noqa: F401 (registered on SciPy's import)
from numbax.transform.rules.registry import _ATTRIBUTES, _METHODS

EMITTED_BY_TRANSFORMATIONS = [
    "zeros_like",
    "ones_like",
    "grad_seed",
    "unbroadcast",
    "broadcast_like",
    "index_add",
    "tree_add",
    "owned",
    "last_written",
    "add_at",
    "ravel",
    "jac_size",
    "jac_basis",
    "jac_buffer",
    "ravel_pytree",
    "jac_unflatten",
    "unravel_pytree",
]


def _called_in(template) -> list[tuple[str, str]]:
    """(namespace, name) of each call in a template: ("np", "sum"), ("nxrt", "owned")."""
    found = []
    tree = gast.gast_to_ast(template) if isinstance(template, gast.AST) else template
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            chain = []
            while isinstance(func, ast.Attribute):
                chain.append(func.attr)
                func = func.value
            if isinstance(func, ast.Name):
                chain.append(func.id)
                found.append((chain[-1], ".".join(reversed(chain[:-1]))))
    return found


def _resolve(namespace: str, path: str):
    base = {"np": np, "nxrt": nxrt}.get(namespace)
    if base is None:
        return None
    for part in path.split("."):
        base = getattr(base, part, None)
    return base


def _templates():
    seen = set()
    for _target, rule in rules.all_rules():
        if id(rule) in seen:
            continue
        seen.add(id(rule))
        for mode, table in (("jvp", rule.jvp), ("vjp", rule.vjp)):
            for param, template in table.items():
                yield f"{rule.name}:{mode}:{param}", template


TEMPLATES = list(_templates())


FIRST_ORDER_ONLY = {
    # eigvals' derivative needs the eigenvectors (np.linalg.eig), whose derivative for a
    # general matrix numbax does not define (nor does JAX): a second derivative of
    # eigvals is a TransformError naming np.linalg.eig
    ("numpy.linalg.eigvals", "linalg.eig"),
}


@pytest.mark.parametrize(("where", "template"), TEMPLATES, ids=[w for w, _ in TEMPLATES])
def test_every_call_in_a_template_has_a_rule(where, template):
    for namespace, path in _called_in(template):
        if namespace not in ("np", "nxrt"):
            continue
        if (where.split(":")[0], path) in FIRST_ORDER_ONLY:
            continue
        target = _resolve(namespace, path)
        assert target is not None, f"{where} calls {namespace}.{path}, which does not exist"
        assert rules.rule_for(target) is not None, (
            f"{where} calls {namespace}.{path}, which has no rule: its output could not be "
            "differentiated again"
        )


@pytest.mark.parametrize("name", EMITTED_BY_TRANSFORMATIONS)
def test_every_emitted_helper_has_a_rule(name):
    assert rules.rule_for(getattr(nxrt, name)) is not None, f"nxrt.{name} has no rule"


def test_table_is_substantial():
    """The issue's list of operations, spot-checked: each has a rule."""
    for func in (np.exp, np.log1p, np.arctan2, np.sum, np.max, np.cumsum, np.dot, np.einsum):
        assert rules.rule_for(func) is not None, func
    for func in (np.linalg.inv, np.linalg.det, np.reshape, np.concatenate, np.where, np.clip):
        assert rules.rule_for(func) is not None, func
    for method in ("sum", "mean", "dot", "reshape"):
        assert method in _METHODS, method
    assert "T" in _ATTRIBUTES
