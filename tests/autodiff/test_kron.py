"""``np.kron``, which numbax reads as its composition (an outer product with the axes
interleaved: ``numbax/transform/compositions/linalg.py``) and which has no rule of its
own: NumPy's values exactly, interpreted and under jit, for operands of one rank and of
two; derivatives in both operands against central differences, interpreted and under
jit; vmap against a loop.
"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.transform.compositions import linalg as compositions
from tests.helpers.fd import check_jacobians

RNG = np.random.default_rng(7)
SHAPES = [((2, 3), (3, 2)), ((3,), (2,)), ((3,), (2, 2)), ((2, 1, 3), (2, 2)), ((), (2,))]
OPERANDS = [(RNG.normal(size=sa), RNG.normal(size=sb)) for sa, sb in SHAPES]
IDS = [f"{sa}x{sb}" for sa, sb in SHAPES]


def kron(a, b):
    return np.kron(a, b)


@pytest.mark.parametrize("a, b", OPERANDS, ids=IDS)
def test_values_are_numpys(a, b):
    want = np.kron(a, b)
    for got in (compositions.kron(a, b), nx.vjp(kron, a, b)[0]):
        assert np.shape(got) == want.shape
        np.testing.assert_array_equal(got, want)  # the same products: the same values
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(compositions.kron(ints, ints.T), np.kron(ints, ints.T))


@pytest.mark.parametrize("a, b", OPERANDS, ids=IDS)
def test_derivatives_match_finite_differences(a, b):
    check_jacobians(kron, a, b, argnums=[0, 1], name="kron", jit=False)


def test_values_and_derivatives_under_jit():
    # ranks one and two, as Numba's own kron took them, and three, which it does not take
    for a, b in (OPERANDS[2], OPERANDS[3]):
        got = nx.jit(kron)(a, b)
        assert got.shape == np.kron(a, b).shape
        np.testing.assert_array_equal(got, np.kron(a, b))
    check_jacobians(kron, *OPERANDS[2], argnums=[0, 1], name="kron", interpreted=False)


def test_vmap_is_a_loop_of_calls():
    a = RNG.normal(size=(4, 2, 3))
    b = RNG.normal(size=(3, 2))
    got = nx.vmap(kron, in_axes=(0, None))(a, b)
    np.testing.assert_array_equal(got, np.stack([np.kron(x, b) for x in a]))


def test_a_call_numbax_cannot_read_is_refused():
    def one_operand(a):
        return np.sum(np.kron(a))

    with pytest.raises(nx.TransformError, match=r"numpy\.kron\(a, b\)"):
        nx.grad(one_operand)(np.ones(2))
