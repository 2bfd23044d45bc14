"""Host callbacks: ``nx.pure_callback``, ``nx.experimental.io_callback``,
``nx.debug.print`` and ``nx.debug.callback``, interpreted, under ``grad``, ``vmap`` and
``jit`` (one compiled program exercises them all)."""

import numpy as np
import pytest
import scipy.special

import numbax as nx
from tests.helpers.fd import numeric_jacobian


def _scipy_jv(v, x):
    return scipy.special.jv(v, x)


@nx.custom_jvp
def jv(v, x):
    """SciPy's Bessel function, differentiable through its recurrence."""
    spec = nx.ShapeDtypeStruct(x.shape, x.dtype)
    return nx.pure_callback(_scipy_jv, spec, v, x, vmap_method="sequential")


@jv.defjvp
def _jv_jvp(primals, tangents):
    v, x = primals
    _, dx = tangents
    return jv(v, x), 0.5 * (jv(v - 1.0, x) - jv(v + 1.0, x)) * dx


def _moments(x):
    return x * 2.0, float(np.sum(x))


seen = []


def _record(value):
    seen.append(np.array(value, copy=True))


def _count(size):
    return np.int64(size)


def program(x):
    """Every kind of callback on one path: a custom_jvp around SciPy, a tuple result,
    an io_callback and the debug ones on primal values."""
    nx.debug.print("x = {x}", x=x)
    y = jv(1.0, x)
    nx.debug.callback(_record, y)
    doubled, total = nx.pure_callback(
        _moments, (nx.ShapeDtypeStruct(x.shape, x.dtype), nx.ShapeDtypeStruct((), np.float64)), y
    )
    n = nx.experimental.io_callback(_count, nx.ShapeDtypeStruct((), np.int64), x.size)
    nx.debug.print("n = {}, total = {}", n, total)
    return np.sum(y * y) + 0.0 * n


X = np.linspace(0.5, 2.0, 3)


def _fd_grad(x):
    return numeric_jacobian(program, [x], 0)


# -- interpreted -----------------------------------------------------------------------
def test_pure_callback_calls_python_and_checks_the_declared_result():
    spec = nx.ShapeDtypeStruct((3,), np.float64)
    np.testing.assert_allclose(nx.pure_callback(np.sin, spec, X), np.sin(X))
    pair = nx.pure_callback(lambda a: [a, 1.0], (spec, nx.ShapeDtypeStruct((), "float64")), X)
    assert isinstance(pair, tuple) and pair[1] == 1.0 and pair[1].dtype == np.float64
    with pytest.raises(ValueError, match=r"shape \(2,\).*declares shape \(3,\)"):
        nx.pure_callback(lambda a: a[:2], spec, X)
    with pytest.raises(TypeError, match="dtype float32.*declares dtype float64"):
        nx.pure_callback(lambda a: a.astype(np.float32), spec, X)
    with pytest.raises(ValueError, match="vmap_method"):
        nx.pure_callback(np.sin, spec, X, vmap_method="vectorized")
    assert nx.ShapeDtypeStruct([2, 3], "float32") == ((2, 3), np.dtype(np.float32))


def test_debug_print_formats_like_jax(capsys):
    nx.debug.print("a={a} b={}", 2, a=np.arange(2))
    nx.debug.callback(print, "called", 3)
    assert capsys.readouterr().out == "a=[0 1] b=2\ncalled 3\n"


def test_grad_through_pure_callback_needs_a_custom_rule():
    def bare(x):
        return np.sum(nx.pure_callback(np.sin, nx.ShapeDtypeStruct(x.shape, x.dtype), x))

    with pytest.raises(nx.TransformError, match="pure_callback has no derivative.*custom_jvp"):
        nx.grad(bare)(X)

    def side(x):
        return nx.experimental.io_callback(np.sin, nx.ShapeDtypeStruct((), np.float64), x)

    with pytest.raises(nx.TransformError, match="io_callback has no derivative"):
        nx.grad(side)(1.0)


def test_grad_of_a_scipy_function_wrapped_in_custom_jvp_matches_finite_differences(capsys):
    expected = _fd_grad(X)
    np.testing.assert_allclose(nx.jacfwd(program)(X), expected, rtol=1e-6, atol=1e-8)
    seen.clear()
    capsys.readouterr()
    np.testing.assert_allclose(nx.grad(program)(X), expected, rtol=1e-6, atol=1e-8)
    out = capsys.readouterr().out
    # the primal values, once: reverse mode does not print again
    assert out.count("x = [0.5  1.25 2.  ]") == 1 and out.count("n = 3, total =") == 1
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], scipy.special.jv(1.0, X))


def test_debug_print_in_a_loop_prints_once_under_grad(capsys):
    def f(x):
        s = 0.0
        for i in range(3):
            nx.debug.print("i={}", i)
            s = s + np.sin(x) * i
        return s

    assert nx.grad(f)(0.0) == pytest.approx(3.0)
    assert capsys.readouterr().out == "i=0\ni=1\ni=2\n"


# -- vmap --------------------------------------------------------------------------------
shapes_seen = []


def _cos(x):
    shapes_seen.append(np.shape(x))
    return np.cos(x)


def _cos_unset(x):
    return nx.pure_callback(_cos, nx.ShapeDtypeStruct(x.shape, x.dtype), x)


def _calls_unset(x):
    return _cos_unset(x) + 1.0


def _cos_expand(x):
    return nx.pure_callback(
        _cos, nx.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims"
    )


def _shifted_cos(x, shift):
    return _cos(x) + shift


def _cos_broadcast(x, shift):
    return nx.pure_callback(_shifted_cos, x, x, shift, vmap_method="broadcast_all")


def _cos_sequential(x):
    return nx.pure_callback(_cos, x, x, vmap_method="sequential")


def _ordered(x):
    return nx.experimental.io_callback(_cos, x, x, ordered=True)


def test_vmap_of_a_callback_follows_its_vmap_method(capsys):
    xs = np.arange(6.0).reshape(3, 2)
    for f in (_cos_unset, _calls_unset):  # JAX's default: no vmap_method, no vmap
        with pytest.raises(NotImplementedError, match="has no vmap_method"):
            nx.vmap(f)(xs)
    with pytest.raises(ValueError, match="ordered io_callback"):
        nx.vmap(_ordered)(xs)
    shapes_seen.clear()  # one call on the whole batch
    np.testing.assert_allclose(nx.vmap(_cos_expand)(xs), np.cos(xs))
    shift = np.array([1.0, 2.0])  # shared: repeated over the batch
    np.testing.assert_allclose(nx.vmap(_cos_broadcast, (0, None))(xs, shift), np.cos(xs) + shift)
    assert shapes_seen == [(3, 2), (3, 2)]
    shapes_seen.clear()  # one call per example
    np.testing.assert_allclose(nx.vmap(_cos_sequential)(xs), np.cos(xs))
    assert shapes_seen == [(2,)] * 3
    np.testing.assert_allclose(nx.vmap(lambda x: jv(1.0, x))(xs), scipy.special.jv(1.0, xs))

    def show(x):
        nx.debug.print("x={}", x)
        return x

    nx.vmap(show)(np.arange(2.0))
    assert capsys.readouterr().out == "x=0.0\nx=1.0\n"  # one line per example, as JAX


# -- jit: one compiled program ---------------------------------------------------------
@pytest.fixture(scope="module")
def compiled():
    return nx.jit(nx.value_and_grad(program))


def test_jit_runs_every_callback_in_python(compiled, capsys):
    expected_value, expected_grad = program(X), _fd_grad(X)
    seen.clear()
    capsys.readouterr()
    value, grad = compiled(X)
    assert value == pytest.approx(expected_value)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-6, atol=1e-8)
    out = capsys.readouterr().out
    assert out.count("x = [0.5  1.25 2.  ]") == 1 and out.count("n = 3, total =") == 1
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], scipy.special.jv(1.0, X))
    text = nx.source(compiled)
    assert "_pure_callback__moments(" in text and "_debug_print('x = {x}'" in text
