"""``numpy.matrix``, whose ``*`` is a matrix product, is refused: as an argument of any
transformation (a TypeError at the call) and made inside a transformed function (a
TransformError at its line), interpreted and under ``jit``. Generated code computes
with arrays, whose ``*`` is elementwise: a matrix would get a wrong product silently."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")

A = np.matrix([[1.0, 2.0], [3.0, 4.0]])
B = np.matrix([[0.5], [1.0]])


def product(a, b):
    return np.sum(a * b)


def made_inside(x):
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    return np.sum(m * x)


@pytest.mark.parametrize(
    "call",
    [
        lambda: nx.jit(product)(A, B),
        lambda: nx.jit(product)(np.asarray(A), b=B),
        lambda: nx.grad(product)(A, np.asarray(B)),
        lambda: nx.jit(nx.grad(product))(A, np.asarray(B)),
        lambda: nx.value_and_grad(product)((np.ones(2), A)[1], np.asarray(B)),
        lambda: nx.jacrev(product)(A, B),
        lambda: nx.vmap(product)(A, A),
        lambda: nx.jvp(product, (A, B), (A, B)),
        lambda: nx.vjp(product, A, B),
        lambda: nx.grad(lambda t: product(t[0], t[1]))((np.asarray(A), B)),
    ],
    ids=["jit", "jit-keyword", "grad", "jit-grad", "value_and_grad", "jacrev", "vmap",
         "jvp", "vjp", "in-a-pytree"],
)  # fmt: skip
def test_a_matrix_argument_is_refused(call):
    with pytest.raises(TypeError, match=r"numpy.matrix, whose \* is a matrix product.*a @ b"):
        call()


@pytest.mark.parametrize("transform", [nx.jit, nx.grad, nx.jacfwd], ids=["jit", "grad", "jacfwd"])
def test_a_matrix_made_inside_is_refused_at_its_line(transform):
    with pytest.raises(nx.TransformError, match=r"numpy.matrix .* \(line 24: `m = np.matrix"):
        transform(made_inside)(np.ones((2, 1)))


def test_arrays_are_unchanged():
    a, b = np.asarray(A), np.asarray(B)
    assert nx.jit(product)(a, b) == pytest.approx(product(a, b))
    np.testing.assert_allclose(nx.grad(product)(a, b), np.broadcast_to(b, (2, 2)))
