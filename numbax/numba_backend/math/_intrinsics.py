"""LLVM-level building blocks for the SIMD-friendly math kernels of ``elementary``.

Each helper here lowers to exactly one LLVM instruction or intrinsic, with no control
flow and no error checks, so that a loop calling kernels built from them stays a single
basic block that LLVM's loop vectorizer can widen:

* ``fma(a, b, c)``: ``llvm.fma``, a*b + c with a single rounding (one instruction on
  every x86-64 CPU since 2013 and on all ARM64). The kernels' error analysis relies on
  the single rounding (exact Cody-Waite reductions, exact products).
* ``as_int`` / ``as_float32`` / ``as_float64``: bit casts, for exponent arithmetic.
* ``select(c, a, b)``: ``a if c else b`` as an IR ``select``, never a branch.
* ``fdiv(a, b)``: a plain IEEE division. Numba's default ``error_model='python'`` puts
  a zero check (and a branch to raise ZeroDivisionError) in front of every ``/``, which
  stops vectorization of the caller's loop; the kernels divide by values that cannot be
  zero, or want IEEE semantics.
* ``fabs``, ``rint``, ``copysign``: the LLVM intrinsics, which vectorize to single
  instructions (Numba maps ``abs`` the same way, but these keep the kernels uniform).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_FLOATS = (types.float32, types.float64)


def _float_intrinsic(builder, name, ty, args):
    fnty = ir.FunctionType(ty, [ty] * len(args))
    suffix = "f32" if isinstance(ty, ir.FloatType) else "f64"
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{name}.{suffix}")
    return builder.call(fn, args)


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (``llvm.fma``)."""
    if a in _FLOATS and a == b == c:

        def codegen(context, builder, sig, args):
            return builder.fma(*args)

        return a(a, b, c), codegen
    return None


@intrinsic
def fdiv(typingctx, a, b):
    """IEEE ``a / b`` without Numba's ZeroDivisionError check."""
    if a in _FLOATS and a == b:

        def codegen(context, builder, sig, args):
            return builder.fdiv(*args)

        return a(a, b), codegen
    return None


@intrinsic
def fabs(typingctx, a):
    """``|a|`` (``llvm.fabs``: clears the sign bit, also of NaN and -0.0)."""
    if a in _FLOATS:

        def codegen(context, builder, sig, args):
            return _float_intrinsic(builder, "fabs", args[0].type, args)

        return a(a), codegen
    return None


@intrinsic
def rint(typingctx, a):
    """``a`` rounded to the nearest integer, ties to even, as a float (``llvm.rint``)."""
    if a in _FLOATS:

        def codegen(context, builder, sig, args):
            return _float_intrinsic(builder, "rint", args[0].type, args)

        return a(a), codegen
    return None


@intrinsic
def copysign(typingctx, a, b):
    """``|a|`` with the sign bit of ``b`` (``llvm.copysign``)."""
    if a in _FLOATS and a == b:

        def codegen(context, builder, sig, args):
            return _float_intrinsic(builder, "copysign", args[0].type, args)

        return a(a, b), codegen
    return None


@intrinsic
def select(typingctx, cond, a, b):
    """``a if cond else b`` as a branch-free IR ``select``."""
    if isinstance(cond, types.Boolean) and a == b and isinstance(a, (types.Float, types.Integer)):

        def codegen(context, builder, sig, args):
            return builder.select(*args)

        return a(cond, a, b), codegen
    return None


@intrinsic
def as_int(typingctx, a):
    """The bits of a float: float32 -> int32, float64 -> int64."""
    if a == types.float32:
        ity = types.int32
    elif a == types.float64:
        ity = types.int64
    else:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(ity.bitwidth))

    return ity(a), codegen


def _from_bits(fty, width):
    def typer(typingctx, a):
        if not isinstance(a, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            # Integer arithmetic in Numba widens to int64: keep the low ``width`` bits.
            value = context.cast(builder, args[0], sig.args[0], getattr(types, f"int{width}"))
            return builder.bitcast(value, context.get_value_type(fty))

        return fty(a), codegen

    return typer


_as_float32 = _from_bits(types.float32, 32)
_as_float32.__name__ = "as_float32"
_as_float32.__doc__ = "The float32 whose bits are the low 32 bits of integer ``a``."
as_float32 = intrinsic(_as_float32)

_as_float64 = _from_bits(types.float64, 64)
_as_float64.__name__ = "as_float64"
_as_float64.__doc__ = "The float64 whose bits are integer ``a`` (as int64)."
as_float64 = intrinsic(_as_float64)
