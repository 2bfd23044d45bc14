"""A compiled call's result in its arguments' container types, where the result is
statically (a part of) an argument (``transform/returned_arguments.py``): compiled code
gives every list back as a tuple, the argument says it was a list."""

from __future__ import annotations

from typing import Any

from numbax.transform.returned_arguments import Template
from numbax.tree_util import tree_leaves, tree_structure, tree_unflatten


def rebuilt_from_arguments(template: Template, arguments: dict[str, Any], result: Any) -> Any:
    """``result`` with each part that ``template`` traces to an argument in that
    argument's structure, where the two differ only by lists held as tuples."""
    if template is None:
        return result
    if template[0] == "tuple":
        if type(result) is not tuple or len(result) != len(template[1]):
            return result
        return tuple(
            rebuilt_from_arguments(t, arguments, r)
            for t, r in zip(template[1], result, strict=True)
        )
    _, name, keys = template
    if name not in arguments:
        return result
    part = arguments[name]
    try:
        for kind, key in keys:
            part = part[key] if kind == "item" else getattr(part, key)
    except (LookupError, TypeError, AttributeError):  # the compiled call succeeded: unreached
        return result
    if tree_structure(_tupled(part)) != tree_structure(result):
        return result
    return tree_unflatten(tree_structure(part), tree_leaves(result))


def _tupled(value: Any) -> Any:
    """``value`` with its lists as tuples, as compiled code holds them."""
    if isinstance(value, list):
        return tuple(map(_tupled, value))
    if isinstance(value, dict):
        return {k: _tupled(v) for k, v in value.items()}
    if isinstance(value, tuple):
        items = map(_tupled, value)
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value
