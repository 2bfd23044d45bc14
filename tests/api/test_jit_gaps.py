"""NumPy that runs interpreted and must run, or fail clearly, under ``nx.jit``:
``x[...]``, ``np.meshgrid``, ``x.astype(int)``, a ``keepdims`` chosen at run time,
``np.random`` inside compiled code, and float16."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx

X = np.array([0.3, -1.2, 2.5, 0.75])


def gaps(x):
    whole = x[...] * 2.0
    a, b = np.meshgrid(x, x[:3])
    i, j = np.meshgrid(x[:2], x, indexing="ij")
    counts = (x * 3).astype(int) + x.astype(float).astype(np.int64)
    return whole, a * b, i - j, counts, np.take(a, 1, axis=1)


def test_gaps_compile_with_numpy_results():
    got, want = nx.jit(gaps)(X), gaps(X)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def keepdims_chosen_at_run_time(x):
    keep = True
    if x[0] > 0:
        keep = False
    return np.sum(x.reshape(2, 2), axis=0, keepdims=keep)


def draws_from_numpy(x):
    return x + np.random.normal(size=4)


def float16_inside(x):
    return x.astype(np.float16) * 2


def doubled(x):
    return x * 2


def test_clear_errors():
    with pytest.raises(nx.TransformError, match="must be known when compiling"):
        nx.jit(keepdims_chosen_at_run_time)(X)
    with pytest.raises(nx.TransformError, match=r"np.random.normal\(\).*numbax.random"):
        nx.jit(draws_from_numpy)(X)
    with pytest.raises(TypeError, match="float16.*float32"):
        nx.jit(doubled)(X.astype(np.float16))
    with pytest.raises(TypeError, match="float16.*float32"):
        nx.jit(float16_inside)(X)
