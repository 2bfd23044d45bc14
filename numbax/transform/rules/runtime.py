"""Rules for the runtime helpers that derivative code itself calls (``nxrt.*``).

The closure invariant: whatever a transformation emits, every transformation accepts.
So each helper the rules and the transformations emit has its own JVP and VJP here —
mostly linear maps whose adjoint is another helper of the table.
"""

from typing import Any

from numbax.runtime import nxrt
from numbax.transform.rules.batch_kinds import (
    BatchOp,
    Decline,
    lift,
    matrix_product,
    repeated,
    same_shape,
    shifted_axis,
)
from numbax.transform.rules.linalg import EINSUM_PARAMETERS, einsum_templates
from numbax.transform.rules.registry import (
    SELF_ADJOINT,
    checked_elsewhere,
    define,
    nondifferentiable,
)


# -- batching rules (vmap's vectorized method, batch_kinds.py): each helper as the
# operations it stands for, at the examples' ranks
def _seeds(helper: str) -> Any:
    def rule(op: BatchOp) -> tuple[str, int | None]:
        """One per example, for outputs that are scalars per example (their dtype
        checked as for one example)."""
        if op.value("args0").rank != 0:
            raise Decline("grad of an output that is not a scalar per example")
        return f"nxrt.{helper}({op.text('args0')})", 0

    return rule


def _unbroadcast(op: BatchOp) -> tuple[str, int | None]:
    """Of equal ranks, the batch axes match, so the helper sums the examples' broadcast
    axes and no other; a shared ``like`` (a parameter's cotangent, per example) is
    first given the batch axis."""
    rank, value_rank = op.value("like").rank, op.value("value").rank
    if not op.batched:
        return "", rank
    if not op.is_batched("value") or rank is None or value_rank is None:
        raise Decline("a shared cotangent brought back to a batched argument")
    value, like = lift(op.text("value"), op.value("value"), rank), op.text("like")
    for _ in range(value_rank - rank):  # the example's leading axes broadcasting added
        value = f"np.sum({value}, axis=1)"
    if op.is_batched("like"):
        return f"nxrt.unbroadcast({value}, {like})", rank
    return f"nxrt.unbroadcast({value}, {repeated(like)})", rank


def _broadcast_like(op: BatchOp) -> tuple[str, int | None]:
    """``value`` spread to ``like``'s per-example shape: given the batch axis first
    (new axes after it, so an example's axes align as NumPy aligns them); a shared
    ``like`` is repeated over the batch. Against a scalar ``like`` an example's result
    is its ``value``."""
    rank, value_rank = op.value("like").rank, op.value("value").rank
    if not op.batched:
        return "", value_rank if rank == 0 else rank
    if rank == 0 and op.is_batched("value"):
        return op.text("value"), value_rank
    if rank is None or value_rank is None or value_rank > rank:
        raise Decline("a value spread to a shape of unknown or lower rank")
    value = lift(op.text("value"), op.value("value"), rank)
    like = op.text("like") if op.is_batched("like") else repeated(op.text("like"))
    return f"nxrt.broadcast_like({value}, {like})", rank


def _last_written(op: BatchOp) -> tuple[str, int | None]:
    """A batch of cotangents of one store (``jacrev``): the same positions are zeroed
    in each, so the call takes the batch as it is (the helper keeps leading axes)."""
    if op.is_batched("x") or op.is_batched("index"):
        raise Decline("a store at an index or into an array that the batch maps")
    return op.replaced({}), op.value("value").rank


def _outer(u: str, uv, v: str, vv) -> str:
    """The outer product of two vectors per example."""
    left = f"{u}[:, :, None]" if uv.batched else f"{u}[:, None]"
    right = f"{v}[:, None, :]" if vv.batched else v
    return f"{left} * {right}"


def _product_adjoint(ct: str, a: str, b: str, of: str) -> object:
    """The cotangent of ``of`` (a or b) of ``a @ b`` for vectors and matrices."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        ra, rb = op.value(a).rank, op.value(b).rank
        rank = op.value(of).rank
        if not op.batched:
            return "", rank
        other = b if of == a else a
        g, gv = op.text(ct), op.value(ct)
        x, xv = op.text(other), op.value(other)
        if (ra, rb) == (1, 1):  # ct * other
            return f"{lift(g, gv, 1)} * {lift(x, xv, 1)}", 1
        if (of, ra, rb) in ((a, 2, 1), (b, 1, 2)):  # outer products
            return (_outer(g, gv, x, xv) if of == a else _outer(x, xv, g, gv)), 2
        if (of, ra, rb) == (a, 1, 2):  # b @ ct
            return matrix_product(x, g, xv, gv, op.name)[0], 1
        if (of, ra, rb) == (b, 2, 1):  # ct @ a
            return matrix_product(g, x, gv, xv, op.name)[0], 1
        raise Decline(f"{op.name} of per-example ranks {ra} and {rb}")

    return rule


def _broadcast_reduced(op: BatchOp) -> tuple[str, int | None]:
    """The reduced cotangent given back its reduced axes (after the batch axis), then
    broadcast over them: over the batch of ``a``, or over ``a`` repeated when the batch
    shares it (a batch of cotangents of one reduction: ``jacfwd`` of a gradient)."""
    rank = op.value("a").rank
    if not op.batched:
        return "", rank
    if not op.is_batched("value") or rank is None:
        raise Decline("a reduction's cotangent the batch shares, spread over a batch")
    axis = op.constant("axis")
    value = op.text("value")
    if not op.constant("keepdims") and rank:
        axes = tuple(range(rank)) if axis is None else axis
        axes = shifted_axis(axes if isinstance(axes, tuple) else (axes,), rank, op.name)
        index = [":" if k not in axes else "None" for k in range(rank + 1)]
        value = f"{value}[{', '.join(index)}]"
    like = op.text("a") if op.is_batched("a") else repeated(op.text("a"))
    return f"nxrt.broadcast_like({value}, {like})", rank


def _reduced_count(op: BatchOp) -> tuple[str, int | None, bool]:
    """The batch's sizes are each example's times the batch: the ratio is the same."""
    if op.batched and not (op.is_batched("args0") and op.is_batched("args1")):
        raise Decline("a reduction count against a shared argument")
    return op.replaced({}), 0, False


def _tie_weights(op: BatchOp) -> tuple[str, int | None]:
    rank = op.value("args0").rank
    if not op.batched:
        return "", rank
    if not (op.is_batched("args0") and op.is_batched("args1")) or rank is None:
        raise Decline("ties of a shared argument's extremum")
    axis = op.constant("args2")
    axes = tuple(range(rank)) if axis is None else axis
    shifted = shifted_axis(axes, rank, op.name)
    if isinstance(shifted, tuple):
        if len(shifted) != 1:
            raise Decline("ties over several axes")
        shifted = shifted[0]
    keepdims = op.text("args3") if "args3" in op.bound else "False"
    return (
        f"nxrt.tie_weights({op.text('args0')}, {op.text('args1')}, {shifted}, {keepdims})",
        rank,
    )


def _loop_cotangent(op: BatchOp) -> tuple[str, int | None]:
    """Of a batched cotangent and a batched value, the shapes differ exactly where an
    example's do (the batch axis is common)."""
    rank = op.value("x").rank
    if not op.batched:
        return "", rank
    if not (op.is_batched("ct") and op.is_batched("x")):
        raise Decline("a loop's cotangent carried against a value the batch shares")
    return op.replaced({}), rank


# fmt: off
define(nxrt.unbroadcast, "value, like",
       linear="nxrt.unbroadcast(value, like)",            vjp="nxrt.unbroadcast(g, value)",
       batch=_unbroadcast, samples=["value[3, 2], np.zeros(2)", "value[3, 2], 1.0"])
define(nxrt.broadcast_like, "value, like",
       linear="nxrt.broadcast_like(value, like)",         vjp="nxrt.unbroadcast(g, value)",
       batch=_broadcast_like,
       samples=["value[2], np.zeros((3, 2))", "value[], np.zeros(3)", "value[3], like[3]",
                "value[], like[]"])
define(nxrt.broadcast_reduced, "value, a, axis=None, keepdims=False",
       linear="nxrt.broadcast_reduced(value, a, axis, keepdims)",
       vjp="nxrt.unbroadcast(np.sum(g, axis=axis, keepdims=keepdims), value)",
       batch=_broadcast_reduced,
       samples=["value[3], np.zeros((3, 4)), 1", "value[], np.zeros((3, 4))",
                "value[3], a[3, 4], 1"])
# the tangent of a copy is its operand's, copied where a write may reach it
# (shared_tangents.py)
define(nxrt.owned, "x",
       linear="x",                                        vjp=SELF_ADJOINT,
       batch=same_shape("x"), samples=["x[3, 2]"])
define(nxrt.kept_item, "item, base",
       linear="item",                                     vjp=SELF_ADJOINT,
       batch=same_shape("item"), samples=["item[3, 2], np.zeros((4, 3, 2))"])
define(nxrt.ravel, "x",
       linear="nxrt.ravel(x)",                            vjp="nxrt.reshape_like(g, x)",
       samples=["x[3, 2]"])
define(nxrt.reshape_like, "value, like",
       linear="nxrt.reshape_like(value, like)",           vjp="nxrt.reshape_like(g, value)",
       samples=["value[6], np.zeros((3, 2))"])
define(nxrt.tree_add, "a, b",
       jvp={"a": "da",                                    "b": "db"},
       vjp=SELF_ADJOINT, combine="nxrt.tree_add", samples=["a[3, 2], b[3, 2]"])
define(nxrt.index_add, "base, index, value",
       jvp={"base": "nxrt.owned(dbase)",
            "value": "nxrt.index_add(nxrt.zeros_like(base), index, dvalue)"},
       vjp={"base": "g",
            "value": "nxrt.unbroadcast(g[index], value)"}, combine="nxrt.tree_add",
       samples=["base[4, 3] * 1.0, 1, value[3]",  # index_add writes into base: a copy
                "base[4, 3] * 1.0, np.array([0, 2, 0]), value[3, 3]"])
# stores at indices that may repeat (runtime/stores.py): the last write of an element
# is the one whose cotangent counts; np.add.at as a value (a scatter-add)
define(nxrt.last_written, "value, x, index",
       linear="nxrt.last_written(value, x, index)",     vjp=SELF_ADJOINT,
       batch=_last_written,
       samples=["value[3], np.zeros(3), np.array([0, 0, 1])",
                "value[3, 2], np.zeros((2, 2)), np.array([1, 0, 1])",
                "value[2], np.zeros((2, 2)), (np.array([1, 1]), np.array([0, 0]))",
                "value[], np.zeros(3), 1"])
define(nxrt.last_put, "value, arr, indices, axis",
       linear="nxrt.last_put(value, arr, indices, axis)", vjp=SELF_ADJOINT,
       samples=["value[1, 3], np.zeros((2, 3)), np.array([[1, 1, 0]]), 0",
                "value[3], np.zeros(4), np.array([3, 0, 3]), None"])
define(nxrt.add_at, "x, index, value",
       jvp={"x": "nxrt.owned(dx)",
            "value": "nxrt.add_at(nxrt.zeros_like(x), index, dvalue)"},
       vjp={"x": "g",
            "value": "nxrt.unbroadcast(g[index], value)"}, combine="nxrt.tree_add",
       samples=["x[4, 3], 1, value[3]", "x[4, 3], np.array([0, 2, 0]), value[3, 3]",
                "x[3], np.array([0, -3, 1]), value[]"])
define(nxrt.matmul_vjp_x, "ct, x, y",
       jvp={"ct": "nxrt.matmul_vjp_x(dct, x, y)",         "y": "nxrt.matmul_vjp_x(ct, x, dy)"},
       vjp={"ct": "np.matmul(g, y)",                      "y": "nxrt.matmul_vjp_y(ct, g, y)"},
       batch=_product_adjoint("ct", "x", "y", "x"),
       samples=["ct[3, 2], np.zeros((3, 4)), y[4, 2]", "ct[3], np.zeros((3, 4)), y[4]"])
define(nxrt.matmul_vjp_y, "ct, x, y",
       jvp={"ct": "nxrt.matmul_vjp_y(dct, x, y)",         "x": "nxrt.matmul_vjp_y(ct, dx, y)"},
       vjp={"ct": "np.matmul(x, g)",                      "x": "nxrt.matmul_vjp_x(ct, x, g)"},
       batch=_product_adjoint("ct", "x", "y", "y"),
       samples=["ct[3, 2], x[3, 4], np.zeros((4, 2))", "ct[3], x[3, 4], np.zeros(4)"])
define(nxrt.batch_sum, "x",
       linear="nxrt.batch_sum(x)",                        vjp="nxrt.batch_broadcast(g, x)",
       samples=["x[3, 2]"])
define(nxrt.batch_broadcast, "value, like",
       linear="nxrt.batch_broadcast(value, like)",        vjp="nxrt.batch_sum(g)",
       samples=["value[2], np.zeros((3, 2))"])
define(nxrt.loop_cotangent, "ct, x",
       linear="nxrt.loop_cotangent(ct, x)",               vjp="nxrt.loop_cotangent(g, ct)",
       batch=_loop_cotangent, samples=["ct[3, 2], np.zeros((3, 2))", "ct[3, 2], x[3, 2]"])
define(nxrt.custom_cotangents, "cts, primals, rule",
       linear="nxrt.custom_cotangents(cts, primals, rule)",
       vjp="g", samples=checked_elsewhere("tests/autodiff/test_custom.py: custom_vjp rules"))
# fmt: on

nondifferentiable([nxrt.zeros_like, nxrt.ones_like], batch=same_shape("args0"))
nondifferentiable([nxrt.grad_seed], batch=_seeds("grad_seeds"))
nondifferentiable([nxrt.holomorphic_seed], batch=_seeds("holomorphic_seeds"))
nondifferentiable([nxrt.grad_seeds, nxrt.holomorphic_seeds], batch=same_shape("args0"))


# -- reductions and linear algebra (rules/reductions.py, rules/linalg.py) -----------------
# Helpers linear in their first (cotangent) argument get its adjoint; where they depend
# on an array nonlinearly too, the derivative in that array is given away from zeros.

# fmt: off
# prod_others and its derivatives prod_others_jvp, prod_others_jvp2 and prod_others_jvp3
# (prod's second to fourth derivatives) are exact with zeros, each symmetric in its
# tangents and the cotangent. prod_others_jvp3's own derivative in a is given where a
# has no zero, from prod_others_jvp3(a, t, u, w) = prod_others(a) * (the sum over
# distinct triples of other elements of (t / a) (u / a) (w / a)), with others(v) the sum
# over the other elements of each one's reduction.
OTHERS = "(nxrt.broadcast_reduced(np.sum({v}, axis=axis), a, axis) - {v})"
define(nxrt.prod_others, "a, axis=None",
       jvp="nxrt.prod_others_jvp(a, da, axis)",          vjp=SELF_ADJOINT,
       samples=["a[3, 4], 1", "a[3, 4]"])
define(nxrt.prod_others_jvp, "a, t, axis=None",
       jvp={"a": "nxrt.prod_others_jvp2(a, t, da, axis)",
            "t": "nxrt.prod_others_jvp(a, dt, axis)"},
       vjp={"a": "nxrt.prod_others_jvp2(a, t, g, axis)",
            "t": "nxrt.prod_others_jvp(a, g, axis)"},
       samples=["a[3, 4], t[3, 4], 1", "a[3, 4], t[3, 4]"])
define(nxrt.prod_others_jvp2, "a, t, u, axis=None",
       jvp={"a": "nxrt.prod_others_jvp3(a, t, u, da, axis)",
            "t": "nxrt.prod_others_jvp2(a, dt, u, axis)",
            "u": "nxrt.prod_others_jvp2(a, t, du, axis)"},
       vjp={"a": "nxrt.prod_others_jvp3(a, t, u, g, axis)",
            "t": "nxrt.prod_others_jvp2(a, g, u, axis)",
            "u": "nxrt.prod_others_jvp2(a, t, g, axis)"},
       samples=["a[3, 4], t[3, 4], u[3, 4], 1", "a[3, 4], t[3, 4], u[3, 4]"])
define(nxrt.prod_others_jvp3, "a, t, u, w, axis=None",
       jvp={"a": "ans * " + OTHERS.format(v="da / a")
                 + " - nxrt.prod_others_jvp3(a, t * da / a, u, w, axis)"
                 " - nxrt.prod_others_jvp3(a, t, u * da / a, w, axis)"
                 " - nxrt.prod_others_jvp3(a, t, u, w * da / a, axis)",
            "t": "nxrt.prod_others_jvp3(a, dt, u, w, axis)",
            "u": "nxrt.prod_others_jvp3(a, t, du, w, axis)",
            "w": "nxrt.prod_others_jvp3(a, t, u, dw, axis)"},
       vjp={"a": OTHERS.format(v="g * ans") + " / a"
                 " - t / a * nxrt.prod_others_jvp3(a, g, u, w, axis)"
                 " - u / a * nxrt.prod_others_jvp3(a, t, g, w, axis)"
                 " - w / a * nxrt.prod_others_jvp3(a, t, u, g, axis)",
            "t": "nxrt.prod_others_jvp3(a, g, u, w, axis)",
            "u": "nxrt.prod_others_jvp3(a, t, g, w, axis)",
            "w": "nxrt.prod_others_jvp3(a, t, u, g, axis)"},
       samples=["a[3, 4], t[3, 4], u[3, 4], w[3, 4], 1", "a[3, 4], t[3, 4], u[3, 4], w[3, 4]"])
define(nxrt.cumsum_reverse, "value, a, axis=None",
       linear="nxrt.cumsum_reverse(value, a, axis)",    vjp="np.cumsum(g, axis=axis)",
       samples=["value[3, 4], np.zeros((3, 4)), 1", "value[12], np.zeros((3, 4))"])
# cumprod_jvp(a, t) = cumprod(a) * cumsum(t / a) and cumprod_vjp(ct, a) =
# cumsum_reverse(ct * cumprod(a)) / a where a has no zero: their derivatives in a.
define(nxrt.cumprod_jvp, "a, t, axis=None",
       jvp={"a": "nxrt.cumprod_jvp(a, da, axis) * np.cumsum(t / a, axis=axis)"
                 " - np.cumprod(a, axis=axis) * np.cumsum(t * da / (a * a), axis=axis)",
            "t": "nxrt.cumprod_jvp(a, dt, axis)"},
       vjp={"a": "nxrt.cumprod_vjp(g * np.cumsum(t / a, axis=axis), a, axis)"
                 " - t / (a * a) * nxrt.cumsum_reverse(g * np.cumprod(a, axis=axis), a, axis)",
            "t": "nxrt.cumprod_vjp(g, a, axis)"},
       samples=["a[3, 4], t[3, 4], 1", "a[3, 4], t[3, 4]"])
define(nxrt.cumprod_vjp, "ct, a, axis=None",
       jvp={"ct": "nxrt.cumprod_vjp(dct, a, axis)",
            "a": "nxrt.cumsum_reverse(ct * nxrt.cumprod_jvp(a, da, axis), a, axis) / a"
                 " - ans * da / a"},
       vjp={"ct": "nxrt.cumprod_jvp(a, g, axis)",
            "a": "nxrt.cumprod_vjp(ct * np.cumsum(g / a, axis=axis), a, axis) - g * ans / a"},
       samples=["ct[3, 4], a[3, 4], 0", "ct[12], a[3, 4]"])
# norm_weights(x, norm, k) ~ sign(x)^(k+1) |x|^(p-1-k) norm^(1-p): d/dx is the next k.
define(nxrt.norm_weights, "x, norm, ord=None, axis=None, keepdims=False, k=0",
       jvp={"x": "dx * nxrt.norm_weights(x, norm, ord, axis, keepdims, k + 1)",
            "norm": "nxrt.norm_exponent(ord) * ans"
                    " * nxrt.broadcast_reduced(dnorm / norm, x, axis, keepdims)"},
       vjp={"x": "g * nxrt.norm_weights(x, norm, ord, axis, keepdims, k + 1)",
            "norm": "nxrt.norm_exponent(ord)"
                    " * np.sum(g * ans, axis=axis, keepdims=keepdims) / norm"},
       samples=["x[3, 4], norm[3], 3, 1", "x[4], norm[], 2.5"],
       domain={"x": (-2, 2), "norm": (1, 2)})
define(nxrt.trace_vjp, "ct, a, offset=0, axis1=0, axis2=1",
       linear="nxrt.trace_vjp(ct, a, offset, axis1, axis2)",
       vjp="np.trace(g, offset, axis1, axis2)",
       samples=["ct[], np.zeros((3, 4)), 1", "ct[2], np.zeros((3, 2, 4)), 0, 0, 2"])
define(nxrt.matrix_transpose, "x",
       linear="nxrt.matrix_transpose(x)",               vjp=SELF_ADJOINT,
       samples=["x[3, 4]", "x[2, 3, 4]"])
define(nxrt.tril_half_diag, "x",
       linear="nxrt.tril_half_diag(x)",                 vjp=SELF_ADJOINT,
       samples=["x[3, 3]", "x[2, 3, 3]"])
define(nxrt.tril_symmetric, "x",
       linear="nxrt.tril_symmetric(x)",                 vjp="nxrt.tril_fold(g)",
       samples=["x[3, 3]", "x[2, 3, 3]"])
define(nxrt.tril_fold, "x",
       linear="nxrt.tril_fold(x)",                      vjp="nxrt.tril_symmetric(g)",
       samples=["x[3, 3]", "x[2, 3, 3]"])
define(nxrt.dot_vjp_a, "ct, a, b",
       jvp={"ct": "nxrt.dot_vjp_a(dct, a, b)",          "b": "nxrt.dot_vjp_a(ct, a, db)"},
       vjp={"ct": "np.dot(g, b)",                       "b": "nxrt.dot_vjp_b(ct, g, b)"},
       batch=_product_adjoint("ct", "a", "b", "a"),
       samples=["ct[3, 2], np.zeros((3, 4)), b[4, 2]", "ct[], np.zeros(4), b[4]"])
define(nxrt.dot_vjp_b, "ct, a, b",
       jvp={"ct": "nxrt.dot_vjp_b(dct, a, b)",          "a": "nxrt.dot_vjp_b(ct, da, b)"},
       vjp={"ct": "np.dot(a, g)",                       "a": "nxrt.dot_vjp_a(ct, a, g)"},
       batch=_product_adjoint("ct", "a", "b", "b"),
       samples=["ct[3, 2], a[3, 4], np.zeros((4, 2))", "ct[], a[4], np.zeros(4)"])
define(nxrt.tensordot_vjp_a, "ct, a, b, axes=2",
       jvp={"ct": "nxrt.tensordot_vjp_a(dct, a, b, axes)",
            "b": "nxrt.tensordot_vjp_a(ct, a, db, axes)"},
       vjp={"ct": "np.tensordot(g, b, axes)",
            "b": "nxrt.tensordot_vjp_b(ct, g, b, axes)"},
       samples=["ct[2, 4], np.zeros((2, 3)), b[3, 4], 1"])
define(nxrt.tensordot_vjp_b, "ct, a, b, axes=2",
       jvp={"ct": "nxrt.tensordot_vjp_b(dct, a, b, axes)",
            "a": "nxrt.tensordot_vjp_b(ct, da, b, axes)"},
       vjp={"ct": "np.tensordot(a, g, axes)",
            "a": "nxrt.tensordot_vjp_a(ct, a, g, axes)"},
       samples=["ct[2, 4], a[2, 3], np.zeros((3, 4)), 1"])
# fmt: on
_jvp, _vjp = einsum_templates("like")
define(
    nxrt.einsum_general,
    EINSUM_PARAMETERS + ", like=None",
    jvp=_jvp,
    vjp=_vjp,
    samples=[
        "'ij,jk->ik', x0[3, 4], x1[4, 2]",
        "('ij,jk->ik', 0), x0[3, 2], x1[4, 2], like=np.zeros((3, 4))",
    ],
)

nondifferentiable([nxrt.norm_exponent])
nondifferentiable([nxrt.reduced_count], batch=_reduced_count)
nondifferentiable([nxrt.tie_weights], batch=_tie_weights)
