"""The helper of fused elementwise kernels (``numba_backend/fuse.py``)."""

from __future__ import annotations

from typing import Any

from numbax.runtime.registry import helper


@helper
def first(value: Any, like: Any) -> Any:
    """``value``: in a fused kernel, a scalar spread over ``like``'s elements (``like``
    is an argument only so that the kernel broadcasts to its shape)."""
    return value
