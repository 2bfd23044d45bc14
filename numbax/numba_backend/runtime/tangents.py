"""Numba versions of the tangent helpers (``numbax/runtime/tangents.py``): zeros and
ones of a type, copies, and the accumulation of cotangents, for scalars, arrays of any
rank, dtype and layout, ``None`` and (nested, named) tuples. The code for a tuple calls
the helper again on each element, so Numba specializes on the whole structure.

Numba has no ``np.add.at``: ``index_add`` generates the loop for ints, slices, None,
Ellipsis and integer arrays (NumPy's rules for where the advanced dimensions go).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import types
from numba.extending import overload

from numbax.numba_backend.boundary import field_name
from numbax.numba_backend.loops import new_arrays
from numbax.numba_backend.runtime.common import (
    _constant,
    _define,
    _fail,
    _is_none,
    _is_scalar,
    _list_map,
    _subscript,
    _tuple_map,
)
from numbax.runtime.tangents import (
    custom_cotangents,
    field_filled,
    index_add,
    kept_item,
    loop_cotangent,
    ones_like,
    owned,
    ravel,
    tree_add,
    zeros_like,
)


def _filled_like(name: str, func: Any, x: Any, value: int) -> Any:
    if _is_none(x):
        return lambda x: None
    if isinstance(x, types.BaseTuple):
        return _tuple_map(name, func, (x,), ["x"])
    if isinstance(x, types.List):
        return _list_map(func)
    if isinstance(x, types.Array):
        dtype = x.dtype
        if value == 0:
            return lambda x: new_arrays.zeros(x.shape, dtype)
        return lambda x: np.ones(x.shape, dtype)
    if _is_scalar(x):
        constant = _constant(types.unliteral(x), value)
        return lambda x: constant
    raise _fail(name, f"expected an array, a number or a tuple, got {x}")


@overload(zeros_like)
def _zeros_like_jit(x):
    return _filled_like("zeros_like", zeros_like, x, 0)


@overload(ones_like)
def _ones_like_jit(x):
    return _filled_like("ones_like", ones_like, x, 1)


def _index_kind(t: Any) -> str:
    if _is_none(t):
        return "none"
    if isinstance(t, types.EllipsisType):
        return "ellipsis"
    if isinstance(t, types.SliceType):
        return "slice"
    if isinstance(t, types.Integer):
        return "int"
    if isinstance(t, types.Array) and isinstance(t.dtype, types.Integer):
        return "array"
    raise _fail("index_add", f"unsupported index {t}")


@overload(index_add)
def _index_add_jit(base, index, value):
    if isinstance(base, types.BaseNamedTuple) and isinstance(index, types.StringLiteral):
        return _field_index_add(base, index.literal_value)
    if isinstance(base, types.BaseTuple):
        return _tuple_index_add(base, index, value)
    if isinstance(base, types.List) and isinstance(index, types.Integer):

        def add_to_element(base, index, value):
            base[index] = tree_add(base[index], value)
            return base

        return add_to_element
    if not isinstance(base, types.Array):
        raise _fail("index_add", f"base must be an array, got {base}")
    if isinstance(index, types.List):  # NumPy reads a list as the array of its items
        return lambda base, index, value: index_add(base, np.array(index), value)
    if _has_mask(index):
        return _mask_index_add(index)
    if isinstance(index, types.BaseTuple):
        parts = [(_index_kind(t), f"index[{i}]", t) for i, t in enumerate(index.types)]
    else:
        parts = [(_index_kind(index), "index", index)]
    consumed = sum(kind in ("int", "slice", "array") for kind, _, _ in parts)
    if consumed > base.ndim:
        raise _fail("index_add", f"too many indices for an array of {base.ndim} dimensions")
    ellipses = [i for i, (kind, _, _) in enumerate(parts) if kind == "ellipsis"]
    if len(ellipses) > 1:
        raise _fail("index_add", "an index can only have a single ellipsis ('...')")
    full = [("full", "", None)] * (base.ndim - consumed)
    if ellipses:
        parts[ellipses[0] : ellipses[0] + 1] = full
    else:
        parts += full

    # NumPy's rules: with an index array present, integers are advanced indices too; the
    # advanced indices broadcast together to a shape B, whose dimensions replace them in
    # the result if they are adjacent in the index, and come first otherwise.
    advanced = any(kind == "array" for kind, _, _ in parts)
    positions = [c for c, (kind, _, _) in enumerate(parts) if advanced and kind in ("int", "array")]
    consecutive = bool(positions) and positions[-1] - positions[0] + 1 == len(positions)
    nb = max((t.ndim for kind, _, t in parts if kind == "array"), default=0)
    broadcast = [f"b{k}" for k in range(nb)]

    lines = ["def impl(base, index, value):"]
    lines += [f"    b{k} = 1" for k in range(nb)]
    dims: list[str] = []  # lengths of the result's dimensions
    bstart = 0
    if advanced and not consecutive:
        dims += broadcast
    targets: list[Any] = []  # per base dimension: an expression, or how to make one
    d = 0
    for c, (kind, expr, t) in enumerate(parts):
        if advanced and consecutive and c == positions[0]:
            bstart = len(dims)
            dims += broadcast
        if kind == "none":
            dims.append("1")
            continue
        if kind == "int":
            lines.append(f"    k{c} = _wrap({expr}, base.shape[{d}])")
            targets.append(f"k{c}")
        elif kind == "array":
            lines.append(f"    a{c} = {expr}")
            for q in range(t.ndim):
                k = q + nb - t.ndim
                lines.append(f"    b{k} = _index_bdim(b{k}, a{c}.shape[{q}])")
                lines.append(f"    f{c}_{q} = 1 if a{c}.shape[{q}] != 1 else 0")
            targets.append(("array", c, t.ndim))
        elif kind == "slice":
            lines.append(f"    s{c}, e{c}, p{c} = {expr}.indices(base.shape[{d}])")
            lines.append(f"    n{c} = _slice_len(s{c}, e{c}, p{c})")
            targets.append(f"s{c} + i{len(dims)} * p{c}")
            dims.append(f"n{c}")
        else:  # a whole dimension
            targets.append(f"i{len(dims)}")
            dims.append(f"base.shape[{d}]")
        d += 1
    for d, target in enumerate(targets):
        if isinstance(target, tuple):
            _, c, ndim = target
            sub = [f"i{bstart + q + nb - ndim} * f{c}_{q}" for q in range(ndim)]
            targets[d] = f"_wrap(a{c}[{_subscript(sub)}], base.shape[{d}])"
    rank = len(dims)

    # The value broadcasts against the result.
    if isinstance(value, types.Array):
        w = value.ndim
        if w > rank:
            raise _fail("index_add", f"value of {w} dimensions for an index of {rank}")
        for a in range(w):
            length = dims[rank - w + a]
            lines.append(f"    if value.shape[{a}] != 1 and value.shape[{a}] != {length}:")
            lines.append("        raise ValueError('value could not be broadcast to the index')")
            lines.append(f"    g{a} = 1 if value.shape[{a}] != 1 else 0")
        item = f"value[{_subscript([f'i{rank - w + a} * g{a}' for a in range(w)])}]"
    elif _is_scalar(value):
        item = "value"
    else:
        raise _fail("index_add", f"value must be an array or a number, got {value}")
    for r, length in enumerate(dims):
        lines.append("    " * (r + 1) + f"for i{r} in range({length}):")
    lines.append("    " * (rank + 1) + f"base[{_subscript(targets)}] += {item}")
    lines.append("    return base")
    return _define("\n".join(lines) + "\n", "impl", {})


def _is_mask(t: types.Type) -> bool:
    return isinstance(t, types.Array) and isinstance(t.dtype, types.Boolean)


def _has_mask(index: types.Type) -> bool:
    if isinstance(index, types.BaseTuple):
        return any(map(_is_mask, index.types))
    return _is_mask(index)


def _mask_index_add(index: types.Type) -> Any:
    """``index_add`` with boolean masks among the index: NumPy reads a mask of ``k``
    dimensions as the ``k`` integer arrays ``np.nonzero`` gives (the positions where it
    is True, in order), so the index is made of those, and added through as usual."""
    components = list(index.types) if isinstance(index, types.BaseTuple) else [index]
    if any(_is_mask(t) and t.ndim == 0 for t in components):
        raise _fail("index_add", "a 0-d boolean index is not supported")
    expr = [f"index[{i}]" for i in range(len(components))]
    if not isinstance(index, types.BaseTuple):
        expr = ["index"]
    lines = ["def impl(base, index, value):"]
    parts: list[str] = []
    for i, t in enumerate(components):
        if _is_mask(t):
            lines.append(f"    m{i} = np.nonzero({expr[i]})")
            parts += [f"m{i}[{q}]" for q in range(t.ndim)]
        else:
            parts.append(expr[i])
    lines.append(f"    return index_add(base, ({_subscript(parts)}), value)")
    return _define("\n".join(lines) + "\n", "impl", {"index_add": index_add, "np": np})


def _tuple_index_add(base: types.BaseTuple, index: types.Type, value: types.Type) -> Any:
    """A new tuple: ``base`` with ``value`` added to its element ``index``: a constant,
    or, when all elements have one type (a list of layers of one kind, however wide),
    any integer, such as a loop's index."""
    if not isinstance(index, types.IntegerLiteral):
        if isinstance(base, types.UniTuple) and isinstance(index, types.Integer):
            return _uniform_tuple_index_add(len(base))
        if isinstance(base, types.UniTuple) and isinstance(index, types.SliceType):
            return _uniform_tuple_slice_add(len(base), value)
        if not isinstance(index, types.Integer):
            raise _fail("index_add", f"cannot index the tuple {base} with {index}")
        return lambda base, index, value: numba.literally(index)
    position = index.literal_value % len(base)
    parts = [
        "tree_add(base[{0}], value)" if i == position else "base[{0}]" for i in range(len(base))
    ]
    body = ", ".join(p.format(i) for i, p in enumerate(parts))
    return _define(
        f"def impl(base, index, value):\n    return ({body},)\n", "impl", {"tree_add": tree_add}
    )


def _uniform_tuple_index_add(n: int) -> Any:
    """``base`` with ``value`` added to element ``index`` (known at run time) of a
    tuple whose elements share one type."""
    parts = [f"tree_add(base[{i}], value) if k == {i} else base[{i}]" for i in range(n)]
    source = (
        "def impl(base, index, value):\n"
        f"    k = _wrap(index, {n})\n"
        f"    return ({', '.join(parts)},)\n"
    )
    return _define(source, "impl", {"tree_add": tree_add})


def _uniform_tuple_slice_add(n: int, value: types.Type) -> Any:
    """``base`` with the elements of tuple ``value`` added to the elements a slice
    selects (``layers[:-1]``), for a tuple whose elements share one type."""
    if not isinstance(value, types.BaseTuple):
        raise _fail("index_add", f"the cotangent of a slice of a tuple must be a tuple: {value}")
    if len(value) == 0:
        return lambda base, index, value: base
    parts = [f"tree_add(base[{i}], value[j{i}]) if h{i} else base[{i}]" for i in range(n)]
    lines = [
        "def impl(base, index, value):",
        f"    s, e, p = index.indices({n})",
        f"    if _slice_len(s, e, p) != {len(value)}:",
        "        raise ValueError('index_add: cotangents do not match the slice')",
    ]
    for i in range(n):
        lines.append(f"    j{i} = ({i} - s) // p")
        lines.append(f"    h{i} = ({i} - s) % p == 0 and 0 <= j{i} < {len(value)}")
        lines.append(f"    j{i} = min(max(j{i}, 0), {len(value) - 1})")
    lines.append(f"    return ({', '.join(parts)},)")
    return _define("\n".join(lines) + "\n", "impl", {"tree_add": tree_add})


def _field_index_add(base: types.BaseNamedTuple, key: str) -> Any:
    """A new NamedTuple: ``base`` with ``value`` added to the field standing for
    ``key`` (a field name, or a dict key that is not an identifier: see
    ``boundary.field_name``)."""
    position = _field_position("index_add", base, key)
    return _with_field_source(base, position, f"tree_add(base[{position}], value)")


def _field_position(helper: str, base: types.BaseNamedTuple, key: str) -> int:
    """Where ``base`` holds the field standing for ``key``."""
    field = key if key in base.fields else field_name(key)
    if field not in base.fields:
        raise _fail(helper, f"{base} has no field for the key {key!r}")
    return base.fields.index(field)


def _with_field_source(base: types.BaseNamedTuple, position: int, value: str) -> Any:
    """``impl(base, index, value)``: a new ``base`` whose field at ``position`` is the
    expression ``value``."""
    parts = [value if i == position else f"base[{i}]" for i in range(len(base.fields))]
    source = f"def impl(base, index, value):\n    return cls({', '.join(parts)})\n"
    return _define(source, "impl", {"tree_add": tree_add, "cls": base.instance_class})


@overload(field_filled, prefer_literal=True)  # the key, to find its field
def _field_filled_jit(base, index, value):
    """``value`` in the place of the zero at field ``index`` when it has that field's
    type (an array: a cotangent has its value's type), not added to it: no addition
    to compile, nor a new array to fill. Otherwise (another type, or a base that is not
    a NamedTuple) what ``index_add`` does."""
    if isinstance(base, types.BaseNamedTuple) and isinstance(index, types.StringLiteral):
        position = _field_position("field_filled", base, index.literal_value)
        if isinstance(value, types.Array) and base.types[position] == value:
            return _with_field_source(base, position, "value")
    return lambda base, index, value: index_add(base, index, value)


@overload(custom_cotangents)
def _custom_cotangents_jit(cts, primals, rule):
    if not isinstance(cts, types.BaseTuple) or len(cts) != len(primals):
        raise _fail(
            "custom_cotangents",
            f"a custom_vjp rule must return a tuple with one cotangent per differentiable "
            f"argument ({len(primals)}), got {cts}",
        )
    items = [
        f"zeros_like(primals[{i}])" if _is_none(t) else f"cts[{i}]" for i, t in enumerate(cts.types)
    ]
    source = f"def impl(cts, primals, rule):\n    return ({', '.join(items)},)\n"
    return _define(source, "impl", {"zeros_like": zeros_like})


@overload(tree_add)
def _tree_add_jit(a, b):
    if _is_none(a) and _is_none(b):
        return lambda a, b: None
    if isinstance(a, types.BaseTuple):
        return _tuple_map("tree_add", tree_add, (a, b), ["a", "b"])
    if isinstance(a, types.List) and isinstance(b, types.List):

        def add_lists(a, b):
            if len(a) != len(b):
                raise ValueError("tree_add: lists of different lengths")
            return [tree_add(a[i], b[i]) for i in range(len(a))]

        return add_lists
    if isinstance(a, types.Array | types.Number | types.Boolean) and isinstance(
        b, types.Array | types.Number | types.Boolean
    ):
        return lambda a, b: a + b
    raise _fail("tree_add", f"cannot add {a} and {b}")


@overload(loop_cotangent)
def _loop_cotangent_jit(ct, x):
    if isinstance(ct, types.BaseTuple):
        return _tuple_map("loop_cotangent", loop_cotangent, (ct, x), ["ct", "x"])
    if isinstance(ct, types.List):

        def fit_list(ct, x):
            if len(ct) != len(x):
                return zeros_like(x)
            return [loop_cotangent(ct[i], x[i]) for i in range(len(x))]

        return fit_list
    if isinstance(ct, types.Array) and isinstance(x, types.Array):
        return lambda ct, x: ct if ct.shape == x.shape else zeros_like(x)
    return lambda ct, x: ct


@overload(owned)
def _owned_jit(x):
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    if isinstance(x, types.BaseTuple):
        return _tuple_map("owned", owned, (x,), ["x"])
    if isinstance(x, types.List):
        return _list_map(owned)
    if _is_scalar(x) or _is_none(x):
        return lambda x: x
    raise _fail("owned", f"expected an array, a number or a tuple, got {x}")


@overload(kept_item)
def _kept_item_jit(item, base):
    if isinstance(base, (types.BaseTuple, types.List)):
        return lambda item, base: item
    return lambda item, base: owned(item)


@overload(ravel)
def _ravel_jit(x):
    if isinstance(x, types.Array):
        return lambda x: np.ravel(x)
    if _is_scalar(x):
        dtype = types.unliteral(x)
        return lambda x: np.full(1, x, dtype)
    raise _fail("ravel", f"expected an array or a number, got {x}")
