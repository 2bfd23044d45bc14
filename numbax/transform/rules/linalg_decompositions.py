"""Decompositions and matrix functions: ``svd``, ``svdvals``, ``cond``, ``eigh``,
``eigvalsh``, ``pinv``, ``matrix_power``, ``cross`` (the others of ``numpy.linalg`` are in
linalg.py).

Every template here is written with operations that have rules of their own (``@``,
products, ``np.linalg.svd`` itself, the small linear helpers of runtime/linalg.py), so
derivatives of derivatives come from the same table. ``a`` may be a stack of matrices;
``mT`` below is ``nxrt.matrix_transpose``, ``diag`` ``nxrt.matrix_diagonal`` and
``F(w)`` ``nxrt.inverse_differences(w)``, ``1 / (w_j - w_i)`` off the diagonal.

Complex matrices: each ``^H`` below is the conjugate transpose (``adjoint`` in
linalg.py), the transpose for real ones. The VJPs are the JVPs' transposes without a
conjugate, as JAX's: each is written as the adjoint in the inner product
``Re tr(x^H y)`` (the formula below), conjugated and applied to ``conj(g)``
(``conjugated``). Real results (singular values, eigenvalues) have real tangents.

* ``svd``: ``a = U diag(s) Vh`` (reduced; square if ``full_matrices``, the default:
  the extra vectors of a non-square one are arbitrary and have no derivative). With
  ``dP = U^H da V``: ``ds = Re diag(dP)``,
  ``dU = U (F(s^2) * (dP S + S dP^H) + i Im diag(dP) / s) + (I - U U^H) da V / s``,
  ``dV = V (F(s^2) * (S dP + dP^H S)) + (I - V V^H) da^H U / s`` (as JAX: the phase
  term fixes how complex singular vectors turn); the adjoint is
  ``U [diag(gs + i Im diag(U^H gU) / s) + (J + J^H) S + S (K + K^H)] Vh`` with
  ``J = F * (U^H gU)``, ``K = F * (V^H gV)``, plus the two projections' adjoints.
  ``compute_uv=False`` is the rule of ``svdvals``: ``ds = Re diag(U^H da V)``, the VJP
  ``conj(U gs Vh)``.
* ``eigh``: numpy reads the lower triangle (and the real part of the diagonal), so the
  tangent seen is the Hermitian ``S = tril_symmetric(da)``; ``dw = Re diag(V^H S V)``,
  ``dV = V (F(w) * (V^H S V))``; the adjoint
  ``tril_fold(V (diag(gw) + F(w) * (V^H gV)) V^H)``.
* ``eigvals`` (distinct eigenvalues): ``dw = diag(V^-1 dA V)``, as JAX's; the VJP
  ``V^-T diag(g) V^T``.
* ``pinv`` (full rank): ``-A+ dA A+ + A+ A+^H dA^H (I - A A+) + (I - A+ A) dA^H A+^H A+``.
* ``matrix_power(a, n)``: the derivative of a matrix function along ``t`` is the upper
  right block of the function of ``[[a, t], [0, a]]`` (``nxrt.block_upper``); the VJP
  is the same with ``a^T`` and ``g``.
* ``cross``: ``<g, a x b> = <a, b x g> = <b, g x a>``.
"""

from typing import Any

from numpy import cross, linalg

from numbax.runtime import nxrt
from numbax.transform.rules.batch_kinds import BatchOp, on_matrices
from numbax.transform.rules.linalg import adjoint, conjugated, define
from numbax.transform.rules.registry import SELF_ADJOINT, checked_elsewhere

ALL_OUTPUTS = "tests/autodiff/test_linalg_more.py: functions of all the outputs, of stacks"
TABLE = "tests/autodiff/test_linalg_more.py: its table, and one jitted program for all"

MT = "nxrt.matrix_transpose"
DIAG = "nxrt.matrix_diagonal"

# -- svd -------------------------------------------------------------------------------
U = "nxrt.svd_vectors_defined(ans[0], a, full_matrices)"
S, VH = "ans[1]", "ans[2]"
V = adjoint(VH)
F = f"nxrt.inverse_differences({S} * {S})"
ROW, COL = f"np.expand_dims({S}, -2)", f"np.expand_dims({S}, -1)"  # s_j, s_i of [i, j]
DP = f"({adjoint(U)} @ da @ {V})"
DPS, SDP = f"({DP} * {ROW})", f"({COL} * {DP})"
# the phase each pair of complex singular vectors may turn by, fixed as JAX fixes it
# (i Im(dP_ii) / s_i in dU; zero for real matrices)
PHASE = f"nxrt.diagonal_matrix({DIAG}({DP} - {adjoint(DP)}) * 0.5 / {S})"
DU = f"{U} @ ({F} * ({DPS} + {adjoint(DPS)}) + {PHASE}) + (da @ {V} - {U} @ {DP}) / {ROW}"
DV = (
    f"{V} @ ({F} * ({SDP} + {adjoint(SDP)}))"
    f" + ({adjoint('da')} @ {U} - {V} @ {adjoint(DP)}) / {ROW}"
)
# the adjoint of that JVP, in terms of the cotangents g[0], g[1], g[2] of U, s, Vh
J = f"({F} * ({adjoint(U)} @ g[0]))"
K = f"({F} * ({VH} @ {adjoint('g[2]')}))"
UG = f"{DIAG}({adjoint(U)} @ g[0])"
CORE = (
    f"nxrt.diagonal_matrix(g[1] + ({UG} - np.conj({UG})) * 0.5 / {S})"
    f" + ({J} + {adjoint(J)}) * {ROW} + {COL} * ({K} + {adjoint(K)})"
)
SVD_VJP = conjugated(
    f"{U} @ ({CORE}) @ {VH} + ((g[0] - {U} @ ({adjoint(U)} @ g[0])) / {ROW}) @ {VH}"
    f" + {U} @ ((g[2] - (g[2] @ {V}) @ {VH}) / {COL})"
)

# singular values only: the vectors from a reduced svd of their own
REDUCED = "np.linalg.svd(a, full_matrices=False)"
svdvals = define(
    linalg.svdvals,
    "a, full_matrices=True, compute_uv=False, hermitian=False",
    jvp=f"np.real({DIAG}({adjoint(REDUCED + '[0]')} @ da @ {adjoint(REDUCED + '[2]')}))",
    vjp=f"np.conj(({REDUCED}[0] * np.expand_dims(g, -2)) @ {REDUCED}[2])",
    batch=on_matrices({"a": 2}, 1),
    samples=checked_elsewhere(TABLE),
)
define(
    linalg.svd,
    "a, full_matrices=True, compute_uv=True, hermitian=False",
    jvp=f"({DU}, np.real({DIAG}({DP})), {adjoint(DV)})",
    vjp=SVD_VJP,
    combine="nxrt.tree_add",
    by_constant={"hermitian": {False: None}, "compute_uv": {True: None, False: svdvals}},
    batch=on_matrices({"a": 2}, (2, 1, 2)),
    samples=checked_elsewhere(ALL_OUTPUTS),
)

# cond (the 2-norm one): s_0 / s_last, so d cond = (ds_0 - cond ds_last) / s_last
SVDS = "np.linalg.svd(a, full_matrices=False)"
DS = f"np.real({DIAG}({adjoint(SVDS + '[0]')} @ da @ {adjoint(SVDS + '[2]')}))"
LAST = f"{SVDS}[1][..., -1]"


def _outer(j: int) -> str:
    """``conj(u_j v_j^H)`` of each matrix of the stack: the VJP of ``s_j``."""
    return (
        f"np.conj(np.expand_dims({SVDS}[0][..., :, {j}], -1)"
        f" * np.expand_dims({SVDS}[2][..., {j}, :], -2))"
    )


define(
    linalg.cond,
    "a, p=None",
    jvp=f"({DS}[..., 0] - ans * {DS}[..., -1]) / {LAST}",
    vjp=f"nxrt.broadcast_reduced(g / {LAST}, a, (-2, -1))"
    f" * ({_outer(0)} - nxrt.broadcast_reduced(ans, a, (-2, -1)) * {_outer(-1)})",
    by_constant={"p": {None: None}},
    samples=checked_elsewhere(TABLE),
)

# -- eigh ------------------------------------------------------------------------------
W, VEC = "ans[0]", "ans[1]"
SEEN = f"({adjoint(VEC)} @ nxrt.tril_symmetric(da) @ {VEC})"  # V^H S V
FW = f"nxrt.inverse_differences({W})"
define(
    linalg.eigh,
    "a, UPLO='L'",
    jvp=f"(np.real({DIAG}({SEEN})), {VEC} @ ({FW} * {SEEN}))",
    vjp=conjugated(
        f"nxrt.tril_fold({VEC} @ (nxrt.diagonal_matrix(g[0]) + {FW} * ({adjoint(VEC)} @ g[1]))"
        f" @ {adjoint(VEC)})"
    ),
    combine="nxrt.tree_add",
    by_constant={"UPLO": {"L": None}},
    batch=on_matrices({"a": 2}, (1, 2)),
    samples=checked_elsewhere(ALL_OUTPUTS),
)
EIGENVECTORS = "np.linalg.eigh(a)[1]"
define(
    linalg.eigvalsh,
    "a, UPLO='L'",
    jvp=f"np.real({DIAG}({adjoint(EIGENVECTORS)} @ nxrt.tril_symmetric(da) @ {EIGENVECTORS}))",
    vjp=f"np.conj(nxrt.tril_fold(({EIGENVECTORS} * np.expand_dims(g, -2))"
    f" @ {adjoint(EIGENVECTORS)}))",
    by_constant={"UPLO": {"L": None}},
    batch=on_matrices({"a": 2}, 1),
    samples=checked_elsewhere(TABLE),
)

# -- eigvals (of a general matrix, distinct eigenvalues): with A = V diag(w) V^-1,
# dw = diag(V^-1 dA V), as JAX's; the VJP is its transpose, V^-T diag(g) V^T (without
# conjugates, JAX's convention; unbroadcast keeps the real part for a real matrix). The
# eigenvectors' derivative is not defined here, as JAX defines none: np.linalg.eig has
# no rule.
EIGENBASIS = "np.linalg.eig(a)[1]"
define(
    linalg.eigvals,
    "a",
    jvp=f"{DIAG}(np.linalg.solve({EIGENBASIS}, da @ {EIGENBASIS}))",
    vjp=f"nxrt.unbroadcast(np.linalg.solve({MT}({EIGENBASIS}), "
    f"{MT}({EIGENBASIS} * np.expand_dims(g, -2))), a)",
    samples=checked_elsewhere("tests/autodiff/test_linalg_more.py: complex eigenvalues"),
)

# -- pinv ------------------------------------------------------------------------------
P, PT = "ans", adjoint("ans")
LEFT = f"({P} @ {PT} @ {adjoint('da')})"  # A+ A+^H dA^H, times (I - A A+)
RIGHT = f"({adjoint('da')} @ {PT} @ {P})"  # (I - A+ A) times dA^H A+^H A+
G_LEFT = f"({adjoint('g')} @ {P} @ {PT})"
G_RIGHT = f"({PT} @ {P} @ {adjoint('g')})"
define(
    linalg.pinv,
    "a, rcond=None, hermitian=False, *, rtol=None",
    jvp=f"-{P} @ da @ {P} + {LEFT} - {LEFT} @ a @ {P} + {RIGHT} - {P} @ a @ {RIGHT}",
    vjp=conjugated(
        f"-{PT} @ g @ {PT} + {G_LEFT} - a @ {P} @ {G_LEFT} + {G_RIGHT} - {G_RIGHT} @ {P} @ a"
    ),
    by_constant={"hermitian": {False: None}},
    batch=on_matrices({"a": 2}, 2),
    samples=checked_elsewhere(TABLE),
)

# -- matrix functions by their block upper triangular form ------------------------------
define(
    linalg.matrix_power,
    "a, n",
    jvp="nxrt.upper_right(np.linalg.matrix_power(nxrt.block_upper(a, da), n))",
    vjp=f"nxrt.upper_right(np.linalg.matrix_power(nxrt.block_upper({MT}(a), g), n))",
    batch=on_matrices({"a": 2}, 2),
    samples=checked_elsewhere(TABLE),
)

# -- cross -----------------------------------------------------------------------------
define(
    cross,
    "a, b, axisa=-1, axisb=-1, axisc=-1, axis=None",
    jvp={"a": "np.cross(da, b)", "b": "np.cross(a, db)"},
    vjp={"a": "nxrt.unbroadcast(np.cross(b, g), a)", "b": "nxrt.unbroadcast(np.cross(g, a), b)"},
    by_constant={
        "axisa": {-1: None},
        "axisb": {-1: None},
        "axisc": {-1: None},
        "axis": {None: None},
    },
    samples=checked_elsewhere(TABLE),
)


# -- the helpers these templates call ----------------------------------------------------
# Each is linear, or (inverse_differences) written with operations that have rules.


def _on_last_axes(param: str, added: int) -> Any:
    """Batching of a helper of one array that works on its last axes: the batch, its
    first axis, passes through; the rank changes by ``added``."""

    def rule(op: BatchOp) -> tuple[str, int | None]:
        return op.replaced({}), op.rank(param) + added

    return rule


define(
    nxrt.matrix_diagonal,
    "x",
    linear="nxrt.matrix_diagonal(x)",
    vjp="nxrt.diagonal_matrix(g)",
    batch=_on_last_axes("x", -1),
    samples=["x[3, 3]", "x[2, 3, 3]"],
)
define(
    nxrt.diagonal_matrix,
    "v",
    linear="nxrt.diagonal_matrix(v)",
    vjp="nxrt.matrix_diagonal(g)",
    batch=_on_last_axes("v", 1),
    samples=["v[3]", "v[2, 3]"],
)
# F = 1 / (w_j - w_i): dF = -F^2 (dw_j - dw_i)
define(
    nxrt.inverse_differences,
    "w",
    jvp="-(ans * ans) * (np.expand_dims(dw, -2) - np.expand_dims(dw, -1))",
    vjp="np.sum(g * ans * ans, axis=-1) - np.sum(g * ans * ans, axis=-2)",
    batch=_on_last_axes("w", 1),
    samples=["w[3]", "w[2, 3]"],
)
define(
    nxrt.svd_vectors_defined,
    "u, a, full_matrices",
    linear="nxrt.svd_vectors_defined(u, a, full_matrices)",
    vjp=SELF_ADJOINT,
    batch=_on_last_axes("u", 0),
    samples=["u[3, 3], np.zeros((3, 3)), True"],
)
define(
    nxrt.block_upper,
    "a, t",
    jvp={
        "a": "nxrt.block_upper(da, nxrt.zeros_like(da))",
        "t": "nxrt.block_upper(nxrt.zeros_like(dt), dt)",
    },
    vjp={"a": "nxrt.diagonal_blocks(g)", "t": "nxrt.upper_right(g)"},
    samples=["a[2, 2], t[2, 2]", "a[2, 3, 3], t[2, 3, 3]"],
)
define(
    nxrt.upper_right,
    "x",
    linear="nxrt.upper_right(x)",
    vjp="nxrt.block_upper(nxrt.zeros_like(g), g)",
    batch=_on_last_axes("x", 0),
    samples=["x[4, 4]", "x[2, 4, 4]"],
)
define(
    nxrt.diagonal_blocks,
    "x",
    linear="nxrt.diagonal_blocks(x)",
    vjp="nxrt.block_upper(g, nxrt.zeros_like(g))",
    batch=_on_last_axes("x", 0),
    samples=["x[4, 4]", "x[2, 4, 4]"],
)

define(
    linalg.cross,
    "a, b, *, axis=-1",
    jvp={"a": "np.cross(da, b)", "b": "np.cross(a, db)"},
    vjp={"a": "nxrt.unbroadcast(np.cross(b, g), a)", "b": "nxrt.unbroadcast(np.cross(g, a), b)"},
    by_constant={"axis": {-1: None}},
    samples=checked_elsewhere(TABLE),
)
