"""The broadcast of two dimension lengths, as NumPy's rule, for generated loops."""

from __future__ import annotations

from numba.extending import register_jitable


@register_jitable
def broadcast_dim(a, b):
    """The broadcast of two dimension lengths, or NumPy's ValueError."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise ValueError("operands could not be broadcast together")
