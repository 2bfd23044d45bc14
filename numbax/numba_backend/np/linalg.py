"""``numpy.linalg`` under jit, as NumPy has it: Numba's ``eig``/``eigvals`` of a real
matrix raise when an eigenvalue is complex (its result type is fixed when compiling):
numbax's return complex arrays, always (as NumPy does from 2.5 on, and JAX); Numba
compiles ``svd``, ``eigh``,
``eigvalsh``, ``qr``, ``pinv``, ``inv``, ``cholesky`` and ``solve`` of one 2-d matrix
only, and ``svd`` without ``compute_uv``; NumPy 2's ``svdvals``, ``matrix_norm``,
``outer``, ``tensordot``, ``trace``, ``matrix_transpose``, ``matmul`` and ``cross`` not
at all; its ``matrix_power`` is typed as possibly None. Each function here calls NumPy
when interpreted; its overload compiles the same call (LAPACK through Numba's own 2-d
implementation, once per matrix of a stack). The lowering redirects calls to the NumPy
functions here, by identity (``redirects.py``). ``np.linalg.norm``, ``det`` and
``slogdet`` are with ``np.trace`` in ``norms.py``; the products (``np.matmul``,
``np.tensordot``...) in ``products.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from numba.np import linalg as numba_linalg
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.generated import Code
from numbax.numba_backend.np import norms, products
from numbax.numba_backend.np._typing import _failing
from numbax.numba_backend.redirects import redirect
from numbax.runtime import nxrt

__all__ = [
    "cholesky",
    "cond",
    "cross",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
]


@redirect(np.linalg.svd)
def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """``np.linalg.svd``; under jit also of stacks and with ``compute_uv=False``."""
    return np.linalg.svd(a, full_matrices, compute_uv, hermitian)


@redirect(np.linalg.svdvals)
def svdvals(x: Any) -> Any:
    """``np.linalg.svdvals``: the singular values, of stacks too."""
    return np.linalg.svdvals(x)


@redirect(np.linalg.eigvals)
def eigvals(a: Any) -> Any:
    """``np.linalg.eigvals``; under jit complex for a real matrix too."""
    return np.linalg.eigvals(a)


@redirect(np.linalg.eig)
def eig(a: Any) -> Any:
    """``np.linalg.eig``; under jit complex for a real matrix too."""
    return np.linalg.eig(a)


@redirect(np.linalg.eigh)
def eigh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803  (NumPy's name)
    """``np.linalg.eigh`` (the lower triangle), of stacks too."""
    return np.linalg.eigh(a, UPLO)


@redirect(np.linalg.eigvalsh)
def eigvalsh(a: Any, UPLO: str = "L") -> Any:  # noqa: N803
    """``np.linalg.eigvalsh`` (the lower triangle), of stacks too."""
    return np.linalg.eigvalsh(a, UPLO)


@redirect(np.linalg.pinv)
def pinv(a: Any, rcond: Any = None, hermitian: bool = False) -> Any:
    """``np.linalg.pinv``, of stacks too (under jit, ``rcond`` one number)."""
    return np.linalg.pinv(a) if rcond is None else np.linalg.pinv(a, rcond, hermitian)


_fail = _failing("numbax: np.linalg.")


def _matrices(name: str, a: Any, complex_ok: bool = False) -> int:
    """The rank of an array of matrices (``complex_ok``: complex ones too, where Numba's
    2-d function takes them: decompositions of complex matrices, and the derivative of
    ``eigvals`` solves complex systems)."""
    if not isinstance(a, types.Array) or a.ndim < 2:
        raise _fail(name, f"expected an array of matrices (at least 2 dims), got {a}")
    kinds = (types.Float, types.Complex) if complex_ok else types.Float
    if not isinstance(a.dtype, kinds):
        raise _fail(name, f"expected floating matrices, got {a.dtype}")
    return a.ndim


def _constant(name: str, ty: Any, default: Any) -> Any:
    """The value of an argument that must be known when compiling."""
    if not isinstance(ty, types.Type):  # a default, as written in the signature
        return default if ty is None else ty
    if ty is None or isinstance(ty, (types.Omitted, types.NoneType)):
        return getattr(ty, "value", default)
    if isinstance(ty, (types.BooleanLiteral, types.IntegerLiteral, types.StringLiteral)):
        return ty.literal_value
    raise _fail(name, f"this argument must be a constant under jit, got {ty}")


def _stacked(name: str, header: str, ndim: int, call: str, names: list[str]) -> Any:
    """An implementation that applies ``call`` (Numba's 2-d function, on ``m``) to each
    matrix of ``a``, its results (``names``) stacked as ``a``'s matrices were."""
    code = Code(header, {"np": np}, "np.linalg")
    lead = [f"a.shape[{d}]" for d in range(ndim - 2)]
    code(f"s = np.ascontiguousarray(a).reshape((-1, a.shape[{ndim - 2}], a.shape[{ndim - 1}]))")
    code("first = " + call.replace("m)", "s[0])").replace("m,", "s[0],"))
    parts = [f"first[{j}]" for j in range(len(names))] if len(names) > 1 else ["first"]
    for n, part in zip(names, parts, strict=True):
        code(f"{n} = np.empty((s.shape[0],) + {part}.shape, {part}.dtype)")
    code(
        "for b in range(s.shape[0]):",
        f"    one = {call.replace('m)', 's[b])').replace('m,', 's[b],')}",
    )
    for j, n in enumerate(names):
        code(f"    {n}[b] = one[{j}]" if len(names) > 1 else f"    {n}[b] = one")
    results = []
    for n in names:
        results.append(f"{n}.reshape(({''.join(x + ', ' for x in lead)}) + {n}.shape[1:])")
    code("return " + (f"({', '.join(results)})" if len(results) > 1 else results[0]))
    return code.compile(name)


@overload(svd, prefer_literal=True)
def _svd_jit(a, full_matrices=True, compute_uv=True, hermitian=False):
    ndim = _matrices("svd", a, complex_ok=True)
    full = _constant("svd", full_matrices, True)
    uv = _constant("svd", compute_uv, True)
    if _constant("svd", hermitian, False):
        raise _fail("svd", "hermitian=True is not supported under jit")
    header = "def impl(a, full_matrices=True, compute_uv=True, hermitian=False):"
    call = f"np.linalg.svd(m, full_matrices={bool(full)})"
    if uv:
        outputs = ["u", "sv", "vh"]
        return _stacked("svd", header, ndim, call, outputs)
    return _stacked("svd", header, ndim, "np.linalg.svd(m, full_matrices=False)[1]", ["sv"])


@overload(svdvals)
def _svdvals_jit(x):
    _matrices("svdvals", x, complex_ok=True)
    return lambda x: svd(x, False, False)


@overload(eigh, prefer_literal=True)
def _eigh_jit(a, UPLO="L"):  # noqa: N803
    ndim = _matrices("eigh", a, complex_ok=True)
    if _constant("eigh", UPLO, "L") != "L":
        raise _fail("eigh", "only UPLO='L' is supported under jit")
    outputs = ["w", "v"]
    return _stacked("eigh", "def impl(a, UPLO='L'):", ndim, "np.linalg.eigh(m)", outputs)


def _real_eig(vectors: bool) -> Any:
    """The eigenvalues (and right eigenvectors) of one real square matrix as complex
    arrays, from LAPACK's real ``geev`` as NumPy calls it (so in NumPy's order): a
    complex pair's eigenvectors are stored as the real and imaginary parts in two
    consecutive columns."""
    numba_linalg.ensure_lapack()
    geev = numba_linalg._LAPACK().numba_ez_rgeev(types.float64)

    def impl(a):
        n = a.shape[-1]
        if a.shape[-2] != n:
            raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square.")
        numba_linalg._check_finite_matrix(a)
        acpy = numba_linalg._copy_to_fortran_order(a)
        ldvr = n if vectors else 1
        wr = np.empty(n, dtype=a.dtype)
        wi = np.empty(n, dtype=a.dtype)
        vl = np.empty((n, 1), dtype=a.dtype)
        vr = np.empty((n, ldvr), dtype=a.dtype)
        w = np.empty(n, dtype=np.complex128)
        v = np.empty((n, n), dtype=np.complex128)
        if n == 0:
            return w, v
        info = geev(
            100,  # ord("d"): double precision
            78,  # ord("N"): no left eigenvectors
            86 if vectors else 78,  # ord("V"): right eigenvectors, or none
            n,
            acpy.ctypes,
            n,
            wr.ctypes,
            wi.ctypes,
            vl.ctypes,
            1,
            vr.ctypes,
            ldvr,
        )
        numba_linalg._handle_err_maybe_convergence_problem(info)
        i = 0
        while i < n:
            w[i] = complex(wr[i], wi[i])
            if wi[i] == 0.0 or i + 1 == n:
                if vectors:
                    for j in range(n):
                        v[j, i] = vr[i, j]
                i += 1
                continue
            w[i + 1] = complex(wr[i + 1], wi[i + 1])
            if vectors:  # vr's rows are the columns of LAPACK's Fortran-ordered result
                for j in range(n):
                    v[j, i] = complex(vr[i, j], vr[i + 1, j])
                    v[j, i + 1] = complex(vr[i, j], -vr[i + 1, j])
            i += 2
        numba_linalg._dummy_liveness_func([acpy.size, vl.size, vr.size, wr.size, wi.size])
        return w, v

    return impl


def _eig_overload(name: str, vectors: bool) -> Any:
    def typer(a):
        if not isinstance(a, types.Array) or a.ndim != 2:
            raise _fail(name, f"expected one square matrix, got {a}")
        if isinstance(a.dtype, types.Complex):
            if vectors:
                return lambda a: np.linalg.eig(a)
            return lambda a: np.linalg.eigvals(a)
        if a.dtype != types.float64:
            raise _fail(name, f"expected float64 or complex matrices, got {a.dtype}")
        real = register_jitable(_real_eig(vectors))
        if vectors:
            return lambda a: real(a)
        return lambda a: real(a)[0]

    return typer


overload(eigvals)(_eig_overload("eigvals", vectors=False))
overload(eig)(_eig_overload("eig", vectors=True))


@overload(eigvalsh, prefer_literal=True)
def _eigvalsh_jit(a, UPLO="L"):  # noqa: N803
    ndim = _matrices("eigvalsh", a, complex_ok=True)
    if _constant("eigvalsh", UPLO, "L") != "L":
        raise _fail("eigvalsh", "only UPLO='L' is supported under jit")
    return _stacked("eigvalsh", "def impl(a, UPLO='L'):", ndim, "np.linalg.eigvalsh(m)", ["w"])


@overload(pinv)
def _pinv_jit(a, rcond=None, hermitian=False):
    ndim = _matrices("pinv", a, complex_ok=True)
    header = "def impl(a, rcond=None, hermitian=False):"
    if rcond is None or isinstance(rcond, (types.Omitted, types.NoneType)):
        return _stacked("pinv", header, ndim, "np.linalg.pinv(m)", ["p"])
    if not isinstance(rcond, (types.Float, types.Integer)):
        raise _fail("pinv", f"rcond must be a number under jit (one for every matrix), got {rcond}")
    # singular values up to rcond times the largest are dropped, as NumPy's
    return _stacked("pinv", header, ndim, "np.linalg.pinv(m, float(rcond))", ["p"])


@redirect(np.linalg.matrix_norm)
def matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    """``np.linalg.matrix_norm``: ``np.linalg.norm`` over the last two axes."""
    return np.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)


@overload(matrix_norm, prefer_literal=True)
def _matrix_norm_jit(x, keepdims=False, ord="fro"):
    def impl(x, keepdims=False, ord="fro"):
        return norms.norm(x, ord, (-2, -1), keepdims)

    return impl


@redirect(np.linalg.qr)
def qr(a: Any, mode: str = "reduced") -> Any:
    """``np.linalg.qr`` (reduced), of stacks too."""
    return np.linalg.qr(a, mode)


@overload(qr, prefer_literal=True)
def _qr_jit(a, mode="reduced"):
    ndim = _matrices("qr", a, complex_ok=True)
    if _constant("qr", mode, "reduced") != "reduced":
        raise _fail("qr", "only mode='reduced' is supported under jit")
    return _stacked("qr", "def impl(a, mode='reduced'):", ndim, "np.linalg.qr(m)", ["q", "r"])


# NumPy 2's numpy.linalg spellings of functions numbax compiles already.


@redirect(np.linalg.outer, name="linalg_outer")
def outer(x1: Any, x2: Any) -> Any:
    """``np.linalg.outer``: the outer product of two vectors."""
    return np.linalg.outer(x1, x2)


@overload(outer)
def _outer_jit(x1, x2):
    return lambda x1, x2: np.outer(x1, x2)


@redirect(np.linalg.tensordot, name="linalg_tensordot")
def tensordot(x1: Any, x2: Any, axes: Any = 2) -> Any:
    """``np.linalg.tensordot``: ``np.tensordot``."""
    return np.linalg.tensordot(x1, x2, axes=axes)


@overload(tensordot, prefer_literal=True)
def _tensordot_jit(x1, x2, axes=2):
    return lambda x1, x2, axes=2: products.tensordot(x1, x2, axes)


@redirect(np.linalg.trace, name="linalg_trace")
def trace(x: Any, offset: int = 0, dtype: Any = None) -> Any:
    """``np.linalg.trace``: the traces of the matrices of the last two axes."""
    return np.linalg.trace(x, offset=offset, dtype=dtype)


@overload(trace)
def _trace_jit(x, offset=0, dtype=None):
    return lambda x, offset=0, dtype=None: norms.trace(x, offset, -2, -1)


@redirect(np.linalg.matrix_transpose, name="linalg_matrix_transpose")
def matrix_transpose(x: Any) -> Any:
    """``np.linalg.matrix_transpose``: the last two axes swapped."""
    return np.linalg.matrix_transpose(x)


@overload(matrix_transpose)
def _matrix_transpose_jit(x):
    return lambda x: nxrt.matrix_transpose(x)


@redirect(np.linalg.matrix_power)
def matrix_power(a: Any, n: int) -> Any:
    """``np.linalg.matrix_power``; under jit an array always (Numba's may be None to its
    typing), of stacks too."""
    return np.linalg.matrix_power(a, n)


@overload(matrix_power)
def _matrix_power_jit(a, n):
    ndim = _matrices("matrix_power", a)
    if not isinstance(n, types.Integer):
        raise _fail("matrix_power", f"the exponent must be an integer, got {n}")
    T = a.dtype  # noqa: N806

    def impl(a, n):
        k = a.shape[ndim - 1]
        s = np.ascontiguousarray(a).reshape((-1, a.shape[ndim - 2], k))
        out = np.empty(s.shape, T)
        for b in range(s.shape[0]):
            p = np.linalg.inv(s[b]) if n < 0 else s[b].copy()
            e = -n if n < 0 else n
            r = np.eye(k, dtype=T)
            while e > 0:  # by squaring, as NumPy
                if e & 1:
                    r = r @ p
                p = p @ p
                e >>= 1
            out[b] = r
        return out.reshape(a.shape)

    return impl


@redirect(np.linalg.matmul, name="linalg_matmul")
def matmul(x1: Any, x2: Any) -> Any:
    """``np.linalg.matmul``: ``np.matmul``."""
    return np.linalg.matmul(x1, x2)


@overload(matmul)
def _matmul_jit(x1, x2):
    return lambda x1, x2: products.matmul(x1, x2)


@redirect(np.linalg.cross, name="linalg_cross")
def cross(x1: Any, x2: Any, axis: int = -1) -> Any:
    """``np.linalg.cross``: ``np.cross`` of 3-vectors."""
    return np.linalg.cross(x1, x2, axis=axis)


@overload(cross)
def _cross_jit(x1, x2, axis=-1):
    return lambda x1, x2, axis=-1: np.cross(x1, x2)


# inv, cholesky and solve: Numba's take one matrix; derivative code calls them on stacks.


@redirect(np.linalg.inv)
def inv(a: Any) -> Any:
    """``np.linalg.inv``, of stacks too."""
    return np.linalg.inv(a)


@overload(inv)
def _inv_jit(a):
    return _stacked(
        "inv", "def impl(a):", _matrices("inv", a, complex_ok=True), "np.linalg.inv(m)", ["x"]
    )


@redirect(np.linalg.cholesky)
def cholesky(a: Any) -> Any:
    """``np.linalg.cholesky`` (the lower factor), of stacks too."""
    return np.linalg.cholesky(a)


@overload(cholesky)
def _cholesky_jit(a):
    ndim = _matrices("cholesky", a, complex_ok=True)
    return _stacked("cholesky", "def impl(a):", ndim, "np.linalg.cholesky(m)", ["x"])


@redirect(np.linalg.solve)
def solve(a: Any, b: Any) -> Any:
    """``np.linalg.solve``, of stacks too (NumPy 2: ``b`` is a vector if it is 1-d, else
    a stack of matrices whose stack is ``a``'s)."""
    return np.linalg.solve(a, b)


@overload(solve)
def _solve_jit(a, b):
    na = _matrices("solve", a, complex_ok=True)
    if not isinstance(b, types.Array) or not isinstance(b.dtype, (types.Float, types.Complex)):
        raise _fail("solve", f"b must be a floating array, got {b}")
    nb = b.ndim
    dt = np.result_type(as_dtype(a.dtype), as_dtype(b.dtype))  # known when typing
    if na == 2 and nb <= 2:
        return lambda a, b: np.linalg.solve(a, b)
    if na == 2:  # one matrix, a stack of right-hand sides

        def one_matrix(a, b):
            s = np.ascontiguousarray(b).reshape((-1, b.shape[nb - 2], b.shape[nb - 1]))
            out = np.empty(s.shape, dt)
            for k in range(s.shape[0]):
                out[k] = np.linalg.solve(a, s[k])
            return out.reshape(b.shape)

        return one_matrix
    if nb != 1 and nb != na:
        raise _fail("solve", f"a stack of {na} dims and b of {nb} dims: broadcast them first")

    def stack(a, b):
        s = np.ascontiguousarray(a).reshape((-1, a.shape[na - 2], a.shape[na - 1]))
        if nb == 1:
            out = np.empty((s.shape[0], b.shape[0]), dt)
            for k in range(s.shape[0]):
                out[k] = np.linalg.solve(s[k], b)
            return out.reshape(a.shape[:-1])
        r = np.ascontiguousarray(b).reshape((s.shape[0], b.shape[nb - 2], b.shape[nb - 1]))
        out = np.empty(r.shape, dt)
        for k in range(s.shape[0]):
            out[k] = np.linalg.solve(s[k], r[k])
        return out.reshape(b.shape)

    return stack


@redirect(np.linalg.cond)
def cond(x: Any, p: Any = None) -> Any:
    """``np.linalg.cond``; under jit of stacks too for the 2-norm one (``p=None``)."""
    return np.linalg.cond(x, p)


@overload(cond)
def _cond_jit(x, p=None):
    ndim = _matrices("cond", x, complex_ok=True)
    if not (p is None or isinstance(p, (types.Omitted, types.NoneType))):
        if ndim != 2:
            raise _fail("cond", "only p=None is supported for stacks under jit")
        return lambda x, p=None: np.linalg.cond(x, p)

    def impl(x, p=None):
        s = svd(x, False, False)
        return s[..., 0] / s[..., -1]

    return impl
