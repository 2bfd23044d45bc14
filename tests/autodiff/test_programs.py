"""Derivatives of whole programs (control flow, stores, calls, tuples) against finite
differences: first order in both modes, interpreted and under jit, and compositions
of depth 2 and 3 (the closure invariant: every transformation accepts the output of
every other)."""

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_jacobian
from tests.helpers.programs import PROGRAMS

NAMES = sorted(PROGRAMS)


def _float_argnums(args):
    return [i for i, a in enumerate(args) if np.result_type(a).kind == "f"]


@pytest.mark.parametrize("name", NAMES)
def test_first_order_interpreted(name):
    f, args = PROGRAMS[name]
    argnums = [0] if name == "data_dependent_trips" else None
    check_jacobians(f, *args, argnums=argnums, name=name, jit=False)


JITTED = ["straight", "branch-taken", "horner", "newton_while", "in_place", "calls_helper"]
JITTED += ["tuples", "strided", "early_exit", "nested_loops", "recurrent", "keyword_calls"]
JITTED += ["and_in_loop", "range_from_variable"]


@pytest.mark.parametrize("name", JITTED)
def test_grad_under_jit(name):
    f, args = PROGRAMS[name]
    argnums = tuple(_float_argnums(args))
    expected = nx.grad(f, argnums=argnums)(*args)
    got = nx.jit(nx.grad(f, argnums=argnums))(*args)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=f"{name}, argument {i}")
        want = numeric_jacobian(f, args, argnums[i])
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6, err_msg=f"{name} vs FD")


SECOND_ORDER = ["straight", "reassigned", "branch-taken", "horner", "nested_loops"]
SECOND_ORDER += ["newton_while", "array_accumulation", "in_place", "calls_helper", "tuples"]
SECOND_ORDER += ["strided", "early_exit"]


@pytest.mark.parametrize("outer", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order(name, outer):
    """jacfwd(grad f) and jacrev(grad f) against finite differences of grad f."""
    f, args = PROGRAMS[name]
    argnum = _float_argnums(args)[-1]
    gradient = nx.grad(f, argnums=argnum)
    want = numeric_jacobian(gradient, args, argnum)
    transform = nx.jacfwd if outer == "jacfwd" else nx.jacrev
    got = transform(gradient, argnums=argnum)(*args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{outer}∘grad of {name}")


@pytest.mark.parametrize("name", ["straight", "horner", "newton_while", "in_place", "tuples"])
def test_grad_of_grad_and_hessian_agree(name):
    f, args = PROGRAMS[name]
    argnum = _float_argnums(args)[-1]
    hessian = nx.hessian(f, argnums=argnum)(*args)
    rev_rev = nx.jacrev(nx.jacrev(f, argnums=argnum), argnums=argnum)(*args)
    fwd_fwd = nx.jacfwd(nx.jacfwd(f, argnums=argnum), argnums=argnum)(*args)
    np.testing.assert_allclose(rev_rev, hessian, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(fwd_fwd, hessian, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["straight", "horner", "newton_while", "in_place"])
def test_third_order(name):
    """jacfwd(jacrev(jacrev f)) against finite differences of the Hessian."""
    f, args = PROGRAMS[name]
    argnum = _float_argnums(args)[-1]
    hessian = nx.hessian(f, argnums=argnum)
    want = numeric_jacobian(hessian, args, argnum)
    got = nx.jacfwd(nx.jacrev(nx.jacrev(f, argnums=argnum), argnums=argnum), argnums=argnum)
    np.testing.assert_allclose(got(*args), want, rtol=1e-4, atol=1e-5)


def test_third_order_through_jit_quickstart():
    def sum_logistic(x):
        return np.sum(1.0 / (1.0 + np.exp(-x)))

    chain = nx.grad(nx.jit(nx.grad(nx.jit(nx.grad(sum_logistic)))))
    np.testing.assert_allclose(chain(1.0), -0.0353256, rtol=1e-5)


@pytest.mark.parametrize("name", ["horner", "in_place", "newton_while"])
def test_hessian_under_jit(name):
    f, args = PROGRAMS[name]
    argnum = _float_argnums(args)[-1]
    expected = nx.hessian(f, argnums=argnum)(*args)
    got = nx.jit(nx.hessian(f, argnums=argnum))(*args)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["straight", "horner", "in_place"])
def test_jvp_of_vjp(name):
    """Forward mode over reverse mode: the JVP of x ↦ vjp(f, x)(1) in direction t is
    the Hessian-vector product, checked against finite differences of the gradient."""
    f, args = PROGRAMS[name]
    argnum = _float_argnums(args)[-1]
    others = list(args)

    def pullback(x):
        others[argnum] = x
        _, vjp_fun = nx.vjp(f, *others)
        return vjp_fun(1.0)[argnum]

    x = args[argnum]
    tangent = 0.3 if isinstance(x, float) else np.full_like(x, 0.3)
    _, got = nx.jvp(pullback_function(f, args, argnum), (x,), (tangent,))
    eps = 1e-6
    want = (np.asarray(pullback(x + eps * tangent)) - pullback(x - eps * tangent)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def pullback_function(f, args, argnum):
    """x ↦ (the cotangent of argument ``argnum`` of ``f`` at ``args`` with it set to x),
    calling a reverse-mode function inside, so that jvp differentiates a VJP."""
    fixed = [a for i, a in enumerate(args) if i != argnum]
    gradient = nx.grad(f, argnums=argnum)
    if len(args) == 1:

        def pullback(x):
            return gradient(x)

    elif argnum == 0:

        def pullback(x):
            return gradient(x, fixed[0])

    else:

        def pullback(x):
            return gradient(fixed[0], x)

    return pullback


def mutates_argument(x):
    x[0] = x[0] * x[1]
    x[2] += 1.0
    for i in range(1, 3):
        x[i] = x[i] * x[i - 1]
    return np.sum(x * x)


@pytest.mark.parametrize(
    "transform",
    [nx.grad, nx.jacfwd, nx.jacrev, lambda f: lambda x: nx.jvp(f, (x,), (np.ones(4),))[1]],
    ids=["grad", "jacfwd", "jacrev", "jvp"],
)
def test_a_mutated_argument_as_in_jax(transform):
    """Derivatives of the functional equivalent; the caller's array is left as it was."""
    x = np.array([0.5, 2.0, -1.0, 3.0])
    original = x.copy()
    want = numeric_jacobian(lambda y: mutates_argument(y.copy()), [x], 0)
    got = transform(mutates_argument)(x)
    np.testing.assert_array_equal(x, original)
    if got.shape == ():  # the JVP along ones
        want = want.sum()
    np.testing.assert_allclose(got, want, rtol=1e-6)
