"""Calls NumPy users make for their effect, and builtins over sequences, read as the
values they leave (``normalize/values.py``): ``a.sort()``, ``np.put_along_axis``,
Python's ``max``/``min`` of several numbers or of one sequence, ``np.block`` of a list
assigned to a name, and ``keepdims`` chosen by a parameter under jit. Against central
differences interpreted, and one compiled program for all."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians

X = np.array([0.3, -0.6, 1.1])


def sort_in_place(x):
    m = np.outer(x, x[::-1]) + x
    m.sort(axis=0)
    v = x * 2.0
    v.sort()
    order = [3, 1, 2]
    order.sort()  # a list: sorted in place, as Python does
    names = ["b", "a", "c"]
    names.sort(reverse=True)  # list.sort's own arguments: Python's call
    return m * v + order[0] + len(names[0])


def put_along(x):
    y = np.zeros((2, 3)) + x[2]
    np.put_along_axis(y, np.array([[0], [2]]), np.stack([x[:1], x[1:2]]), axis=1)
    np.put_along_axis(y, np.array([[1, 1, 0]]), 2.0 * x[0], 0)
    return y * x


def put_flat(x):
    y = np.ones(4) * x[0]
    np.put_along_axis(y, np.array([3, 0]), x[1:], None)
    return y * x[2]


def extremes(x):
    held = [x[0], x[1] * 2.0, x[2]]
    pair = (x[1], x[0])
    keys = {3: 1.0, 1: 2.0}
    return (
        max(x[0], x[1], x[2])
        + min(x[0], x[2], x[1]) * 2.0
        + max(held) * 3.0
        + min(pair)
        + max(x) * min(x)
        + min([x[0], x[2]])
        + max(keys) * x[0]
    )


def blocks(x):
    a = np.outer(x, x)
    b = np.eye(3) * x[0]
    rows = [[a, b], [b, a]]
    return np.block(rows) * 2.0


@pytest.mark.parametrize("f", [sort_in_place, put_along, put_flat, extremes, blocks])
def test_against_finite_differences(f):
    check_jacobians(f, X, name=f.__name__, jit=False)


def test_ties_of_max_are_shared_as_np_maximum():
    def top(x):
        return max(x[0], x[1], x[2]) + max([x[0], x[1]])

    # max(max(a, b), c) at a == b == c: half to c, a quarter to a and to b; max of a list
    # of two equal values shares as np.maximum does
    np.testing.assert_allclose(nx.grad(top)(np.ones(3)), [0.75, 0.75, 0.5])


def test_put_along_axis_at_a_repeated_index():
    def repeated(x):
        y = np.zeros(2)
        np.put_along_axis(y, np.array([1, 1]), x, 0)
        return y[1]

    # NumPy keeps the last value put at an index; the tangent and the cotangent are the
    # last one's
    x = np.array([2.0, 5.0])
    assert repeated(x) == 5.0
    np.testing.assert_allclose(nx.jacfwd(repeated)(x), [0.0, 1.0])
    np.testing.assert_allclose(nx.grad(repeated)(x), [0.0, 1.0])


def sort_argument(x):
    x.sort()
    return x * 1.0


def sort_alias(x):
    y = x[1:]
    y.sort()
    return y * x


def test_sorting_the_callers_array_stays_refused():
    # the caller sees its array sorted: a call for its effect, refused where it carries
    # a derivative (only an array the function made is read as a rebinding)
    for f in (sort_argument, sort_alias):
        with pytest.raises(nx.TransformError, match="called for its effect"):
            nx.jacfwd(f)(np.array([3.0, 1.0, 2.0]))


def keep_or_not(x, flag):
    if flag:
        keep = True
    else:
        keep = False
    return np.sum(np.outer(x, x), axis=0, keepdims=keep) * 2.0


def compiled(x):
    """The new compiled pieces: the sort and the put as values (their Numba versions)
    and Python's max of a list (a loop over it)."""
    y = x * 2.0
    y.sort()
    return np.sum(put_flat(x)) + max([x[0], x[1], x[2]]) + y[0]


def test_one_compiled_program():
    """NumPy's values under jit, and keepdims decided by a parameter of the jitted
    function: compiled per value of it (analysis/ranks.py). The derivatives are checked
    interpreted above; each compile of derivative code costs seconds."""
    assert nx.jit(keep_or_not)(X, True).shape == (1, 3)
    np.testing.assert_allclose(nx.jit(compiled)(X), compiled(X), rtol=1e-12)
