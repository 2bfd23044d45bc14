"""A slice assignment of the wrong size under jit raises NumPy's ValueError, with the
fixed message that keeps Numba's unicode support out of the first such compile."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.loops import slice_errors


def store_tail(a, b):
    a[1:] = b
    return a


def test_a_wrong_size_raises_the_fixed_message_at_run_time():
    assert slice_errors.install()  # this Numba has the overload numbax replaces
    stored = nx.jit(store_tail)
    np.testing.assert_array_equal(stored(np.zeros(3), np.ones(2)), [0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=slice_errors.MESSAGE):
        stored(np.zeros(3), np.ones(4))
