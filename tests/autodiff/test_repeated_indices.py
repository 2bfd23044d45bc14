"""Stores at indices that name an element twice follow NumPy's buffered semantics, in
value and derivative alike: ``x[idx] = w`` keeps the last write of an element (only
that part of ``w`` reaches it), ``x[idx] += v`` is ``x[idx] = x[idx] + v`` (each
element updated once, from its last write); ``np.add.at`` (JAX's ``.at[].add``) and
``np.subtract.at`` add every repetition; ``np.put_along_axis`` keeps the last value
put. Integer arrays of one and two dimensions, lists, negative indices that alias
positive ones, boolean masks and pairs of index arrays.

Each function is checked against central differences interpreted (``jacfwd`` and
``jacrev``, so the JVP, the VJP and their batching); one program holding them all is
compiled for the value, ``jvp`` and ``jit(grad)``."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import (
    check_jacobians,
    check_jvp_under_jit,
    directional_programs,
    numeric_jacobian,
)

IDX = np.array([0, 0, 1])  # element 0 written twice
NEG = np.array([0, -3])  # -3 is 0 on three elements
MASK = np.array([True, False, True])
IDX2 = np.array([[0, 2], [0, 1]])  # 0 twice, in two rows
ROWS, COLS = np.array([0, 1, 0]), np.array([1, 0, 1])  # the pair (0, 1) twice
W = np.array([1.5, -2.0, 3.0])  # weights of the outputs: every element counts
X = np.array([0.3, -0.6, 1.1])
V = np.array([0.7, -1.3, 0.4])
M = np.array([[0.5, -0.2], [1.2, 0.8]])


def add_repeated(x, v):
    y = x * 1.0
    y[IDX] += v * x
    return y * W


def set_repeated(x, w):
    y = x * 1.0
    y[IDX] = w * 2.0
    return y * W


def set_negative(x, w):
    y = x * 1.0
    y[NEG] = w[:2] * w[1:]
    return y * W


def set_mask(x, w):
    y = x * 1.0
    y[MASK] = w[1:] * x[0]
    return y * W


def set_two_dimensional(x, w):
    y = x * 1.0
    y[IDX2] = np.outer(w[:2], w[1:])
    return y * W


def set_pairs(m, v):
    a = m * 1.0
    a[ROWS, COLS] = v
    return a * m


def add_pairs(m, v):
    a = m * 1.0
    a[ROWS, COLS] += v * v
    return a * m


def add_scalar_repeated(x, s):
    y = x * 1.0
    y[IDX] += s * s
    return y * W


def in_a_loop(x, v):
    y = x * 1.0
    for k in range(2):
        y[IDX] = y[IDX] * v + k
    return y * W


def add_at(x, v):
    y = x * 1.0
    np.add.at(y, IDX, v * x)
    np.subtract.at(y, NEG, v[1:])
    return y * W


def add_at_pairs(m, v):
    a = m * 1.0
    np.add.at(a, (ROWS, COLS), v)
    return a * m


def list_indices(x, v):
    y = x * 1.0
    idx = [0, -3, 1]  # a list, as NumPy reads it: an index array (0 twice)
    y[idx] += v * x
    y[[2, 2]] = v[:2] * 3.0
    return y * W + np.sum(y[[1, 0, 1]])


def put_along_repeated(x, v):
    y = x * 1.0
    np.put_along_axis(y, np.array([2, 0, 2]), v * x, None)
    m = np.outer(x, v[:2])
    np.put_along_axis(m, np.array([[1, 0], [1, 0]]), v[:2] * 2.0, 0)
    return y * W + np.sum(m)


CASES = [
    (add_repeated, X, V),
    (set_repeated, X, V),
    (set_negative, X, V),
    (set_mask, X, V),
    (set_two_dimensional, X, V),
    (set_pairs, M, V),
    (add_pairs, M, V),
    (add_scalar_repeated, X, 0.8),
    (in_a_loop, X, V),
    (add_at, X, V),
    (add_at_pairs, M, V),
    (put_along_repeated, X, V),
    (list_indices, X, V),
]


@pytest.mark.parametrize("f, a, b", CASES, ids=[c[0].__name__ for c in CASES])
def test_against_finite_differences(f, a, b):
    check_jacobians(f, a, b, name=f.__name__, jit=False)


def test_the_issue_examples():
    """``x[idx] += v``: the derivative counts element 0 once (3 was a scatter-add's);
    ``x[idx] = w``: the overwritten ``w[0]`` has no derivative."""

    def add(x, v):
        y = x.copy()
        y[IDX] += v
        return np.sum(y * np.array([1.0, 2.0, 3.0]))

    def put(x, w):
        y = x * 1.0
        y[IDX] = w
        return np.sum(y * np.array([1.0, 1.0, 10.0]))

    grad_x, grad_v = nx.grad(add, argnums=(0, 1))(X, V)
    np.testing.assert_allclose(grad_x, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(grad_v, [0.0, 1.0, 2.0])
    grad_x, grad_w = nx.grad(put, argnums=(0, 1))(X, V)
    np.testing.assert_allclose(grad_x, [0.0, 0.0, 10.0])
    np.testing.assert_allclose(grad_w, [0.0, 1.0, 1.0])


def test_vmap_of_the_gradient():
    batch = np.stack([V, V * 2.0, -V])
    got = nx.vmap(nx.grad(lambda v: np.sum(add_repeated(X, v)) + np.sum(set_pairs(M, v))))(batch)
    for row, v in zip(got, batch, strict=True):
        want = numeric_jacobian(
            lambda v: np.sum(add_repeated(X, v)) + np.sum(set_pairs(M, v)), [v], 0
        )
        np.testing.assert_allclose(row, want, rtol=1e-6, atol=1e-7)


def add_at_parameter(x, v):
    np.add.at(x, IDX, v)
    return x * 2.0


def test_add_at_changes_the_callers_array():
    for run in (add_at_parameter, nx.jit(add_at_parameter)):
        a = X.copy()
        out = run(a, V)
        want = X.copy()
        np.add.at(want, IDX, V)
        np.testing.assert_allclose(a, want)
        np.testing.assert_allclose(out, want * 2.0)


def maximum_at(x, v):
    y = x * 1.0
    np.maximum.at(y, IDX, v)
    return y


def test_other_ufunc_at_is_refused_at_its_line():
    with pytest.raises(nx.TransformError, match=r"np\.maximum\.at.*write the loop") as info:
        nx.jacfwd(maximum_at, argnums=1)(X, V)
    assert "line" in str(info.value)


def everything(x, v, m):
    """Each construct once, in one program to compile."""
    total = np.sum(add_repeated(x, v)) + np.sum(set_repeated(x, v) * set_negative(x, v))
    total = total + np.sum(set_mask(x, v)) + np.sum(set_two_dimensional(x, v))
    total = total + np.sum(set_pairs(m, v)) + np.sum(add_pairs(m, v))
    total = total + np.sum(in_a_loop(x, v)) + np.sum(add_at(x, v)) + np.sum(add_at_pairs(m, v))
    total = total + np.sum(put_along_repeated(x, v)) + np.sum(list_indices(x, v))
    return total + np.sum(add_scalar_repeated(x, v[0]))


def test_compiled():
    """NumPy's value and the VJP under jit (one program: value_and_grad), and the
    compiled JVP along a random direction, against central differences."""
    args = [X, V, M]
    wants = {i: numeric_jacobian(everything, args, i) for i in range(3)}
    programs = directional_programs(everything, 3)
    rng = np.random.default_rng(0)
    check_jvp_under_jit(programs, args, [0, 1, 2], wants, "everything", rng, 1e-5, 1e-6)
    value, grads = nx.jit(nx.value_and_grad(everything, argnums=(0, 1, 2)))(*args)
    np.testing.assert_allclose(value, everything(*args), rtol=1e-12)
    for got, want in zip(grads, wants.values(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def one_element_at_a_time(v, scale):
    y = v * 2.0
    y[0] = scale * 3.0
    for k in range(1, 3):
        y[k] = scale * k
    return np.sum(y * y)


def test_stores_of_one_element_stay_copies_in_a_gpu_thread():
    """An index of constants and range loops' indices names one element: its store's
    adjoint is the copy it was (a GPU thread runs no nxrt.last_written)."""
    per_example = nx.grad(one_element_at_a_time, argnums=(0, 1))
    batched = nx.jit(nx.vmap(per_example, in_axes=(0, None)), backend="gpu")
    x = np.arange(6.0).reshape(2, 3) / 10
    for got, want in zip(
        batched(x, 1.5), nx.vmap(per_example, in_axes=(0, None))(x, 1.5), strict=True
    ):
        np.testing.assert_allclose(nx.device_get(got), want, rtol=1e-13)
    assert "last_written" not in nx.grad(one_element_at_a_time).source
