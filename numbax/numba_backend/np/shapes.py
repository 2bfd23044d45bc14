"""Shapes, joins and repetitions Numba lacks or compiles only in part: ``np.reshape``,
``np.squeeze``, ``np.expand_dims``, ``np.concatenate``, ``np.stack``, ``np.hstack``,
``np.vstack``, ``np.flip``, ``np.roll``, ``np.tile``, ``np.repeat``, ``np.atleast_1d``
and ``np.atleast_2d``.

Numba has no ``np.squeeze`` nor ``np.tile``; its ``np.flip``, ``np.roll`` and
``np.repeat`` take no ``axis``, ``np.expand_dims`` no tuple of axes, ``np.concatenate`` no
``axis=None``; ``np.concatenate``, ``np.stack``, ``np.hstack`` and ``np.vstack`` no list
of arrays; ``np.atleast_1d`` and ``np.atleast_2d`` no scalar; ``np.reshape`` raises at
run time for an array that is not contiguous.

How a call reaches them and compiles: the package's docstring (``np/__init__.py``).
Where NumPy returns a view, the compiled function may return a copy.

The rank of a result must be known when Numba compiles: it is taken from the argument
types (how many axes an ``axis`` tuple names; their values may be run-time values).
``np.squeeze`` without ``axis`` cannot compile, as the rank of its result depends on the
array's shape. Numba's ``np.transpose(x, axes)`` and ``np.moveaxis`` with a run-time axis
take seconds to compile, so the code here transposes with the array method.
"""

from __future__ import annotations

import builtins
import functools
from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from numbax.numba_backend.generated import Code
from numbax.numba_backend.np._typing import (
    _axis_count,
    _axis_items,
    _dtype_arg,
    _fail,
    _family_code,
    _is_none,
    _is_scalar,
    _npt,
    _promote,
    _tuple,
)
from numbax.numba_backend.redirects import redirect

__all__ = [
    "atleast_1d",
    "atleast_2d",
    "concatenate",
    "expand_dims",
    "flip",
    "hstack",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "vstack",
]

AxisArg = int | tuple[int, ...] | None


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


@register_jitable
def _check_unique(axes, count):
    """NumPy's ValueError for an axis named twice."""
    for i in range(count):
        for j in range(i):
            if axes[i] == axes[j]:
                raise ValueError("repeated axis")


_code = _family_code(_check_unique, numba=numba)


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
        elif _is_scalar(ty):
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
