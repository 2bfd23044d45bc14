"""The reductions' implementations, written as source for the argument types of a call:
the loops that walk an array in memory order and call the folds of ``reduction_folds.py``.

Loops are generated per (function, dtype, rank, axes, layout) and walk the input in
memory order: an inner reduced axis is summed into a register, an outer one is
accumulated row by row into the output. An axis written as a constant compiles into
loops specialised to it; an axis that is only known at run time (a variable, or a tuple
holding one) is handled by a general loop that first moves the reduced axes to one end.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import types

from numbax.numba_backend.np._typing import (
    _accumulating,
    _dtype_arg,
    _inexact,
    _is_none,
    _keepdims,
    _real,
    _tuple,
)
from numbax.numba_backend.np._typing import _fail_reductions as _fail
from numbax.numba_backend.np.reduction_folds import (
    _START,
    _arg_helpers,
    _compile,
    _extreme_op,
    _first,
    _fold1d,
    _logical_op,
    _Op,
    _prod_op,
    _sqdev_op,
    _step,
    _sum_op,
)

# ---------------------------------------------------------------------------------------
# Typing-time helpers: the array argument and its axes.
# ---------------------------------------------------------------------------------------


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
            _sqdev_op(requested or _inexact(dt), requested or _real(_inexact(dt))),
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
