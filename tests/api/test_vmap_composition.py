"""``vmap`` of the other transformations' outputs, and theirs of ``vmap``'s, by both
methods, against the examples one at a time (the closure invariant for vmap)."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import fd_gradient

RNG = np.random.default_rng(5)
XS = RNG.normal(size=(4, 3)) * 0.5
METHODS = [None, "loop"]


def f(x):
    return np.sum(np.sin(x) * x) + np.prod(x[:2])


def vector_f(x):
    return np.tanh(x) * np.sum(x**2)


@nx.custom_jvp
def soft_clip(x):
    return np.tanh(x)


@soft_clip.defjvp
def soft_clip_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    y = np.tanh(x)
    return y, 2.0 * (1.0 - y * y) * dx  # doubled: proves the rule is used


def clipped(x):
    return np.sum(soft_clip(x))


INNER = {
    "jit": lambda: nx.jit(vector_f),
    "grad": lambda: nx.grad(f),
    "jacfwd": lambda: nx.jacfwd(vector_f),
    "jacrev": lambda: nx.jacrev(vector_f),
    "hessian": lambda: nx.hessian(f),
    "custom_jvp": lambda: nx.grad(clipped),
    "checkpoint": lambda: nx.grad(nx.checkpoint(f)),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("inner", list(INNER))
def test_vmap_of_each_transformation(inner, method):
    fun = INNER[inner]()
    want = np.stack([fun(x) for x in XS])
    got = nx.vmap(fun, method=method)(XS)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=f"vmap of {inner}")


@pytest.mark.parametrize("inner", ["grad", "jacrev", "custom_jvp"])
def test_vmap_of_each_transformation_under_jit(inner):
    fun = INNER[inner]()
    want = np.stack([fun(x) for x in XS])
    got = nx.jit(nx.vmap(fun))(XS)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=f"jit∘vmap∘{inner}")


BATCHED = nx.vmap(vector_f)


def total(x):
    return np.sum(BATCHED(x) ** 2)


@pytest.mark.parametrize("outer", ["grad", "jacfwd", "jacrev", "jit∘grad", "hessian∘jvp"], ids=str)
def test_each_transformation_of_vmap(outer):
    want = fd_gradient(total, XS)
    if outer == "hessian∘jvp":  # a Hessian-vector product through the batched call
        v = RNG.normal(size=XS.shape)
        hvp = nx.jvp(nx.grad(total), (XS,), (v,))[1]
        want = (nx.grad(total)(XS + 1e-6 * v) - nx.grad(total)(XS - 1e-6 * v)) / 2e-6
        np.testing.assert_allclose(hvp, want, rtol=1e-5, atol=1e-8)
        return
    transform = {
        "grad": nx.grad,
        "jacfwd": nx.jacfwd,
        "jacrev": nx.jacrev,
        "jit∘grad": lambda g: nx.jit(nx.grad(g)),
    }[outer]
    np.testing.assert_allclose(transform(total)(XS), want, rtol=1e-6, atol=1e-8)
