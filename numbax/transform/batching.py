"""``vmap``'s generated source: a loop over the batch that calls the function once per
example.

    def vmap_model(w, x):
        _size = nxrt.batch_size('model', (w, x), (None, 0), ('w', 'x'))
        _out = _model(w, nxrt.batch_take(x, 0, 0))
        _batch = nxrt.batch_empty(_out, _size, 0)
        nxrt.batch_put(_batch, 0, 0, _out, 'model')
        for _i in range(1, _size):
            _out = _model(w, nxrt.batch_take(x, _i, 0))
            nxrt.batch_put(_batch, _i, 0, _out, 'model')
        return _batch

The first example is computed before the loop because the batched output is allocated
from its shape and dtype; unmapped arguments are passed as they are.
"""

from __future__ import annotations

from typing import Any

from numbax.transform.ad_common import RUNTIME

INDEX = "index"
"""An argument's axis that passes the example's position itself (``axis_index``)."""


def batching_loop(
    name: str,
    short: str,
    params: list[str],
    axes: tuple,
    out_axes: Any,
    axis_size: int | None,
    loop: str = "range",
) -> tuple[list[str], list[str], dict[str, Any]]:
    """(header comment lines, source lines, bindings) of the loop ``name``, calling
    ``_<short>`` with ``params`` mapped over ``axes``; ``loop`` is ``range`` or, for the
    compiled loop, ``prange`` (parallel under ``jit(parallel=True)``)."""
    body = [
        f"def {name}({', '.join(params)}):",
        f"    _size = {size_expression(short, params, axes, axis_size)}",
        *examples_loop(f"_{short}", list(zip(params, axes, strict=True)), "_batch", out_axes,
                       short, loop),
        "    return _batch",
    ]  # fmt: skip
    header = [f"in_axes={axes!r} (per parameter), out_axes={out_axes!r}"]
    return header, body, {}


def size_expression(short: str, params: list[str], axes: tuple, axis_size: int | None) -> str:
    """The batch size: the mapped arguments' common size (checked), or ``axis_size``."""
    mapped = [leaf for p, a in zip(params, axes, strict=True) for leaf in mapped_leaves(p, a)]
    if not mapped:
        return repr(axis_size)
    args = ", ".join(p for p, _ in mapped)
    return (
        f"{RUNTIME}.batch_size({short!r}, ({args},), "
        f"({', '.join(repr(a) for _, a in mapped)},), "
        f"({', '.join(repr(p) for p, _ in mapped)},))"
    )


def examples_loop(
    callee: str,
    args: list[tuple[str, Any]],
    batch: str,
    out_axes: Any,
    short: str,
    loop: str = "range",
) -> list[str]:
    """Lines (indented for a function body) calling ``callee`` once per example, with
    each ``(expression, axis)`` argument mapped over its axis (None: passed as it is;
    :data:`INDEX`: the example's position), its outputs stacked into ``batch``."""

    def call(index: str) -> str:
        parts = [index if a == INDEX else _take(e, index, a) for e, a in args]
        return f"{callee}({', '.join(parts)})"

    leaves = _leaves("_out", batch, out_axes)
    return [
        f"    _out = {call('0')}",
        f"    {batch} = {_empty('_out', out_axes)}",
        *(f"    {_put(b, '0', a, o, short)}" for o, b, a in leaves),
        f"    for _i in {loop}(1, _size):",
        f"        _out = {call('_i')}",
        *(f"        {_put(b, '_i', a, o, short)}" for o, b, a in leaves),
    ]


# A tuple or dict of axes (a pytree prefix) is spelled out element by element, so that
# compiled code sees one constant axis per array (a dict is a record there, indexed by
# constant keys).
def _items(expr: str, axis: Any) -> list[tuple[str, str, Any]]:
    """(key source, element expression, element axis) of a tuple or dict prefix."""
    keys = range(len(axis)) if isinstance(axis, tuple) else axis
    return [(repr(k), f"{expr}[{k!r}]", axis[k]) for k in keys]


def _build(axis: Any, items: list[tuple[str, str]]) -> str:
    """A tuple or dict of ``(key, source)`` items, as ``axis`` is."""
    if isinstance(axis, tuple):
        return f"({', '.join(v for _, v in items)},)"
    return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"


def _take(expr: str, index: str, axis: Any) -> str:
    if axis is None:
        return expr
    if isinstance(axis, (tuple, dict)):
        return _build(axis, [(k, _take(e, index, a)) for k, e, a in _items(expr, axis)])
    return f"{RUNTIME}.batch_take({expr}, {index}, {axis!r})"


def _empty(expr: str, axis: Any) -> str:
    if isinstance(axis, (tuple, dict)):
        return _build(axis, [(k, _empty(e, a)) for k, e, a in _items(expr, axis)])
    return f"{RUNTIME}.batch_empty({expr}, _size, {axis!r})"


def _leaves(out: str, batch: str, axis: Any) -> list[tuple[str, str, Any]]:
    """(output expression, batch expression, axis) per element of a prefix."""
    if isinstance(axis, (tuple, dict)):
        return [
            leaf
            for (_, o, a), (_, b, _) in zip(_items(out, axis), _items(batch, axis), strict=True)
            for leaf in _leaves(o, b, a)
        ]
    return [(out, batch, axis)]


def mapped_leaves(expr: str, axis: Any) -> list[tuple[str, Any]]:
    """(expression, axis) of each mapped element of an argument mapped by ``axis``."""
    if axis is None:
        return []
    if isinstance(axis, (tuple, dict)):
        return [leaf for _, e, a in _items(expr, axis) for leaf in mapped_leaves(e, a)]
    return [(expr, axis)]


def _put(batch: str, index: str, axis: Any, out: str, name: str) -> str:
    return f"{RUNTIME}.batch_put({batch}, {index}, {axis!r}, {out}, {name!r})"
