"""NumPy's ``IndexError`` under jit: the check the bounds pass writes before a subscript.

The pass (``passes/bounds.py``) writes ``nxrt.check_index(x, i, 'model.py, line 5')``
before each of the user's subscripts that indexes with an integer or an integer array
(Numba checks none, and its ``boundscheck`` option says only "index is out of bounds").
Here is that check, interpreted and compiled, and the errors it raises in NumPy's words.

:func:`check_index` checks what Numba's types say: an array's integer and range
components against its shape (a negative index counts from the end), each element of
an integer array or list, the shape of a boolean mask (a list of bools is one); indexing
anything else (a tuple, a list, which Numba checks itself) passes.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from numbax.numba_backend.generated import define
from numbax.numba_backend.redirects import lowering_helper


class BoundsError(IndexError):
    """NumPy's ``IndexError``, raised by compiled code with numbers (formatting them there
    would compile Numba's string support into every program), which make the message
    here; ``where`` is the user's file and line."""

    where: str = ""


class OutOfBounds(BoundsError):
    """An integer index out of bounds."""

    def __init__(self, index: int, axis: int, size: int, where: str = "") -> None:
        super().__init__(f"index {index} is out of bounds for axis {axis} with size {size}")
        self.where = where


class MaskMismatch(BoundsError):
    """A boolean index whose shape is not the array's."""

    def __init__(self, axis: int, size: int, mask_size: int, where: str = "") -> None:
        super().__init__(
            f"boolean index did not match indexed array along axis {axis}; size of axis is "
            f"{size} but size of corresponding boolean axis is {mask_size}"
        )
        self.where = where


def as_numpy_error(err: BoundsError) -> IndexError:
    """The plain ``IndexError`` NumPy raises, with the user's line as a note."""
    error = IndexError(*err.args)
    if err.where:
        error.add_note(f"(raised under nx.jit at {err.where})")
    return error


# ---------------------------------------------------------------------------------------
# The checks, the same interpreted and compiled.
# ---------------------------------------------------------------------------------------


@register_jitable
def _check_scalar(i, n, axis, where):  # noqa: ANN001, ANN202 (Numba reads annotations)
    if i < -n or i >= n:
        raise OutOfBounds(i, axis, n, where)


@register_jitable
def _check_array(indices, n, axis, where):  # noqa: ANN001, ANN202
    for i in np.asarray(indices).flat:  # an array, or a list of ints
        if i < -n or i >= n:
            raise OutOfBounds(i, axis, n, where)


@register_jitable
def _check_mask(mask_size, n, axis, where):  # noqa: ANN001, ANN202
    if mask_size != n:
        raise MaskMismatch(axis, n, mask_size, where)


@register_jitable
def _first_out(start, step, count, n):  # noqa: ANN001, ANN202
    """The first ``t < count`` for which ``start + t * step`` is out of bounds for a
    length ``n`` (``count`` if none): from the range's ends, in constant time."""
    if count == 0:
        return count
    last = start + (count - 1) * step
    if -n <= start < n and -n <= last < n:
        return count
    if start < -n or start >= n:
        return 0
    if step > 0:  # the first value at n or above
        return (n - start + step - 1) // step
    return (start + n) // (-step) + 1  # the first value below -n


@register_jitable
def _earlier(t, u):  # noqa: ANN001, ANN202
    return t if t < u else u


class _Step(NamedTuple):
    """One check of a plan: ``kind`` (scalar, first (a range's first value), array, mask),
    the index component it reads, the array's axis, and the mask's own axis."""

    kind: str
    component: int
    axis: int
    mask_axis: int


class _Plan(NamedTuple):
    """What to check of one index, in NumPy's order (boolean masks, then integers in
    axis order, then integer arrays), then the ranges in step: ``ranges`` holds the
    (component, axis) of each; a range with no values means no iteration indexes."""

    steps: tuple[_Step, ...]
    ranges: tuple[tuple[int, int], ...]


def _plan(ndim: int, kinds: list[tuple[str, int]]) -> _Plan | None:
    """The checks for an index with components of these kinds (``scalar``, ``range``,
    ``array``, ``mask`` with its rank, ``slice``, ``newaxis``, ``ellipsis``) into an array
    of rank ``ndim``; None where nothing is checked (an index Numba rejects itself)."""
    takes = {"scalar": 1, "range": 1, "array": 1, "slice": 1, "newaxis": 0}
    used = [takes[k] if k in takes else rank if k == "mask" else 0 for k, rank in kinds]
    ellipses = [j for j, (k, _) in enumerate(kinds) if k == "ellipsis"]
    if any(k == "other" for k, _ in kinds) or len(ellipses) > 1 or sum(used) > ndim:
        return None
    axes, axis = [], 0
    for j, (kind, _) in enumerate(kinds):
        axes.append(axis)
        axis += ndim - sum(used) if kind == "ellipsis" else used[j]
    masks = [
        _Step("mask", j, axes[j] + d, d)
        for j, (kind, rank) in enumerate(kinds)
        if kind == "mask"
        for d in range(rank)
    ]
    scalars = [
        _Step("scalar" if kind == "scalar" else "first", j, axes[j], 0)
        for j, (kind, _) in enumerate(kinds)
        if kind in ("scalar", "range")
    ]
    arrays = [_Step("array", j, axes[j], 0) for j, (kind, _) in enumerate(kinds) if kind == "array"]
    ranges = tuple((j, axes[j]) for j, (kind, _) in enumerate(kinds) if kind == "range")
    steps = (*masks, *scalars, *arrays)
    return _Plan(steps, ranges) if steps else None


def _value_kind(value: Any) -> tuple[str, int]:
    """The kind of an index component, interpreted."""
    if value is None:
        return "newaxis", 0
    if value is Ellipsis:
        return "ellipsis", 0
    if isinstance(value, slice):
        return "slice", 0
    if isinstance(value, range):
        return "range", 0
    if isinstance(value, (bool, np.bool_)):
        return "newaxis", 0  # NumPy: a new axis of length 1 (True) or 0 (False)
    if isinstance(value, (int, np.integer)):
        return "scalar", 0
    if isinstance(value, np.ndarray) and value.dtype == np.bool_:
        return "mask", value.ndim
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.integer):
        return "array", 0
    return "other", 0


def _type_kind(kind: types.Type) -> tuple[str, int]:
    """The kind of an index component, from Numba's type."""
    if isinstance(kind, (types.NoneType, types.Omitted)):
        return "newaxis", 0
    if isinstance(kind, types.EllipsisType):
        return "ellipsis", 0
    if isinstance(kind, types.SliceType):
        return "slice", 0
    if isinstance(kind, types.RangeType):
        return "range", 0
    if isinstance(kind, types.Boolean):
        return "newaxis", 0
    if isinstance(kind, types.Integer):
        return "scalar", 0
    if isinstance(kind, types.Array) and isinstance(kind.dtype, types.Boolean):
        return "mask", kind.ndim
    if isinstance(kind, types.Array) and isinstance(kind.dtype, types.Integer):
        return "array", 0
    if isinstance(kind, types.List) and isinstance(kind.dtype, types.Boolean):
        return "mask", 1  # NumPy reads a list as the array of its items
    if isinstance(kind, types.List) and isinstance(kind.dtype, types.Integer):
        return "array", 0
    return "other", 0


@lowering_helper
def check_index(array: Any, index: Any, where: str = "", during: range | None = None) -> None:
    """Raise NumPy's ``IndexError`` if ``array[index]`` indexes out of bounds; nothing
    happens for what is not an array. A ``range`` component stands for each of its
    values in turn (a loop's subscript, checked before the loop): none, if it is empty.
    ``during``: the range of a loop the subscript is in, checked before the loop: if it
    is empty, the subscript never runs. ``where`` names the user's line in the error."""
    if not isinstance(array, np.ndarray) or (during is not None and len(during) == 0):
        return
    components = index if isinstance(index, tuple) else (index,)
    plan = _plan(array.ndim, [_value_kind(c) for c in components])
    if plan is None or any(len(components[j]) == 0 for j, _ in plan.ranges):
        return
    shape = array.shape
    for step in plan.steps:
        value = components[step.component]
        if step.kind == "mask":
            _check_mask(value.shape[step.mask_axis], shape[step.axis], step.axis, where)
        elif step.kind == "array":
            _check_array(value, shape[step.axis], step.axis, where)
        else:
            first = value.start if step.kind == "first" else value
            _check_scalar(first, shape[step.axis], step.axis, where)
    if plan.ranges:
        first = components[plan.ranges[0][0]]
        t = min(
            _first_out(components[j].start, components[j].step, len(first), shape[axis])
            for j, axis in plan.ranges
        )
        for j, axis in plan.ranges:
            r = components[j]
            if t < len(r):
                _check_scalar(r.start + t * r.step, shape[axis], axis, where)


@overload(check_index, inline="always")  # the comparisons in the caller, where LLVM sees them
def _check_index_jit(array, index, where="", during=None):  # noqa: ANN001, ANN202
    if not isinstance(array, types.Array):
        return lambda array, index, where="", during=None: None
    tupled = isinstance(index, types.BaseTuple)
    components = index.types if tupled else (index,)
    plan = _plan(array.ndim, [_type_kind(t) for t in components])
    if plan is None:
        return lambda array, index, where="", during=None: None
    return _compiled_check(plan, tupled, isinstance(during, types.RangeType))


@functools.cache
def _compiled_check(plan: _Plan, tupled: bool, guarded: bool) -> Any:
    """:func:`check_index`'s steps for one plan, as source Numba compiles."""

    def component(j: int) -> str:
        return f"index[{j}]" if tupled else "index"

    lines = ["def impl(array, index, where='', during=None):", "    shape = array.shape"]
    if guarded:
        lines += ["    if len(during) == 0:", "        return"]
    for j, _ in plan.ranges:
        lines += [f"    if len({component(j)}) == 0:", "        return"]
    for step in plan.steps:
        value, n = component(step.component), f"shape[{step.axis}]"
        if step.kind == "mask":
            size = f"np.asarray({value}).shape[{step.mask_axis}]"  # or a list's
            lines.append(f"    _check_mask({size}, {n}, {step.axis}, where)")
        elif step.kind == "array":
            lines.append(f"    _check_array({value}, {n}, {step.axis}, where)")
        else:
            first = f"{value}.start" if step.kind == "first" else value
            lines.append(f"    _check_scalar({first}, {n}, {step.axis}, where)")
    if plan.ranges:
        # each name assigned once: Numba's inlining of a name assigned twice leaves
        # a variable its SSA pass warns about
        count = f"len({component(plan.ranges[0][0])})"
        first_out = None
        for j, axis in plan.ranges:
            r = component(j)
            out = f"_first_out({r}.start, {r}.step, {count}, shape[{axis}])"
            first_out = out if first_out is None else f"_earlier({first_out}, {out})"
        lines += [f"    t = {first_out}", f"    if t < {count}:"]
        for j, axis in plan.ranges:
            r = component(j)
            lines.append(
                f"        _check_scalar({r}.start + t * {r}.step, shape[{axis}], {axis}, where)"
            )
    scope = {
        "np": np,
        "_check_scalar": _check_scalar,
        "_check_array": _check_array,
        "_check_mask": _check_mask,
        "_first_out": _first_out,
        "_earlier": _earlier,
    }
    return define("\n".join(lines) + "\n", scope, "bounds check_index")


__all__ = [
    "BoundsError",
    "MaskMismatch",
    "OutOfBounds",
    "as_numpy_error",
    "check_index",
]
