"""Axes given as pytree prefixes (``in_axes=({"w": None}, (0, 1))``), spelled out leaf
by leaf, and the batch size they imply.

A tuple or dict of axes is written element by element, so that compiled code sees one
constant axis per array (a dict is a record there, indexed by constant keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gast

from numbax.transform.ad.common import runtime_call
from numbax.transform.nodes import const, item, literal, load


@dataclass(frozen=True)
class Leaf:
    """An element of an argument or output a prefix of axes reaches: how to read it,
    what to call it in an error, and its axis (None: not mapped)."""

    node: gast.expr
    label: str
    axis: Any


def is_prefix(axis: Any) -> bool:
    """Whether an axis is a tuple or dict of axes rather than one axis (or None)."""
    return isinstance(axis, (tuple, dict))


def elements(leaf: Leaf) -> list[tuple[Any, Leaf]]:
    """(key, element) of a tuple or dict prefix."""
    keys = range(len(leaf.axis)) if isinstance(leaf.axis, tuple) else leaf.axis
    return [(k, Leaf(item(leaf.node, k), f"{leaf.label}[{k!r}]", leaf.axis[k])) for k in keys]


def rebuilt(axis: Any, parts: list[tuple[Any, gast.expr]]) -> gast.expr:
    """A tuple or dict of ``(key, node)`` parts, as the prefix ``axis`` is."""
    if isinstance(axis, tuple):
        return gast.Tuple([node for _, node in parts], gast.Load())
    return gast.Dict([const(k) for k, _ in parts], [node for _, node in parts])


def mapped(leaf: Leaf) -> list[Leaf]:
    """The mapped leaves under ``leaf`` (each with one integer axis)."""
    if leaf.axis is None:
        return []
    if is_prefix(leaf.axis):
        return [m for _, element in elements(leaf) for m in mapped(element)]
    return [leaf]


def batch_size(short: str, params: list[str], axes: tuple, axis_size: int | None) -> gast.expr:
    """The batch size: the mapped arguments' common size (checked, with ``short``, the
    function's name, and each argument's in the error), or ``axis_size`` given alone."""
    leaves = [m for p, a in zip(params, axes, strict=True) for m in mapped(Leaf(load(p), p, a))]
    if not leaves:
        return const(axis_size)
    return runtime_call(
        "batch_size",
        const(short),
        gast.Tuple([leaf.node for leaf in leaves], gast.Load()),
        literal(tuple(leaf.axis for leaf in leaves)),
        literal(tuple(leaf.label for leaf in leaves)),
    )
