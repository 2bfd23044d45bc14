"""User-supplied derivative rules (``custom_jvp``, ``custom_vjp``) and ``checkpoint``.

Each rule is checked two ways: where it is the true derivative, against finite
differences in every mode; where it deliberately is not (a rule that doubles, a
clipped gradient), by the value only the rule gives — proof that numbax called the
rule rather than differentiating the primal's source.
"""

from functools import partial

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_jacobian

# -- custom_jvp ---------------------------------------------------------------------------


@nx.custom_jvp
def sin_times(x, y):
    return np.sin(x) * y


@sin_times.defjvp
def sin_times_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    return sin_times(x, y), np.cos(x) * x_dot * y + np.sin(x) * y_dot


@nx.custom_jvp
def log1pexp(x):
    return np.log(1.0 + np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,) = primals
    (x_dot,) = tangents
    return log1pexp(x), (1.0 - 1.0 / (1.0 + np.exp(x))) * x_dot


@nx.custom_jvp
def doubled(x):
    """The identity, whose rule claims the derivative is 2: only the rule gives 2."""
    return x


@doubled.defjvp
def doubled_jvp(primals, tangents):
    return primals[0], 2.0 * tangents[0]


def uses_doubled(x):
    total = 0.0
    for i in range(3):
        total = total + doubled(x * (i + 1))
    return total


def test_custom_jvp_calls_the_primal():
    assert sin_times(0.7, 1.3) == np.sin(0.7) * 1.3


def test_custom_jvp_against_finite_differences():
    check_jacobians(sin_times, np.array([0.3, -1.2]), np.array([0.5, 2.0]), jit=False)


def test_the_rule_is_what_every_mode_uses():
    assert nx.grad(doubled)(1.5) == 2.0
    assert nx.jvp(doubled, (1.5,), (1.0,)) == (1.5, 2.0)
    np.testing.assert_array_equal(nx.jacfwd(doubled)(np.ones(2)), 2 * np.eye(2))
    np.testing.assert_array_equal(nx.jacrev(doubled)(np.ones(2)), 2 * np.eye(2))
    # called in a loop of user code: each call's derivative comes from the rule
    assert nx.grad(uses_doubled)(0.3) == 2.0 * (1 + 2 + 3)
    assert nx.jacfwd(uses_doubled)(0.3) == 2.0 * (1 + 2 + 3)


def test_a_stable_rule_where_the_primal_derivative_overflows():
    with np.errstate(over="ignore", invalid="ignore"):  # exp(1000) in the primal
        assert nx.grad(log1pexp)(1000.0) == 1.0
        assert np.isnan(nx.grad(lambda x: np.log(1.0 + np.exp(x)))(1000.0))
    np.testing.assert_allclose(nx.grad(log1pexp)(0.5), 1 / (1 + np.exp(-0.5)))


@nx.custom_jvp
def log1pexp_one_line(x):
    return np.log(1.0 + np.exp(x))


@log1pexp_one_line.defjvp
def log1pexp_one_line_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents  # the README's one-line unpacking
    return log1pexp_one_line(x), (1.0 - 1.0 / (1.0 + np.exp(x))) * x_dot


def test_a_rule_unpacking_primals_and_tangents_on_one_line():
    """Unpacked together, the primal must not look as if it depended on the tangents
    (then the rule's call of the primal would be differentiated: a false recursion)."""
    with np.errstate(over="ignore", invalid="ignore"):
        assert nx.grad(log1pexp_one_line)(1000.0) == 1.0
        np.testing.assert_array_equal(nx.jacrev(log1pexp_one_line)(np.array([1000.0]))[0], [1.0])
        assert nx.jit(nx.grad(log1pexp_one_line))(1000.0) == 1.0
    np.testing.assert_allclose(nx.jacfwd(log1pexp_one_line)(0.5), 1 / (1 + np.exp(-0.5)))


def test_second_order_differentiates_the_rule():
    x, y = 0.7, 1.3
    np.testing.assert_allclose(nx.hessian(sin_times)(x, y), -np.sin(x) * y)
    np.testing.assert_allclose(nx.jacfwd(nx.grad(sin_times, 1))(x, y), np.cos(x))
    np.testing.assert_allclose(nx.jacrev(nx.grad(log1pexp))(0.3), _sigmoid_prime(0.3))
    assert nx.grad(nx.grad(doubled))(1.5) == 0.0


def _sigmoid_prime(x):
    s = 1 / (1 + np.exp(-x))
    return s * (1 - s)


@partial(nx.custom_jvp, nondiff_argnums=(1,))
def power(x, n):
    return x**n


@power.defjvp
def power_jvp(n, primals, tangents):
    (x,) = primals
    (x_dot,) = tangents
    return power(x, n), n * x ** (n - 1) * x_dot


def test_nondiff_argnums_come_first_in_the_rule():
    assert nx.grad(power)(2.0, 3) == 12.0
    assert nx.jvp(lambda x: power(x, 3), (2.0,), (1.0,)) == (8.0, 12.0)


def test_a_nondiff_argument_that_depends_on_the_input_is_refused():
    def f(x):
        return power(x, x)

    with pytest.raises(nx.TransformError, match=r"'n' of 'power' is in nondiff_argnums"):
        nx.grad(f)(2.0)


@nx.custom_jvp
def weighted(x, y):
    return x * y + np.sin(x)


weighted.defjvps(
    lambda x_dot, ans, x, y: (y + np.cos(x)) * x_dot,
    lambda y_dot, ans, x, y: x * y_dot,
)


def test_defjvps_one_rule_per_argument():
    check_jacobians(weighted, np.array([0.2, 0.9]), np.array([1.5, -0.5]), jit=False)


def test_float32_stays_float32():
    g = nx.grad(lambda x: np.sum(sin_times(x, 2.0)))(np.ones(3, np.float32))
    assert g.dtype == np.float32


def test_no_rule_defined():
    @nx.custom_jvp
    def f(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f"):
        nx.grad(f)(1.0)


# -- custom_vjp ---------------------------------------------------------------------------


@nx.custom_vjp
def softplus(x):
    return np.log1p(np.exp(x))


def softplus_fwd(x):
    e = np.exp(x)
    return softplus(x), e


def softplus_bwd(e, g):
    return (g * e / (1 + e),)


softplus.defvjp(softplus_fwd, softplus_bwd)


@nx.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, np.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


def clipped_square(x):
    return clip_gradient(-1.0, 1.0, x) ** 2


def test_custom_vjp_against_finite_differences():
    x = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(nx.jacrev(softplus)(x), numeric_jacobian(softplus, [x], 0), 1e-6)
    np.testing.assert_allclose(nx.grad(lambda x: np.sum(softplus(x)))(x), 1 / (1 + np.exp(-x)))


def test_the_bwd_rule_is_what_reverse_mode_uses():
    # d(x²)/dx = 2x = 6 at x = 3, but the rule clips the cotangent reaching x to [-1, 1]
    assert nx.grad(clipped_square)(3.0) == 1.0
    assert nx.grad(clipped_square)(0.25) == 0.5
    # None in bwd's output: a zero cotangent for that argument
    assert nx.grad(clip_gradient, argnums=(0, 2))(-1.0, 1.0, 0.5) == (0.0, 1.0)


def test_forward_mode_is_refused_as_in_jax():
    with pytest.raises(
        TypeError, match=r"can't apply forward-mode autodiff \(jvp\) to a custom_vjp"
    ):
        nx.jacfwd(softplus)(np.ones(2))


def test_reverse_over_reverse_differentiates_fwd_and_bwd():
    x = np.array([-1.0, 0.5, 2.0])
    hess = nx.jacrev(nx.grad(lambda x: np.sum(softplus(x))))(x)
    np.testing.assert_allclose(hess, np.diag(_sigmoid_prime(x)), rtol=1e-12)


@partial(nx.custom_vjp, nondiff_argnums=(0,))
def scaled(k, x):
    return k * x


def scaled_fwd(k, x):
    return k * x, None


def scaled_bwd(k, res, g):
    return (10.0 * k * g,)


scaled.defvjp(scaled_fwd, scaled_bwd)


def test_custom_vjp_nondiff_argnums():
    assert nx.grad(scaled, argnums=1)(2.0, 3.0) == 20.0


def test_bwd_output_is_checked():
    @nx.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (res[1] * g,))
    with pytest.raises(TypeError, match="one cotangent per differentiable argument .* \\(2\\)"):
        nx.grad(f)(1.0, 2.0)

    @nx.custom_vjp
    def h(x):
        return np.sum(x)

    h.defvjp(lambda x: (np.sum(x), None), lambda res, g: (np.ones(3),))
    with pytest.raises(ValueError, match=r"shape \(3,\) for argument 0, which has shape \(2,\)"):
        nx.grad(h)(np.ones(2))


# -- checkpoint ---------------------------------------------------------------------------


def cell(h, w):
    a = np.tanh(w * h)
    b = np.sin(a) * h
    return a + b


cell_checkpointed = nx.checkpoint(cell)


def rollout(h, w):
    history = np.zeros(4)
    for i in range(4):
        h = cell_checkpointed(h, w)
        history[i] = np.sum(h)
    return np.sum(history)


def rollout_inline(h, w):
    history = np.zeros(4)
    for i in range(4):
        a = np.tanh(w * h)
        b = np.sin(a) * h
        h = a + b
        history[i] = np.sum(h)
    return np.sum(history)


def test_checkpoint_gives_the_same_derivatives():
    h, w = np.array([0.1, -0.4]), np.array([0.8, 1.1])
    for argnums in (0, 1):
        np.testing.assert_allclose(
            nx.grad(rollout, argnums)(h, w), nx.grad(rollout_inline, argnums)(h, w), rtol=1e-12
        )
    check_jacobians(rollout, h, w, jit=False)


def test_checkpoint_tapes_only_the_loop_state():
    # a loop storing into an array is taped line by line: inline, the body's a and b
    # are taped each iteration; through the checkpointed call only h is, and the
    # backward pass recomputes a and b
    inline = nx.grad(rollout_inline, 1).source
    assert "_tape_a" in inline and "_tape_b" in inline
    source = nx.grad(rollout, 1).source
    assert "_tape_h" in source
    assert "_tape_a" not in source and "_tape_b" not in source


def test_checkpoint_decorator_forms_and_static_arguments():
    @partial(nx.checkpoint, static_argnums=(1,))
    def repeat(x, n):
        for _ in range(n):
            x = np.sin(x)
        return x

    assert nx.grad(repeat)(0.5, 2) == np.cos(np.sin(0.5)) * np.cos(0.5)
    with pytest.raises(nx.TransformError, match="'n' of 'repeat' is in static_argnums"):
        nx.grad(lambda x: repeat(x, x))(0.5)
    with pytest.raises(NotImplementedError, match="policy"):
        nx.checkpoint(cell, policy=lambda *a: True)
    assert nx.remat is nx.checkpoint


# -- under jit: one compiled function per kind of rule ------------------------------------


def test_rules_under_jit():
    x = np.array([0.3, 1000.0])
    with np.errstate(over="ignore"):
        g = nx.jit(nx.grad(lambda x: np.sum(log1pexp(x))))(x)
    np.testing.assert_allclose(g, [1 / (1 + np.exp(-0.3)), 1.0])
    assert nx.jit(nx.grad(uses_doubled))(0.3) == 12.0
    assert nx.jit(nx.grad(clipped_square))(3.0) == 1.0
    h, w = np.array([0.1, -0.4]), np.array([0.8, 1.1])
    np.testing.assert_allclose(
        nx.jit(nx.grad(rollout, 1))(h, w), nx.grad(rollout_inline, 1)(h, w), rtol=1e-12
    )
    assert nx.jit(sin_times)(0.7, 1.3) == sin_times(0.7, 1.3)


def test_same_numbers_as_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    @jax.custom_jvp
    def j_log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    @j_log1pexp.defjvp
    def _(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return j_log1pexp(x), (1.0 - 1.0 / (1.0 + jnp.exp(x))) * x_dot

    for x in (-3.0, 0.5, 1000.0):
        with np.errstate(over="ignore"):
            got = nx.grad(log1pexp)(x)
        np.testing.assert_allclose(got, jax.grad(j_log1pexp)(x), rtol=1e-6)
