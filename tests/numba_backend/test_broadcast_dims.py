"""``broadcast_dim`` (``broadcast_dims.py``): NumPy's rule for two dimension lengths,
which every generated loop applies."""

from __future__ import annotations

import numba
import numpy as np
import pytest

import numbax as nx
from numbax.numba_backend.loops.broadcast_dims import broadcast_dim


@numba.njit
def _dims(a, b):
    return broadcast_dim(a, b), broadcast_dim(np.int32(a), b), broadcast_dim(a, 1)


@pytest.mark.parametrize(
    ("a", "b", "want"), [(3, 3, 3), (3, 1, 3), (1, 4, 4), (1, 1, 1), (0, 1, 0)]
)
def test_the_broadcast_of_two_lengths(a, b, want):
    assert _dims(a, b) == (want, want, a)


def test_lengths_that_do_not_broadcast_raise_numpys_error():
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        _dims(3, 2)


def sine_plus(x, y):
    return np.sin(x) + y


def test_a_fused_loop_of_arrays_that_do_not_broadcast_raises_it():
    with pytest.raises(ValueError, match="operands could not be broadcast together"):
        nx.jit(sine_plus)(np.ones((3, 4)), np.ones((2, 4)))
    np.testing.assert_array_equal(
        nx.jit(sine_plus)(np.zeros((3, 4)), np.arange(4.0)[None]), np.tile(np.arange(4.0), (3, 1))
    )
