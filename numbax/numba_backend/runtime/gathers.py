"""Numba versions of the helpers of arrays built from values (``runtime/gathers.py``,
``runtime/shapes.py``: ``unarray``, ``outer_operand``), and numbax's versions of the NumPy
functions of that family Numba lacks or takes fewer arguments of:

* ``np.array``/``np.asarray`` of an array, or of a tuple or list of arrays of one shape
  (Numba builds arrays from scalars only); everything else goes to Numba's own;
* ``np.pad`` in the modes whose padding copies elements or a constant (``constant``,
  ``edge``, ``reflect``, ``symmetric``, ``wrap``), with any form of ``pad_width``;
* ``np.delete`` along an axis; ``np.column_stack``/``np.dstack``/``np.row_stack`` of a
  list.

Padding is done through positions as the derivatives do (``runtime/gathers.py``): one
routine tells where each element of the padded array comes from, and the primal, its
tangent and its cotangent all read it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from numbax.numba_backend.np import shapes
from numbax.numba_backend.redirects import redirect
from numbax.numba_backend.runtime.common import _define, _dtype_of, _fail, _is_none, _is_scalar
from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.gathers import (
    cummax,
    cummin,
    pad_positions,
    positions,
    regather,
    running_positions,
    ungather,
)
from numbax.runtime.shapes import (
    array_operand,
    concatenated_item,
    outer_operand,
    unarray,
    unstack_like,
)

# -- positions and gathers ----------------------------------------------------------------


@overload(positions)
def _positions_jit(a):
    if isinstance(a, types.Array):
        return lambda a: np.arange(1, a.size + 1).reshape(a.shape)
    if _is_scalar(a):
        return lambda a: np.ones((), np.intp)
    raise _fail("positions", f"expected an array or a number, got {a}")


@overload(ungather)
def _ungather_jit(value, a, index):
    if not isinstance(index, types.Array):
        raise _fail("ungather", f"expected an index array, got {index}")
    dtype = as_dtype(_dtype_of("ungather", value)).type

    def impl(value, a, index):
        where = np.ascontiguousarray(index).ravel()
        values = np.ascontiguousarray(np.asarray(value)).ravel()
        out = np.zeros(np.asarray(a).size, dtype)
        for k in range(where.size):
            if where[k] > 0:
                out[where[k] - 1] += values[k]
        return unbroadcast(out.reshape(np.shape(a)), a)

    return impl


@overload(regather)
def _regather_jit(value, index):
    if not isinstance(index, types.Array):
        raise _fail("regather", f"expected an index array, got {index}")
    dtype = as_dtype(_dtype_of("regather", value)).type

    def impl(value, index):
        flat = np.ascontiguousarray(np.asarray(value)).ravel()
        where = np.ascontiguousarray(index)
        out = np.zeros(where.shape, dtype)
        source = where.ravel()
        target = out.reshape(source.size)
        for k in range(source.size):
            if source[k] > 0:
                target[k] = flat[source[k] - 1]
        return out

    return impl


@register_jitable
def _moved_last(x, axis):
    """(x as a contiguous (m, n) array with ``axis`` last, the order that undoes it)."""
    ax = axis + x.ndim if axis < 0 else axis
    order = np.empty(x.ndim, np.intp)
    j = 0
    for d in range(x.ndim):
        if d != ax:
            order[j] = d
            j += 1
    order[x.ndim - 1] = ax
    return order


def _running_impl(x: Any, compare: str) -> Any:
    """Source of a running maximum or minimum along ``axis`` (``compare``: ``>`` or ``<``)."""
    if not isinstance(x, types.Array):
        raise _fail("cummax", f"expected an array, got {x}")
    ndim = x.ndim
    source = f"""
def impl(x, axis=0):
    ax = axis + {ndim} if axis < 0 else axis
    out = np.ascontiguousarray(x).copy()
    n = out.shape[ax]
    pre = 1
    post = 1
    for d in range({ndim}):
        if d < ax:
            pre *= out.shape[d]
        elif d > ax:
            post *= out.shape[d]
    v = out.reshape((pre, n, post))
    for i in range(pre):
        for j in range(1, n):
            for k in range(post):
                if not v[i, j, k] {compare}= v[i, j - 1, k]:
                    v[i, j, k] = v[i, j - 1, k]
    return out
"""
    return _define(source, "impl", {})


@overload(cummax)
def _cummax_jit(x, axis=0):
    return _running_impl(x, ">")


@overload(cummin)
def _cummin_jit(x, axis=0):
    return _running_impl(x, "<")


@overload(running_positions)
def _running_positions_jit(x, ans, axis=0):
    if not isinstance(x, types.Array):
        raise _fail("running_positions", f"expected an array, got {x}")
    ndim = x.ndim
    source = f"""
def impl(x, ans, axis=0):
    ax = axis + {ndim} if axis < 0 else axis
    xs = np.ascontiguousarray(x)
    run = np.ascontiguousarray(ans)
    out = np.arange(1, xs.size + 1).reshape(xs.shape)
    n = xs.shape[ax]
    pre = 1
    post = 1
    for d in range({ndim}):
        if d < ax:
            pre *= xs.shape[d]
        elif d > ax:
            post *= xs.shape[d]
    x3 = xs.reshape((pre, n, post))
    r3 = run.reshape((pre, n, post))
    o3 = out.reshape((pre, n, post))
    for i in range(pre):
        for j in range(1, n):
            for k in range(post):
                new = x3[i, j, k] == r3[i, j, k] and r3[i, j, k] != r3[i, j - 1, k]
                if not new:
                    o3[i, j, k] = o3[i, j - 1, k]
    return out
"""
    return _define(source, "impl", {})


# -- np.pad -------------------------------------------------------------------------------


@register_jitable
def _mode_code(mode):
    if mode == "constant":
        return 0
    if mode == "edge":
        return 1
    if mode == "reflect":
        return 2
    if mode == "symmetric":
        return 3
    if mode == "wrap":
        return 4
    raise ValueError(
        "numbax pads in the modes constant, edge, reflect, symmetric and wrap under jit"
    )


@register_jitable
def _source(i, n, code):
    """The element of an axis of length ``n`` that place ``i`` (before the start when
    negative, past the end when ``>= n``) of the padded axis copies; -1 for a constant."""
    if 0 <= i < n:
        return i
    if code == 0:
        return -1
    if code == 1:
        return 0 if i < 0 else n - 1
    if code == 2:
        if n == 1:
            return 0
        m = i % (2 * n - 2)
        return 2 * n - 2 - m if m >= n else m
    if code == 3:
        m = i % (2 * n)
        return 2 * n - 1 - m if m >= n else m
    return i % n


def _widths_source(pad_width: Any, ndim: int) -> str:
    """Source filling ``pw`` ((ndim, 2) before/after widths) from ``pad_width``."""
    if isinstance(pad_width, types.Integer):
        return "    pw[:, :] = pad_width"
    if isinstance(pad_width, types.Array):
        return f"    pw[:, :] = np.broadcast_to(pad_width, ({ndim}, 2))"
    if isinstance(pad_width, types.BaseTuple):
        items = list(pad_width.types)
        if all(isinstance(t, types.Integer) for t in items) and len(items) in (1, 2):
            if len(items) == 1:
                return "    pw[:, :] = pad_width[0]"
            return "    pw[:, 0] = pad_width[0]\n    pw[:, 1] = pad_width[1]"
        pairs = all(
            isinstance(t, types.BaseTuple)
            and len(t) in (1, 2)
            and all(isinstance(e, types.Integer) for e in t.types)
            for t in items
        )
        if pairs and len(items) in (1, ndim):
            lines = []
            for d in range(ndim):
                k = 0 if len(items) == 1 else d
                last = len(items[k].types) - 1
                lines.append(f"    pw[{d}, 0] = pad_width[{k}][0]")
                lines.append(f"    pw[{d}, 1] = pad_width[{k}][{last}]")
            return "\n".join(lines)
    raise _fail("pad", f"pad_width must be an int, a pair or one pair per axis, got {pad_width}")


def _pad_index_impl(array: Any, pad_width: Any) -> Any:
    ndim = array.ndim if isinstance(array, types.Array) else 0
    source = f"""
def impl(array, pad_width, mode='constant'):
    a = np.asarray(array)
    code = _mode_code(mode)
    pw = np.empty(({ndim}, 2), np.intp)
{_widths_source(pad_width, ndim) if ndim else "    pass"}
    shape = np.empty({ndim}, np.intp)
    for d in range({ndim}):
        if pw[d, 0] < 0 or pw[d, 1] < 0:
            raise ValueError("index can't contain negative values")
        if a.shape[d] == 0 and code != 0 and pw[d, 0] + pw[d, 1] > 0:
            raise ValueError("can't extend empty axis using modes other than 'constant'")
        shape[d] = a.shape[d] + pw[d, 0] + pw[d, 1]
    out = np.empty(to_fixed_tuple(shape, {ndim}), np.intp)
    flat = out.reshape(out.size)
    for k in range(out.size):
        rest = k
        where = 0
        stride = 1
        inside = True
        for d in range({ndim} - 1, -1, -1):
            place = rest % shape[d]
            rest //= shape[d]
            j = _source(place - pw[d, 0], a.shape[d], code)
            if j < 0:
                inside = False
            where += j * stride
            stride *= a.shape[d]
        flat[k] = where + 1 if inside else 0
    return out
"""
    scope = {"_mode_code": _mode_code, "_source": _source, "to_fixed_tuple": to_fixed_tuple}
    return _define(source, "impl", scope)


@overload(pad_positions)
def _pad_positions_jit(array, pad_width, mode="constant"):
    return _pad_index_impl(array, pad_width)


@redirect(np.pad)
def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    """``np.pad`` (compiled: the copying modes, see the module docstring)."""
    return np.pad(array, pad_width, mode, constant_values=constant_values)


@overload(pad)
def _pad_jit(array, pad_width, mode="constant", constant_values=0):
    if not isinstance(array, types.Array):
        raise _fail("pad", f"expected an array, got {array}")
    if not (_is_scalar(constant_values) or isinstance(constant_values, types.Omitted | int)):
        raise _fail("pad", "constant_values must be one number under jit")
    dtype = as_dtype(array.dtype).type

    def impl(array, pad_width, mode="constant", constant_values=0):
        index = pad_positions(array, pad_width, mode)
        flat = np.ascontiguousarray(array).ravel()
        out = np.empty(index.shape, dtype)
        source = index.ravel()
        target = out.reshape(source.size)
        fill = dtype(constant_values)
        for k in range(source.size):
            target[k] = flat[source[k] - 1] if source[k] > 0 else fill
        return out

    return impl


# -- np.delete along an axis --------------------------------------------------------------


@redirect(np.delete)
def delete(arr: Any, obj: Any, axis: int | None = None) -> Any:
    """``np.delete`` (compiled: along an axis too)."""
    return np.delete(arr, obj, axis)


@overload(delete)
def _delete_jit(arr, obj, axis=None):
    if _is_none(axis):
        return lambda arr, obj, axis=None: np.delete(arr, obj)
    if not isinstance(arr, types.Array):
        raise _fail("delete", f"expected an array, got {arr}")
    ndim = arr.ndim
    if isinstance(obj, types.Integer):
        mark = "    drop[obj] = True"
    elif isinstance(obj, types.SliceType):
        mark = "    drop[obj] = True"
    elif isinstance(obj, types.Array | types.BaseTuple | types.List):
        mark = "    for i in obj:\n        drop[i] = True"
    else:
        raise _fail("delete", f"obj must be an int, a slice or ints, got {obj}")
    source = f"""
def impl(arr, obj, axis=None):
    ax = axis + {ndim} if axis < 0 else axis
    a = np.ascontiguousarray(arr)
    n = a.shape[ax]
    drop = np.zeros(n, np.bool_)
{mark}
    keep = np.nonzero(~drop)[0]
    pre = 1
    post = 1
    for d in range({ndim}):
        if d < ax:
            pre *= a.shape[d]
        elif d > ax:
            post *= a.shape[d]
    kept = a.reshape((pre, n, post))[:, keep, :]
    shape = np.empty({ndim}, np.intp)
    for d in range({ndim}):
        shape[d] = keep.size if d == ax else a.shape[d]
    return np.ascontiguousarray(kept).reshape(to_fixed_tuple(shape, {ndim}))
"""
    return _define(source, "impl", {"to_fixed_tuple": to_fixed_tuple})


# -- np.array / np.asarray of arrays ------------------------------------------------------


def _arrays_of(obj: Any) -> bool:
    """Whether ``obj`` is a tuple or list of arrays (what Numba's np.array lacks)."""
    if isinstance(obj, types.List):
        return isinstance(obj.dtype, types.Array)
    if isinstance(obj, types.BaseTuple) and len(obj) > 0:
        return all(isinstance(t, types.Array) for t in obj.types)
    return False


def _array_expression(obj: Any, dtype: Any, copy: bool) -> str:
    """Source of ``np.array(obj, dtype)`` (``copy``: of an array, a new one)."""
    cast = "" if _is_none(dtype) else ".astype(dtype)"
    if isinstance(obj, types.Array):
        return f"obj{cast}" if cast else ("obj.copy()" if copy else "obj")
    if _arrays_of(obj):
        return f"shapes.stack(obj, 0){cast}"
    return "np.array(obj)" if _is_none(dtype) else "np.array(obj, dtype)"  # Numba's own


def _default(ty: Any, value: Any) -> bool:
    if isinstance(ty, types.Omitted):
        return ty.value == value
    if isinstance(ty, types.Literal):
        return ty.literal_value == value
    return ty is value or (value is None and _is_none(ty))


@redirect(np.array)
def array(
    obj: Any,
    dtype: Any = None,
    copy: bool = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
) -> Any:
    """``np.array`` (compiled: of an array, and of a tuple or list of arrays too)."""
    return np.array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)


@overload(array)
def _array_jit(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0):
    if not (_default(order, "K") and _default(subok, False) and _default(ndmin, 0)):
        raise _fail("array", "order=, subok= and ndmin= are not supported under jit")
    source = (
        "def impl(obj, dtype=None, copy=True, order='K', subok=False, ndmin=0):\n"
        f"    return {_array_expression(obj, dtype, copy=True)}\n"
    )
    return _define(source, "impl", {"shapes": shapes})


@redirect(np.asarray)
def asarray(a: Any, dtype: Any = None) -> Any:
    """``np.asarray`` (compiled: of a tuple or list of arrays too)."""
    return np.asarray(a, dtype)


@overload(asarray)
def _asarray_jit(a, dtype=None):
    expression = _array_expression(a, dtype, copy=False).replace("obj", "a")
    source = f"def impl(a, dtype=None):\n    return {expression}\n"
    return _define(source, "impl", {"shapes": shapes})


# -- helpers of derivative code -----------------------------------------------------------


@overload(unarray)
def _unarray_jit(value, obj):
    if isinstance(obj, types.BaseTuple | types.List):
        return lambda value, obj: unstack_like(value, obj, 0)
    return lambda value, obj: unbroadcast(value, obj)


@overload(array_operand)
def _array_operand_jit(x):
    if isinstance(x, types.BaseTuple | types.List):
        return lambda x: asarray(x)
    return lambda x: x


@overload(outer_operand)
def _outer_operand_jit(a, b):
    ndim = b.ndim if isinstance(b, types.Array) else 0
    andim = a.ndim if isinstance(a, types.Array) else 0
    shape = ", ".join([f"s[{d}]" for d in range(andim)] + ["1"] * ndim)
    source = (
        "def impl(a, b):\n"
        "    x = np.ascontiguousarray(np.asarray(a))\n"
        "    s = x.shape\n"
        f"    return x.reshape(({shape}{',' if andim + ndim == 1 else ''}))\n"
    )
    return _define(source, "impl", {})


@overload(concatenated_item, prefer_literal=True)
def _concatenated_item_jit(item, ndmin, trans1d):
    if not isinstance(ndmin, types.IntegerLiteral) or not isinstance(trans1d, types.IntegerLiteral):
        raise _fail("concatenated_item", "ndmin and trans1d must be constants")
    ndim = item.ndim if isinstance(item, types.Array) else 0
    # the NumPy helper on an item whose axis d has length d + 2 says where each goes
    probe = concatenated_item(
        np.zeros(tuple(range(2, ndim + 2))), ndmin.literal_value, trans1d.literal_value
    )
    shape = ", ".join("1" if n == 1 else f"s[{n - 2}]" for n in probe.shape)
    comma = "," if probe.ndim == 1 else ""
    source = (
        "def impl(item, ndmin, trans1d):\n"
        "    x = np.ascontiguousarray(np.asarray(item)).copy()\n"
        "    s = x.shape\n"
        f"    return x.reshape(({shape}{comma}))\n"
    )
    return _define(source, "impl", {})


# -- the joining functions of a list -----------------------------------------------------


@redirect(np.column_stack)
def column_stack(tup: Any) -> Any:
    """``np.column_stack`` (compiled: of a list too)."""
    return np.column_stack(tup)


@overload(column_stack)
def _column_stack_jit(tup):
    if isinstance(tup, types.List) and isinstance(tup.dtype, types.Array):
        if tup.dtype.ndim == 1:
            return lambda tup: shapes.stack(tup, 1)
        return lambda tup: shapes.concatenate(tup, 1)
    if isinstance(tup, types.BaseTuple) and all(
        isinstance(t, types.Array) and t.ndim >= 3 for t in tup
    ):  # Numba's own takes up to 2-D: arrays of more dimensions join along axis 1
        return lambda tup: np.concatenate(tup, axis=1)
    return lambda tup: np.column_stack(tup)


@redirect(np.dstack)
def dstack(tup: Any) -> Any:
    """``np.dstack`` (compiled: of a list too)."""
    return np.dstack(tup)


@overload(dstack)
def _dstack_jit(tup):
    if isinstance(tup, types.List) and isinstance(tup.dtype, types.Array):
        ndim = tup.dtype.ndim
        if ndim >= 3:
            return lambda tup: shapes.concatenate(tup, 2)
        if ndim == 2:
            return lambda tup: shapes.stack(tup, 2)

        def impl(tup):
            return shapes.stack(tup, 1).reshape((1, tup[0].size, len(tup)))

        return impl
    return lambda tup: np.dstack(tup)


if hasattr(np, "row_stack"):  # vstack's alias, gone from NumPy 2.5
    redirect(np.row_stack, name="vstack")(shapes.vstack)


# -- np.rot90 in any plane, np.atleast_3d of a number -------------------------------------


@redirect(np.rot90)
def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """``np.rot90`` (compiled: in any plane ``axes``, not only the first two axes)."""
    return np.rot90(m, k, axes)


@overload(rot90)
def _rot90_jit(m, k=1, axes=(0, 1)):
    if not isinstance(m, types.Array) or m.ndim < 2:
        raise _fail("rot90", f"expected an array of at least 2 dimensions, got {m}")

    def impl(m, k=1, axes=(0, 1)):
        a0 = axes[0] + m.ndim if axes[0] < 0 else axes[0]
        a1 = axes[1] + m.ndim if axes[1] < 0 else axes[1]
        if a0 == a1:
            raise ValueError("Axes must be different.")
        turns = k % 4
        if turns == 0:
            return np.ascontiguousarray(m)
        if turns == 2:
            return np.ascontiguousarray(shapes.flip(shapes.flip(m, a0), a1))
        if turns == 1:
            return np.ascontiguousarray(np.swapaxes(shapes.flip(m, a1), a0, a1))
        return np.ascontiguousarray(shapes.flip(np.swapaxes(m, a0, a1), a1))

    return impl


@redirect(np.atleast_3d)
def atleast_3d(a: Any) -> Any:
    """``np.atleast_3d`` of one array (compiled: of a number too)."""
    return np.atleast_3d(a)


@overload(atleast_3d)
def _atleast_3d_jit(a):
    if _is_scalar(a):
        return lambda a: np.full((1, 1, 1), a)
    return lambda a: np.atleast_3d(a)
