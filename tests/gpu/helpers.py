"""What the GPU tests share: where a line of a test's function is, and the leaves of a
result (numbers and arrays in tuples nested any way)."""

from __future__ import annotations

import inspect
from typing import Any


def line_of(function: Any, text: str) -> int:
    """The file line of ``function``'s first source line containing ``text``."""
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)


def leaves(value: Any) -> list[Any]:
    """The leaves of ``value``, depth first."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]
