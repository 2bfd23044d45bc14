"""Parameter defaults are the values the user's function holds, not the expressions its
``def`` wrote: ``lambda x, k=k:`` made in a loop, ``def f(x, scale=SCALE)``, keyword-only
and array defaults work under every transformation, each function with its own values,
the generated source shows them (``k=2.0``, ``k=_default_k``), and functions differing
only in a default never share generated or compiled code."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.transform.source import read_function

SCALE = 3.0
WEIGHTS = np.array([1.0, 2.0, 4.0])
KS = (2.0, 3.0)


def scaled(x, scale=SCALE):
    return np.sum(np.sin(x) * scale)


def weighted(x, *, w=WEIGHTS, p=SCALE):
    return np.sum(x * x * w) * p


def make_lambdas():
    """The idiom: a lambda per loop turn, each holding that turn's ``k``."""
    out = []
    for k in KS:
        out.append(lambda x, k=k: np.sum(x**2 * k))
    return out


def make_array_lambdas():
    out = []
    for k in KS:
        out.append(lambda x, k=np.full(3, k): np.sum(x**2 * k))  # noqa: B008 (the case)
    return out


X = np.array([0.5, -1.0, 2.0])


def test_grad_of_loop_lambdas_uses_each_ones_default():
    for k, f in zip(KS, make_lambdas(), strict=True):
        np.testing.assert_allclose(nx.grad(f)(X), 2 * k * X)
        np.testing.assert_allclose(nx.grad(f)(X, 10.0), 20.0 * X)  # passed: the default is not used
        np.testing.assert_allclose(nx.grad(f)(X, k=10.0), 20.0 * X)


def test_value_and_grad_jacfwd_jacrev_hessian_of_loop_lambdas():
    for k, f in zip(KS, make_lambdas(), strict=True):
        value, grad = nx.value_and_grad(f)(X)
        np.testing.assert_allclose(value, k * np.sum(X**2))
        np.testing.assert_allclose(grad, 2 * k * X)
        np.testing.assert_allclose(nx.jacfwd(f)(X), 2 * k * X)
        np.testing.assert_allclose(nx.jacrev(f)(X), 2 * k * X)
        np.testing.assert_allclose(nx.hessian(f)(X), 2 * k * np.eye(3))
        np.testing.assert_allclose(nx.grad(nx.grad(lambda y, k=k: y**3 * k))(2.0), 12.0 * k)


def test_jvp_and_vjp_pass_the_defaults_after_the_primals():
    for k, f in zip(KS, make_lambdas(), strict=True):
        out, tangent = nx.jvp(f, (X,), (np.ones(3),))
        np.testing.assert_allclose(tangent, 2 * k * np.sum(X))
        _, pullback = nx.vjp(f, X)
        np.testing.assert_allclose(pullback(1.0)[0], 2 * k * X)


def test_vmap_of_loop_lambdas_and_of_their_grads():
    xs = np.stack([X, 2 * X])
    for k, f in zip(KS, make_lambdas(), strict=True):
        np.testing.assert_allclose(nx.vmap(f)(xs), k * np.sum(xs**2, axis=1))
        np.testing.assert_allclose(nx.vmap(nx.grad(f))(xs), 2 * k * xs)
        np.testing.assert_allclose(nx.vmap(f, in_axes=(0, None))(xs, 1.0), np.sum(xs**2, axis=1))


def test_default_naming_a_module_global_is_its_value_at_def_time(monkeypatch):
    expected = 3.0 * np.cos(X)
    np.testing.assert_allclose(nx.grad(scaled)(X), expected)
    np.testing.assert_allclose(nx.jacfwd(scaled)(X), expected)
    np.testing.assert_allclose(nx.grad(scaled)(X, 1.0), np.cos(X))
    # Python evaluated ``SCALE`` when the def ran: rebinding it later changes nothing
    monkeypatch.setitem(globals(), "SCALE", 100.0)
    np.testing.assert_allclose(scaled(X), 3.0 * np.sum(np.sin(X)))
    np.testing.assert_allclose(nx.grad(scaled)(X), expected)


def test_keyword_only_defaults():
    np.testing.assert_allclose(nx.grad(weighted)(X), 2 * X * WEIGHTS * SCALE)
    np.testing.assert_allclose(nx.grad(weighted)(X, p=1.0), 2 * X * WEIGHTS)
    np.testing.assert_allclose(nx.grad(weighted)(X, w=np.ones(3), p=1.0), 2 * X)
    np.testing.assert_allclose(nx.jacfwd(weighted)(X), 2 * X * WEIGHTS * SCALE)
    np.testing.assert_allclose(nx.vmap(weighted)(np.stack([X, X])), [weighted(X)] * 2)


def test_array_defaults_each_their_own_and_read_as_the_function_reads_them():
    lambdas = make_array_lambdas()
    for k, f in zip(KS, lambdas, strict=True):
        np.testing.assert_allclose(nx.grad(f)(X), 2 * k * X)
        np.testing.assert_allclose(nx.grad(f)(X, np.ones(3)), 2 * X)
        np.testing.assert_allclose(nx.jacfwd(f)(X), 2 * k * X)
    # the default is that very array: an update in place is seen, as by the function
    first = lambdas[0]
    first.__defaults__[0][:] = 5.0
    assert first(np.ones(3)) == 15.0
    np.testing.assert_allclose(nx.grad(first)(X), 10.0 * X)


def test_star_args_function_with_a_keyword_only_default():
    fs = [lambda x, *rest, k=k: np.sum(x * k) + sum(rest) for k in KS]
    for k, f in zip(KS, fs, strict=True):
        np.testing.assert_allclose(nx.grad(f)(X), np.full(3, k))
        np.testing.assert_allclose(nx.grad(f)(X, 1.0, 2.0), np.full(3, k))


def test_generated_source_shows_each_default():
    two, three = make_lambdas()
    assert "def grad_lambda(x, k=2.0):" in nx.source(nx.grad(two))
    assert "def grad_lambda(x, k=3.0):" in nx.source(nx.grad(three))
    assert "def grad_scaled(x, scale=3.0):" in nx.source(nx.grad(scaled))
    text = nx.source(nx.grad(make_array_lambdas()[0]))
    assert "def grad_lambda(x, k=_default_k):" in text
    assert "def grad_weighted(x, *, w=_default_w, p=3.0):" in nx.source(nx.grad(weighted))


def test_read_function_writes_literals_as_written_and_names_other_values():
    def f(x, a=1.5, b=(1, -2), c=SCALE, d=WEIGHTS, e=float("nan"), *, g=None, h=WEIGHTS):
        return x

    source = read_function(f)
    args = source.tree.args
    written = [getattr(d, "value", getattr(d, "id", None)) for d in args.defaults]
    assert written[0] == 1.5
    assert written[2] == 3.0
    assert written[3:] == ["_default_d", "_default_e"]
    assert source.closure["_default_d"] is WEIGHTS
    assert np.isnan(source.closure["_default_e"])
    assert args.kw_defaults[0].value is None
    assert args.kw_defaults[1].id == "_default_h"
    assert source.closure["_default_h"] is WEIGHTS
    # a literal the user wrote stays as written (the tuple is not retyped)
    assert isinstance(
        args.defaults[1], type(read_function(lambda x=(1, -2): x).tree.args.defaults[0])
    )


@pytest.fixture(scope="module")
def jitted_lambdas():
    """The two loop lambdas compiled once each, shared by the jit tests."""
    return [nx.jit(f) for f in make_lambdas()]


def test_jit_of_loop_lambdas_uses_each_ones_default(jitted_lambdas):
    for k, f in zip(KS, jitted_lambdas, strict=True):
        assert f(X) == pytest.approx(k * np.sum(X**2))
        assert f(X, 10.0) == pytest.approx(10.0 * np.sum(X**2))
        assert f(X, k=1.0) == pytest.approx(np.sum(X**2))


def test_jit_of_lambdas_differing_only_in_their_default_compile_apart(jitted_lambdas):
    two, three = jitted_lambdas
    assert "def _lambda(x, k=2.0):" in nx.source(two)
    assert "def _lambda(x, k=3.0):" in nx.source(three)
    # a new jit of a lambda holding the same default object reuses the compiled code
    again = nx.jit(make_lambdas()[1])
    assert again(X) == pytest.approx(3.0 * np.sum(X**2))
    assert again.source == three.source


def uses_helpers_with_defaults(x):
    """Calls omitting a keyword-only default (a NumPy scalar and an array) and a
    positional array default: the call site passes each by a name bound to its value."""
    return weighted(x) + np.sum(helper_with_array_default(x))


NP_SCALE = np.float64(1.5)


def helper_with_array_default(x, w=WEIGHTS, s=NP_SCALE):
    return x * w * s


def test_calls_omitting_defaults_that_are_not_literals_differentiate():
    want = 2 * X * WEIGHTS * SCALE + WEIGHTS * NP_SCALE
    np.testing.assert_allclose(nx.grad(uses_helpers_with_defaults)(X), want)
    np.testing.assert_allclose(nx.jacrev(uses_helpers_with_defaults)(X), want)
    np.testing.assert_allclose(nx.jacfwd(uses_helpers_with_defaults)(X), want)
    source = nx.grad(uses_helpers_with_defaults).source
    assert "_vjp_helper_with_array_default(x, _default_w, _default_s," in source
