"""NumPy functions that Numba lacks, or compiles with other semantics, done as NumPy does.

numbax promises that a function which runs under NumPy runs the same once jitted, and
its automatic differentiation emits these functions in the code it generates, so each
must compile. Numba 0.68 falls short for the functions here, in one of three ways:

* missing altogether: ``np.matmul``, ``np.inner``, ``np.tensordot``, ``np.einsum``,
  ``np.squeeze``, ``np.tile``;
* missing arguments: ``np.linalg.norm`` has no ``axis``/``keepdims`` and no ``'fro'``;
  ``np.flip``, ``np.roll`` and ``np.repeat`` take no ``axis``; ``np.expand_dims`` no
  tuple of axes; ``np.concatenate`` no ``axis=None``; ``np.concatenate``, ``np.stack``,
  ``np.hstack`` and ``np.vstack`` no list of arrays; ``np.trace`` no array of more than
  two dimensions; ``np.dot`` no scalar and no array of more than two dimensions;
  ``np.vdot`` only vectors; ``np.atleast_1d`` and ``np.atleast_2d`` no scalar;
  indexing takes no list (``a[[2, 0]]``, an array of its items in NumPy);
  ``np.clip`` no scalar, no bounds of more dims than ``a``, and it keeps ``a``'s dtype
  (NumPy promotes) and ignores NaN bounds;
* other result dtypes: float32 in gives float64 out of ``np.linalg.norm``, ``np.trace``,
  ``np.linalg.det``, ``np.linalg.slogdet``, and of ``np.sinc`` and ``np.angle`` on
  scalars.

numbax's code generator redirects calls that resolve to those NumPy functions to the
functions of this module (see ``runtime.py``). Each public function here, called from
plain Python, simply calls NumPy. A ``numba.extending.overload`` registered on that numbax
function (never on the NumPy function itself: Numba's own functions are left alone)
compiles the same call in nopython mode with NumPy's semantics, delegating to Numba's own
implementation for the cases where that one is right. Where NumPy returns a view, the
compiled function may return a copy.

What Numba must know when it compiles, because the rank of the result depends on it, is
taken from the argument types: how many axes an ``axis`` tuple names (their values may
be run-time values), whether ``keepdims`` is set, an ``int`` ``axes`` of ``tensordot``
and the subscripts of ``einsum`` (those three are made compile-time constants with
``numba.literally`` when they are not). ``np.squeeze`` without ``axis`` cannot compile:
the rank of its result depends on the array's shape, which Numba does not know. Nor can
a list as ``axes`` of ``tensordot`` (``axes=([1], [0])``): Numba does not know a list's
length; a tuple works.

Contractions (``dot``, ``matmul``, ``inner``, ``tensordot``, ``einsum``) end in one
matrix product of the operands reshaped to matrices (BLAS for floats, as NumPy), or one
per matrix of a stack; axes known when compiling are built into the code, so 1-d and 2-d
operands reach BLAS without a copy. ``einsum`` subscripts that are no such product
(traces, diagonals, sums over one operand, three operands) compile to one loop nest.

Compiling is what these cost: Numba's ``np.transpose(x, axes)`` and ``np.moveaxis`` with
a run-time axis take seconds, so the code here transposes with the array method.
"""

from __future__ import annotations

import builtins
import functools
import operator
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.generated import Code
from numbax.numba_backend.loops.matrix_product import is_blas_matrix_pair, matrix_product
from numbax.numba_backend.np import reductions
from numbax.numba_backend.np.reductions import _accumulating, _dtype_arg, _is_none
from numbax.numba_backend.np.weak import weak_target
from numbax.numba_backend.redirects import redirect
from numbax.runtime.linalg import einsum_terms

__all__ = [
    "angle",
    "atleast_1d",
    "atleast_2d",
    "clip",
    "concatenate",
    "det",
    "dot",
    "einsum",
    "expand_dims",
    "flip",
    "hstack",
    "inner",
    "matmul",
    "norm",
    "repeat",
    "reshape",
    "roll",
    "sinc",
    "slogdet",
    "squeeze",
    "stack",
    "tensordot",
    "tile",
    "trace",
    "vdot",
    "vstack",
]

AxisArg = int | tuple[int, ...] | None

# ---------------------------------------------------------------------------------------
# The public functions: plain NumPy when interpreted.
# ---------------------------------------------------------------------------------------


@redirect(np.sinc)
def sinc(x: Any) -> Any:
    """``np.sinc(x)``; under jit float32 scalars stay float32 (Numba's give float64)."""
    return np.sinc(x)


@redirect(np.angle)
def angle(z: Any, deg: bool = False) -> Any:
    """``np.angle(z, deg)``; under jit float32 scalars stay float32."""
    return np.angle(z, deg=deg)


@redirect(np.clip)
def clip(
    a: Any,
    a_min: Any = np._NoValue,
    a_max: Any = np._NoValue,
    out: Any = None,
    *,
    min: Any = np._NoValue,
    max: Any = np._NoValue,
) -> Any:
    """``np.clip``, also of scalars and with NumPy 2's ``min=``/``max=`` under jit."""
    return np.clip(a, a_min, a_max, out=out, min=min, max=max)


@redirect(np.linalg.norm)
def norm(x: Any, ord: Any = None, axis: AxisArg = None, keepdims: bool = False) -> Any:
    """``np.linalg.norm`` with every ``ord``, ``axis`` and ``keepdims`` under jit."""
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


@redirect(np.trace)
def trace(
    a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None, out: Any = None
) -> Any:
    """``np.trace``: NumPy's sum dtype (float32 stays float32), any ndim, under jit."""
    return np.trace(a, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype, out=out)


@redirect(np.dot)
def dot(a: Any, b: Any, out: Any = None) -> Any:
    """``np.dot``, also of scalars, integers and arrays of any ndim under jit."""
    return np.dot(a, b, out=out)


@redirect(np.matmul)
def matmul(a: Any, b: Any) -> Any:
    """``np.matmul``: stacks of matrices broadcast; 1-d operands are vectors."""
    return np.matmul(a, b)


@redirect(np.vdot)
def vdot(a: Any, b: Any) -> Any:
    """``np.vdot``: the dot product of the flattened arrays, ``a`` conjugated."""
    return np.vdot(a, b)


@redirect(np.inner)
def inner(a: Any, b: Any) -> Any:
    """``np.inner``: contracts the last axes of ``a`` and ``b``."""
    return np.inner(a, b)


@redirect(np.tensordot)
def tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    """``np.tensordot`` with ``axes`` an int, or a pair of ints or of tuples of ints."""
    return np.tensordot(a, b, axes=axes)


@redirect(np.einsum)
def einsum(subscripts: str, *operands: Any) -> Any:
    """``np.einsum``; under jit ``subscripts`` must be a constant string."""
    return np.einsum(subscripts, *operands)


@redirect(np.linalg.det)
def det(a: Any) -> Any:
    """``np.linalg.det``, float32 staying float32 and stacks of matrices, under jit."""
    return np.linalg.det(a)


@redirect(np.linalg.slogdet)
def slogdet(a: Any) -> Any:
    """``np.linalg.slogdet`` as a ``(sign, logabsdet)`` tuple of the input's precision."""
    return np.linalg.slogdet(a)


@redirect(np.reshape)
def reshape(a: Any, shape: Any = None, order: str = "C", *, copy: Any = None) -> Any:
    """``np.reshape``; under jit in C order, and a non-contiguous array (a transpose, a
    strided slice) reshaped from a C-ordered copy of it: Numba reshapes contiguous
    arrays only, and raised ``NotImplementedError`` at run time for the others."""
    return np.reshape(a, shape, order=order, copy=copy)


@redirect(np.squeeze)
def squeeze(a: Any, axis: AxisArg = None) -> Any:
    """``np.squeeze``; under jit ``axis`` is required (an int or a tuple of ints)."""
    return np.squeeze(a, axis=axis)


@redirect(np.expand_dims)
def expand_dims(a: Any, axis: int | tuple[int, ...]) -> Any:
    """``np.expand_dims`` with an int or a tuple of axes."""
    return np.expand_dims(a, axis)


@redirect(np.concatenate)
def concatenate(
    arrays: Any,
    axis: int | None = 0,
    out: Any = None,
    *,
    dtype: Any = None,
    casting: str = "same_kind",
) -> Any:
    """``np.concatenate`` of a tuple or a list, with ``axis=None`` too, under jit."""
    return np.concatenate(arrays, axis=axis, out=out, dtype=dtype, casting=casting)


@redirect(np.stack)
def stack(arrays: Any, axis: int = 0, out: Any = None) -> Any:
    """``np.stack`` of a tuple or a list of arrays."""
    return np.stack(arrays, axis=axis, out=out)


@redirect(np.hstack)
def hstack(tup: Any) -> Any:
    """``np.hstack`` of a tuple or a list of arrays."""
    return np.hstack(tup)


@redirect(np.vstack)
def vstack(tup: Any) -> Any:
    """``np.vstack`` of a tuple or a list of arrays."""
    return np.vstack(tup)


@redirect(np.flip)
def flip(m: Any, axis: AxisArg = None) -> Any:
    """``np.flip`` with ``axis`` None, an int or a tuple of ints."""
    return np.flip(m, axis=axis)


@redirect(np.roll)
def roll(a: Any, shift: Any, axis: AxisArg = None) -> Any:
    """``np.roll`` with ``axis`` None, an int or a tuple (and ``shift`` to match)."""
    return np.roll(a, shift, axis=axis)


@redirect(np.tile)
def tile(A: Any, reps: int | tuple[int, ...]) -> Any:  # noqa: N803 - NumPy's name
    """``np.tile`` with ``reps`` an int or a tuple of ints."""
    return np.tile(A, reps)


@redirect(np.repeat)
def repeat(a: Any, repeats: Any, axis: int | None = None) -> Any:
    """``np.repeat`` with ``axis`` None or an int, ``repeats`` an int or 1-d array."""
    return np.repeat(a, repeats, axis=axis)


@redirect(np.atleast_1d)
def atleast_1d(*arys: Any) -> Any:
    """``np.atleast_1d``, of scalars too under jit."""
    return np.atleast_1d(*arys)


@redirect(np.atleast_2d)
def atleast_2d(*arys: Any) -> Any:
    """``np.atleast_2d``, of scalars too under jit."""
    return np.atleast_2d(*arys)


# ---------------------------------------------------------------------------------------
# Typing-time helpers.
# ---------------------------------------------------------------------------------------


def _fail(name: str, message: str) -> errors.NumbaTypeError:
    """A typing error naming the function, reported by Numba at the user's call."""
    return errors.NumbaTypeError(f"numbax numpy_extra.{name}: {message}")


def _is_number(ty: Any) -> bool:
    return isinstance(ty, types.Number | types.Boolean)


def _scalar_type(name: str, ty: Any) -> types.Type:
    """The element type of an array or scalar argument."""
    if isinstance(ty, types.Array):
        return ty.dtype
    if _is_number(ty):
        return types.unliteral(ty)
    raise _fail(name, f"expected an array or a number, got {ty}")


def _promote(*tys: types.Type) -> types.Type:
    """NumPy's result dtype of these element types."""
    return from_dtype(np.result_type(*(as_dtype(t) for t in tys)))


def _inexact(dt: types.Type) -> types.Type:
    """The dtype NumPy computes in for float functions: ints and bools become float64."""
    return dt if isinstance(dt, types.Float | types.Complex) else types.float64


def _real(dt: types.Type) -> types.Type:
    """The real type of a float or complex type."""
    return dt.underlying_float if isinstance(dt, types.Complex) else dt


def _npt(ty: types.Type) -> Any:
    """The NumPy scalar type of a Numba type (callable in jitted code, as a cast)."""
    return as_dtype(ty).type


def _blas(dt: types.Type) -> bool:
    """Whether Numba's ``np.dot`` (BLAS) takes this dtype."""
    return dt in (types.float32, types.float64, types.complex64, types.complex128)


def _axis_count(name: str, axis: Any, what: str = "axis") -> int:
    """How many axes an int or tuple-of-ints argument names (a compile-time fact)."""
    if isinstance(axis, types.Integer) and not isinstance(axis, types.Boolean):
        return 1
    if isinstance(axis, types.BaseTuple) and builtins.all(
        isinstance(t, types.Integer) and not isinstance(t, types.Boolean) for t in axis.types
    ):
        return len(axis.types)
    if isinstance(axis, types.List):
        raise _fail(
            name,
            f"{what} must be an int or a tuple of ints under jit, got a list: Numba does not "
            "know a list's length when it compiles; write a tuple",
        )
    raise _fail(name, f"{what} must be an int or a tuple of ints, got {axis}")


def _axis_items(var: str, axis: Any) -> list[str]:
    """Source expressions for the ints of an int or tuple-of-ints argument ``var``."""
    if isinstance(axis, types.Integer):
        return [var]
    return [f"{var}[{j}]" for j in range(len(axis.types))]


def _literal_int(ty: Any) -> int | None:
    """The value of a compile-time int (literal or omitted default), else None."""
    if isinstance(ty, types.IntegerLiteral):
        return ty.literal_value
    if isinstance(ty, types.Omitted) and isinstance(ty.value, int):
        return ty.value
    if isinstance(ty, int) and not isinstance(ty, bool):
        return ty
    return None


def _wants_literal_int(ty: Any) -> bool:
    return isinstance(ty, types.Integer) and not isinstance(
        ty, types.IntegerLiteral | types.Boolean
    )


def _tuple(items: Any) -> str:
    """Source of a tuple of these source items."""
    items = list(items)
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


# ---------------------------------------------------------------------------------------
# Generated implementations.
# ---------------------------------------------------------------------------------------


def _code(header: str, **names: Any) -> Code:
    """An implementation built line by line, defined with the helpers generated code
    calls (``_HELPERS``) and ``names``; Numba compiles what the overload returns."""
    return Code(header, _HELPERS, "numpy_extra", **names)


def _normalize_axes(code: Code, items: list[str], ndim: int, out: str = "axes") -> None:
    """Emit ``out``: the axes ``items`` counted from the front, checked as NumPy does."""
    code(f"{out} = np.empty({builtins.max(len(items), 1)}, np.intp)")
    for j, item in enumerate(items):
        code(f"{out}[{j}] = _normalize({item}, {ndim})")
    if len(items) > 1:
        code(f"_check_unique({out}, {len(items)})")


def _front(code: Code, src: str, axis: str, ndim: int, out: str) -> None:
    """Emit ``out``: a view of ``src`` (of ``ndim`` dims) with the axis ``axis`` (a
    normalized run-time value) moved to the front, the others in order.

    Numba's ``np.moveaxis`` with a run-time axis, like ``np.transpose(x, axes)``, takes
    seconds to compile; the array method ``x.transpose(axes)`` does not.
    """
    if ndim == 1:
        code(f"{out} = {src}")
        return
    code(f"perm_ = np.empty({ndim}, np.intp)", f"perm_[0] = {axis}", "j_ = 1")
    code(f"for d_ in range({ndim}):", f"    if d_ != {axis}:", "        perm_[j_] = d_")
    code("        j_ += 1", f"{out} = {src}.transpose(to_fixed_tuple(perm_, {ndim}))")


# ---------------------------------------------------------------------------------------
# Jitted helpers shared by the implementations.
# ---------------------------------------------------------------------------------------


@register_jitable
def _normalize(axis, ndim):
    """``axis`` counted from the front; NumPy's AxisError when out of range."""
    if axis < -ndim or axis >= ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis + ndim if axis < 0 else axis


@register_jitable
def _check_unique(axes, count):
    """NumPy's ValueError for an axis named twice."""
    for i in range(count):
        for j in range(i):
            if axes[i] == axes[j]:
                raise ValueError("repeated axis")


@register_jitable
def _vector_norms(mag, p):
    """Norms of order ``p`` of the vectors ``mag[i, :, k]`` (magnitudes), as NumPy's
    ``norm`` computes them (``max``/``min`` propagate NaN); sums accumulate in float64."""
    pre, n, post = mag.shape
    out = np.empty((pre, post), mag.dtype)
    if n == 0 and (p == np.inf or p == -np.inf):
        raise ValueError("zero-size array to reduction operation which has no identity")
    for i in range(pre):
        for k in range(post):
            if p == np.inf or p == -np.inf:
                r = mag[i, 0, k]
                for j in range(1, n):
                    v = mag[i, j, k]
                    r = np.maximum(r, v) if p > 0 else np.minimum(r, v)
                out[i, k] = r
                continue
            s = 0.0
            for j in range(n):
                v = np.float64(mag[i, j, k])
                if p == 0:
                    s += v != 0
                elif p == 1:
                    s += v
                elif p == 2:
                    s += v * v
                else:
                    s += v ** np.float64(p)
            if p == 2:
                s = np.sqrt(s)
            elif p != 0 and p != 1:
                s = s ** (1.0 / np.float64(p))
            out[i, k] = s
    return out


@register_jitable
def _matrix_sum_norm(m, p):
    """The matrix norm of order ``p`` = +-1 (column sums) or +-inf (row sums)."""
    rows, cols = m.shape
    if p == 1 or p == -1:
        sums = np.zeros(cols, np.float64)
        for i in range(rows):
            for j in range(cols):
                sums[j] += np.abs(m[i, j])
    elif p == np.inf or p == -np.inf:
        sums = np.zeros(rows, np.float64)
        for i in range(rows):
            for j in range(cols):
                sums[i] += np.abs(m[i, j])
    else:
        raise ValueError("Invalid norm order for matrices.")
    return sums.max() if p > 0 else sums.min()


@register_jitable
def _matrix_svd_norm(m, p, nuc):
    """The matrix norm of order ``p`` = +-2, or if ``nuc`` the nuclear norm (by SVD)."""
    s = np.linalg.svd(m, full_matrices=False)[1]
    return s.sum() if nuc else (s.max() if p > 0 else s.min())


@register_jitable
def _matrix_norm(m, p):
    """The matrix norm of an order ``p`` known only at run time."""
    if p == 2 or p == -2:
        return _matrix_svd_norm(m, p, False)
    return _matrix_sum_norm(m, p)


def _gemm(a: Any, b: Any) -> Any:
    """The product of two 2-d arrays of one dtype (BLAS for floats, loops for ints)."""
    return np.dot(a, b)


@overload(_gemm)
def _gemm_jit(a, b):
    dt = a.dtype
    if is_blas_matrix_pair(a, b):
        return lambda a, b: matrix_product(a, b)
    if _blas(dt):
        return lambda a, b: np.dot(a, b)
    acc = types.int64 if isinstance(dt, types.Boolean) else dt
    to_bool = isinstance(dt, types.Boolean)

    def impl(a, b):
        m, k = a.shape
        n = b.shape[1]
        out = np.zeros((m, n), acc)
        for i in range(m):
            for p in range(k):
                x = acc(a[i, p])
                for j in range(n):
                    out[i, j] += x * acc(b[p, j])
        if to_bool:
            return out != 0
        return out

    return impl


def _gemm_into(a: Any, b: Any, out: Any) -> None:
    """``out[...] = a @ b`` for 2-d arrays of ``out``'s dtype, ``out`` C-contiguous."""
    out[...] = np.dot(a, b)


@overload(_gemm_into)
def _gemm_into_jit(a, b, out):
    if _blas(out.dtype):
        return lambda a, b, out: np.dot(a, b, out)

    def impl(a, b, out):
        out[...] = _gemm(a, b)

    return impl


_HELPERS = {
    "np": np,
    "numba": numba,
    "reductions": reductions,
    "to_fixed_tuple": to_fixed_tuple,
    "_normalize": _normalize,
    "_check_unique": _check_unique,
    "_gemm": _gemm,
    "_gemm_into": _gemm_into,
    "_vector_norms": _vector_norms,
    "_matrix_norm": _matrix_norm,
    "_matrix_sum_norm": _matrix_sum_norm,
    "_matrix_svd_norm": _matrix_svd_norm,
}


# ---------------------------------------------------------------------------------------
# Elementwise: sinc, angle, clip.
# ---------------------------------------------------------------------------------------


@register_jitable
def _sinc1(v, pi, tiny):
    """NumPy's formula: ``sin(y) / y`` with ``y = pi * x``, ``x = 0`` replaced by 1e-20."""
    y = pi * (tiny if v == 0 else v)
    return np.sin(y) / y


@overload(sinc)
def _sinc_jit(x):
    dt = _inexact(_scalar_type("sinc", x))
    cast = _npt(dt)
    pi, tiny = cast(np.pi), cast(1e-20)
    if not isinstance(x, types.Array):
        return lambda x: _sinc1(cast(x), pi, tiny)

    def impl(x):
        src = x.ravel()
        out = np.empty(src.size, cast)
        for i in range(src.size):
            out[i] = _sinc1(cast(src[i]), pi, tiny)
        return out.reshape(x.shape)

    return impl


@overload(angle)
def _angle_jit(z, deg=False):
    dt = _scalar_type("angle", z)
    real = _real(_inexact(dt))
    cast = _npt(real)
    zero, degrees = cast(0), cast(180 / np.pi)
    if isinstance(dt, types.Complex):

        @register_jitable
        def one(v):
            return np.arctan2(v.imag, v.real)

    else:

        @register_jitable
        def one(v):
            return np.arctan2(zero, cast(v))

    if not isinstance(z, types.Array):

        def scalar(z, deg=False):
            r = one(z)
            return r * degrees if deg else r

        return scalar

    def impl(z, deg=False):
        src = z.ravel()
        out = np.empty(src.size, cast)
        for i in range(src.size):
            out[i] = one(src[i])
        if deg:
            out *= degrees
        return out.reshape(z.shape)

    return impl


def _bound_type(bound: Any, a: Any) -> types.Type:
    """A scalar bound next to array ``a`` adapts to it, as a Python scalar does in NumPy 2
    (``weak.py``): a bound written as a keyword is not wrapped by the code generator."""
    if isinstance(a, types.Array) and _is_number(bound):
        return weak_target(types.unliteral(bound), a) or types.unliteral(bound)
    return _scalar_type("clip", bound)


@overload(clip)
def _clip_jit(a, a_min=None, a_max=None, out=None, min=None, max=None):
    if not _is_none(a_min) and not _is_none(min):
        raise _fail("clip", "pass a_min or min, not both")
    if not _is_none(a_max) and not _is_none(max):
        raise _fail("clip", "pass a_max or max, not both")
    bounds = [
        (expr, ty)
        for expr, ty in (("a_min", a_min), ("min", min), ("a_max", a_max), ("max", max))
        if not _is_none(ty)
    ]
    lo = next((e for e, _ in bounds if e in ("a_min", "min")), None)
    hi = next((e for e, _ in bounds if e in ("a_max", "max")), None)
    result = _promote(_scalar_type("clip", a), *(_bound_type(t, a) for _, t in bounds))
    code = _code("def impl(a, a_min=None, a_max=None, out=None, min=None, max=None):")
    code.names["T"] = _npt(result)
    steps = ([f"v = np.maximum(v, {lo})"] if lo else []) + (
        [f"v = np.minimum(v, {hi})"] if hi else []
    )
    if builtins.all(_is_number(t) for _, t in bounds):
        # Scalar bounds: one pass, NaN propagating as in np.minimum(np.maximum(a, lo), hi).
        code(*(f"{e} = T({e})" for e, _ in bounds))
        if not isinstance(a, types.Array):
            if not _is_none(out):
                raise _fail("clip", "out= needs an array a")
            code("v = T(a)", *steps, "return v")
            return code.compile("clip")
        code("src = a.ravel()", "r = np.empty(src.size, T)", "for i in range(src.size):")
        code("    v = T(src[i])", *("    " + step for step in steps), "    r[i] = v")
        code("r = r.reshape(a.shape)")
    else:
        # Array bounds broadcast with a, as the ufuncs do.
        code("v = a", *steps, "r = np.asarray(v).astype(T)")
    if _is_none(out):
        code("return r")
    else:
        code("out[...] = r", "return out")
    return code.compile("clip")


# ---------------------------------------------------------------------------------------
# Contractions: dot, matmul, vdot, inner, tensordot, einsum.
# ---------------------------------------------------------------------------------------


def _operand(name: str, x: Any) -> types.Array:
    if not isinstance(x, types.Array):
        raise _fail(name, f"expected an array, got {x}")
    return x


def _as_matrix(x: str, ty: types.Array, perm: list[int], split: int, shape: str, cast: bool) -> str:
    """Source of ``x`` (of type ``ty``) with its axes in order ``perm``, the first
    ``split`` of them as rows, as a 2-d array of ``shape`` and dtype ``T``: the array
    itself or its ``.T`` when it already is one (Numba's ``np.dot`` takes C and Fortran
    order), else a C-ordered copy if needed."""
    if ty.ndim == 2 and split == 1 and ty.layout in "CF":
        base = f"{x}.astype(T)" if cast else x
        return base if perm == [0, 1] else f"{base}.T"
    moved = x if perm == sorted(perm) else f"{x}.transpose({_tuple(map(str, perm))})"
    return f"np.ascontiguousarray({moved}){'.astype(T)' if cast else ''}.reshape({shape})"


def _product(sizes: list[str]) -> str:
    return " * ".join(sizes) if sizes else "1"


@functools.cache
def _contraction(
    a: Any, b: Any, axes_a: tuple[Any, ...], axes_b: tuple[Any, ...], header: str
) -> Any:
    """``tensordot(a, b, (axes_a, axes_b))`` for arrays ``a`` and ``b``.

    Axes given as ints are known when compiling: the code has them built in and, for
    1-d and 2-d operands, hands them to ``np.dot`` without any copy. Axes given as source
    expressions (items of the arguments named in ``header``) are only known at run time:
    see ``_runtime_contraction``.
    """
    if not builtins.all(isinstance(x, int) for x in axes_a + axes_b):
        return _runtime_contraction(a, b, tuple(map(str, axes_a)), tuple(map(str, axes_b)), header)
    na, nb = a.ndim, b.ndim
    fixed_a, fixed_b = [], []
    for axes, ndim, fixed in ((axes_a, na, fixed_a), (axes_b, nb, fixed_b)):
        for axis in axes:
            if not -ndim <= axis < ndim:
                raise _fail("tensordot", f"axis {axis} is out of bounds for {ndim} dims")
            if axis % ndim in fixed:
                raise _fail("tensordot", "repeated axis")
            fixed.append(axis % ndim)
    result = _promote(a.dtype, b.dtype)
    code = _code(header, T=_npt(result))
    for x, y in zip(fixed_a, fixed_b, strict=True):
        code(f"if a.shape[{x}] != b.shape[{y}]:", "    raise ValueError('shape-mismatch for sum')")
    free_a = [d for d in range(na) if d not in fixed_a]
    free_b = [d for d in range(nb) if d not in fixed_b]
    m = _product([f"a.shape[{d}]" for d in free_a])
    k = _product([f"a.shape[{d}]" for d in fixed_a])
    n = _product([f"b.shape[{d}]" for d in free_b])
    a2 = _as_matrix("a", a, free_a + fixed_a, len(free_a), f"({m}, {k})", a.dtype != result)
    b2 = _as_matrix("b", b, fixed_b + free_b, len(fixed_b), f"({k}, {n})", b.dtype != result)
    code(f"a2 = {a2}", f"b2 = {b2}")
    code("c = _gemm(a2, b2)")
    shape = [f"a.shape[{d}]" for d in free_a] + [f"b.shape[{d}]" for d in free_b]
    if not shape:
        code("return c[0, 0]")
    elif len(free_a) == 1 and len(free_b) == 1:
        code("return c")
    else:
        code(f"return c.reshape({_tuple(shape)})")
    return code.compile("tensordot")


@functools.cache
def _runtime_contraction(
    a: Any, b: Any, axes_a: tuple[str, ...], axes_b: tuple[str, ...], header: str
) -> Any:
    """``tensordot(a, b, (axes_a, axes_b))`` with axes known at run time only.

    Axes are checked and the free axes found at run time; each operand is transposed to
    (free, contracted) or (contracted, free) order and reshaped to a matrix (a copy only
    when it is not already in that order in memory), and one matrix product (BLAS for
    floats) does the work.
    """
    na, nb, count = a.ndim, b.ndim, len(axes_a)
    result = _promote(a.dtype, b.dtype)
    rank = na + nb - 2 * count
    code = _code(header, T=_npt(result))
    code(f"pa = np.empty({builtins.max(na, 1)}, np.intp)")
    code(f"pb = np.empty({builtins.max(nb, 1)}, np.intp)")
    code(f"used_a = np.zeros({builtins.max(na, 1)}, np.bool_)")
    code(f"used_b = np.zeros({builtins.max(nb, 1)}, np.bool_)")
    code("k = 1")
    for j, (x, y) in enumerate(zip(axes_a, axes_b, strict=True)):
        code(f"x = _normalize({x}, {na})", f"y = _normalize({y}, {nb})")
        code("if used_a[x] or used_b[y]:", "    raise ValueError('repeated axis')")
        code("if a.shape[x] != b.shape[y]:", "    raise ValueError('shape-mismatch for sum')")
        code("used_a[x] = True", "used_b[y] = True", "k *= a.shape[x]")
        code(f"pa[{na - count + j}] = x", f"pb[{j}] = y")
    code(f"shape = np.empty({builtins.max(rank, 1)}, np.intp)")
    code("i = 0", "m = 1", f"for d in range({na}):", "    if not used_a[d]:")
    code("        pa[i] = d", "        shape[i] = a.shape[d]", "        m *= a.shape[d]")
    code("        i += 1")
    code(f"i = {count}", "n = 1", f"for d in range({nb}):", "    if not used_b[d]:")
    code("        pb[i] = d", f"        shape[i + {na - 2 * count}] = b.shape[d]")
    code("        n *= b.shape[d]", "        i += 1")
    for x, nx, rows_cols in (("a", na, "(m, k)"), ("b", nb, "(k, n)")):
        perm = f"to_fixed_tuple(p{x}, {nx})"
        cast = ".astype(T)" if (a if x == "a" else b).dtype != result else ""
        code(f"{x}2 = np.ascontiguousarray({x}.transpose({perm})).reshape({rows_cols}){cast}")
    code("c = _gemm(a2, b2)")
    code(f"return c.reshape(to_fixed_tuple(shape, {rank}))" if rank else "return c[0, 0]")
    return code.compile("tensordot")


@overload(tensordot, prefer_literal=True)
def _tensordot_jit(a, b, axes=2):
    a, b = _operand("tensordot", a), _operand("tensordot", b)
    header = "def impl(a, b, axes=2):"
    if isinstance(axes, types.Integer | types.Omitted | int):
        if _wants_literal_int(axes):
            return lambda a, b, axes=2: numba.literally(axes)
        n = _literal_int(axes)
        if n is None or n < 0 or n > builtins.min(a.ndim, b.ndim):
            raise _fail("tensordot", f"axes={n} does not fit arrays of {a.ndim} and {b.ndim} dims")
        axes_a = tuple(range(a.ndim - n, a.ndim))
        return _contraction(a, b, axes_a, tuple(range(n)), header)
    if not (isinstance(axes, types.BaseTuple) and len(axes.types) == 2):
        raise _fail("tensordot", f"axes must be an int or a pair, got {axes}")
    items = []
    for j, side in enumerate(axes.types):
        _axis_count("tensordot", side, "each of axes")
        # Constant ints (axes=(1, 0), or tuples of constants) are built in.
        sides = [side] if isinstance(side, types.Integer) else list(side.types)
        values = [_literal_int(t) for t in sides]
        if None in values:
            values = _axis_items(f"axes[{j}]", side)
        items.append(tuple(values))
    if len(items[0]) != len(items[1]):
        raise _fail("tensordot", "axes name different numbers of axes of a and b")
    return _contraction(a, b, items[0], items[1], header)


@overload(dot)
def _dot_jit(a, b, out=None):
    if not _is_none(out):
        raise _fail("dot", "out= is not supported under jit")
    if _is_number(a) or _is_number(b):
        return lambda a, b, out=None: a * b
    a, b = _operand("dot", a), _operand("dot", b)
    axes_b = (b.ndim - 2,) if b.ndim >= 2 else (0,)
    return _contraction(a, b, (a.ndim - 1,), axes_b, "def impl(a, b, out=None):")


@overload(inner)
def _inner_jit(a, b):
    if _is_number(a) or _is_number(b):
        return lambda a, b: a * b
    a, b = _operand("inner", a), _operand("inner", b)
    if a.ndim == 0 or b.ndim == 0:
        return lambda a, b: a * b
    return _contraction(a, b, (a.ndim - 1,), (b.ndim - 1,), "def impl(a, b):")


@overload(vdot)
def _vdot_jit(a, b):
    dt = _promote(_scalar_type("vdot", a), _scalar_type("vdot", b))
    conj = isinstance(_scalar_type("vdot", a), types.Complex)
    cast = _npt(dt)
    if _blas(dt) and isinstance(a, types.Array) and isinstance(b, types.Array):
        fix_a, fix_b = a.dtype != dt, b.dtype != dt

        def blas(a, b):
            x = np.ascontiguousarray(a).ravel()
            y = np.ascontiguousarray(b).ravel()
            x = x.astype(cast) if fix_a else x
            y = y.astype(cast) if fix_b else y
            if x.size != y.size:
                raise ValueError("vdot: vectors have different lengths")
            return np.dot(np.conj(x) if conj else x, y)

        return blas

    def loop(a, b):
        x = np.asarray(a).ravel()
        y = np.asarray(b).ravel()
        if x.size != y.size:
            raise ValueError("vdot: vectors have different lengths")
        s = cast(0)
        for i in range(x.size):
            u = cast(x[i])
            s += (np.conj(u) if conj else u) * cast(y[i])
        return s

    return loop


@overload(matmul)
def _matmul_jit(a, b):
    for x in (a, b):
        if not isinstance(x, types.Array) or x.ndim == 0:
            raise _fail("matmul", f"operands must be arrays of at least 1 dimension, got {x}")
    header = "def impl(a, b):"
    if a.ndim <= 2 and b.ndim <= 2:
        return _contraction(a, b, (a.ndim - 1,), (0,), header)
    return _batched_matmul(a, b)


@overload(operator.matmul)
def _matmul_operator_mixed(a, b):
    """``a @ b`` of arrays of two dtypes, which Numba's ``@`` refuses: NumPy promotes
    them (``float64 @ float32`` is float64), as :func:`matmul` does."""
    if not (isinstance(a, types.Array) and isinstance(b, types.Array)) or a.dtype == b.dtype:
        return None
    return lambda a, b: matmul(a, b)


def _list_index(a: Any, index: Any) -> bool:
    """Whether ``a[index]`` indexes an array with a list of integers or bools, which
    NumPy reads as an array of them and Numba refuses."""
    return (
        isinstance(a, types.Array)
        and isinstance(index, types.List)
        and isinstance(index.dtype, (types.Integer, types.Boolean))
    )


@overload(operator.getitem)
def _getitem_list(a, index):
    """``a[[2, 0, 2]]``, ``a[idx]`` with ``idx = [...]``: NumPy's indexing with the
    array of the list's items (a list of bools is a mask)."""
    if _list_index(a, index):
        return lambda a, index: a[np.array(index)]
    return None


@overload(operator.setitem)
def _setitem_list(a, index, value):
    """``a[[2, 0, 2]] = v``: as ``a[np.array([2, 0, 2])] = v`` (the last write of a
    repeated index stays, as in NumPy)."""
    if not _list_index(a, index):
        return None

    def impl(a, index, value):
        a[np.array(index)] = value

    return impl


@functools.cache
def _batched_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for stacks of matrices: the stack dims broadcast, a 1-d operand is a
    vector; one matrix product per matrix of the result."""
    result = _promote(a.dtype, b.dtype)
    code = _code("def impl(a, b):", T=_npt(result))
    ba, bb = builtins.max(a.ndim - 2, 0), builtins.max(b.ndim - 2, 0)
    rank = builtins.max(ba, bb)
    ca = ".astype(T)" if a.dtype != result else ""
    cb = ".astype(T)" if b.dtype != result else ""
    code(f"x = np.ascontiguousarray(a){ca}", f"y = np.ascontiguousarray(b){cb}")
    if a.ndim == 1:
        code("x = x.reshape((1, x.shape[0]))")
    if b.ndim == 1:
        code("y = y.reshape((y.shape[0], 1))")
    code(f"if x.shape[{ba + 1}] != y.shape[{bb}]:")
    code("    raise ValueError('matmul: Input operand 1 has a mismatch in its core dimension')")
    sizes = []
    for d in range(rank):
        da, db = d - (rank - ba), d - (rank - bb)
        sa = f"x.shape[{da}]" if da >= 0 else "1"
        sb = f"y.shape[{db}]" if db >= 0 else "1"
        code(f"s{d} = {sa} if {sb} == 1 else {sb}")
        code(f"if ({sa} != s{d} and {sa} != 1) or ({sb} != s{d} and {sb} != 1):")
        code("    raise ValueError('matmul: operands could not be broadcast together')")
        sizes.append(f"s{d}")
    m, n = f"x.shape[{ba}]", f"y.shape[{bb + 1}]"
    code(f"c = np.empty({_tuple([*sizes, m, n])}, T)")
    index_a, index_b = [], []
    for d in range(rank):
        code(f"for i{d} in range(s{d}):")
        code.depth += 1
        da, db = d - (rank - ba), d - (rank - bb)
        if da >= 0:
            index_a.append(f"(i{d} if x.shape[{da}] != 1 else 0)")
        if db >= 0:
            index_b.append(f"(i{d} if y.shape[{db}] != 1 else 0)")
    xa = f"x[{', '.join(index_a)}]" if index_a else "x"
    yb = f"y[{', '.join(index_b)}]" if index_b else "y"
    code(f"_gemm_into({xa}, {yb}, c[{', '.join(f'i{d}' for d in range(rank))}])")
    code.depth = 1
    final = sizes + ([m] if a.ndim > 1 else []) + ([n] if b.ndim > 1 else [])
    code(f"return c.reshape({_tuple(final)})")
    return code.compile("matmul")


def _parse_einsum(subscripts: str, ndims: list[int]) -> tuple[list[str], str]:
    """Operand and output subscripts of an einsum; implicit output as NumPy makes it,
    ``...`` spelled out with letters of its own."""
    spec = subscripts.replace(" ", "")
    if "..." in spec:
        try:
            terms, output = einsum_terms(spec, tuple(ndims), None)
        except ValueError as err:
            raise _fail("einsum", str(err)) from None
        spec = ",".join(terms) + "->" + output
    if "->" in spec:
        inputs, output = spec.split("->")
    else:
        inputs = spec
        letters = inputs.replace(",", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = inputs.split(",")
    if len(terms) != len(ndims):
        raise _fail("einsum", f"{len(terms)} subscript terms for {len(ndims)} operands")
    for term, ndim in zip(terms, ndims, strict=True):
        if len(term) != ndim or (term and not term.isalpha()):
            raise _fail("einsum", f"subscripts {term!r} do not fit an operand of {ndim} dims")
    letters = "".join(terms)
    if len(set(output)) != len(output) or not set(output) <= set(letters):
        raise _fail("einsum", f"invalid output subscripts {output!r}")
    return terms, output


def _einsum_loops(terms: list[str], output: str, dtypes: list[types.Type], code: Code) -> None:
    """Emit the general einsum: one loop per letter, output letters outermost, each
    dim of size 1 broadcasting, as NumPy's einsum allows."""
    result = _promote(*dtypes)
    acc = types.int64 if isinstance(result, types.Boolean) else result
    code.names.update(T=_npt(result), A=_npt(acc))
    letters = list(dict.fromkeys("".join(terms)))
    for c in letters:
        dims = [(k, d) for k, term in enumerate(terms) for d, x in enumerate(term) if x == c]
        sizes = [f"op{k}.shape[{d}]" for k, d in dims]
        code(
            f"n_{c} = builtins_max(({', '.join(sizes)},))"
            if len(sizes) > 1
            else f"n_{c} = {sizes[0]}"
        )
        for size in sizes if len(sizes) > 1 else []:
            code(f"if {size} != n_{c} and {size} != 1:")
            code("    raise ValueError('einsum: operands could not be broadcast together')")
    for k, term in enumerate(terms):
        for d, c in enumerate(term):
            code(f"f{k}_{d} = 1 if op{k}.shape[{d}] == n_{c} else 0")
    summed = [c for c in letters if c not in output]
    out_shape = _tuple(f"n_{c}" for c in output) if output else None
    if output:
        code(f"out = np.empty({out_shape}, T)")
    for c in output:
        code(f"for {c}_ in range(n_{c}):")
        code.depth += 1
    factors = []
    for k, term in enumerate(terms):
        index = ", ".join(f"{c}_ * f{k}_{d}" for d, c in enumerate(term))
        factors.append(f"A(op{k}[{index}])" if term else f"A(op{k}[()])")
    product = " * ".join(factors)
    if summed:
        code("s = A(0)")
        for c in summed:
            code(f"for {c}_ in range(n_{c}):")
            code.depth += 1
        code(f"s += {product}")
        code.depth -= len(summed)
        value = "s"
    else:
        value = product
    value = f"({value}) != 0" if acc is not result else value
    if output:
        code(f"out[{', '.join(f'{c}_' for c in output)}] = {value}")
        code.depth -= len(output)
        code("return out")
    else:
        code(f"return T({value})")
    code.names["builtins_max"] = _max_tuple


@register_jitable
def _max_tuple(values):
    m = values[0]
    for v in values:
        if v > m:
            m = v
    return m


def _einsum_product(terms: list[str], output: str) -> bool:
    """Whether a two-operand einsum is a (batched) matrix product worth BLAS: no letter
    repeated within an operand or summed over in one operand only, at least one letter
    contracted and one kept."""
    if len(terms) != 2:
        return False
    a, b = terms
    if len(set(a)) != len(a) or len(set(b)) != len(b):
        return False
    if any(c not in output and c not in b for c in a) or any(
        c not in output and c not in a for c in b
    ):
        return False
    contracted = [c for c in a if c in b and c not in output]
    free = [c for c in output if (c in a) != (c in b)]
    return bool(contracted) and bool(free)


@functools.cache
def _einsum_impl(subscripts: str, ops: tuple[types.Array, ...]) -> Any:
    terms, output = _parse_einsum(subscripts, [op.ndim for op in ops])
    dtypes = [op.dtype for op in ops]
    result = _promote(*dtypes)
    header = "def impl(subscripts, *operands):"
    unpack = [f"op{k} = operands[{k}]" for k in range(len(ops))]
    if not (_einsum_product(terms, output) and _blas(result)):
        code = _code(header)
        code(*unpack)
        _einsum_loops(terms, output, dtypes, code)
        return code.compile("einsum")
    # A (batched) matrix product: batch letters first, then a's free letters, then b's.
    general = _code("def impl(op0, op1):")
    _einsum_loops(terms, output, dtypes, general)
    loops = runtime_cache.njit(error_model="numpy")(general.compile("einsum"))
    a, b = terms
    batch = [c for c in output if c in a and c in b]
    left = [c for c in a if c in output and c not in b]
    right = [c for c in b if c in output and c not in a]
    contracted = [c for c in a if c in b and c not in output]
    code = _code(header, T=_npt(result), loops=loops)
    code(*unpack)
    for c in batch + contracted:
        code(f"if op0.shape[{a.index(c)}] != op1.shape[{b.index(c)}]:")
        code("    return loops(op0, op1)")

    def size(c: str) -> str:
        return f"op0.shape[{a.index(c)}]" if c in a else f"op1.shape[{b.index(c)}]"

    def prod(letters: list[str]) -> str:
        return " * ".join(size(c) for c in letters) if letters else "1"

    for k, (term, first, second) in enumerate(((a, left, contracted), (b, contracted, right))):
        perm = [term.index(c) for c in batch + first + second]
        cast = ops[k].dtype != result
        if batch:
            moved = (
                f"op{k}.transpose({_tuple(map(str, perm))})" if perm != sorted(perm) else f"op{k}"
            )
            shape = _tuple([prod(batch), prod(first), prod(second)])
            copy = f"np.ascontiguousarray({moved}){'.astype(T)' if cast else ''}"
            code(f"x{k} = {copy}.reshape({shape})")
        else:
            shape = _tuple([prod(first), prod(second)])
            code(f"x{k} = {_as_matrix(f'op{k}', ops[k], perm, len(first), shape, cast)}")
    if batch:
        code(f"c = np.empty(({prod(batch)}, {prod(left)}, {prod(right)}), T)")
        code(f"for t in range({prod(batch)}):", "    _gemm_into(x0[t], x1[t], c[t])")
    else:
        code("c = _gemm(x0, x1)")
    order = batch + left + right
    if batch or len(left) != 1 or len(right) != 1:
        code(f"r = c.reshape({_tuple(size(c) for c in order)})")
    else:
        code("r = c")
    perm = [order.index(c) for c in output]
    if perm != sorted(perm):
        code(f"return r.transpose({_tuple(map(str, perm))})")
    else:
        code("return r")
    return code.compile("einsum")


@overload(einsum, prefer_literal=True)
def _einsum_jit(subscripts, *operands):
    if isinstance(subscripts, types.UnicodeType) and not isinstance(
        subscripts, types.StringLiteral
    ):
        return lambda subscripts, *operands: numba.literally(subscripts)
    if not isinstance(subscripts, types.StringLiteral):
        raise _fail("einsum", f"subscripts must be a constant string, got {subscripts}")
    ops = tuple(
        operands[0].types
        if len(operands) == 1 and isinstance(operands[0], types.StarArgTuple)
        else operands
    )
    for op in ops:
        _operand("einsum", op)
    return _einsum_impl(subscripts.literal_value, ops)


# ---------------------------------------------------------------------------------------
# Norms, trace, determinants.
# ---------------------------------------------------------------------------------------


def _keepdims(ty: Any) -> bool:
    if isinstance(ty, bool):
        return ty
    if isinstance(ty, types.Omitted):
        return bool(ty.value)
    if isinstance(ty, types.BooleanLiteral | types.IntegerLiteral):
        return bool(ty.literal_value)
    raise _fail("norm", f"keepdims must be True or False, got {ty}")


@functools.cache
def _norm_impl(x: Any, ord: Any, axis: Any, keep: bool) -> Any:
    dt = _scalar_type("norm", x)
    ndim = x.ndim if isinstance(x, types.Array) else 0
    real = _real(_inexact(dt))
    complex_input = isinstance(dt, types.Complex)
    code = _code("def impl(x, ord=None, axis=None, keepdims=False):", R=_npt(real))
    code("a = np.asarray(x)" if ndim == 0 else "a = x")
    if not isinstance(dt, types.Float | types.Complex):
        code("a = a.astype(R)")
    ord_none = _is_none(ord)
    ord_name = ord.literal_value if isinstance(ord, types.StringLiteral) else None
    if ord_name is not None and ord_name not in ("fro", "nuc"):
        raise _fail("norm", f"invalid norm order {ord_name!r}")
    if not (ord_none or ord_name or isinstance(ord, types.Number)):
        raise _fail("norm", f"ord must be None, a number, 'fro' or 'nuc', got {ord}")
    if _is_none(axis):
        if ord_none:
            # NumPy: sqrt(dot(x, x)) of the flattened array (BLAS for floats).
            code("v = np.ascontiguousarray(a).ravel()")
            if complex_input:
                code("re = np.ascontiguousarray(v.real)", "im = np.ascontiguousarray(v.imag)")
                code("r = np.sqrt(np.dot(re, re) + np.dot(im, im))")
            else:
                code("r = np.sqrt(np.dot(v, v)) if v.size else R(0)")
            code(f"return np.full({_tuple(['1'] * ndim)}, r, R)" if keep and ndim else "return r")
            return code.compile("norm")
        if ndim == 1:
            vector_axes: list[str] | None = ["0"]
            matrix_axes: list[str] | None = None
        elif ndim == 2:
            vector_axes, matrix_axes = None, ["0", "1"]
        else:
            raise _fail("norm", f"ord={ord} needs axis for an array of {ndim} dims")
    else:
        count = _axis_count("norm", axis)
        items = _axis_items("axis", axis)
        if count == 1:
            vector_axes, matrix_axes = items, None
        elif count == 2:
            vector_axes, matrix_axes = None, items
        else:
            raise _fail("norm", "axis must name one axis (vectors) or two (matrices)")
    if vector_axes is not None:
        if ord_name:
            raise _fail("norm", f"invalid norm order {ord_name!r} for vectors")
        (axis_expr,) = vector_axes
        if ord_none:
            # NumPy: sqrt(add.reduce(|x|**2, axis)); the reduction gets the axis as it came
            # (a constant compiles simpler loops) and checks it.
            code("sq = np.square(np.abs(a))")
            code(f"return np.sqrt(reductions.sum(sq, {axis_expr}, keepdims={keep}))")
            return code.compile("norm")
        # Other orders: the axis splits the array into (before, along, after).
        code(f"ax = _normalize({axis_expr}, {ndim})", "pre = 1", "post = 1")
        code(f"for d in range({ndim}):", "    if d < ax:", "        pre *= a.shape[d]")
        code("    elif d > ax:", "        post *= a.shape[d]")
        code("mag = np.ascontiguousarray(np.abs(a)).reshape((pre, a.shape[ax], post))")
        code("r = _vector_norms(mag, R(ord))")
        rank = ndim if keep else ndim - 1
        if rank == 0:
            code("return r[0, 0]")
            return code.compile("norm")
        code(f"shape = np.empty({rank}, np.intp)", "j = 0", f"for d in range({ndim}):")
        code("    if d != ax:", "        shape[j] = a.shape[d]", "        j += 1")
        if keep:
            code("    else:", "        shape[j] = 1", "        j += 1")
        code(f"return r.reshape(to_fixed_tuple(shape, {rank}))")
        return code.compile("norm")
    row_axis, col_axis = matrix_axes
    if ord_none or ord_name == "fro":
        both = f"({row_axis}, {col_axis})"
        code(f"return np.sqrt(reductions.sum(np.square(np.abs(a)), {both}, keepdims={keep}))")
        return code.compile("norm")
    # The others: one matrix after the other, its two axes moved to the end.
    code(f"row = _normalize({row_axis}, {ndim})", f"col = _normalize({col_axis}, {ndim})")
    code("if row == col:", "    raise ValueError('Duplicate axes given.')")
    code(f"perm = np.empty({ndim}, np.intp)", "j = 0", f"for d in range({ndim}):")
    code("    if d != row and d != col:", "        perm[j] = d", "        j += 1")
    code(f"perm[{ndim - 2}] = row", f"perm[{ndim - 1}] = col")
    code(f"m = np.ascontiguousarray(a.transpose(to_fixed_tuple(perm, {ndim})))")
    code(f"stack = m.reshape((-1, m.shape[{ndim - 2}], m.shape[{ndim - 1}]))")
    code("vals = np.empty(stack.shape[0], R)", f"p = R({'0' if ord_name else 'ord'})")
    # A constant order compiles its own kind of norm only (SVD takes seconds to compile).
    order = ord.literal_value if isinstance(ord, types.IntegerLiteral) else None
    if ord_name == "nuc":
        one = "_matrix_svd_norm(stack[t], p, True)"
    elif order in (2, -2):
        one = "_matrix_svd_norm(stack[t], p, False)"
    elif order in (1, -1):
        one = "_matrix_sum_norm(stack[t], p)"
    else:
        one = "_matrix_norm(stack[t], p)"
    code("for t in range(stack.shape[0]):", f"    vals[t] = {one}")
    rank = ndim if keep else ndim - 2
    if rank == 0:
        code("return vals[0]")
        return code.compile("norm")
    code(f"shape = np.empty({rank}, np.intp)", "j = 0", f"for d in range({ndim}):")
    code("    if d != row and d != col:", "        shape[j] = a.shape[d]", "        j += 1")
    if keep:
        code("    else:", "        shape[j] = 1", "        j += 1")
    code(f"return vals.reshape(to_fixed_tuple(shape, {rank}))")
    return code.compile("norm")


@overload(norm, prefer_literal=True)
def _norm_jit(x, ord=None, axis=None, keepdims=False):
    if isinstance(keepdims, types.Boolean) and not isinstance(keepdims, types.BooleanLiteral):
        return lambda x, ord=None, axis=None, keepdims=False: numba.literally(keepdims)
    if isinstance(ord, types.UnicodeType) and not isinstance(ord, types.StringLiteral):
        return lambda x, ord=None, axis=None, keepdims=False: numba.literally(ord)
    # Vector norms of every int order share one implementation; a matrix norm's order
    # picks its algorithm when it is a constant.
    ndim = x.ndim if isinstance(x, types.Array) else 0
    two_axes = isinstance(axis, types.BaseTuple) and len(axis.types) == 2
    matrix = two_axes or (_is_none(axis) and ndim == 2 and not _is_none(ord))
    if isinstance(ord, types.IntegerLiteral) and not matrix:
        ord = types.unliteral(ord)
    return _norm_impl(x, ord, axis, _keepdims(keepdims))


@functools.cache
def _trace_impl(a: Any, axis1: Any, axis2: Any, dtype: Any) -> Any:
    if not isinstance(a, types.Array) or a.ndim < 2:
        raise _fail("trace", f"expected an array of at least 2 dims, got {a}")
    acc = _dtype_arg("trace", dtype) or _accumulating(a.dtype)
    ndim = a.ndim
    code = _code("def impl(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):", T=_npt(acc))
    if (_literal_int(axis1), _literal_int(axis2)) in ((0, 1), (0, 1 - ndim), (-ndim, 1)):
        code("t = a")
    else:
        code(f"p1 = _normalize(axis1, {ndim})", f"p2 = _normalize(axis2, {ndim})")
        code("if p1 == p2:", "    raise ValueError('axis1 and axis2 cannot be the same')")
        code(f"perm = np.empty({ndim}, np.intp)", "perm[0] = p1", "perm[1] = p2", "j = 2")
        code(f"for d in range({ndim}):", "    if d != p1 and d != p2:")
        code("        perm[j] = d", "        j += 1")
        code(f"t = a.transpose(to_fixed_tuple(perm, {ndim}))")
    code("rows = t.shape[0]", "cols = t.shape[1]")
    code("if offset >= 0:", "    n = min(rows, cols - offset)", "    r0 = 0", "    c0 = offset")
    code("else:", "    n = min(rows + offset, cols)", "    r0 = -offset", "    c0 = 0")
    if ndim == 2:
        code("s = T(0)", "for i in range(n):", "    s += T(t[r0 + i, c0 + i])", "return s")
    else:
        code("s = np.zeros(t.shape[2:], T)", "for i in range(n):", "    s += t[r0 + i, c0 + i]")
        code("return s")
    return code.compile("trace")


@overload(trace, prefer_literal=True)
def _trace_jit(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if not _is_none(out):
        raise _fail("trace", "out= is not supported under jit")
    return _trace_impl(a, axis1, axis2, dtype)


def _square_stack(name: str, a: Any) -> tuple[types.Type, Any]:
    if not isinstance(a, types.Array) or a.ndim < 2:
        raise _fail(name, f"expected an array of at least 2 dims, got {a}")
    inexact = _inexact(a.dtype)
    return inexact, _npt(inexact)


@register_jitable
def _matrices(a):
    """``a`` as a C-contiguous stack (n, m, m) of square matrices."""
    m = a.shape[-1]
    if a.shape[-2] != m:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return np.ascontiguousarray(a).reshape((-1, a.shape[-2], m))


@overload(det)
def _det_jit(a):
    dt, cast = _square_stack("det", a)
    fix = a.dtype != dt
    if a.ndim == 2:
        return lambda a: cast(np.linalg.det(a.astype(cast) if fix else a))

    def impl(a):
        stack = _matrices(a)
        out = np.empty(stack.shape[0], cast)
        for t in range(stack.shape[0]):
            m = stack[t]
            out[t] = np.linalg.det(m.astype(cast) if fix else m)
        return out.reshape(a.shape[:-2])

    return impl


@overload(slogdet)
def _slogdet_jit(a):
    dt, cast = _square_stack("slogdet", a)
    real = _npt(_real(dt))
    fix = a.dtype != dt
    if a.ndim == 2:

        def impl2(a):
            sign, logdet = np.linalg.slogdet(a.astype(cast) if fix else a)
            return cast(sign), real(logdet)

        return impl2

    def impl(a):
        stack = _matrices(a)
        signs = np.empty(stack.shape[0], cast)
        logs = np.empty(stack.shape[0], real)
        for t in range(stack.shape[0]):
            m = stack[t]
            sign, logdet = np.linalg.slogdet(m.astype(cast) if fix else m)
            signs[t] = sign
            logs[t] = logdet
        return signs.reshape(a.shape[:-2]), logs.reshape(a.shape[:-2])

    return impl


# ---------------------------------------------------------------------------------------
# Shapes.
# ---------------------------------------------------------------------------------------


@overload(reshape)
def _reshape_jit(a, shape=None, order="C", copy=None):
    written = order if isinstance(order, str) else getattr(order, "value", None)
    written = getattr(order, "literal_value", written)
    if written != "C":
        raise _fail("reshape", "only order='C' compiles; reshape a transposed array instead")
    if not (_is_none(copy) or isinstance(copy, types.Omitted)):
        raise _fail("reshape", "copy= does not compile; call np.copy on the result instead")
    if isinstance(a, types.Array) and a.layout == "C":
        return lambda a, shape=None, order="C", copy=None: a.reshape(shape)
    # Numba types reshape of C-ordered arrays only; a copy only where the array is not
    # contiguous when it runs (Numba's ascontiguousarray gives a view where it is)
    return lambda a, shape=None, order="C", copy=None: np.ascontiguousarray(a).reshape(shape)


@functools.cache
def _squeeze_impl(a: Any, axis: Any) -> Any:
    if not isinstance(a, types.Array):
        return lambda a, axis=None: np.asarray(a)
    ndim = a.ndim
    if _is_none(axis):
        if ndim == 0:
            return lambda a, axis=None: a.copy()
        raise _fail(
            "squeeze",
            "squeeze without axis cannot compile: the rank of its result depends on the "
            "array's shape, which Numba does not know when it compiles; pass axis= (the "
            "axes of length one)",
        )
    items = _axis_items("axis", axis)
    _axis_count("squeeze", axis)
    rank = ndim - len(items)
    code = _code("def impl(a, axis=None):")
    _normalize_axes(code, items, ndim)
    code(f"shape = np.empty({builtins.max(rank, 1)}, np.intp)", "j = 0")
    code(f"for d in range({ndim}):", "    gone = False")
    code(f"    for i in range({len(items)}):", "        gone = gone or axes[i] == d")
    code("    if gone:", "        if a.shape[d] != 1:")
    code(
        "            raise ValueError('cannot select an axis to squeeze out which has size "
        "not equal to one')"
    )
    code("    else:", "        shape[j] = a.shape[d]", "        j += 1")
    code(f"return np.ascontiguousarray(a).reshape(to_fixed_tuple(shape, {rank}))")
    return code.compile("squeeze")


@overload(squeeze)
def _squeeze_jit(a, axis=None):
    return _squeeze_impl(a, axis)


@functools.cache
def _expand_dims_impl(a: Any, axis: Any) -> Any:
    _axis_count("expand_dims", axis)
    items = _axis_items("axis", axis)
    ndim = a.ndim if isinstance(a, types.Array) else 0
    rank = ndim + len(items)
    code = _code("def impl(a, axis):")
    code("x = np.asarray(a)" if ndim == 0 else "x = a")
    _normalize_axes(code, items, rank)
    code(f"shape = np.ones({rank}, np.intp)")
    if ndim:
        code("j = 0", f"for d in range({rank}):", "    new = False")
        code(f"    for i in range({len(items)}):", "        new = new or axes[i] == d")
        code("    if not new:", "        shape[d] = x.shape[j]", "        j += 1")
    code(f"return np.ascontiguousarray(x).reshape(to_fixed_tuple(shape, {rank}))")
    return code.compile("expand_dims")


@overload(expand_dims)
def _expand_dims_jit(a, axis):
    return _expand_dims_impl(a, axis)


def _sequence(name: str, arrays: Any) -> tuple[list[types.Array] | None, types.Array]:
    """The element types of a tuple of arrays (None for a list) and a representative."""
    if isinstance(arrays, types.BaseTuple):
        items = list(arrays.types)
        if not items or not builtins.all(isinstance(t, types.Array) for t in items):
            raise _fail(name, f"expected a tuple of arrays, got {arrays}")
        if len({t.ndim for t in items}) != 1:
            raise _fail(name, "all the input arrays must have the same number of dimensions")
        return items, items[0]
    if isinstance(arrays, types.List) and isinstance(arrays.dtype, types.Array):
        return None, arrays.dtype
    raise _fail(name, f"expected a tuple or a list of arrays, got {arrays}")


@functools.cache
def _concatenate_impl(arrays: Any, axis: Any, dtype: Any) -> Any:
    items, first = _sequence("concatenate", arrays)
    if first.ndim == 0:
        raise _fail("concatenate", "zero-dimensional arrays cannot be concatenated")
    explicit = _dtype_arg("concatenate", dtype)
    result = explicit or _promote(*(t.dtype for t in (items or [first])))
    code = _code("def impl(arrays, axis=0, out=None, dtype=None, casting='same_kind'):")
    code.names["T"] = _npt(result)
    ndim = first.ndim
    if items is not None and not _is_none(axis):
        # Numba's own is right for a tuple along an axis.
        code(f"return np.concatenate(arrays, axis){'.astype(T)' if explicit else ''}")
        return code.compile("concatenate")
    if items is None:
        code("count = len(arrays)")
        code("if count == 0:", "    raise ValueError('need at least one array to concatenate')")
        each = ["for x in arrays:"]
    else:
        each = ["for x in numba.literal_unroll(arrays):"]
    if _is_none(axis):
        code("total = 0", *each, "    total += x.size")
        code("out = np.empty(total, T)", "off = 0", *each)
        code("    out[off:off + x.size] = x.ravel()", "    off += x.size", "return out")
        return code.compile("concatenate")
    code(f"ax = _normalize(axis, {ndim})", "ref = arrays[0]", "total = 0", *each)
    code(f"    for d in range({ndim}):", "        if d != ax and x.shape[d] != ref.shape[d]:")
    code(
        "            raise ValueError('all the input array dimensions except for the "
        "concatenation axis must match exactly')"
    )
    code("    total += x.shape[ax]")
    code(f"shape = np.empty({ndim}, np.intp)", f"for d in range({ndim}):")
    code("    shape[d] = total if d == ax else ref.shape[d]")
    code(f"out = np.empty(to_fixed_tuple(shape, {ndim}), T)")
    _front(code, "out", "ax", ndim, "dst")
    code("off = 0", *each, "    n = x.shape[ax]")
    code.depth += 1
    _front(code, "x", "ax", ndim, "src")
    code.depth -= 1
    code("    dst[off:off + n] = src", "    off += n", "return out")
    return code.compile("concatenate")


@overload(concatenate)
def _concatenate_jit(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if not _is_none(out):
        raise _fail("concatenate", "out= is not supported under jit")
    return _concatenate_impl(arrays, axis, dtype)


@functools.cache
def _stack_impl(arrays: Any) -> Any:
    items, first = _sequence("stack", arrays)
    if items is not None:
        return lambda arrays, axis=0, out=None: np.stack(arrays, axis)
    rank = first.ndim + 1
    code = _code("def impl(arrays, axis=0, out=None):", T=_npt(first.dtype))
    code("count = len(arrays)")
    code("if count == 0:", "    raise ValueError('need at least one array to stack')")
    code(f"ax = _normalize(axis, {rank})", "ref = arrays[0]")
    code(f"shape = np.empty({rank}, np.intp)", "j = 0", f"for d in range({rank}):")
    code("    if d == ax:", "        shape[d] = count", "    else:")
    code("        shape[d] = ref.shape[j]", "        j += 1")
    code(f"out = np.empty(to_fixed_tuple(shape, {rank}), T)")
    _front(code, "out", "ax", rank, "dst")
    code("for i in range(count):", "    x = arrays[i]", "    if x.shape != ref.shape:")
    code("        raise ValueError('all input arrays must have the same shape')")
    code("    dst[i] = x", "return out")
    return code.compile("stack")


@overload(stack)
def _stack_jit(arrays, axis=0, out=None):
    if not _is_none(out):
        raise _fail("stack", "out= is not supported under jit")
    return _stack_impl(arrays)


@overload(hstack)
def _hstack_jit(tup):
    items, first = _sequence("hstack", tup)
    if items is not None:
        return lambda tup: np.hstack(tup)
    if first.ndim == 0:
        raise _fail("hstack", "expected arrays of at least 1 dimension")
    axis = 0 if first.ndim == 1 else 1
    return lambda tup: concatenate(tup, axis)


@overload(vstack)
def _vstack_jit(tup):
    items, first = _sequence("vstack", tup)
    if items is not None:
        return lambda tup: np.vstack(tup)
    if first.ndim == 0:
        raise _fail("vstack", "expected arrays of at least 1 dimension")
    if first.ndim == 1:
        return lambda tup: stack(tup, 0)
    return lambda tup: concatenate(tup, 0)


@functools.cache
def _flip_impl(m: Any, axis: Any) -> Any:
    if _is_none(axis):
        return lambda m, axis=None: np.flip(m)
    if not isinstance(m, types.Array):
        raise _fail("flip", f"expected an array, got {m}")
    _axis_count("flip", axis)
    items = _axis_items("axis", axis)
    code = _code("def impl(m, axis=None):")
    _normalize_axes(code, items, m.ndim)
    # One view, reversed along each named axis: a branch per axis it may be.
    code("v = m")
    for j in range(len(items)):
        for d in range(m.ndim):
            index = ", ".join([":"] * d + ["::-1"])
            code(f"{'if' if d == 0 else 'elif'} axes[{j}] == {d}:", f"    v = v[{index}]")
    code("return v")
    return code.compile("flip")


@overload(flip)
def _flip_jit(m, axis=None):
    return _flip_impl(m, axis)


@functools.cache
def _roll_impl(a: Any, shift: Any, axis: Any) -> Any:
    if _is_none(axis):
        if not isinstance(shift, types.Integer):
            raise _fail("roll", "without axis, shift must be an int")
        return lambda a, shift, axis=None: np.roll(a, shift)
    if not isinstance(a, types.Array):
        raise _fail("roll", f"expected an array, got {a}")
    _axis_count("roll", axis)
    items = _axis_items("axis", axis)
    if isinstance(shift, types.Integer):
        shifts = ["shift"] * len(items)
    else:
        _axis_count("roll", shift, "shift")
        shifts = _axis_items("shift", shift)
        if len(shifts) != len(items):
            raise _fail("roll", "shift and axis must name as many items")
    code = _code("def impl(a, shift, axis=None):")
    ndim = a.ndim
    code("r0 = a")
    for j, (shift_j, ax) in enumerate(zip(shifts, items, strict=True)):
        code(f"ax = _normalize({ax}, {ndim})", "out = np.empty(a.shape, a.dtype)")
        code("n = out.shape[ax]", f"s = {shift_j} % n if n else 0")
        _front(code, f"r{j}", "ax", ndim, "src")
        _front(code, "out", "ax", ndim, "dst")
        code("dst[s:] = src[: n - s]", "dst[:s] = src[n - s :]", f"r{j + 1} = out")
    code(f"return r{len(items)}")
    return code.compile("roll")


@overload(roll)
def _roll_jit(a, shift, axis=None):
    return _roll_impl(a, shift, axis)


@functools.cache
def _tile_impl(a: Any, reps: Any) -> Any:
    count = _axis_count("tile", reps, "reps")
    items = _axis_items("reps", reps)
    ndim = a.ndim if isinstance(a, types.Array) else 0
    rank = builtins.max(ndim, count)
    code = _code("def impl(A, reps):")
    code("x = np.asarray(A)" if ndim == 0 else "x = A")
    src = ["1"] * (rank - ndim) + [f"x.shape[{d}]" for d in range(ndim)]
    rep = ["1"] * (rank - count) + list(items)
    for d in range(rank):
        code(f"s{d} = {src[d]}", f"r{d} = {rep[d]}")
        code(f"if r{d} < 0:", "    raise ValueError('negative dimensions are not allowed')")
    if rank == 0:
        code("return x.copy()")
        return code.compile("tile")
    code(f"src = np.ascontiguousarray(x).reshape({_tuple(f's{d}' for d in range(rank))})")
    code(f"out = np.empty({_tuple(f's{d} * r{d}' for d in range(rank))}, x.dtype)")
    for d in range(rank):
        code(f"for t{d} in range(r{d}):")
        code.depth += 1
    index = ", ".join(f"t{d} * s{d}:(t{d} + 1) * s{d}" for d in range(rank))
    code(f"out[{index}] = src")
    code.depth = 1
    code("return out")
    return code.compile("tile")


@overload(tile)
def _tile_jit(A, reps):  # noqa: N803 - NumPy's name
    return _tile_impl(A, reps)


@functools.cache
def _repeat_impl(a: Any, repeats: Any, axis: Any) -> Any:
    if _is_none(axis):
        return lambda a, repeats, axis=None: np.repeat(a, repeats)
    if not isinstance(a, types.Array) or a.ndim == 0:
        raise _fail("repeat", f"expected an array of at least 1 dimension, got {a}")
    ndim = a.ndim
    code = _code("def impl(a, repeats, axis=None):")
    code(f"ax = _normalize(axis, {ndim})", "n = a.shape[ax]")
    if isinstance(repeats, types.Integer):
        code("counts = np.full(n, repeats, np.intp)")
    elif isinstance(repeats, types.Array) and repeats.ndim <= 1:
        code("r = np.asarray(repeats).ravel()")
        code("counts = np.full(n, r[0], np.intp) if r.size == 1 else r.astype(np.intp)")
        code("if counts.size != n:")
        code("    raise ValueError('operands could not be broadcast together')")
    else:
        raise _fail("repeat", f"repeats must be an int or a 1-d array of ints, got {repeats}")
    code("total = 0", "for i in range(n):", "    if counts[i] < 0:")
    code("        raise ValueError('repeats may not contain negative values.')")
    code("    total += counts[i]")
    code(f"shape = np.empty({ndim}, np.intp)", f"for d in range({ndim}):")
    code("    shape[d] = total if d == ax else a.shape[d]")
    code(f"out = np.empty(to_fixed_tuple(shape, {ndim}), a.dtype)")
    _front(code, "a", "ax", ndim, "src")
    _front(code, "out", "ax", ndim, "dst")
    code("pos = 0")
    code("for i in range(n):", "    for j in range(counts[i]):", "        dst[pos] = src[i]")
    code("        pos += 1", "return out")
    return code.compile("repeat")


@overload(repeat)
def _repeat_jit(a, repeats, axis=None):
    return _repeat_impl(a, repeats, axis)


def _atleast(name: str, rank: int, arys: tuple[Any, ...]) -> Any:
    """``atleast_1d``/``atleast_2d``: one array for one argument, else a tuple."""
    if len(arys) == 1 and isinstance(arys[0], types.StarArgTuple):
        arys = tuple(arys[0].types)
    native = "np.atleast_1d" if rank == 1 else "np.atleast_2d"
    results = []
    for k, ty in enumerate(arys):
        if isinstance(ty, types.Array):
            results.append(f"{native}(arys[{k}])")
        elif _is_number(ty):
            results.append(f"np.full({_tuple(['1'] * rank)}, arys[{k}])")
        else:
            raise _fail(name, f"expected arrays or numbers, got {ty}")
    code = _code("def impl(*arys):")
    code(f"return {results[0]}" if len(results) == 1 else f"return {_tuple(results)}")
    return code.compile(name)


@overload(atleast_1d)
def _atleast_1d_jit(*arys):
    return _atleast("atleast_1d", 1, arys)


@overload(atleast_2d)
def _atleast_2d_jit(*arys):
    return _atleast("atleast_2d", 2, arys)
