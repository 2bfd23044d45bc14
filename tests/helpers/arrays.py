"""Comparing arrays exactly: the same dtype, shape and bytes."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_identical(actual: Any, expected: Any) -> None:
    """Equal values, dtypes and shapes, bit for bit (a scalar stands for a 0-d array)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert actual.tobytes() == expected.tobytes()
