"""Elementary functions (exp, log, tanh, sin, ...) that vectorize under Numba.

Why this exists: Numba compiles ``np.exp``, ``np.log``, ``np.tanh``, ``np.sin``, ... to
one call of the scalar C math library per element. LLVM could turn those calls into
calls of a SIMD math library (Intel SVML), but the llvmlite wheels on PyPI are built
without SVML, so with a pip-installed Numba every transcendental in a loop is a scalar
libm call and the loop does not vectorize: a jitted SELU on 10^6 float32 runs ~10x
slower than JAX/XLA, whose exp is an inlined polynomial.

This module provides the same functions as branch-free polynomial kernels
(``_kernels32`` for float32, ``_kernels64`` for float64: range reduction, minimax
polynomial, exponent bit manipulation, special cases by ``select``), which LLVM inlines
and vectorizes (8 float32 lanes per AVX2/AVX-512 ymm register, the width LLVM prefers
on these CPUs), for about the speed of NumPy's own SIMD loops and of JAX, at an accuracy
of 1-2 ulp over the whole domain (NaN, +-inf, signed zeros, overflow, gradual underflow
and subnormal inputs included).

Each public function is a plain Python function that returns exactly what NumPy
returns (so generated code runs unchanged when interpreted), with a Numba ``overload``
used in nopython mode. numbax's code generator redirects calls of ``numpy.exp`` etc. to
these functions when it compiles with ``nx.jit``. Under Numba:

* float32 / float64 scalars and arrays (any ndim and layout) use the kernels, and the
  result has the dtype Numba's own NumPy function would give (float32 stays float32;
  integers and booleans are converted as Numba converts them for ``np.exp``: int8/int16
  and bool to float32, wider integers to float64). Arrays give a new C-contiguous array
  of the same shape; 0-d arrays give a scalar, as ``np.exp`` does.
* anything else (complex numbers, ``power`` of two integers, ...) falls back to NumPy's
  function as Numba implements it.

``sin`` and ``cos`` reduce the argument by Cody-Waite, which is exact up to
``REDUCE_MAX`` (2^20 for float32, 2^30 for float64); larger arguments use libm: the
array loop computes everything with the kernel, flags large arguments in the same
vectorized pass, and recomputes only those if there are any. A scalar call branches, so
a user loop calling ``sin``/``cos`` on scalars does not vectorize (the other functions'
scalar paths do; ``_kernels32.sin_reduced`` etc. are the branch-free kernels).

Fusion: these are not ufuncs, so Numba's array-expression rewrite (and parfor fusion
under ``parallel=True``) does not fuse them with neighbouring array operations; each
array call is one loop writing one new array. The fastest code calls them on scalars
inside one explicit loop over the elements.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.core import errors
from numba.core.registry import cpu_target
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype

from numbax.numba_backend.loops.array_operators import ufunc_call
from numbax.numba_backend.math import _kernels32 as _k32
from numbax.numba_backend.math import _kernels64 as _k64
from numbax.numba_backend.math._intrinsics import as_int
from numbax.numba_backend.np.scalars import at_numpy_loop, float16_refusal, item
from numbax.numba_backend.redirects import redirect

__all__ = [
    "cos",
    "cosh",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log10",
    "log1p",
    "log2",
    "power",
    "sigmoid",
    "sin",
    "sinh",
    "tanh",
]


# ---------------------------------------------------------------------------------------
# The public functions: plain NumPy when interpreted.
# ---------------------------------------------------------------------------------------


@redirect(np.exp)
def exp(x: Any) -> Any:
    """``np.exp(x)``; vectorized polynomial kernel under Numba."""
    return np.exp(x)


@redirect(np.exp2)
def exp2(x: Any) -> Any:
    """``np.exp2(x)``; vectorized polynomial kernel under Numba."""
    return np.exp2(x)


@redirect(np.expm1)
def expm1(x: Any) -> Any:
    """``np.expm1(x)``; vectorized polynomial kernel under Numba."""
    return np.expm1(x)


@redirect(np.log)
def log(x: Any) -> Any:
    """``np.log(x)``; vectorized polynomial kernel under Numba."""
    return np.log(x)


@redirect(np.log2)
def log2(x: Any) -> Any:
    """``np.log2(x)``; vectorized polynomial kernel under Numba."""
    return np.log2(x)


@redirect(np.log10)
def log10(x: Any) -> Any:
    """``np.log10(x)``; vectorized polynomial kernel under Numba."""
    return np.log10(x)


@redirect(np.log1p)
def log1p(x: Any) -> Any:
    """``np.log1p(x)``; vectorized polynomial kernel under Numba."""
    return np.log1p(x)


@redirect(np.tanh)
def tanh(x: Any) -> Any:
    """``np.tanh(x)``; vectorized polynomial kernel under Numba."""
    return np.tanh(x)


@redirect(np.sinh)
def sinh(x: Any) -> Any:
    """``np.sinh(x)``; vectorized polynomial kernel under Numba."""
    return np.sinh(x)


@redirect(np.cosh)
def cosh(x: Any) -> Any:
    """``np.cosh(x)``; vectorized polynomial kernel under Numba."""
    return np.cosh(x)


@redirect(np.sin)
def sin(x: Any) -> Any:
    """``np.sin(x)``; vectorized polynomial kernel under Numba."""
    return np.sin(x)


@redirect(np.cos)
def cos(x: Any) -> Any:
    """``np.cos(x)``; vectorized polynomial kernel under Numba."""
    return np.cos(x)


@redirect(np.power)
def power(x1: Any, x2: Any) -> Any:
    """``np.power(x1, x2)``; vectorized kernel under Numba for float results."""
    return np.power(x1, x2)


def sigmoid(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))``, computed stably with NumPy.

    ``1 / (1 + e)`` for ``x >= 0`` and ``e / (1 + e)`` for ``x < 0``, with
    ``e = exp(-|x|)``: nothing overflows, and tiny results keep their relative accuracy.
    Returns a NumPy scalar for scalar input, like a ufunc; float32 stays float32.
    """
    x = np.asarray(x)
    e = np.exp(-np.abs(x))
    out = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    return out[()] if out.ndim == 0 else out


# ---------------------------------------------------------------------------------------
# Typing helpers.
# ---------------------------------------------------------------------------------------

_REAL = (types.Float, types.Integer, types.Boolean)


def _dtype(ty: types.Type) -> types.Type:
    return ty.dtype if isinstance(ty, types.Array) else ty


def _kernel_type(ufunc: Any, *args: types.Type) -> tuple[types.Type, types.Type] | None:
    """(float dtype, result type) of ``ufunc(*args)`` if the kernels apply.

    They apply when every argument is real (float, int or bool, scalar or array) and
    NumPy's loop for their dtypes (``ufunc.resolve_dtypes``) computes in float32 or
    float64; the arguments are then converted to that dtype, as the loop would. A loop
    in float16 (``np.exp`` of int8) is refused: Numba does not compute in float16.
    """
    if not all(isinstance(_dtype(a), _REAL) for a in args):
        return None
    try:
        sig = cpu_target.typing_context.resolve_function_type(ufunc, args, {})
        operands = tuple(_operand(a, args) for a in args)
        loop = ufunc.resolve_dtypes((*operands, None))
    except (errors.TypingError, TypeError):
        return None
    if sig is None:
        return None
    if loop[-1] == np.float16:
        raise float16_refusal(ufunc, operands)
    dtype = from_dtype(loop[-1])
    if dtype not in (types.float32, types.float64):
        return None
    ret = sig.return_type
    if isinstance(ret, types.Array) and not any(isinstance(a, types.Array) for a in args):
        return None
    return dtype, ret.copy(dtype=dtype) if isinstance(ret, types.Array) else dtype


def _operand(arg: types.Type, args: tuple) -> Any:
    """What ``resolve_dtypes`` takes for ``arg``: its dtype, or ``int`` for a weak Python
    int: an integer constant of the source, or an integer scalar next to an array (a
    Python int as a rule: ``x ** p`` of a float32 array stays float32, as in NEP 50)."""
    if isinstance(arg, types.IntegerLiteral) or (
        isinstance(arg, types.Integer) and any(isinstance(a, types.Array) for a in args)
    ):
        return int
    return as_dtype(types.unliteral(_dtype(arg)))


def _numpy_loop(ufunc: Any, *args: types.Type) -> Any:
    """``ufunc`` computed as NumPy computes it: for scalars at NumPy's loop
    (``np/scalars.py``: Numba's ``np.power`` of integers computes in float), for
    arrays as a ufunc called alone (``array_operators.ufunc_call``: Numba's own where it
    follows NumPy, as for float exponents of floats)."""
    if all(isinstance(a, types.Number | types.Boolean) for a in args):
        return at_numpy_loop(ufunc, (False,) * len(args))
    if len(args) == 1:
        return register_jitable(lambda x: ufunc_call(ufunc, x))
    return register_jitable(lambda x1, x2: ufunc_call(ufunc, x1, x2))


def _kernels(dtype: types.Type, name: str) -> tuple[Any, Any]:
    """The scalar kernel for ``dtype`` and the NumPy scalar type converting into it."""
    if dtype == types.float32:
        return getattr(_k32, name), np.float32
    return getattr(_k64, name), np.float64


# ---------------------------------------------------------------------------------------
# Unary functions.
# ---------------------------------------------------------------------------------------


def _unary_impl(kernel: Any, conv: Any, dtype: Any, x: types.Type, ret: types.Type) -> Any:
    if not isinstance(x, types.Array):

        def scalar_impl(x):
            return kernel(conv(x))

        return scalar_impl
    if not isinstance(ret, types.Array):  # 0-d array -> scalar, as np.exp does

        def zero_d_impl(x):
            return kernel(conv(x[()]))

        return zero_d_impl

    def array_impl(x):
        out = np.empty(x.shape, dtype)
        src = np.ascontiguousarray(x).ravel()
        dst = out.ravel()
        for i in range(dst.size):
            dst[i] = kernel(conv(src[i]))
        return out

    return array_impl


def _trig_impl(name: str, libm: Any, x: types.Type, ret: types.Type) -> Any:
    """sin/cos: one vectorized pass with the reduced-range kernel that also flags
    arguments beyond its range, then (only if there are any) a libm pass over those."""
    dtype, _ = _kernel_type(libm, x)
    scalar_kernel, conv = _kernels(dtype, name)
    if not isinstance(ret, types.Array):
        return _unary_impl(scalar_kernel, conv, None, x, ret)
    kernel, _ = _kernels(dtype, name + "_reduced")
    limit = conv((_k32 if dtype == types.float32 else _k64).REDUCE_MAX)
    # The range test is done on the bits (|v| > limit as integers, NaN included): an
    # integer OR-reduction keeps the loop vectorized, a float one would not.
    itype = np.int32 if dtype == types.float32 else np.int64
    abs_mask = itype(np.iinfo(itype).max)
    limit_bits = np.array(limit).view(itype)[()]
    no = itype(0)

    def array_impl(x):
        out = np.empty(x.shape, conv)
        src = np.ascontiguousarray(x).ravel()
        dst = out.ravel()
        any_large = no
        for i in range(dst.size):
            v = conv(src[i])
            dst[i] = kernel(v)
            any_large = itype(any_large | itype((as_int(v) & abs_mask) > limit_bits))
        if any_large:
            for i in range(dst.size):
                v = conv(src[i])
                if not abs(v) <= limit:
                    dst[i] = libm(v)
        return out

    return array_impl


def _register_unary(pyfunc: Any, ufunc: Any) -> None:
    name = pyfunc.__name__

    @overload(pyfunc)
    def _overload(x):
        found = _kernel_type(ufunc, x)
        if found is None:
            fallback = _numpy_loop(ufunc, x)
            return lambda x: fallback(x)
        dtype, ret = found
        if name in ("sin", "cos"):
            return _trig_impl(name, ufunc, x, ret)
        kernel, conv = _kernels(dtype, name)
        return _unary_impl(kernel, conv, conv, x, ret)


for _func, _ufunc in (
    (exp, np.exp),
    (exp2, np.exp2),
    (expm1, np.expm1),
    (log, np.log),
    (log2, np.log2),
    (log10, np.log10),
    (log1p, np.log1p),
    (tanh, np.tanh),
    (sinh, np.sinh),
    (cosh, np.cosh),
    (sin, np.sin),
    (cos, np.cos),
):
    _register_unary(_func, _ufunc)


@overload(sigmoid)
def _sigmoid_overload(x):
    found = _kernel_type(np.exp, x)
    if found is None:
        return lambda x: 1.0 / (1.0 + np.exp(-x))
    dtype, ret = found
    kernel, conv = _kernels(dtype, "sigmoid")
    return _unary_impl(kernel, conv, conv, x, ret)


# ---------------------------------------------------------------------------------------
# power: scalars, array with scalar, arrays (broadcast).
# ---------------------------------------------------------------------------------------


@overload(power)
def _power_overload(x1, x2):
    found = _kernel_type(np.power, x1, x2)
    if found is None:
        fallback = _numpy_loop(np.power, x1, x2)
        return lambda x1, x2: fallback(x1, x2)
    dtype, ret = found
    kernel, conv = _kernels(dtype, "power")
    a1, a2 = isinstance(x1, types.Array), isinstance(x2, types.Array)

    if not isinstance(ret, types.Array):  # scalars and 0-d arrays

        def scalar_impl(x1, x2):
            return kernel(conv(item(x1)), conv(item(x2)))

        return scalar_impl

    if a1 and not a2:

        def array_scalar_impl(x1, x2):
            out = np.empty(x1.shape, conv)
            src = np.ascontiguousarray(x1).ravel()
            dst = out.ravel()
            y = conv(x2)
            for i in range(dst.size):
                dst[i] = kernel(conv(src[i]), y)
            return out

        return array_scalar_impl

    if a2 and not a1:

        def scalar_array_impl(x1, x2):
            out = np.empty(x2.shape, conv)
            src = np.ascontiguousarray(x2).ravel()
            dst = out.ravel()
            b = conv(x1)
            for i in range(dst.size):
                dst[i] = kernel(b, conv(src[i]))
            return out

        return scalar_array_impl

    flat = _power_flat32 if dtype == types.float32 else _power_flat64
    if x1.ndim == x2.ndim:

        def same_ndim_impl(x1, x2):
            if x1.shape == x2.shape:
                return flat(x1.shape, x1, x2)
            shape = np.broadcast_shapes(x1.shape, x2.shape)
            return flat(shape, np.broadcast_to(x1, shape), np.broadcast_to(x2, shape))

        return same_ndim_impl

    def broadcast_impl(x1, x2):
        shape = np.broadcast_shapes(x1.shape, x2.shape)
        return flat(shape, np.broadcast_to(x1, shape), np.broadcast_to(x2, shape))

    return broadcast_impl


# power of two arrays of the same shape ``shape``, into a new C array. The kernel is
# named as a global (not passed as an argument) so that Numba inlines it: it is too big
# for LLVM's inliner, and a call per element would not vectorize.
@register_jitable
def _power_flat32(shape, x1, x2):
    s1 = np.ascontiguousarray(x1).ravel()
    s2 = np.ascontiguousarray(x2).ravel()
    out = np.empty(shape, np.float32)
    dst = out.ravel()
    for i in range(dst.size):
        dst[i] = _k32.power(np.float32(s1[i]), np.float32(s2[i]))
    return out


@register_jitable
def _power_flat64(shape, x1, x2):
    s1 = np.ascontiguousarray(x1).ravel()
    s2 = np.ascontiguousarray(x2).ravel()
    out = np.empty(shape, np.float64)
    dst = out.ravel()
    for i in range(dst.size):
        dst[i] = _k64.power(np.float64(s1[i]), np.float64(s2[i]))
    return out
