"""Linear algebra: products (``dot``, ``tensordot``, ``einsum``...) and matrix functions
(``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``). ``matmul`` and ``@`` are in
operators.py, ``trace`` and ``norm`` with the reductions.

Products are bilinear: the JVP is the product with each tangent in turn, the VJP the
product of the cotangent with the other operand, contracted over what the output keeps
(``nxrt.dot_vjp_a``, ``nxrt.tensordot_vjp_a``...). The VJP of an einsum is an einsum
whose subscripts trade the output's term with the operand's: ``nxrt.einsum_general``
takes ``(subscripts, j)`` for "the VJP of operand j of that einsum" and works it out when
it runs (when it compiles, under jit), so derivatives of any order stay einsums.

Matrix functions (``a`` may be a stack of matrices, as in NumPy, ``mT`` below being
``nxrt.matrix_transpose``; for complex matrices JAX's conventions, ``^H`` the conjugate
transpose, see ``conjugated``):

* ``inv``: ``d(A^-1) = -A^-1 dA A^-1``; ``det``: ``d det = det tr(A^-1 dA)``;
  ``solve``: ``x = A^-1 b``, ``dx = A^-1 (db - dA x)`` (complex-analytic: plain
  transposes in the VJPs);
* ``slogdet``: with ``t = tr(A^-1 dA)``, ``d logabsdet = Re t``, ``d sign = sign i Im t``
  (a real matrix's sign is constant);
* ``cholesky``: ``L = chol(A)`` reads only A's lower triangle, so the tangent seen is
  ``S = tril_symmetric(dA)`` (Hermitian), and ``dL = L Phi(L^-1 S L^-H)``, ``Phi`` the
  lower triangle with the diagonal halved (``nxrt.tril_half_diag``); the adjoint is
  ``tril_fold(L^-H Phi(L^H G) L^-1)``;
* ``qr``: below; ``vdot`` conjugates its first operand, whose cotangent is conjugated.
"""

import ast
import re
from typing import Any

import numpy as np

from numbax.runtime import nxrt
from numbax.transform.rules import registry
from numbax.transform.rules.batch_kinds import on_matrices, product, solve
from numbax.transform.rules.registry import SELF_ADJOINT, checked_elsewhere, nondifferentiable


class _Matmul(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        if not isinstance(node.op, ast.MatMult):
            return node
        func = ast.Attribute(ast.Name("np", ast.Load()), "matmul", ast.Load())
        return ast.Call(func, [node.left, node.right], [])


def stack_products(template: str) -> str:
    """A template with each ``x @ y`` written ``np.matmul(x, y)``: matrix products of
    stacks of matrices compile under jit as calls (numbax's own ``matmul``), not as the
    operator."""
    return ast.unparse(_Matmul().visit(ast.parse(template, mode="eval")))


def define(targets: Any, signature: str, **spec: Any) -> registry.Rule:
    """``registry.define``, its templates' matrix products as ``np.matmul`` calls."""
    return registry.define(targets, signature, prepare=stack_products, **spec)


def adjoint(x: str) -> str:
    """The conjugate transpose of (each matrix of) ``x``: its transpose for real ``x``."""
    return f"np.conj(nxrt.matrix_transpose({x}))"


def conjugated(template: str) -> str:
    """A VJP in JAX's convention (the JVP's transpose, no conjugate) from the adjoint
    ``template`` of the JVP in the complex inner product ``Re tr(x^H y)``, written with
    ``g``: the conjugate of that adjoint applied to ``conj(g)``. The same for real
    values."""
    return "np.conj(" + _COTANGENT.sub(r"np.conj(\g<0>)", template) + ")"


_COTANGENT = re.compile(r"(?<![\w.])g(\[\d\])?(?!\w)")  # g, g[1]; not a letter of a word


# fmt: off
#      operation, signature
#      jvp (tangent out)
#      vjp (cotangent in)
define(np.dot, "a, b, out=None",
       jvp={"a": "np.dot(da, b)",                         "b": "np.dot(a, db)"},
       vjp={"a": "nxrt.dot_vjp_a(g, a, b)",               "b": "nxrt.dot_vjp_b(g, a, b)"},
       methods=["dot"], batch=product("a", "b"),
       samples=["a[3, 4], b[4, 2]", "a[4], b[4]", "a[3, 4], b[4]", "a[3], b[3, 4]",
                "a[2, 3, 4], b[2, 4, 2]", "a[], b[3, 4]"])
# vdot(a, b) = sum(conj(a) b): conjugate-linear in a, so a's cotangent is conjugated
define(np.vdot, "a, b",
       jvp={"a": "np.vdot(da, b)",                        "b": "np.vdot(a, db)"},
       vjp={"a": "nxrt.reshape_like(np.conj(g * nxrt.ravel(b)), a)",
            "b": "nxrt.reshape_like(g * np.conj(nxrt.ravel(a)), b)"},
       samples=["a[3, 4], b[12]", "a[4], b[4]"])
define(np.inner, "a, b",
       jvp={"a": "np.inner(da, b)",                       "b": "np.inner(a, db)"},
       vjp={"a": "nxrt.tensordot_vjp_a(g, a, b, (-1, -1))",
            "b": "nxrt.tensordot_vjp_b(g, a, b, (-1, -1))"},
       samples=["a[2, 3, 4], b[3, 4]", "a[4], b[4]"])
define(np.outer, "a, b, out=None",
       jvp={"a": "np.outer(da, b)",                       "b": "np.outer(a, db)"},
       vjp={"a": "nxrt.reshape_like(np.dot(g, nxrt.ravel(b)), a)",
            "b": "nxrt.reshape_like(np.dot(nxrt.ravel(a), g), b)"},
       samples=["a[3, 4], b[3]", "a[4], b[3]"])
define(np.tensordot, "a, b, axes=2",
       jvp={"a": "np.tensordot(da, b, axes)",             "b": "np.tensordot(a, db, axes)"},
       vjp={"a": "nxrt.tensordot_vjp_a(g, a, b, axes)",
            "b": "nxrt.tensordot_vjp_b(g, a, b, axes)"},
       samples=["a[2, 3, 4], b[3, 4]", "a[3], b[4], 0", "a[3, 4], b[3, 4], axes=(0, 0)",
                "a[2, 3, 4], b[4, 3, 2], ((2, 0), (0, 2))"])

MT = "nxrt.matrix_transpose"  # of each matrix of a stack
TRACE_INV = f"np.sum({MT}(np.linalg.inv(a)) * da, axis=(-2, -1))"  # tr(A^-1 dA)
INV_T = f"{MT}(np.linalg.inv(a))"  # its adjoint

define(np.linalg.inv, "a",
       jvp="-ans @ da @ ans",
       vjp=f"-{MT}(ans) @ g @ {MT}(ans)",
       batch=on_matrices({"a": 2}, 2), samples=["a[3, 3]", "a[2, 3, 3]"], domain="invertible")
define(np.linalg.det, "a",
       jvp=f"ans * {TRACE_INV}",
       vjp=f"nxrt.broadcast_reduced(g * ans, a, (-2, -1)) * {INV_T}",
       batch=on_matrices({"a": 2}, 0), samples=["a[3, 3]", "a[2, 3, 3]"], domain="invertible")
# a complex determinant's sign turns: d sign = sign i Im(t), d logabsdet = Re(t), with
# t = tr(A^-1 dA); the cotangent w t pairs with is g[1] + i Im(g[0] sign)
define(np.linalg.slogdet, "a",  # (sign, logabsdet)
       jvp=f"(ans[0] * ({TRACE_INV} - np.real({TRACE_INV})), np.real({TRACE_INV}))",
       vjp="nxrt.broadcast_reduced(g[1] + g[0] * ans[0] - np.real(g[0] * ans[0]), a, (-2, -1))"
           f" * {INV_T}",
       combine="nxrt.tree_add", batch=on_matrices({"a": 2}, (0, 0)), samples=checked_elsewhere(
           "tests/autodiff/test_rules_reductions_linalg.py: a (sign, logdet) pair"))
define(np.linalg.solve, "a, b",
       jvp={"a": "-np.linalg.solve(a, da @ ans)",
            "b": "np.linalg.solve(a, db)"},
       vjp={"a": f"-nxrt.matmul_vjp_x(np.linalg.solve({MT}(a), g), a, ans)",
            "b": f"np.linalg.solve({MT}(a), g)"},
       batch=solve, samples=["a[3, 3], b[3]", "a[3, 3], b[3, 2]", "a[2, 3, 3], b[2, 3, 2]"],
       domain={"a": "invertible", "b": (-2, 2)})
# dL = L Phi(L^-1 S L^-H), S = tril_symmetric(dA) (Hermitian); the VJP: the conjugate of
# tril_fold(L^-H Phi(L^H G) L^-1) at G = conj(g).
LH = adjoint("ans")
L_S = adjoint("np.linalg.solve(ans, nxrt.tril_symmetric(da))")  # S L^-H
PHI_G = adjoint(f"nxrt.tril_half_diag({LH} @ g)")
G_L = adjoint(f"np.linalg.solve({LH}, {PHI_G})")  # Phi(L^H G) L^-1
define(np.linalg.cholesky, "a",
       jvp=f"ans @ nxrt.tril_half_diag(np.linalg.solve(ans, {L_S}))",
       vjp=conjugated(f"nxrt.tril_fold(np.linalg.solve({LH}, {G_L}))"),
       batch=on_matrices({"a": 2}, 2), samples=["a[3, 3]", "a[2, 3, 3]"], domain="spd")
# fmt: on


# -- einsum ----------------------------------------------------------------------------
# One parameter per operand (up to EINSUM_OPERANDS; absent ones are None), so each can
# be differentiated: the tangent of operand j goes in its place, and its cotangent is
# the einsum "(subscripts, j)" with the output's cotangent in operand j's place.

EINSUM_OPERANDS = 6
_SLOTS = [f"x{j}" for j in range(EINSUM_OPERANDS)]
EINSUM_PARAMETERS = "subscripts, x0, " + ", ".join(f"{s}=None" for s in _SLOTS[1:])


def _operands(j: int, value: str) -> str:
    return ", ".join(value if k == j else s for k, s in enumerate(_SLOTS))


def einsum_templates(like: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """JVP and VJP templates of each operand of an einsum whose output is shaped like
    parameter ``like`` (None: as NumPy's einsum makes it)."""
    out = f", like={like}" if like else ""
    jvp = {
        s: f"nxrt.einsum_general(subscripts, {_operands(j, 'd' + s)}{out})"
        for j, s in enumerate(_SLOTS)
    }
    vjp = {
        s: f"nxrt.einsum_general((subscripts, {j}), {_operands(j, 'g')}, like={s})"
        for j, s in enumerate(_SLOTS)
    }
    return jvp, vjp


_jvp, _vjp = einsum_templates(None)
define(
    np.einsum,
    EINSUM_PARAMETERS + ", *, out=None, dtype=None, order='K', casting='safe', optimize=False",
    jvp=_jvp,
    vjp=_vjp,
    samples=[
        "'ij,jk->ik', x0[3, 4], x1[4, 2]",
        "'ii', x0[3, 3]",
        "'ii->i', x0[3, 3]",
        "'ij->ji', x0[3, 4]",
        "'ijk->j', x0[2, 3, 4]",
        "'i,j->ij', x0[3], x1[4]",
        "'bij,bjk->bik', x0[2, 3, 4], x1[2, 4, 2]",
        "'...ij,jk->...ik', x0[2, 3, 4], x1[4, 2]",
        "'ij,j->i', x0[3, 4], x1[1]",
        "'ij,ij->', x0[3, 4], x1[3, 4]",
        "'ij,jk,i->k', x0[3, 4], x1[4, 2], x2[3]",
        "'i,i,j,j', x0[3], x1[3], x2[4], x3[4]",
    ],
)


# -- NumPy 2's numpy.linalg spellings of the above ----------------------------------------
# Checked in one compiled program (compiling each under jit on its own costs minutes).
TABLE = "tests/autodiff/test_linalg_more.py: its table, and one jitted program for all"
# fmt: off
define(np.linalg.outer, "a, b",
       jvp={"a": "np.outer(da, b)", "b": "np.outer(a, db)"},
       vjp={"a": "np.dot(g, b)", "b": "np.dot(a, g)"},
       samples=checked_elsewhere(TABLE))
define(np.linalg.tensordot, "a, b, *, axes=2",
       jvp={"a": "np.tensordot(da, b, axes)", "b": "np.tensordot(a, db, axes)"},
       vjp={"a": "nxrt.tensordot_vjp_a(g, a, b, axes)",
            "b": "nxrt.tensordot_vjp_b(g, a, b, axes)"},
       samples=checked_elsewhere(TABLE))
define(np.linalg.trace, "x, *, offset=0, dtype=None",
       linear="np.trace(x, offset, -2, -1)",
       vjp="nxrt.trace_vjp(g, x, offset, -2, -1)",
       samples=checked_elsewhere(TABLE))
define(np.linalg.matrix_transpose, "x",
       linear="nxrt.matrix_transpose(x)", vjp=SELF_ADJOINT,
       samples=checked_elsewhere(TABLE))
define(np.linalg.matmul, "x, y",
       jvp={"x": "dx @ y", "y": "x @ dy"},
       vjp={"x": "nxrt.matmul_vjp_x(g, x, y)", "y": "nxrt.matmul_vjp_y(g, x, y)"},
       batch=product(), samples=checked_elsewhere(TABLE))
nondifferentiable([np.linalg.matrix_rank])
# the shape of tensorsolve's solution (numbax/transform/compositions/linalg.py)
nondifferentiable([nxrt.trailing_shape])

# -- qr (reduced, m >= n): with X = dA R^-1, Q^H X = C, O = tril(C, -1) - tril(C, -1)^H
# plus i Im(C) on the diagonal (complex R has no real diagonal to keep: JAX's choice):
# dQ = Q (O - C) + X, dR = (C - O) R. The VJP, conjugated (see conjugated): with
# M = Q^H gQ - gR R^H, B = gQ + Q (tril(M - M^H, -1) + i Im(diag M) - M), A_bar = B R^-H.
_Q, _R = "ans[0]", "ans[1]"
_X = f"{MT}(np.linalg.solve({MT}({_R}), {MT}(da)))"
_C = f"({adjoint(_Q)} @ {_X})"
_O = (
    f"(np.tril({_C}, -1) - {adjoint(f'np.tril({_C}, -1)')}"
    f" + nxrt.diagonal_matrix(nxrt.matrix_diagonal({_C}) - np.real(nxrt.matrix_diagonal({_C}))))"
)
_M = f"({adjoint(_Q)} @ g[0] - g[1] @ {adjoint(_R)})"
_M_DIAG = f"nxrt.matrix_diagonal({_M})"
_TURN = f"nxrt.diagonal_matrix(({_M_DIAG} - np.conj({_M_DIAG})) * 0.5)"  # i Im(diag M)
_B = f"(g[0] + {_Q} @ (np.tril({_M} - {adjoint(_M)}, -1) + {_TURN} - {_M}))"
define(np.linalg.qr, "a, mode='reduced'",
       jvp=f"({_Q} @ ({_O} - {_C}) + {_X}, ({_C} - {_O}) @ {_R})",
       vjp=conjugated(adjoint(f"np.linalg.solve({_R}, {adjoint(_B)})")),
       combine="nxrt.tree_add", by_constant={"mode": {"reduced": None}},
       batch=on_matrices({"a": 2}, (2, 2)),
       samples=checked_elsewhere("tests/autodiff/test_linalg_more.py: both outputs, stacks"))
# fmt: on
