"""A fused kernel computes each operation as NumPy 2 would, not by Numba's scalar rules.

A fused kernel (``passes/fuse.py``) applies a chain of NumPy array operations one element at a
time, on scalars. Numba types scalar arithmetic as Python types its ints: ``int8 +
int8`` is int64, ``True + True`` is 2, ``~True`` is -2, ``7 // 0`` raises. NumPy
computes each operation at the dtypes of its ufunc's *loop*, chosen by the ufunc's own
type resolution (NEP 50: a Python scalar is weak), and wraps there: int8 ``100 + 100``
is -56, ``True + True`` is True, ``7 // 0`` is 0, ``int64 + uint64`` is float64.

So before Numba types a kernel, each operator of it (``a + b``, ``-a``, ``a < b``) and
each call of a NumPy ufunc (``np.sqrt(a)``, ``abs(a)``) becomes a call of
:func:`at_numpy_loop`'s stand-in for that ufunc (:class:`_NumPyRules`, a rewrite of
Numba's IR, so that the generated source still reads ``a + b``). Typed, a stand-in asks
NumPy for the loop (``ufunc.resolve_dtypes``; a constant of the kernel's source is a
weak Python scalar, and so is a parameter declared weak that holds an int64, float64 or
complex128), casts its operands to the loop's dtypes, computes there, and casts
to the loop's result. What NumPy refuses (``True - True``) is refused at compile time,
with NumPy's message; a float16 loop (``np.sqrt(int8)``) is refused too, since Numba
does not compute in float16. Integer loops use the implementations below where Numba's
own ufuncs depart from NumPy's (``floor_divide`` by 0 or ``MIN // -1``, ``fmod`` of
negative values, ``power``, shifts by the width or more, comparisons of int64 with
uint64); float and complex loops use Numba's ufuncs, which follow NumPy's.

An integer operation of Python ints alone (``-b`` or ``b + 1`` of a weak ``b``) computes
as Python does, at int64 (Numba's Python int; beyond its range an ``OverflowError``,
where Python's ints would grow), and stays a Python int: where it meets an array it is
checked against the loop's range as NumPy checks it (``-b * uint8_array`` is NumPy's
``OverflowError``, not ``253 * uint8_array``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import types
from numba.core import errors, ir, rewrites
from numba.core.ir_utils import find_callname, guard
from numba.core.registry import cpu_target
from numba.core.typing import signature
from numba.extending import intrinsic, overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype

from numbax.numba_backend.np.weak import weak_cast
from numbax.runtime import nxrt

NUMPY_RULES = "__numbax_numpy_rules__"
"""A function with this attribute is compiled with NumPy's rules (a fused kernel): its
value, a tuple, names the parameters that may receive Python scalars (weak, as the
constants of its source are)."""

UFUNC_OF_OPERATOR = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.true_divide,
    operator.floordiv: np.floor_divide,
    operator.mod: np.remainder,
    operator.pow: np.power,
    operator.lshift: np.left_shift,
    operator.rshift: np.right_shift,
    operator.and_: np.bitwise_and,
    operator.or_: np.bitwise_or,
    operator.xor: np.bitwise_xor,
    operator.eq: np.equal,
    operator.ne: np.not_equal,
    operator.lt: np.less,
    operator.le: np.less_equal,
    operator.gt: np.greater,
    operator.ge: np.greater_equal,
    operator.neg: np.negative,
    operator.pos: np.positive,
    operator.invert: np.invert,
}
"""Python's operators and the ufunc NumPy applies for each on arrays."""

_BUILTINS = {"abs": np.absolute}
"""Python's builtins that NumPy's arrays answer with a ufunc."""

COMPARISONS = frozenset(
    [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]
)
"""Python's builtins that NumPy's arrays answer with a ufunc."""

_WEAK_TYPES = {types.int64: int, types.float64: float, types.complex128: complex}
"""The Numba type of a Python scalar, and the Python type NumPy's loop resolution takes
for it as a weak scalar (a Python bool is not weak: it is a bool). A weak parameter of
another type was cast already (``elementwise``), or was never a Python scalar."""


_BOOL_KEEPING = frozenset([np.bitwise_and, np.bitwise_or, np.bitwise_xor, *COMPARISONS])
"""The operators whose result on Python bools alone is a bool (``True & False``); the
others compute on Python ints."""


def at_numpy_loop(ufunc: np.ufunc, weak: tuple[bool, ...]) -> Callable:
    """The stand-in for ``ufunc`` whose operands at the positions ``weak`` are Python
    scalars (constants of the source, weak parameters): a Numba intrinsic computing the ufunc at the
    loop NumPy picks. An intrinsic is typed and lowered without a compile of its own
    (Numba's lowering of the ufunc at that loop), except the integer loops of
    :data:`_INTEGER_LOOPS`, each compiled once a process."""
    return _stand_in(ufunc, weak)


@functools.cache
def _stand_in(ufunc: np.ufunc, weak: tuple[bool, ...]) -> Callable:
    def typed(context: Any, args: tuple) -> Any:
        implementation = _implementation(ufunc, weak, args)
        if implementation is None:  # not scalars: Numba's own ufunc (of arrays)
            found = context.resolve_function_type(ufunc, args, {})
            if found is None:
                return None
            return found, lambda context, builder, sig, values: context.get_function(ufunc, sig)(
                builder, values
            )
        return_type, codegen = implementation
        return return_type(*args), codegen

    if ufunc.nin == 1:

        def typer(context, x):  # noqa: ANN001, ANN202
            return typed(context, (x,))

    else:

        def typer(context, x, y):  # noqa: ANN001, ANN202
            return typed(context, (x, y))

    typer.__name__ = typer.__qualname__ = f"numpy_{ufunc.__name__}"
    stand_in = intrinsic(typer)
    cpu_target.typing_context.refresh()  # registers its type, for the compile under way
    return stand_in


def departing_loop(ufunc: np.ufunc, args: tuple) -> tuple[np.dtype, ...] | None:
    """NumPy's loop for ``ufunc`` of operand types ``args`` (some arrays, the Python
    scalars among them cast already) where Numba's own array ufunc may compute another
    thing; None where it computes what NumPy's does: where NumPy's loop is a float or
    complex one of the operands' own dtypes (``float32 * float32``, ``float64 < float64``,
    the common case) but for complex powers (:data:`_COMPLEX_LOOPS`), or NumPy has no
    loop (Numba's own then says what it cannot do)."""
    try:
        operands = tuple(as_dtype(types.unliteral(getattr(a, "dtype", a))) for a in args)
        loop = ufunc.resolve_dtypes((*operands, None))
    except (TypeError, NotImplementedError):
        return None
    own = all(o == d and d.kind in "fc" for o, d in zip(operands, loop, strict=False))
    if own and not (loop[-1].kind == "c" and ufunc.__name__ in _COMPLEX_LOOPS):
        return None
    return loop


def item(v: Any) -> Any:
    """The value of a scalar or of a 0-d array (only used under Numba)."""
    return v


@overload(item)
def _item_overload(v):  # noqa: ANN001, ANN202
    if isinstance(v, types.Array):
        return lambda v: v[()]
    return lambda v: v


def float16_refusal(ufunc: np.ufunc, operands: tuple) -> errors.TypingError:
    """The error for ``ufunc`` of ``operands`` (dtypes, or Python types for weak
    scalars), whose NumPy loop is float16's."""
    names = ", ".join(getattr(o, "__name__", str(o)) for o in operands)
    return errors.TypingError(
        f"numbax: np.{ufunc.__name__} of {names} computes in float16 "
        "in NumPy, which Numba does not compile on the CPU: cast the operands to float32 "
        "(x.astype(np.float32)) first"
    )


def _operand_dtype(numba_type: types.Type, weak: bool) -> Any:
    """What ``resolve_dtypes`` takes for an operand: its dtype, or a Python type."""
    numba_type = types.unliteral(numba_type)
    if weak and numba_type in _WEAK_TYPES:
        return _WEAK_TYPES[numba_type]
    return as_dtype(numba_type)


def _implementation(
    ufunc: np.ufunc, weak: tuple[bool, ...], args: tuple
) -> tuple[types.Type, Callable] | None:
    """The result type and the lowering of ``ufunc`` for operand types ``args``."""
    if len(args) != ufunc.nin or not all(isinstance(a, types.Number | types.Boolean) for a in args):
        return None
    operands = tuple(_operand_dtype(a, w) for a, w in zip(args, weak, strict=True))
    if all(weak) and ufunc not in _BOOL_KEEPING and any(o == np.bool_ for o in operands):
        # Python's own operators on Python bools compute on ints: ~True is -2, True + True 2
        operands = tuple(int if o == np.bool_ else o for o in operands)
    if ufunc in COMPARISONS and any(isinstance(o, np.dtype) and o.kind in "biu" for o in operands):
        # NumPy 2 compares a Python int with an integer by value (np.int8(5) < 300)
        operands = tuple(np.dtype(np.int64) if o is int else o for o in operands)
    if all(isinstance(o, type) for o in operands):
        # Python scalars alone: NumPy would pick its object loops; as arrays they are
        # int64, float64, complex128 or bool, which is what compiled code holds
        operands = tuple(np.dtype(o) for o in operands)
    try:
        loop = ufunc.resolve_dtypes((*operands, None))
    except TypeError as err:
        names = ", ".join(getattr(o, "__name__", str(o)) for o in operands)
        reason = str(err) if "numpy boolean" in str(err) else "it has no loop for them"
        raise errors.TypingError(
            f"numbax: NumPy refuses np.{ufunc.__name__} of ({names}): {reason}"
        ) from None
    if any(dtype == np.float16 for dtype in loop):
        raise float16_refusal(ufunc, operands)
    for arg, dtype in zip(args, loop, strict=False):
        if isinstance(arg, types.IntegerLiteral) and dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not info.min <= arg.literal_value <= info.max:
                raise errors.TypingError(
                    f"numbax: Python integer {arg.literal_value} out of bounds for {dtype} "
                    "(NumPy's OverflowError)"
                )
    loop_types = tuple(from_dtype(dtype) for dtype in loop)
    exact = None
    if all(dtype.kind in "biu" for dtype in loop[: ufunc.nin]):
        exact = _INTEGER_LOOPS.get(ufunc.__name__)
    elif all(dtype.kind == "c" for dtype in loop):
        exact = _COMPLEX_LOOPS.get(ufunc.__name__)
    if exact is not None and all(weak) and loop[-1].kind in "iu":
        # Python ints alone: computed as Python does (at int64, Numba's Python int),
        # and still a Python int, checked where it meets an array (``-(b + 1) * a``)
        wide = (np.dtype(np.int64),) * (ufunc.nin + 1)
        python = exact(*wide, *(np.int64,) * (ufunc.nin + 1))
        if ufunc.__name__ in _UNBOUNDED:
            python = _within_int64(python, ufunc.nin, _UNBOUNDED[ufunc.__name__])
        return types.int64, _compiled(python, {})
    checks = {
        i: (weak_cast(types.unliteral(arg), to), to)
        for i, (arg, to, w) in enumerate(zip(args, loop_types, weak, strict=False))
        if w and isinstance(arg, types.Integer) and not isinstance(arg, types.IntegerLiteral)
    }
    if exact is not None:
        return loop_types[-1], _compiled(exact(*loop, *(dtype.type for dtype in loop)), checks)

    def lowered(context, builder, sig, values):  # noqa: ANN001, ANN202
        values, sig = _checked(context, builder, sig, values, checks)
        inputs = [
            context.cast(builder, value, arg, to)
            for value, arg, to in zip(values, sig.args, loop_types, strict=False)
        ]
        at_loop = signature(loop_types[-1], *loop_types[: ufunc.nin])
        return context.get_function(ufunc, at_loop)(builder, inputs)

    return loop_types[-1], lowered


_UNBOUNDED = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "power": operator.pow,
    "left_shift": lambda x, y: x * 2.0**y,
    "negative": operator.neg,
    "absolute": abs,
}
"""Python's operations on ints whose result may leave int64's range, and each computed
on floats (close to the exact result, to tell a wrapped int64 from it)."""


def _within_int64(impl: Callable, nin: int, on_floats: Callable) -> Callable:
    """``impl`` of Python ints at int64, raising ``OverflowError`` where Python's exact
    result leaves int64's range (``(2**40) ** 2``) rather than wrapping: a wrapped
    result is 2**64 away from the exact one, whose float approximation is within
    a few units of 2**10 of it."""
    jitted = register_jitable(impl)
    exact_in_floats = register_jitable(on_floats)
    message = (
        "numbax: Python int arithmetic beyond int64, in which compiled code computes Python "
        "ints (Python's are unbounded): compute it on floats (2.0 ** 80) or outside nx.jit"
    )

    def checked(result, approximate):  # noqa: ANN001, ANN202
        if abs(np.float64(result) - approximate) > 2.0**12:
            raise OverflowError(message)
        return result

    checked = register_jitable(checked)
    if nin == 1:
        return lambda x: checked(jitted(x), exact_in_floats(np.float64(x)))
    return lambda x, y: checked(jitted(x, y), exact_in_floats(np.float64(x), np.float64(y)))


def _compiled(impl: Callable, checks: dict[int, Callable]) -> Callable:
    """The lowering of ``impl`` (Numba compiles it in place), after ``checks``."""

    def compiled(context, builder, sig, values):  # noqa: ANN001, ANN202
        values, sig = _checked(context, builder, sig, values, checks)
        return context.compile_internal(builder, impl, sig, values)

    return compiled


def _call(cast: Callable) -> Callable:
    return lambda value: cast(value)


def _checked(context: Any, builder: Any, sig: Any, values: list, checks: dict) -> tuple:
    """``values`` with each Python int that ``checks`` names cast to its loop's type by
    its check (``weak_cast``: NumPy's ``OverflowError`` out of the loop's range), and
    their signature."""
    values, arg_types = list(values), list(sig.args)
    for i, (cast, to) in checks.items():
        arg = types.unliteral(arg_types[i])
        values[i] = context.compile_internal(builder, _call(cast), signature(to, arg), [values[i]])
        arg_types[i] = to
    return values, signature(sig.return_type, *arg_types)


# Integer and bool loops. Each factory takes the loop's dtypes and then their scalar
# types, and returns the implementation. Python's operators on Numba's integers compute
# in 64 bits; casting to the loop's type wraps as NumPy does (for +, -, *, <<, &, |, ^
# and powers the low bits do not depend on the width they were computed in).


def _wrapped(op: Callable) -> Callable:
    """``op`` at the loop's dtype, wrapping as NumPy's loops do. An int64 loop computes
    on uint64 (the same bits): Numba marks signed integer arithmetic as never
    overflowing (LLVM's ``nsw``), and LLVM then folds ``(a + b) > a`` into ``b > 0``,
    where NumPy's wraps (``-2**63 + -1 > -2**63`` is True). The narrower signed loops
    compute in int64, where they cannot overflow, and wrap when cast back."""

    def factory(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
        if out_dtype == np.int64:

            def unsigned(x, y):  # noqa: ANN001, ANN202
                return out(op(np.uint64(cast_x(x)), np.uint64(cast_y(y))))

            return unsigned

        def impl(x, y):  # noqa: ANN001, ANN202
            return out(op(cast_x(x), cast_y(y)))

        return impl

    return factory


def _bool_or_wrapped(op: Callable, on_bools: Callable) -> Callable:
    """``op``, or ``on_bools`` where the loop is bool's (``+`` is or, ``*`` is and)."""

    def factory(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
        return _wrapped(on_bools if out_dtype.kind == "b" else op)(
            x_dtype, y_dtype, out_dtype, cast_x, cast_y, out
        )

    return factory


def _floor_divide(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """NumPy's: 0 for a division by zero, ``MIN // -1`` wraps to ``MIN``."""

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        if b == 0:
            return out(0)
        if b == -1:
            return out(-a)
        return out(a // b)

    return impl


def _remainder(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """The sign of the divisor (Python's ``%``); 0 for a division by zero."""

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        if b == 0 or b == -1:
            return out(0)
        return out(a % b)

    return impl


def _fmod(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """The sign of the dividend (C's ``%``); 0 for a division by zero."""

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        if b == 0 or b == -1:
            return out(0)
        r = a % b
        if r != 0 and (r < 0) != (a < 0):
            r -= b
        return out(r)

    return impl


def _power(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """By squaring, wrapping at the loop's width; a negative exponent is NumPy's
    ``ValueError``."""
    wide = np.uint64  # a signed result's bits too, never overflowing (see _wrapped)

    def impl(x, y):  # noqa: ANN001, ANN202
        if cast_y(y) < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
        base, exponent, one = wide(cast_x(x)), wide(cast_y(y)), wide(1)
        result = one
        while exponent > 0:
            if exponent & one:
                result = wide(result * base)
            base = wide(base * base)
            exponent = exponent >> one
        return out(result)

    return impl


def _left_shift(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """0 for a shift by the width or more (or a negative one), as NumPy's."""
    bits = out_dtype.itemsize * 8

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        if b < 0 or b >= bits:
            return out(0)
        return out(a << b)

    return impl


def _right_shift(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """The sign bits for a shift by the width or more (or a negative one), as NumPy's."""
    bits = out_dtype.itemsize * 8

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        if b < 0 or b >= bits:
            return out(-1) if a < 0 else out(0)
        return out(a >> b)

    return impl


def _compared(op: Callable) -> Callable:
    """A comparison, exact where one operand is signed and the other unsigned (NumPy 2's
    loops for int64 with uint64: a negative value is less than any unsigned one)."""

    def factory(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
        if {x_dtype.kind, y_dtype.kind} != {"i", "u"}:
            return _wrapped(op)(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out)
        x_signed = x_dtype.kind == "i"

        def impl(x, y):  # noqa: ANN001, ANN202
            a, b = cast_x(x), cast_y(y)
            if x_signed and a < 0:
                return op(0, 1)  # a < b
            if not x_signed and b < 0:
                return op(1, 0)  # a > b
            return op(np.uint64(a), np.uint64(b))

        return impl

    return factory


def _unary(op: Callable, on_bools: Callable | None = None) -> Callable:
    def factory(x_dtype, out_dtype, cast_x, out):  # noqa: ANN001, ANN202
        chosen = on_bools if on_bools is not None and x_dtype.kind == "b" else op

        def impl(x):  # noqa: ANN001, ANN202
            return out(chosen(cast_x(x)))

        return impl

    return factory


def _square(x_dtype, out_dtype, cast_x, out):  # noqa: ANN001, ANN202
    if out_dtype == np.int64:  # on uint64: the same bits, never overflowing (see _wrapped)
        return lambda x: out(np.uint64(cast_x(x)) * np.uint64(cast_x(x)))

    def impl(x):  # noqa: ANN001, ANN202
        a = cast_x(x)
        return out(a * a)

    return impl


def _sign(x_dtype, out_dtype, cast_x, out):  # noqa: ANN001, ANN202
    """-1, 0 or 1 (Numba's ``np.sign`` of unsigned integers gives their maximum for 1)."""

    def impl(x):  # noqa: ANN001, ANN202
        a = cast_x(x)
        return out(1) if a > 0 else (out(-1) if a < 0 else out(0))

    return impl


def _complex_power(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """NumPy's ``npy_cpow``: ``z ** 0`` is 1, ``0 ** z`` is 0 for a positive real part of
    ``z`` and NaN otherwise, an integer exponent below 100 in magnitude multiplies, in
    NumPy's order (so an overflow gives NumPy's infinities and NaNs), any other is the C
    library's ``cpow``, ``exp(b log a)`` at the loop's precision (Numba's complex power
    takes another way, whose overflows are NaNs)."""
    real = np.float32 if out_dtype == np.complex64 else np.float64

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        ar, ai, br, bi = real(a.real), real(a.imag), real(b.real), real(b.imag)
        one, zero = real(1), real(0)
        if br == 0 and bi == 0:
            return out(1)
        if ar == 0 and ai == 0:
            return out(0) if br > 0 else out(complex(np.nan, np.nan))
        if bi != 0 or not -100 < br < 100 or np.floor(br) != br:
            return out(np.exp(b * np.log(a)))
        n = int(br)
        if n == 1:
            return out(complex(ar, ai))
        if n == 2:
            return out(complex(ar * ar - ai * ai, ar * ai + ai * ar))
        if n == 3:
            sr, si = ar * ar - ai * ai, ar * ai + ai * ar
            return out(complex(ar * sr - ai * si, ar * si + ai * sr))
        n = abs(n)
        pr, pi, sr, si = one, zero, ar, ai
        mask = 1
        while True:
            if n & mask:
                pr, pi = pr * sr - pi * si, pr * si + pi * sr
            mask <<= 1
            if n < mask:
                break
            sr, si = sr * sr - si * si, sr * si + si * sr
        if br < 0:
            return out(_reciprocal(pr, pi, one, zero))
        return out(complex(pr, pi))

    return impl


@register_jitable
def _reciprocal(br, bi, one, zero):  # noqa: ANN001, ANN202
    """``1 / (br + bi j)`` as NumPy's complex division computes it, in the type of
    ``one`` and ``zero``."""
    return _quotient(one, zero, br, bi, one)


@register_jitable
def _over_zero(x):  # noqa: ANN001, ANN202
    """``x / +0.0`` as IEEE divides (Python's ``/`` raises)."""
    if x > 0:
        return np.inf
    if x < 0:
        return -np.inf
    return np.nan


@register_jitable
def _quotient(ar, ai, br, bi, one):  # noqa: ANN001, ANN202
    """``(ar + ai j) / (br + bi j)`` by NumPy's loop (Smith's algorithm; a division by
    zero gives each part of the dividend over +0), in the type of ``one``."""
    abs_br, abs_bi = abs(br), abs(bi)
    if abs_br >= abs_bi:
        if abs_br == 0 and abs_bi == 0:
            return complex(_over_zero(ar), _over_zero(ai))
        rat = bi / br
        scl = one / (br + bi * rat)
        return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = br / bi
    scl = one / (bi + br * rat)
    return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)


def _complex_divide(x_dtype, y_dtype, out_dtype, cast_x, cast_y, out):  # noqa: ANN001, ANN202
    """NumPy's complex division (Numba's gives other infinities for a division by
    zero)."""
    real = np.float32 if out_dtype == np.complex64 else np.float64

    def impl(x, y):  # noqa: ANN001, ANN202
        a, b = cast_x(x), cast_y(y)
        parts = real(a.real), real(a.imag), real(b.real), real(b.imag)
        return out(_quotient(*parts, real(1)))

    return impl


_COMPLEX_LOOPS: dict[str, Callable] = {"power": _complex_power, "divide": _complex_divide}
"""Complex loops where Numba's ufunc departs from NumPy's."""


_INTEGER_LOOPS: dict[str, Callable] = {
    "add": _bool_or_wrapped(operator.add, operator.or_),
    "subtract": _wrapped(operator.sub),
    "multiply": _bool_or_wrapped(operator.mul, operator.and_),
    "floor_divide": _floor_divide,
    "remainder": _remainder,
    "fmod": _fmod,
    "power": _power,
    "left_shift": _left_shift,
    "right_shift": _right_shift,
    "bitwise_and": _wrapped(operator.and_),
    "bitwise_or": _wrapped(operator.or_),
    "bitwise_xor": _wrapped(operator.xor),
    "equal": _compared(operator.eq),
    "not_equal": _compared(operator.ne),
    "less": _compared(operator.lt),
    "less_equal": _compared(operator.le),
    "greater": _compared(operator.gt),
    "greater_equal": _compared(operator.ge),
    "negative": _unary(operator.neg),
    "positive": _unary(operator.pos),
    "absolute": _unary(abs),
    "invert": _unary(operator.invert, operator.not_),
    "square": _square,
    "sign": _sign,
}
"""Implementations of integer and bool loops where Numba's own ufuncs depart from
NumPy's (or compute in float: ``power``), by ufunc name."""


def _defined_once(find: Callable) -> Any:
    """What ``find`` finds from a variable's definition, or None where the variable has
    several (a value merged after a branch)."""
    try:
        return find()
    except KeyError:
        return None


def ufunc_of(func_ir: ir.FunctionIR, value: Any) -> np.ufunc | None:
    """The NumPy ufunc that IR expression ``value`` applies: that of its operator (``a +
    b``, ``-a``, ``a += b``) or the ufunc it calls (``np.sqrt(a)``, ``abs(a)``); None for
    anything else."""
    if not isinstance(value, ir.Expr):
        return None
    if value.op in ("binop", "unary"):
        return UFUNC_OF_OPERATOR.get(value.fn)
    if value.op == "inplace_binop":
        return UFUNC_OF_OPERATOR.get(value.immutable_fn)
    if value.op != "call" or value.kws or value.vararg:
        return None
    name = _defined_once(lambda: guard(find_callname, func_ir, value))
    if name is None:
        return None
    attribute, module = name
    if module == "builtins":
        ufunc = _BUILTINS.get(attribute)
    else:
        ufunc = getattr(np, attribute, None) if module == "numpy" else None
    if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1 or ufunc.nin > 2:
        return None
    return ufunc if len(value.args) == ufunc.nin else None


def operands_of(value: ir.Expr) -> list[ir.Var]:
    """The operands of an expression :func:`ufunc_of` names a ufunc for."""
    if value.op == "unary":
        return [value.value]
    if value.op == "call":
        return list(value.args)
    return [value.lhs, value.rhs]


def call_stand_in(
    func_ir: ir.FunctionIR, block: ir.Block, stmt: ir.Assign, ufunc: np.ufunc, weak: tuple
) -> list[ir.Stmt]:
    """``stmt`` (of ``block``) made to call :func:`at_numpy_loop`'s stand-in for its
    ``ufunc`` with the same operands: the statements to put in its place (the stand-in's
    global, then ``stmt``). The generated source still reads ``a + b``."""
    expr = stmt.value
    stand_in = at_numpy_loop(ufunc, weak)
    callee = block.scope.redefine("$numpy_rule", expr.loc)
    value = ir.Global(stand_in.__name__, stand_in, expr.loc)
    func_ir._definitions[callee.name] = [value]
    stmt.value = ir.Expr.call(callee, operands_of(expr), (), expr.loc)
    return [ir.Assign(value, callee, expr.loc), stmt]


@rewrites.register_rewrite("before-inference")
class _NumPyRules(rewrites.Rewrite):
    """In a function marked :data:`NUMPY_RULES`, each operator and each call of a NumPy
    ufunc becomes a call of its :func:`at_numpy_loop` stand-in."""

    def match(self, func_ir, block, typemap, calltypes):  # noqa: ANN001, ANN201
        weak = getattr(func_ir.func_id.func, NUMPY_RULES, None)
        if weak is None:
            return False
        self._weak_parameters = weak
        self._func_ir, self._block = func_ir, block
        self._found = {
            id(stmt): ufunc
            for stmt in block.find_insts(ir.Assign)
            if (ufunc := ufunc_of(func_ir, stmt.value)) is not None
        }
        return bool(self._found)

    def _is_weak(self, var: ir.Var) -> bool:
        """Whether ``var`` is a Python scalar: a constant, a weak parameter, ``nxrt.weak``
        of one, or the result of Python's operators on them alone."""
        definition = _defined_once(lambda: guard(self._func_ir.get_definition, var))
        if isinstance(definition, ir.Arg):
            return definition.name in self._weak_parameters
        if isinstance(definition, ir.Expr) and definition.op in ("binop", "inplace_binop"):
            return self._is_weak(definition.lhs) and self._is_weak(definition.rhs)
        if isinstance(definition, ir.Expr) and definition.op == "unary":
            return self._is_weak(definition.value)
        if isinstance(definition, ir.Expr) and definition.op == "call" and definition.args:
            name = _defined_once(lambda: guard(find_callname, self._func_ir, definition))
            return name == ("weak", nxrt.__name__) and self._is_weak(definition.args[0])
        return isinstance(definition, ir.Const) and type(definition.value) in (int, float, complex)

    def apply(self):  # noqa: ANN201
        block = self._block
        new_body = []
        for stmt in block.body:
            ufunc = self._found.get(id(stmt))
            if ufunc is None:
                new_body.append(stmt)
                continue
            weak = tuple(self._is_weak(v) for v in operands_of(stmt.value))
            new_body.extend(call_stand_in(self._func_ir, block, stmt, ufunc, weak))
        block.body = new_body
        return block
