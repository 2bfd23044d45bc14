"""Lone operators of straight-line code call ``nxrt.op_<name>`` (array_operators.py):
the values and dtypes NumPy gives, on arrays, scalars and mixes of both."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numbax as nx
from numbax.runtime import nxrt


def every_operator(x, y, flag):
    a = x + y
    b = a * 2.0
    c = -b
    d = c < a
    e = x - y / 3.0
    f = x // 0.7
    g = x % 0.9
    h = d & (a > 0.5)
    if flag:
        b = +b
    return a, b, c, d, e, f, g, h


def loop_of_scalars(x, n):
    total = x[0]
    for _ in range(n):
        total = total * 0.5 + 1.0
    return total


@pytest.mark.parametrize(
    "x, y",
    [
        (np.linspace(0.1, 2.0, 7), np.linspace(-1.0, 1.0, 7)),
        (np.linspace(0.1, 2.0, 6).astype(np.float32).reshape(2, 3), np.float32(0.25)),
        (np.linspace(0.1, 2.0, 6).reshape(3, 2), np.array([1.5, -0.5])),  # broadcast
        (1.25, 0.75),  # Python scalars: the operators inlined
    ],
    ids=["arrays", "float32-and-scalar", "broadcast", "scalars"],
)
def test_operators_give_numpys_values_and_dtypes(x, y):
    jitted = nx.jit(every_operator)
    for got, want in zip(jitted(x, y, True), every_operator(x, y, True), strict=True):
        assert np.result_type(got) == np.result_type(want)
        np.testing.assert_allclose(
            got, want, rtol=1e-6 if np.result_type(want) == np.float32 else 0
        )


def test_straight_line_operators_call_the_helpers_and_loops_keep_theirs():
    jitted = nx.jit(every_operator)
    x = np.linspace(0.1, 2.0, 4)
    jitted(x, x, False)
    text = jitted.source
    for name in ("add", "mul", "neg", "lt", "floordiv", "mod"):
        assert f"nxrt.op_{name}(" in text, name
    # a run of two is a fused loop, whose kernel keeps the operators: it runs on scalars
    assert "e = _every_operator_line20(y, x)" in text and "e = x - _div" in text
    assert re.search(r"if flag:\n.*\n\s+b = nxrt\.op_pos\(b\)", text)
    looping = nx.jit(loop_of_scalars)
    assert looping(x, 3) == loop_of_scalars(x, 3)
    loop = looping.source.split("\n    for ")[1]
    assert "nxrt.op_" not in loop and "total * " in loop


def test_parallel_functions_keep_their_array_expressions():
    jitted = nx.jit(every_operator, parallel=True)
    x = np.linspace(0.1, 2.0, 4)
    for got, want in zip(jitted(x, x, True), every_operator(x, x, True), strict=True):
        np.testing.assert_array_equal(got, want)
    assert "nxrt.op_" not in jitted.source


def test_the_helpers_are_the_operators_in_python():
    a, b = np.array([3.0, -2.0]), np.array([0.5, 4.0])
    np.testing.assert_array_equal(nxrt.op_floordiv(a, b), a // b)
    np.testing.assert_array_equal(nxrt.op_ne(a, b), a != b)
    np.testing.assert_array_equal(nxrt.op_invert(np.array([1, 2])), ~np.array([1, 2]))


def products(m, v, steps):
    first = m @ v
    for _ in range(steps):
        v = np.tanh(m.T @ first) + v
        first = m @ v
    return first @ first


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_matrix_products_call_their_helper_in_loops_too(dtype):
    """A matrix product's operands are arrays wherever it is: in a loop it calls
    ``nxrt.op_matmul`` too (cached with numbax's helpers, where Numba's own compiles in
    every process)."""
    m = np.linspace(-1.0, 1.0, 12).reshape(3, 4).astype(dtype)
    v = np.linspace(0.5, 1.5, 4).astype(dtype)
    jitted = nx.jit(products)
    got, want = jitted(m, v, 2), products(m, v, 2)
    assert np.result_type(got) == np.result_type(want)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-13)
    text = jitted.source
    assert "first = nxrt.op_matmul(m, v)" in text, text
    loop = text.split("\n    for ")[1]
    assert "nxrt.op_matmul(m, v)" in loop and "nxrt.op_add" not in loop, loop
