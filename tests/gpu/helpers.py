"""What the GPU tests share: the leaves of a result (numbers and arrays in tuples nested
any way)."""

from __future__ import annotations

from typing import Any


def leaves(value: Any) -> list[Any]:
    """The leaves of ``value``, depth first."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]
