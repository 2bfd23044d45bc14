"""Derivative rules, one module per family of operations; importing this package
registers them all (see registry.py for what a rule is)."""

from numbax.runtime import helpers as runtime_helpers
from numbax.transform.rules import (  # noqa: F401
    arrays,
    callbacks,
    collectives,
    constants,
    elementwise,
    fft,
    jacobians,
    linalg,
    linalg_decompositions,
    operators,
    reductions,
    runtime,
    scalar_math,
    selection,
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
    vjp_helpers,
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
    "missing_rules",
    "qualified_name",
    "rule_for",
    "tangent_name",
    "vjp_helpers",
]

# -- closure: every runtime helper has its rules ---------------------------------------
# A transformation's output is read again by every transformation (DESIGN.md, closure),
# so each helper registered in numbax.runtime has a JVP and a VJP rule (or is declared
# non-differentiable) and a batching rule. The runtime cannot see the rules (it is the
# layer below), so the check is here, where both are visible, and runs at import: a
# helper added without its rules stops numbax from importing, naming the helper.

WITHOUT_DERIVATIVE_RULES = frozenset(
    # vmap's loop over examples: transformations compose with the vmapped function as a
    # whole, never reading its loop (nor the buffers its vectorized code repeats over
    # the batch); fused kernels and filled fields: written after every transformation.
    ["batch_size", "batch_take", "batch_empty", "batch_put", "batch_repeat", "first"]
    + ["cotangent_as", "seed_of_sum", "seed_of_total", "seed_of_mean", "expand_reduced"]
    + ["gradient_stand_in", "loop_stand_in", "reduction_stand_in", "shape_stand_in"]
    + ["field_filled", "all_gathered", "psum_scattered", "ppermuted"]
)
"""Helpers no transformation is ever applied to, so they need no rules."""

LOOPED_BY_VMAP = frozenset(
    ["index_add", "tree_add", "ravel", "custom_cotangents", "reshape_like"]
    + ["cumprod_jvp", "cumprod_vjp", "cumsum_reverse", "einsum_general", "matrix_transpose"]
    + ["norm_exponent", "norm_weights", "prod_others", "prod_others_jvp", "prod_others_jvp2"]
    + ["prod_others_jvp3", "tensordot_vjp_a"]
    + ["tensordot_vjp_b", "trace_vjp", "tril_fold", "tril_half_diag", "tril_symmetric"]
    + [
        "cast",
        "uncast",
        "inverse_axes",
        "is_array",
        "as_kind_of",
        "transpose_axes",
        "join_like",
        "linspace_weights",
    ]
    + ["undiag", "unrepeat", "unrolled", "unstack_like", "untile"]
    + ["jac_basis_all", "ravel_batch", "unravel_batch"]
    + ["jac_flatten", "jac_size", "unravel_pytree", "batch_sum"]
    + ["batch_broadcast", "psum", "pmean", "pmax", "pmin", "axis_index", "block_upper"]
    + ["all_gather", "psum_scatter", "ppermute", "ppermute_inverse", "axis_size"]
    + ["unarray", "outer_operand", "positions", "ungather", "regather", "running_positions"]
    + ["pad_positions", "fft_axes", "fft_shape"]
    + ["select_default", "spread_like", "unchoose", "unselect", "batch_spec"]
    + ["put_along_axis", "trailing_shape", "jac_diagonal", "add_at", "last_put"]
)
"""Helpers without a batching rule yet: vmap runs the code that calls them one example
at a time (its loop method), which is correct, only slower. Giving one a batching rule
means taking it off this list (the check below insists)."""


def missing_rules(helpers: dict[str, object]) -> list[str]:
    """What each of ``helpers`` (name → function) lacks of its rules, one line each;
    also exemptions above that name no helper or are no longer needed."""
    problems = []
    for name, helper in sorted(helpers.items()):
        rule = rule_for(helper)
        if name in WITHOUT_DERIVATIVE_RULES:
            if rule is not None:
                problems.append(f"nxrt.{name} has a rule: take it off WITHOUT_DERIVATIVE_RULES")
            continue
        if rule is None:
            problems.append(
                f"nxrt.{name} has no derivative rule: define its JVP and VJP in "
                "numbax/transform/rules/ (or declare it nondifferentiable)"
            )
            continue
        if set(rule.jvp) != set(rule.vjp):
            problems.append(
                f"nxrt.{name}: its JVP is given for {sorted(rule.jvp)}, its VJP for "
                f"{sorted(rule.vjp)}: each differentiable parameter needs both"
            )
        batched = batching_rule(rule) is not None
        if not batched and name not in LOOPED_BY_VMAP:
            problems.append(f"nxrt.{name} has no batching rule (rules/batch_kinds.py)")
        if batched and name in LOOPED_BY_VMAP:
            problems.append(f"nxrt.{name} has a batching rule: take it off LOOPED_BY_VMAP")
    for name in sorted((WITHOUT_DERIVATIVE_RULES | LOOPED_BY_VMAP) - set(helpers)):
        problems.append(f"nxrt.{name} is exempted from rules but is no runtime helper")
    return problems


_PROBLEMS = missing_rules(runtime_helpers())
if _PROBLEMS:
    raise ImportError("runtime helpers without their rules:\n  " + "\n  ".join(_PROBLEMS))
