"""NumPy reductions that behave the same interpreted and in Numba's nopython mode.

numbax promises that a function which runs under NumPy runs the same once jitted. Numba's
own ``np.sum``, ``np.max``, ``np.argmax``, ``np.cumsum`` and friends fall short of that
promise: most take no ``axis`` tuple and no ``keepdims``, some take no ``axis`` at all,
``np.var``/``np.std`` take no ``ddof``, and result dtypes differ from NumPy's in places. So
numbax's code generator redirects calls that resolve to ``numpy.sum`` (and array methods
such as ``x.sum(axis=0)``) to the functions of this module when it compiles with jit.

Each public function here, called from plain Python, simply calls NumPy. A
``numba.extending.overload`` registered on that numbax function (never on ``np.sum``
itself: Numba's own functions are left alone) compiles the same call in nopython mode
with NumPy's semantics:

* ``axis`` is None, an int (negative counts from the end) or a tuple of ints; a bad
  axis raises NumPy's own ``AxisError`` when the call runs, and a repeated one raises
  ``ValueError``;
* ``keepdims`` is True or False; ``ddof`` for ``var``/``std``; ``dtype`` for all
  functions of NumPy that take one;
* any ndim, 0-d arrays and scalars included, any memory layout;
* NumPy's result dtypes (``sum`` of bool or small ints is int64, ``mean`` of ints is
  float64, ``var`` of complex is real, ``argmax`` is intp) and NaN handling (``max``
  propagates NaN, ``argmax`` returns the first NaN), and NumPy's pairwise summation for
  floats, so sums usually agree with NumPy to the last bit.

The rank of a result must be known when Numba compiles, so ``keepdims`` must be a
compile-time constant (a non-constant one is turned into one with ``numba.literally``).
An axis written as a constant compiles into loops specialised to it; an axis that is only
known at run time (a variable, or a tuple holding one) is handled by a general loop that
first moves the reduced axes to one end.

Loops are generated per (function, dtype, rank, axes, layout) and walk the input in
memory order: an inner reduced axis is summed into a register, an outer one is
accumulated row by row into the output.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numba import types
from numba.core import errors
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype, from_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.caching import runtime_cache
from numbax.numba_backend.generated import define
from numbax.numba_backend.redirects import redirect

AxisArg = int | tuple[int, ...] | None

# ---------------------------------------------------------------------------------------
# The public functions: plain NumPy when interpreted.
# ---------------------------------------------------------------------------------------


@redirect(np.sum)
def sum(a: Any, axis: AxisArg = None, dtype: Any = None, *, keepdims: bool = False) -> Any:
    """Sum of elements, as ``np.sum``; compiled by the overload below under jit."""
    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims)


@redirect(np.prod)
def prod(a: Any, axis: AxisArg = None, dtype: Any = None, *, keepdims: bool = False) -> Any:
    """Product of elements, as ``np.prod``; compiled by the overload below under jit."""
    return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims)


@redirect(np.mean)
def mean(a: Any, axis: AxisArg = None, dtype: Any = None, *, keepdims: bool = False) -> Any:
    """Arithmetic mean, as ``np.mean``; compiled by the overload below under jit."""
    return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)


@redirect(np.max)
def max(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Maximum, as ``np.max`` (NaN propagates); compiled by the overload below under jit."""
    return np.max(a, axis=axis, keepdims=keepdims)


@redirect(np.min)
def min(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Minimum, as ``np.min`` (NaN propagates); compiled by the overload below under jit."""
    return np.min(a, axis=axis, keepdims=keepdims)


# NumPy's amax/amin are the same functions under older names.
amax = redirect(np.amax, name="amax")(max)
amin = redirect(np.amin, name="amin")(min)


@redirect(np.var)
def var(
    a: Any, axis: AxisArg = None, dtype: Any = None, *, ddof: float = 0, keepdims: bool = False
) -> Any:
    """Variance, as ``np.var`` (two passes; real for complex input); jit via the overload."""
    return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)


@redirect(np.std)
def std(
    a: Any, axis: AxisArg = None, dtype: Any = None, *, ddof: float = 0, keepdims: bool = False
) -> Any:
    """Standard deviation, as ``np.std``; compiled by the overload below under jit."""
    return np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)


@redirect(np.argmax)
def argmax(a: Any, axis: int | None = None, *, keepdims: bool = False) -> Any:
    """Index of the first maximum (or first NaN), as ``np.argmax``; jit via the overload."""
    return np.argmax(a, axis=axis, keepdims=keepdims)


@redirect(np.argmin)
def argmin(a: Any, axis: int | None = None, *, keepdims: bool = False) -> Any:
    """Index of the first minimum (or first NaN), as ``np.argmin``; jit via the overload."""
    return np.argmin(a, axis=axis, keepdims=keepdims)


@redirect(np.all)
def all(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Whether all elements are true, as ``np.all``; compiled by the overload below."""
    return np.all(a, axis=axis, keepdims=keepdims)


@redirect(np.any)
def any(a: Any, axis: AxisArg = None, *, keepdims: bool = False) -> Any:
    """Whether any element is true, as ``np.any``; compiled by the overload below."""
    return np.any(a, axis=axis, keepdims=keepdims)


@redirect(np.cumsum)
def cumsum(a: Any, axis: int | None = None, dtype: Any = None) -> Any:
    """Cumulative sum (axis None flattens), as ``np.cumsum``; jit via the overload."""
    return np.cumsum(a, axis=axis, dtype=dtype)


@redirect(np.cumprod)
def cumprod(a: Any, axis: int | None = None, dtype: Any = None) -> Any:
    """Cumulative product (axis None flattens), as ``np.cumprod``; jit via the overload."""
    return np.cumprod(a, axis=axis, dtype=dtype)


# ---------------------------------------------------------------------------------------
# Small jitted helpers shared by the generated loops.
# ---------------------------------------------------------------------------------------


@register_jitable
def _always() -> bool:
    """True, opaque to Numba's dead-branch pruning: keeps code after a raise typed."""
    return True


@register_jitable
def _div(x, n):
    """``x / n`` with IEEE results for ``n == 0`` (NumPy warns; Numba would raise)."""
    if n == 0:
        return x * np.inf
    return x / n


@register_jitable
def _cge(u, v):
    """NumPy's ``>=`` for complex numbers (lexicographic, NaN-aware)."""
    return (u.real > v.real and u.imag == u.imag and v.imag == v.imag) or (
        u.real == v.real and u.imag >= v.imag
    )


@register_jitable
def _cle(u, v):
    """NumPy's ``<=`` for complex numbers (lexicographic, NaN-aware)."""
    return (u.real < v.real and u.imag == u.imag and v.imag == v.imag) or (
        u.real == v.real and u.imag <= v.imag
    )


@register_jitable
def _cgt(u, v):
    """Lexicographic ``>`` for complex numbers, as NumPy's argmax compares them."""
    return u.real > v.real or (u.real == v.real and u.imag > v.imag)


@register_jitable
def _clt(u, v):
    """Lexicographic ``<`` for complex numbers, as NumPy's argmin compares them."""
    return u.real < v.real or (u.real == v.real and u.imag < v.imag)


_HELPERS = {
    "np": np,
    "to_fixed_tuple": to_fixed_tuple,
    "_always": _always,
    "_div": _div,
    "_cge": _cge,
    "_cle": _cle,
    "_cgt": _cgt,
    "_clt": _clt,
}


def _compile(source: str, name: str, namespace: dict[str, Any], jit: bool = True) -> Any:
    """Define generated ``source`` with the helpers it calls and return its function
    ``name`` (jitted if ``jit``)."""
    fn = define(source, {**_HELPERS, **namespace}, f"reductions {name}", name)
    return runtime_cache.njit(error_model="numpy")(fn) if jit else fn


# ---------------------------------------------------------------------------------------
# Typing-time helpers: dtypes, literals, axes.
# ---------------------------------------------------------------------------------------


def _fail(name: str, message: str) -> errors.NumbaTypeError:
    """A typing error naming the function, reported by Numba at the user's call."""
    return errors.NumbaTypeError(f"numbax reductions.{name}: {message}")


def _is_none(ty: Any) -> bool:
    """Whether an overload argument is an omitted or explicit None."""
    if isinstance(ty, types.Omitted):
        return ty.value is None
    return ty is None or isinstance(ty, types.NoneType)


def _wants_literal(ty: Any) -> bool:
    """Whether a ``keepdims`` argument is a bool only known at run time."""
    return isinstance(ty, types.Boolean) and not isinstance(ty, types.BooleanLiteral)


def _keepdims(name: str, ty: Any) -> bool:
    """The value of a compile-time ``keepdims`` (default, omitted or literal)."""
    if isinstance(ty, bool):
        return ty
    if isinstance(ty, types.Omitted):
        return bool(ty.value)
    if isinstance(ty, types.BooleanLiteral | types.IntegerLiteral):
        return bool(ty.literal_value)
    raise _fail(name, f"keepdims must be True or False, got {ty}")


def _input(name: str, a: Any) -> tuple[types.Type, int, str]:
    """(dtype, ndim, layout) of an array or scalar argument; scalars count as 0-d."""
    if isinstance(a, types.Array):
        dt, ndim, layout = a.dtype, a.ndim, a.layout
    elif isinstance(a, types.Number | types.Boolean):
        dt, ndim, layout = types.unliteral(a), 0, "C"
    else:
        raise _fail(name, f"expected an array or a number, got {a}")
    supported = isinstance(dt, types.Boolean | types.Integer | types.Complex) or (
        isinstance(dt, types.Float) and dt.bitwidth >= 32
    )
    if not supported:
        raise _fail(name, f"unsupported dtype {dt}")
    return dt, ndim, layout


_BUILTIN_DTYPES = {
    float: types.float64,
    int: types.intp,
    bool: types.boolean,
    complex: types.complex128,
}


def _dtype_arg(name: str, dtype: Any) -> types.Type | None:
    """The Numba scalar type named by a ``dtype=`` argument, or None."""
    if _is_none(dtype):
        return None
    if isinstance(dtype, types.NumberClass):
        return dtype.instance_type
    if isinstance(dtype, types.DType):
        return dtype.dtype
    if isinstance(dtype, types.StringLiteral):
        return from_dtype(np.dtype(dtype.literal_value))
    key = getattr(dtype, "typing_key", None)
    if isinstance(dtype, types.Function) and key in _BUILTIN_DTYPES:
        return _BUILTIN_DTYPES[key]
    raise _fail(name, f"unsupported dtype argument {dtype}")


def _accumulating(dt: types.Type) -> types.Type:
    """NumPy's result dtype for sum/prod/cumsum/cumprod: small ints widen to 64 bits."""
    if isinstance(dt, types.Boolean):
        return types.int64
    if isinstance(dt, types.Integer) and dt.bitwidth < 64:
        return types.int64 if dt.signed else types.uint64
    return dt


def _inexact(dt: types.Type) -> types.Type:
    """NumPy's dtype for mean and for the mean inside var: ints and bools become float64."""
    return dt if isinstance(dt, types.Float | types.Complex) else types.float64


def _real(dt: types.Type) -> types.Type:
    """NumPy's dtype for var/std when none is asked for: the real type of the mean's."""
    dt = _inexact(dt)
    return dt.underlying_float if isinstance(dt, types.Complex) else dt


@dataclass(frozen=True)
class _Axes:
    """An ``axis`` argument as seen at compile time.

    ``count`` is how many axes the argument names. ``static`` holds them normalised and
    sorted when all are constants; otherwise ``is_int`` says whether the one run-time axis
    arrives as a bare int. ``error`` is a raise statement for an invalid constant axis.
    """

    static: tuple[int, ...] | None = None
    count: int = 0
    is_int: bool = False
    error: str | None = None


def _axis_error(axis: int | str, ndim: int) -> str:
    return f"raise np.exceptions.AxisError({axis}, {ndim})"


_DUPLICATE = "raise ValueError(\"duplicate value in 'axis'\")"


def _axes(name: str, axis: Any, ndim: int, tuples: bool = True) -> _Axes:
    """Classify and normalise an ``axis`` argument against an array of rank ``ndim``."""
    if _is_none(axis):
        return _Axes(static=tuple(range(ndim)), count=ndim)
    if isinstance(axis, types.Integer) and not isinstance(axis, types.Boolean):
        if not isinstance(axis, types.IntegerLiteral):
            return _Axes(count=1, is_int=True)
        values = [axis.literal_value]
    elif tuples and isinstance(axis, types.BaseTuple):
        if not builtins.all(isinstance(t, types.Integer) for t in axis.types):
            raise _fail(name, f"axis must be None, an int or a tuple of ints, got {axis}")
        if not builtins.all(isinstance(t, types.IntegerLiteral) for t in axis.types):
            return _Axes(count=len(axis.types))
        values = [t.literal_value for t in axis.types]
    else:
        kinds = "None, an int or a tuple of ints" if tuples else "None or an int"
        raise _fail(name, f"axis must be {kinds}, got {axis}")
    normalised = []
    for value in values:
        if not -ndim <= value < ndim:
            return _Axes(count=len(values), error=_axis_error(value, ndim))
        normalised.append(value % ndim)
    if len(set(normalised)) != len(normalised):
        return _Axes(count=len(values), error=_DUPLICATE)
    return _Axes(static=tuple(sorted(normalised)), count=len(values))


# ---------------------------------------------------------------------------------------
# Reduction operations, as source fragments compiled into small jitted helpers.
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Op:
    """How a reduction folds elements into an accumulator of NumPy scalar type ``acc``.

    ``elem`` turns an input element ``{x}`` (and, when ``uses_param``, the per-output
    parameter ``p``, the mean for var) into an accumulator value; ``combine`` folds
    accumulator ``{v}`` into ``{u}``; ``init`` is the starting accumulator. ``mode`` picks
    the 1-D algorithm:

    * "pairwise": NumPy's pairwise summation, in NumPy's order;
    * "blocked": 8 independent accumulators combined with ``quick``, a cheaper form of
      ``combine`` that may ignore NaN; then ``guard`` says that a NaN or an infinity may
      have been seen, and the row is folded again with ``combine``;
    * "chunked": chunks folded without a branch, stopping after one where ``stop`` holds;
    * "sequential": one element after the other.

    ``names`` are further globals the fragments use (``T`` is always ``acc``).
    """

    acc: Any
    init: Any
    elem: str
    combine: str
    mode: str = "sequential"
    quick: str | None = None
    guard: bool = False
    stop: str | None = None
    uses_param: bool = False
    names: tuple[tuple[str, Any], ...] = ()

    def at(self, x: str) -> str:
        return self.elem.format(x=x)

    def fold(self, u: str, v: str, combine: str | None = None) -> str:
        return (combine or self.combine).format(u=f"({u})", v=f"({v})")

    def tree(self, combine: str | None = None) -> str:
        """NumPy's order for combining 8 partial accumulators ``r0``..``r7``."""
        pairs = [self.fold(f"r{j}", f"r{j + 1}", combine) for j in range(0, 8, 2)]
        left, right = self.fold(*pairs[:2], combine), self.fold(*pairs[2:], combine)
        return self.fold(left, right, combine)

    def compile(self, source: str, name: str, **extra: Any) -> Any:
        scope = {"T": self.acc, "U": np.uint64, **dict(self.names), **extra}
        return _compile(source, name, scope)


def _npt(ty: types.Type) -> Any:
    """The NumPy scalar type of a Numba type (callable in jitted code, as a cast)."""
    return as_dtype(ty).type


def _sum_op(acc: types.Type) -> _Op:
    t = _npt(acc)
    mode = "pairwise" if isinstance(acc, types.Float | types.Complex) else "sequential"
    return _Op(t, t(0), "T({x})", "T({u} + {v})", mode)


def _prod_op(acc: types.Type) -> _Op:
    t = _npt(acc)
    return _Op(t, t(1), "T({x})", "T({u} * {v})")


def _extreme_op(dt: types.Type, maximum: bool) -> _Op:
    """NumPy's maximum (minimum): ``u`` wins when it is NaN or compares >= (<=) ``v``."""
    t, ge, gt = _npt(dt), (">=" if maximum else "<="), (">" if maximum else "<")
    if isinstance(dt, types.Complex):
        cge = "_cge" if maximum else "_cle"
        combine = f"{{u}} if ({{u}} != {{u}} or {cge}({{u}}, {{v}})) else {{v}}"
        inf = np.inf if maximum else -np.inf
        # Which of several complex NaNs wins depends on the order: keep NumPy's.
        return _Op(t, t(complex(-inf, -inf)), "{x}", combine)
    if isinstance(dt, types.Float):
        combine = f"{{u}} if (({{u}} {ge} {{v}}) | ({{u}} != {{u}})) else {{v}}"
        quick = f"{{v}} if {{v}} {gt} {{u}} else {{u}}"
        worst = t(-np.inf if maximum else np.inf)
        return _Op(t, worst, "{x}", combine, "blocked", quick=quick, guard=True)
    combine = f"{{u}} if {{u}} {ge} {{v}} else {{v}}"
    if isinstance(dt, types.Boolean):
        worst = t(not maximum)
    else:
        info = np.iinfo(t)
        worst = t(info.min if maximum else info.max)
    return _Op(t, worst, "{x}", combine, "blocked", quick=combine)


def _logical_op(conjunction: bool) -> _Op:
    """all (any): truth values folded with and (or), stopping at the first False (True)."""
    if conjunction:
        return _Op(np.bool_, np.True_, "{x} != 0", "{u} & {v}", "chunked", stop="not acc")
    return _Op(np.bool_, np.False_, "{x} != 0", "{u} | {v}", "chunked", stop="acc")


@register_jitable
def _square(d):
    return d * d


@register_jitable
def _abs_square(d):
    return d.real * d.real + d.imag * d.imag


def _sqdev_op(mean: types.Type, acc: types.Type) -> _Op:
    """Squared distance of ``x`` from the mean ``p``, summed in var's dtype ``acc``.

    As NumPy: the difference is taken in the mean's dtype; its square is real.
    """
    complex_mean, t = isinstance(mean, types.Complex), _npt(acc)
    return _Op(
        acc=t,
        init=t(0),
        elem="T(_sq(M({x}) - p))",
        combine="T({u} + {v})",
        mode="pairwise",
        uses_param=True,
        names=(("M", _npt(mean)), ("_sq", _abs_square if complex_mean else _square)),
    )


# Generated 1-D loops index with unsigned integers (``v[U(i)]``): Numba then skips its
# negative-index check, which otherwise costs as much as the arithmetic.


@functools.cache
def _first(op: _Op) -> Any:
    """Jitted ``first(x[, p])``: the accumulator value of a single element."""
    p = ", p" if op.uses_param else ""
    return op.compile(f"def first(x{p}):\n    return {op.at('x')}\n", "first")


@functools.cache
def _step(op: _Op) -> Any:
    """Jitted ``step(acc, x[, p])``: ``acc`` with one more element folded in."""
    p = ", p" if op.uses_param else ""
    return op.compile(f"def step(acc, x{p}):\n    return {op.fold('acc', op.at('x'))}\n", "step")


@functools.cache
def _pairwise(op: _Op) -> Any:
    """Jitted ``pairwise(v[, p], lo, n)``: NumPy's pairwise sum of ``v[lo:lo + n]``.

    Same blocks, same 8 accumulators and same order as NumPy's recursive C loop, so a
    float sum along a whole row usually equals NumPy's to the last bit. The recursion is
    unrolled onto small stacks: Numba's disk cache cannot reload recursive functions.
    """
    p = ", p" if op.uses_param else ""
    block = [
        f"def block(v{p}, lo, n):",
        "    if n < 8:",
        "        res = T(-0.0)",
        "        for i in range(lo, lo + n):",
        f"            res = {op.fold('res', op.at('v[U(i)]'))}",
        "        return res",
        *[f"    r{j} = {op.at(f'v[U(lo + {j})]')}" for j in range(8)],
        "    end = lo + n - n % 8",
        "    for i in range(lo + 8, end, 8):",
        *[f"        r{j} = {op.fold(f'r{j}', op.at(f'v[U(i + {j})]'))}" for j in range(8)],
        f"    res = {op.tree()}",
        "    for i in range(end, lo + n):",
        f"        res = {op.fold('res', op.at('v[U(i)]'))}",
        "    return res",
    ]
    # A stack of ranges (start, size) still to sum, where size -1 asks to add the last two
    # sums, and a stack of sums; 64 levels of halving cover any array.
    source = f"""
def pairwise(v{p}, lo, n):
    if n <= {_PAIRWISE_BLOCK}:
        return block(v{p}, lo, n)
    ranges = np.empty((192, 2), np.intp)
    sums = np.empty(64, T)
    ranges[0, 0] = lo
    ranges[0, 1] = n
    todo = 1
    done = 0
    while todo > 0:
        todo -= 1
        start = ranges[todo, 0]
        size = ranges[todo, 1]
        if size < 0:
            done -= 1
            sums[done - 1] = {op.fold("sums[done - 1]", "sums[done]")}
        elif size <= {_PAIRWISE_BLOCK}:
            sums[done] = block(v{p}, start, size)
            done += 1
        else:
            half = size // 2
            half -= half % 8
            ranges[todo, 1] = -1
            ranges[todo + 1, 0] = start + half
            ranges[todo + 1, 1] = size - half
            ranges[todo + 2, 0] = start
            ranges[todo + 2, 1] = half
            todo += 3
    return sums[0]
"""
    return op.compile(source, "pairwise", block=op.compile("\n".join(block) + "\n", "block"))


_START = "np.intp(0)"
"""The first index, spelled so that Numba types it ``intp``, not ``Literal[int](0)``: a
literal argument compiles a helper again for that value (``fold``, ``pairwise`` and
``block`` a second time, a second of a cold RNN gradient's compile)."""

_PAIRWISE_BLOCK = 128
_CHUNK = 1024


@functools.cache
def _fold1d(op: _Op) -> Any:
    """Jitted ``fold(v, lo, hi, acc[, p])``: ``acc`` with ``v[lo:hi]`` folded in (1-D ``v``).

    It takes bounds rather than a slice: a slice costs two atomic reference counts.
    """
    p = ", p" if op.uses_param else ""
    lines = [f"def fold(v, lo, hi, acc{p}):"]
    if op.mode == "pairwise":
        lines += [f"    return {op.fold('acc', f'pairwise(v{p}, lo, hi - lo)')}"]
        return op.compile("\n".join(lines) + "\n", "fold", pairwise=_pairwise(op))
    step = f"acc = {op.fold('acc', op.at('v[U(i)]'))}"
    if op.mode == "chunked":
        lines += [
            f"    for start in range(lo, hi, {_CHUNK}):",
            f"        for i in range(start, min(start + {_CHUNK}, hi)):",
            f"            {step}",
            f"        if {op.stop}:",
            "            break",
            "    return acc",
        ]
        return op.compile("\n".join(lines) + "\n", "fold")
    lines += ["    start = lo"]
    if op.mode == "blocked":
        lines += ["    if hi - lo >= 8:"]
        lines += [f"        r{j} = {op.at(f'v[U(lo + {j})]')}" for j in range(8)]
        lines += [f"        t{j} = r{j} - r{j}" for j in range(8) if op.guard]
        lines += ["        start = hi - (hi - lo) % 8", "        for i in range(lo + 8, start, 8):"]
        for j in range(8):
            lines += [f"            x = {op.at(f'v[U(i + {j})]')}"]
            lines += [f"            r{j} = {op.fold(f'r{j}', 'x', op.quick)}"]
            lines += [f"            t{j} = t{j} + (x - x)"] if op.guard else []
        if op.guard:  # a NaN or an infinity: fold the whole row again, exactly
            lines += ["        if " + " + ".join(f"t{j}" for j in range(8)) + " != 0:"]
            lines += ["            start = lo", "        else:"]
            lines += [f"            acc = {op.fold('acc', op.tree(op.quick))}"]
        else:
            lines += [f"        acc = {op.fold('acc', op.tree(op.quick))}"]
    lines += ["    for i in range(start, hi):", f"        {step}", "    return acc"]
    return op.compile("\n".join(lines) + "\n", "fold")


@functools.cache
def _arg_helpers(dt: types.Type, maximum: bool) -> tuple[Any, Any]:
    """Jitted ``better(x, b)`` and ``argbest(v)`` with NumPy's argmax/argmin rules.

    The first extreme wins; a NaN beats everything and, once found, is never replaced.
    Real values are scanned in chunks by the fast ``fold`` of max/min; only the chunk
    holding the winner is then searched for its first occurrence.
    """
    if isinstance(dt, types.Complex):
        beats = f"{'_cgt' if maximum else '_clt'}(x, b) or x != x"
    elif isinstance(dt, types.Float):
        beats = f"not (x {'<=' if maximum else '>='} b)"
    else:
        beats = f"x {'>' if maximum else '<'} b"
    better = _compile(f"def better(x, b):\n    return b == b and ({beats})\n", "better", {})
    if isinstance(dt, types.Complex):
        source = """
def argbest(v):
    b = v[0]
    r = 0
    for i in range(1, v.shape[0]):
        x = v[U(i)]
        if better(x, b):
            b = x
            r = i
    return r
"""
        return better, _compile(source, "argbest", {"better": better, "U": np.uint64})
    op = _extreme_op(dt, maximum)
    source = f"""
def argbest(v):
    n = v.shape[0]
    b = v[0]
    chunk = 0
    for start in range(0, n, {_CHUNK}):
        if b != b:
            break
        m = fold(v, start, min(start + {_CHUNK}, n), WORST)
        if better(m, b):
            b = m
            chunk = start
    for i in range(chunk, min(chunk + {_CHUNK}, n)):
        x = v[U(i)]
        if x == b or x != x:
            return i
    return 0
"""
    scope = {"better": better, "fold": _fold1d(op), "WORST": op.init, "U": np.uint64}
    return better, _compile(source, "argbest", scope)


# ---------------------------------------------------------------------------------------
# Source generation of the overloads' implementations ``run``.
# ---------------------------------------------------------------------------------------


class _Source:
    """Lines of a generated function under construction, and the globals they use."""

    def __init__(self, header: str) -> None:
        self.lines = [header]
        self.depth = 1
        self.names: dict[str, Any] = {}

    def __call__(self, *lines: str) -> None:
        self.lines += ["    " * self.depth + line for line in lines]

    def loop(self, var: str, bound: str) -> None:
        self(f"for {var} in range({bound}):")
        self.depth += 1

    def use(self, value: Any, prefix: str) -> str:
        """A fresh global name bound to ``value``."""
        name = f"{prefix}{len(self.names)}"
        self.names[name] = value
        return name

    def compile(self) -> Any:
        """The plain function: an overload's implementation, compiled with its caller."""
        return _compile("\n".join(self.lines) + "\n", "run", self.names, jit=False)


def _item(array: str, index: list[str]) -> str:
    return f"{array}[{', '.join(index)}]" if index else array


def _loop_vars(dims: Any) -> list[str]:
    return [f"i{d}" for d in dims]


def _tuple(items: Any) -> str:
    return f"({', '.join(items)},)"


def _reduce_nest(
    code: _Source,
    op: _Op,
    ndim: int,
    axes: tuple[int, ...],
    contiguous: bool,
    dst: str,
    par: str | None = None,
) -> None:
    """Loops folding ``src`` over ``axes`` into the buffer ``dst`` (its kept dims).

    Loops run in C order. Reduced axes at the end are folded into a register by
    ``fold`` (pairwise for sums); otherwise whole rows of ``dst`` are updated at once,
    so every pass over memory is sequential on a C-ordered ``src``.
    """
    base = code.depth
    fold, step = code.use(_fold1d(op), "fold"), code.use(_step(op), "step")
    kept = [d for d in range(ndim) if d not in axes]
    p = ", p" if op.uses_param else ""
    tail = 0
    while tail < ndim and ndim - 1 - tail in axes:
        tail += 1
    if ndim == 0:
        if par:
            code(f"p = {par}[0]")
        code(f"{dst}[0] = {step}({dst}[0], src[()]{p})")
    elif tail == 0:
        for d in range(ndim - 1):
            code.loop(f"i{d}", f"src.shape[{d}]")
        outer = _loop_vars(kept[:-1])
        code(f"srow = {_item('src', _loop_vars(range(ndim - 1)))}")
        code(f"drow = {_item(dst, outer)}")
        if par:
            code(f"prow = {_item(par, outer)}")
        code.loop("j", "srow.shape[0]")
        if par:
            code("p = prow[j]")
        code(f"drow[j] = {step}(drow[j], srow[j]{p})")
    else:
        lead = ndim - tail
        out = _item(dst, _loop_vars(kept) or ["0"])
        if contiguous:
            # C order: each output's elements are one run of the flat array, folded by
            # bounds (a view per row costs more than summing a short row). Rows shorter
            # than a pairwise block are folded here, one element after the other, as
            # NumPy does: a call of ``fold`` per row costs more than the row.
            row = " * ".join(f"src.shape[{d}]" for d in range(lead, ndim))
            code("flat = src.ravel()", f"row = {row}")
            for header, short in (("if row < 8:", True), ("else:", False)):
                code(header, f"    start = {_START}")
                code.depth += 1
                for d in range(lead):
                    code.loop(f"i{d}", f"src.shape[{d}]")
                if par:
                    code(f"p = {_item(par, _loop_vars(kept) or ['0'])}")
                if short and op.mode == "pairwise":  # as ``block`` sums fewer than 8
                    step_inline = _inline(code, op, op.fold("r", op.at("flat[U(k)]")))
                    code(f"r = {_inline(code, op, 'T(-0.0)')}")
                    code("for k in range(start, start + row):", f"    r = {step_inline}")
                    code(f"{out} = {_inline(code, op, op.fold(out, 'r'))}")
                elif short:
                    step_inline = _inline(code, op, op.fold("acc", op.at("flat[U(k)]")))
                    code(f"acc = {out}", "for k in range(start, start + row):")
                    code(f"    acc = {step_inline}", f"{out} = acc")
                else:
                    code(f"{out} = {fold}(flat, start, start + row, {out}{p})")
                code("start += row")
                code.depth = base
            return
        for d in range(lead):
            code.loop(f"i{d}", f"src.shape[{d}]")
        code(f"acc = {out}")
        if par:
            code(f"p = {_item(par, _loop_vars(kept) or ['0'])}")
        for d in range(lead, ndim - 1):
            code.loop(f"i{d}", f"src.shape[{d}]")
        view = _item("src", _loop_vars(range(ndim - 1)))
        code(f"v = {view}", f"acc = {fold}(v, {_START}, v.shape[0], acc{p})")
        code.depth = base + lead
        code(f"{out} = acc")
    code.depth = base


def _inline(code: _Source, op: _Op, fragment: str) -> str:
    """``fragment`` of ``op`` (which names ``T``, ``U`` and ``op.names``) with those
    names bound to fresh globals of ``code``: to compute it in ``code``'s own loop."""
    scope = {"T": op.acc, "U": np.uint64, **dict(op.names)}
    fresh = {name: code.use(value, "inl") for name, value in scope.items()}
    pattern = r"\b(" + "|".join(map(re.escape, scope)) + r")\b"
    return re.sub(pattern, lambda match: fresh[match.group(1)], fragment)


def _arg_nest(code: _Source, dt: types.Type, maximum: bool, ndim: int, axis: int) -> None:
    """Loops writing into ``out`` the index along ``axis`` of the extreme of ``src``.

    A trailing axis is scanned row by row; any other keeps the best values so far in
    ``best`` and updates whole rows of it, in C order.
    """
    base = code.depth
    better, argbest = (code.use(f, "arg") for f in _arg_helpers(dt, maximum))
    kept = [d for d in range(ndim) if d != axis]
    for d in range(ndim - 1):
        code.loop(f"i{d}", f"src.shape[{d}]")
    rows = _loop_vars(range(ndim - 1))
    if axis == ndim - 1:
        code(f"{_item('out', _loop_vars(kept) or ['0'])} = {argbest}({_item('src', rows)})")
    else:
        outer = _loop_vars(kept[:-1])
        code(f"srow = {_item('src', rows)}", f"drow = {_item('out', outer)}")
        code(f"brow = {_item('best', outer)}")
        code.loop("j", "srow.shape[0]")
        code("x = srow[j]", f"if i{axis} == 0:", "    brow[j] = x")
        code(f"elif {better}(x, brow[j]):", "    brow[j] = x", f"    drow[j] = i{axis}")
    code.depth = base


def _cum_nest(code: _Source, op: _Op, ndim: int, axis: int) -> None:
    """Loops writing the running fold of ``src`` along ``axis`` into ``dst``, in C order."""
    base = code.depth
    first, step = code.use(_first(op), "first"), code.use(_step(op), "step")
    for d in range(ndim - 1):
        code.loop(f"i{d}", f"src.shape[{d}]")
    rows = _loop_vars(range(ndim - 1))
    code(f"srow = {_item('src', rows)}", f"drow = {_item('dst', rows)}")
    if axis == ndim - 1:
        code("if srow.shape[0] > 0:", f"    acc = {first}(srow[0])", "    drow[0] = acc")
        code("    for j in range(1, srow.shape[0]):")
        code(f"        acc = {step}(acc, srow[j])", "        drow[j] = acc")
    else:
        previous = [f"i{d} - 1" if d == axis else f"i{d}" for d in range(ndim - 1)]
        code(f"if i{axis} == 0:", "    for j in range(srow.shape[0]):")
        code(f"        drow[j] = {first}(srow[j])", "else:")
        code(f"    prow = {_item('dst', previous)}", "    for j in range(srow.shape[0]):")
        code(f"        drow[j] = {step}(prow[j], srow[j])")
    code.depth = base


def _emit(code: _Source, nests: list[Callable[[], None]]) -> None:
    """Emit one loop nest, or two as ``if last: ... else: ...`` (see ``_move_axes``)."""
    if len(nests) == 1:
        nests[0]()
        return
    for header, nest in zip(["if last:", "else:"], nests, strict=True):
        code(header)
        code.depth += 1
        nest()
        code.depth -= 1


def _validate(code: _Source, ax: _Axes, ndim: int, zero_d_ok: bool = False) -> None:
    """Check run-time axes as NumPy does; mark them in ``red`` (for ``ndim`` > 0).

    With ``zero_d_ok``, a 0-d array accepts axis 0 or -1, as NumPy's ufunc reductions do.
    """
    if ndim:
        code(f"red = np.zeros({ndim}, np.bool_)")
    for j in range(ax.count):
        code(f"ax = {'axis' if ax.is_int else f'axis[{j}]'}")
        if ndim == 0:
            ok = "ax == 0 or ax == -1" if zero_d_ok and ax.is_int else "not _always()"
            code(f"if not ({ok}):", f"    {_axis_error('ax', 0)}")
            continue
        code(f"if ax < -{ndim} or ax >= {ndim}:", f"    {_axis_error('ax', ndim)}")
        code(
            "if ax < 0:", f"    ax += {ndim}", "if red[ax]:", f"    {_DUPLICATE}", "red[ax] = True"
        )


def _move_axes(code: _Source, ndim: int, count: int) -> str:
    """View ``src`` of ``arr`` with the marked axes moved to the end if the last axis is
    among them, else to the front; returns the tuple expression of the kept dims."""
    kept_dims = builtins.max(ndim - count, 1)
    marked = ["for d in range(N):", "    if red[d]:", "        perm[j] = d", "        j += 1"]
    marked = [line.replace("N", str(ndim)) for line in marked]
    code(f"perm = np.empty({ndim}, np.intp)", f"shape = np.ones({kept_dims}, np.intp)")
    code("count = 1", "j = 0", "s = 0", f"last = red[{ndim - 1}]")
    code("if not last:", *["    " + line for line in marked])
    code(f"for d in range({ndim}):", "    if red[d]:", "        count *= arr.shape[d]")
    code("    else:", "        perm[j] = d", "        j += 1", "        shape[s] = arr.shape[d]")
    code("        s += 1", "if last:", *["    " + line for line in marked])
    code(f"src = np.transpose(arr, to_fixed_tuple(perm, {ndim}))")
    return f"to_fixed_tuple(shape, {kept_dims})"


def _finish(code: _Source, ndim: int, kept: list[int], keep: bool, axes: Any, flip: bool) -> None:
    """Return ``out`` (kept dims of ``src``) shaped as NumPy's result.

    ``axes`` are the reduced axes of ``arr``, or None when they are only known at run
    time (then ``red`` marks them); ``flip`` says ``src`` is ``arr.T``.
    """
    if keep and axes is None:
        code(f"full = np.empty({ndim}, np.intp)", f"for d in range({ndim}):")
        code("    full[d] = 1 if red[d] else arr.shape[d]")
        code(f"return out.reshape(to_fixed_tuple(full, {ndim}))")
    elif not kept:
        code(f"return out.reshape({_tuple(['1'] * ndim)})" if keep else "return out[0]")
    else:
        if flip and len(kept) >= 2:
            code("out = np.ascontiguousarray(out.T)")
        if keep:
            full = ["1" if d in axes else f"arr.shape[{d}]" for d in range(ndim)]
            code(f"return out.reshape({_tuple(full)})")
        else:
            code("return out")


def _raising(code: _Source, raise_line: str, rank: int, result: Any) -> Any:
    """``run`` that raises; what it would return only gives its call a plausible type."""
    code("if _always():", f"    {raise_line}")
    code(f"return np.zeros({_tuple(['0'] * rank)}, R)" if rank else "return R(0)")
    code.names["R"] = result
    return code.compile()


# The implementations' parameters: those of the public functions, all positional-or-keyword
# (Numba cannot bind keyword-only parameters of an overload).
_SIGNATURES = {
    **dict.fromkeys(["sum", "prod", "mean"], "a, axis=None, dtype=None, keepdims=False"),
    **dict.fromkeys(["max", "min", "all", "any"], "a, axis=None, keepdims=False"),
    **dict.fromkeys(["argmax", "argmin"], "a, axis=None, keepdims=False"),
    **dict.fromkeys(["var", "std"], "a, axis=None, dtype=None, ddof=0, keepdims=False"),
    **dict.fromkeys(["cumsum", "cumprod"], "a, axis=None, dtype=None"),
}


def _start(name: str, a: types.Type, reshape: str = "") -> _Source:
    code = _Source(f"def run({_SIGNATURES[name]}):")
    code(f"arr = {'a' if isinstance(a, types.Array) else 'np.asarray(a)'}{reshape}")
    return code


def _plan(
    code: _Source, ax: _Axes, ndim: int, layout: str
) -> tuple[tuple[int, ...], list[int], bool]:
    """Bind ``src`` for constant axes: ``arr``, or ``arr.T`` when that is C-ordered.

    Returns the reduced axes and kept dims of ``src`` and whether it is transposed.
    """
    flip = layout == "F" and ndim >= 2
    axes = ax.static or ()
    if flip:
        axes = tuple(sorted(ndim - 1 - d for d in axes))
    code(f"src = arr{'.T' if flip else ''}")
    return axes, [d for d in range(ndim) if d not in axes], flip


@functools.cache
def _reduction(name: str, a: Any, axis: Any, keepdims: Any, dtype: Any = None) -> Any:
    """The implementation of reduction ``name`` for these argument types."""
    dt, ndim, layout = _input(name, a)
    keep = ndim > 0 and _keepdims(name, keepdims)
    requested = _dtype_arg(name, dtype)
    ufunc = name not in ("mean", "var", "std")
    if name in ("sum", "prod"):
        acc = requested or _accumulating(dt)
        ops = [(_sum_op if name == "sum" else _prod_op)(acc)]
    elif name in ("max", "min"):
        ops = [_extreme_op(dt, name == "max")]
    elif name in ("all", "any"):
        ops = [_logical_op(name == "all")]
    elif name == "mean":
        ops = [_sum_op(requested or _inexact(dt))]
    else:
        ops = [
            _sum_op(requested or _inexact(dt)),
            _sqdev_op(requested or _inexact(dt), requested or _real(dt)),
        ]
    result = ops[-1].acc

    zero_d_axis = isinstance(axis, types.IntegerLiteral) and axis.literal_value in (0, -1)
    ax = _Axes(static=()) if ndim == 0 and ufunc and zero_d_axis else _axes(name, axis, ndim)
    code = _start(name, a)
    if ax.error:
        rank = ndim if keep else builtins.max(ndim - ax.count, 0)
        return _raising(code, ax.error, rank, result)
    if ax.static is None:
        _validate(code, ax, ndim, zero_d_ok=ufunc)
    if ax.static is None and ndim:
        if ax.count > ndim:  # a repeated axis, found by _validate
            return _raising(code, _DUPLICATE, ndim if keep else 0, result)
        shape, contiguous = _move_axes(code, ndim, ax.count), False
        kept = list(range(ndim - ax.count))
        trailing, leading = tuple(range(ndim - ax.count, ndim)), tuple(range(ax.count))
        nests = [trailing] if trailing == leading else [trailing, leading]
        axes, flip = None, False
    else:
        reduced, kept, flip = _plan(code, ax, ndim, layout)
        shape = _tuple(f"src.shape[{d}]" for d in kept) if kept else "(1,)"
        if name not in ("sum", "prod", "all", "any"):  # what divides, or may be empty
            code(f"count = {' * '.join(f'src.shape[{d}]' for d in reduced) or '1'}")
        contiguous, nests, axes = layout in "CF", [reduced], ax.static or ()

    def reduce(op: _Op, dst: str, par: str | None = None) -> None:
        t, init = code.use(op.acc, "T"), code.use(op.init, "init")
        code(f"{dst} = np.full({shape}, {init}, {t})")
        if name in ("max", "min"):
            operation = "maximum" if name == "max" else "minimum"
            message = f"zero-size array to reduction operation {operation} which has no identity"
            code("if count == 0:", f"    raise ValueError({message!r})")
        _emit(
            code, [lambda r=r: _reduce_nest(code, op, ndim, r, contiguous, dst, par) for r in nests]
        )

    def scale(op: _Op, buffer: str, by: str, root: bool = False) -> None:
        t = code.use(op.acc, "T")
        value = f"{t}(_div(flat[i], {by}))"
        code(f"flat = {buffer}.ravel()", "for i in range(flat.shape[0]):")
        code(f"    flat[i] = {f'np.sqrt({value})' if root else value}")

    if name in ("var", "std"):
        reduce(ops[0], "mean")
        scale(ops[0], "mean", "count")
        reduce(ops[1], "out", par="mean")
        code("dof = max(count - ddof, 0)")
        scale(ops[1], "out", "dof", root=name == "std")
    else:
        reduce(ops[0], "out")
        if name == "mean":
            scale(ops[0], "out", "count")
    _finish(code, ndim, kept, keep, axes, flip)
    return code.compile()


@functools.cache
def _arg_reduction(name: str, a: Any, axis: Any, keepdims: Any) -> Any:
    """The implementation of argmax/argmin; 0-d input counts as 1-d."""
    dt, ndim, layout = _input(name, a)
    keep = ndim > 0 and _keepdims(name, keepdims)
    maximum = name == "argmax"
    code = _start(name, a)
    ax = None if _is_none(axis) else _axes(name, axis, builtins.max(ndim, 1), tuples=False)
    if ax is not None and ax.error:
        return _raising(code, ax.error, ndim if keep else builtins.max(ndim - 1, 0), np.intp)
    empty = f"raise ValueError('attempt to get {name} of an empty sequence')"
    if ax is None or ndim == 0:
        if ax is not None and ax.static is None:
            _validate(code, ax, 1)
        argbest = code.use(_arg_helpers(dt, maximum)[1], "argbest")
        code("v = arr.ravel()", "if v.shape[0] == 0:", f"    {empty}", f"r = {argbest}(v)")
        code(f"return np.full({_tuple(['1'] * ndim)}, r, np.intp)" if keep else "return r")
        return code.compile()
    t = code.use(dt, "T")
    if ax.static is None:
        _validate(code, ax, ndim)
        shape = _move_axes(code, ndim, 1)
        code(f"out = np.zeros({shape}, np.intp)", f"best = np.empty({shape}, {t})")
        code("if count == 0:", f"    {empty}")
        kept, axes, flip = list(range(ndim - 1)), None, False
        nests = [lambda: _arg_nest(code, dt, maximum, ndim, ndim - 1)]
        if ndim > 1:
            nests.append(lambda: _arg_nest(code, dt, maximum, ndim, 0))
    else:
        (reduced,), kept, flip = _plan(code, ax, ndim, layout)
        shape = _tuple(f"src.shape[{d}]" for d in kept) if kept else "(1,)"
        code(f"out = np.zeros({shape}, np.intp)")
        code(f"if src.shape[{reduced}] == 0:", f"    {empty}")
        if reduced != ndim - 1:
            code(f"best = np.empty({shape}, {t})")
        axes = ax.static
        nests = [lambda: _arg_nest(code, dt, maximum, ndim, reduced)]
    _emit(code, nests)
    _finish(code, ndim, kept, keep, axes, flip)
    return code.compile()


@functools.cache
def _cumulative(name: str, a: Any, axis: Any, dtype: Any) -> Any:
    """The implementation of cumsum/cumprod; 0-d input counts as 1-d."""
    dt, ndim, layout = _input(name, a)
    acc = _dtype_arg(name, dtype) or _accumulating(dt)
    op = (_sum_op if name == "cumsum" else _prod_op)(acc)
    code = _start(name, a, ".reshape(1)" if ndim == 0 else "")
    t = code.use(op.acc, "T")
    if _is_none(axis):
        code("src = arr.ravel()", f"dst = np.empty(src.shape[0], {t})")
        _cum_nest(code, op, 1, 0)
        code("return dst")
        return code.compile()
    ndim, layout = builtins.max(ndim, 1), layout if ndim else "C"
    ax = _axes(name, axis, ndim, tuples=False)
    if ax.error:
        return _raising(code, ax.error, ndim, op.acc)
    if ax.static is None:
        _validate(code, ax, ndim)
        _move_axes(code, ndim, 1)
        code(f"out = np.empty(arr.shape, {t})")
        code(f"dst = np.transpose(out, to_fixed_tuple(perm, {ndim}))")
        nests = [lambda: _cum_nest(code, op, ndim, ndim - 1)]
        if ndim > 1:
            nests.append(lambda: _cum_nest(code, op, ndim, 0))
        _emit(code, nests)
        code("return out")
    else:
        (axis_of_src,), _, flip = _plan(code, ax, ndim, layout)
        code(f"dst = np.empty(src.shape, {t})")
        _cum_nest(code, op, ndim, axis_of_src)
        code(f"return dst{'.T' if flip else ''}")
    return code.compile()


# ---------------------------------------------------------------------------------------
# The overloads. Parameters are positional-or-keyword here: Numba cannot bind
# keyword-only ones. A run-time keepdims is made a constant with numba.literally.
# ---------------------------------------------------------------------------------------


@overload(sum, prefer_literal=True)
def _sum_jit(a, axis=None, dtype=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, keepdims=False: numba.literally(keepdims)
    return _reduction("sum", a, axis, keepdims, dtype)


@overload(prod, prefer_literal=True)
def _prod_jit(a, axis=None, dtype=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, keepdims=False: numba.literally(keepdims)
    return _reduction("prod", a, axis, keepdims, dtype)


@overload(mean, prefer_literal=True)
def _mean_jit(a, axis=None, dtype=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, keepdims=False: numba.literally(keepdims)
    return _reduction("mean", a, axis, keepdims, dtype)


@overload(max, prefer_literal=True)
def _max_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("max", a, axis, keepdims)


@overload(min, prefer_literal=True)
def _min_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("min", a, axis, keepdims)


@overload(var, prefer_literal=True)
def _var_jit(a, axis=None, dtype=None, ddof=0, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, ddof=0, keepdims=False: numba.literally(keepdims)
    return _reduction("var", a, axis, keepdims, dtype)


@overload(std, prefer_literal=True)
def _std_jit(a, axis=None, dtype=None, ddof=0, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, dtype=None, ddof=0, keepdims=False: numba.literally(keepdims)
    return _reduction("std", a, axis, keepdims, dtype)


@overload(argmax, prefer_literal=True)
def _argmax_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _arg_reduction("argmax", a, axis, keepdims)


@overload(argmin, prefer_literal=True)
def _argmin_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _arg_reduction("argmin", a, axis, keepdims)


@overload(all, prefer_literal=True)
def _all_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("all", a, axis, keepdims)


@overload(any, prefer_literal=True)
def _any_jit(a, axis=None, keepdims=False):
    if _wants_literal(keepdims):
        return lambda a, axis=None, keepdims=False: numba.literally(keepdims)
    return _reduction("any", a, axis, keepdims)


@overload(cumsum, prefer_literal=True)
def _cumsum_jit(a, axis=None, dtype=None):
    return _cumulative("cumsum", a, axis, dtype)


@overload(cumprod, prefer_literal=True)
def _cumprod_jit(a, axis=None, dtype=None):
    return _cumulative("cumprod", a, axis, dtype)
