"""numbax.nn: jax.nn's activations, their values, their derivatives against finite
differences (forward and reverse, interpreted; one compiled program under jit), JAX's
conventions at kinks, and batching; against jax.nn where JAX is installed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import numbax as nx
from numbax import nn
from tests.helpers.fd import check_jacobians, numeric_jacobian
from tests.helpers.jax_x64 import jax_x64

# points away from the kinks, where finite differences hold
X = np.array([-3.1, -1.2, -0.3, 0.4, 1.7, 5.2, 7.5])
M = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.7]])

ELEMENTWISE = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6)),
    "sigmoid": (nn.sigmoid, scipy.special.expit),
    "silu": (nn.silu, lambda x: x * scipy.special.expit(x)),
    "swish": (nn.swish, lambda x: x * scipy.special.expit(x)),
    "softplus": (nn.softplus, lambda x: np.log1p(np.exp(x))),
    "log_sigmoid": (nn.log_sigmoid, lambda x: np.log(scipy.special.expit(x))),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1)),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "celu": (nn.celu, lambda x: np.where(x > 0, x, np.expm1(x))),
    "selu": (
        nn.selu,
        lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    ),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1)),
    "tanh": (nn.tanh, np.tanh),
    "gelu": (
        nn.gelu,
        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    ),
    "gelu_exact": (
        lambda x: nn.gelu(x, approximate=False),
        lambda x: x * scipy.special.ndtr(x),
    ),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_values_and_derivatives(name: str) -> None:
    fun, want = ELEMENTWISE[name]
    np.testing.assert_allclose(fun(X), want(X), rtol=1e-13, atol=1e-15)
    check_jacobians(fun, X, name=name, jit=False)


def test_gelu_exact_is_accurate_in_the_tails() -> None:
    x = np.linspace(-30, 12, 2001)
    np.testing.assert_allclose(nn.gelu(x, approximate=False), x * scipy.special.ndtr(x), rtol=1e-14)


def test_large_arguments_do_not_overflow() -> None:
    big = np.array([-800.0, 800.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        np.testing.assert_allclose(nn.sigmoid(big), [0.0, 1.0])
        np.testing.assert_allclose(nn.softplus(big), [0.0, 800.0])
        np.testing.assert_allclose(nn.log_sigmoid(big), [-800.0, 0.0])
        np.testing.assert_allclose(nn.elu(big), [-1.0, 800.0])


@pytest.mark.parametrize(
    ("fun", "at", "slope"),
    [
        (nn.relu, 0.0, 0.0),  # JAX: relu'(0) = 0
        (nn.relu6, 0.0, 0.0),
        (nn.relu6, 6.0, 0.0),
        (nn.leaky_relu, 0.0, 1.0),
        (nn.elu, 0.0, 1.0),
        (nn.hard_tanh, 1.0, 1.0),  # JAX: x itself at the bound
        (nn.gelu, 0.0, 0.5),
        (lambda x: nn.gelu(x, approximate=False), 0.0, 0.5),
    ],
)
def test_derivatives_at_kinks_follow_jax(fun, at: float, slope: float) -> None:
    assert nx.grad(fun)(at) == slope
    assert nx.jvp(lambda x: fun(x), (at,), (1.0,))[1] == slope


def test_reductions_values() -> None:
    for axis in (0, 1, -1):
        np.testing.assert_allclose(nn.softmax(M, axis), scipy.special.softmax(M, axis))
        np.testing.assert_allclose(nn.log_softmax(M, axis), scipy.special.log_softmax(M, axis))
        np.testing.assert_allclose(nn.logsumexp(M, axis), scipy.special.logsumexp(M, axis))
    np.testing.assert_allclose(nn.logsumexp(M), scipy.special.logsumexp(M))
    kept = nn.logsumexp(M, axis=1, keepdims=True)
    np.testing.assert_allclose(kept, scipy.special.logsumexp(M, axis=1, keepdims=True))
    with np.errstate(divide="ignore"):  # log(0), as JAX's gives
        assert nn.logsumexp(np.array([-np.inf, -np.inf])) == -np.inf
    np.testing.assert_allclose(nn.logsumexp(np.array([1000.0, 1000.0])), 1000 + np.log(2))
    mean = M.mean(-1, keepdims=True)
    np.testing.assert_allclose(
        nn.standardize(M), (M - mean) / np.sqrt(M.var(-1, keepdims=True) + 1e-5)
    )


@pytest.mark.parametrize(
    "fun",
    [
        lambda m: nn.softmax(m, axis=0),
        lambda m: nn.log_softmax(m),
        lambda m: nn.logsumexp(m, axis=1),
        lambda m: nn.logsumexp(m),
        lambda m: nn.standardize(m, axis=0),
    ],
    ids=["softmax", "log_softmax", "logsumexp_axis", "logsumexp", "standardize"],
)
def test_reductions_derivatives(fun) -> None:
    check_jacobians(fun, M, jit=False)


def test_one_hot() -> None:
    got = nn.one_hot(np.array([0, 2, 5]), 3)
    np.testing.assert_array_equal(got, [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    assert got.dtype == np.float64
    assert nn.one_hot(np.array([1]), 2, dtype=np.float32).dtype == np.float32


def mlp_loss(w, x, labels):
    """A small classifier's loss: several activations, as a user writes them."""
    hidden = nn.gelu(x @ w) + nn.relu(x @ w) * nn.sigmoid(x @ w)
    logits = hidden - nn.logsumexp(hidden, axis=1, keepdims=True)
    return -np.sum(nn.log_softmax(logits) * nn.one_hot(labels, 3)) + np.sum(nn.softplus(w))


W = np.array([[0.2, -0.4, 0.9], [1.1, 0.3, -0.8]])
XS = np.array([[0.5, -1.5], [2.0, 0.3], [-0.2, 0.7], [1.0, 1.0]])
LABELS = np.array([0, 2, 1, 2])


def test_user_function_calling_nn_is_differentiated_and_batched() -> None:
    check_jacobians(mlp_loss, W, XS, LABELS, argnums=(0,), jit=False)
    per_example = nx.vmap(nx.grad(mlp_loss), in_axes=(None, 0, 0))(W, XS[:, None], LABELS[:, None])
    loop = [nx.grad(mlp_loss)(W, XS[i : i + 1], LABELS[i : i + 1]) for i in range(4)]
    np.testing.assert_allclose(per_example, np.stack(loop), rtol=1e-12)


def small_loss(w, x, targets):
    """What the compiled check runs: two activations called from a user's function, one
    compile (a compiled value_and_grad costs 10-20 s of CPU, so the reductions are
    checked interpreted: to numbax they are user code whose operations' rules are
    checked under jit elsewhere)."""
    hidden = x @ w
    return -np.sum(nn.relu(hidden) * nn.sigmoid(hidden) * targets)


@pytest.fixture(scope="module")
def compiled_loss():
    return nx.jit(nx.value_and_grad(small_loss))


def test_under_jit(compiled_loss) -> None:
    targets = nn.one_hot(LABELS, 3)
    value, grad = compiled_loss(W, XS, targets)
    want_value, want_grad = nx.value_and_grad(small_loss)(W, XS, targets)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    np.testing.assert_allclose(
        grad, numeric_jacobian(small_loss, [W, XS, targets], 0), rtol=1e-5, atol=1e-7
    )


def test_against_jax() -> None:
    """In float64 on both sides (``jax_enable_x64`` set here and restored)."""
    with jax_x64() as jax:
        _compare_with_jax(jax)


def _compare_with_jax(jax) -> None:
    for name in ["relu", "relu6", "sigmoid", "silu", "softplus", "log_sigmoid", "elu", "selu"]:
        mine, theirs = getattr(nn, name), getattr(jax.nn, name)
        np.testing.assert_allclose(mine(X), theirs(X), rtol=1e-12, err_msg=name)
        got = nx.vmap(nx.grad(mine))(np.append(X, 0.0))
        want = jax.vmap(jax.grad(theirs))(np.append(X, 0.0))
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)
    for approximate in (True, False):
        np.testing.assert_allclose(
            nn.gelu(X, approximate), jax.nn.gelu(X, approximate=approximate), rtol=1e-12
        )
    np.testing.assert_allclose(nn.log_softmax(M), jax.nn.log_softmax(M), rtol=1e-12)
    np.testing.assert_allclose(nn.logsumexp(M, axis=0), jax.nn.logsumexp(M, axis=0), rtol=1e-12)
