"""Writes through a second name for an array (normalize/aliases.py): ``c = a``, views by
basic indexing, rows ``M[i]``, ``.T``, views of views, and writes into a base that a
view still reads. Each program's value against NumPy's on the same code (interpreted
derivative code and ``nx.jit``), its derivatives against central differences (eager
``grad``/``jacfwd``, ``vmap``, and ``jit(grad)``); writes numbax cannot follow are
refused at the line of the write, naming the line that made the other name."""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import numeric_jacobian
from tests.helpers.source import line_of

X = np.array([0.5, 1.0, 2.0, -1.5])
M = np.array([[0.5, 1.0, -2.0], [1.5, -0.3, 0.7]])


def rebound(a):
    c = a
    c[0] = 0.0
    return np.sum(a) * a[1]


def slice_store(a):
    b = a[:2]
    b[0] = 10.0 * a[2]
    return np.sum(a * a)


def slice_in_place(a):
    b = a[:2]
    b *= 2.0
    return np.sum(a * a)


def rows(m):
    for i in range(m.shape[0]):
        row = m[i]
        row *= 2.0
    return np.sum(m**2)


def iterated_rows(m):
    for row in m:  # each row is a view, as in NumPy
        row[0] = row[1] * row[2]
    return np.sum(m * m)


def transposed(m):
    t = m.T
    t[0] = t[1] * 3.0
    return np.sum(m * m)


def base_written(a):
    b = a[1:]
    a[1] = 5.0 * a[0]
    return np.sum(b * b)


def view_of_view(a):
    b = a[1:]
    c = b[:2]
    c[1] = c[0] ** 2
    return np.sum(a * b[0])


def made_then_written(a):
    c = a * 2.0  # elementwise: jit's fused adjoint must read it as written, not recompute it
    b = c[:2]
    b[0] = 7.0
    return np.sum(a * c)


def ufunc_out(a):
    b = a[:2]
    np.multiply(b, 2.0, out=b)  # a store into b's memory: into a's
    c = a * 1.0
    np.exp(c, out=(c,))
    return np.sum(a * a) + np.sum(c)


def number_not_shared(a):
    r = a[0]  # a number: += rebinds it, the array is unchanged
    r *= 3.0
    s = a[1] * 1.0
    t = s
    t += 1.0
    return r + s * t + np.sum(a)


def copies_are_not_aliases(a):
    b = a.copy()
    b[0] = 0.0
    c = a[np.array([0, 1])]
    c[1] = 5.0
    d = a[a > 0.7]
    d *= 3.0
    e = np.array(a)
    e += 1.0
    return np.sum(a * b) + np.sum(c) + np.sum(d) + np.sum(a * e)


def zero_d_rebound(a):
    s = np.array(a[0])  # a 0-d array: += through c changes s, as for any array
    c = s
    c += 1.0
    return s * a[1]


def written_through_inactive_name(a):
    y = a * 2.0
    w = y
    w[2] = 5.0  # w carries no derivative after the store, y's element 2 neither
    return np.sum(y * a)


PROGRAMS = [
    (zero_d_rebound, X),
    (written_through_inactive_name, X),
    (rebound, X),
    (slice_store, X),
    (slice_in_place, X),
    (rows, M),
    (iterated_rows, M),
    (transposed, M),
    (base_written, X),
    (view_of_view, X),
    (made_then_written, X),
    (ufunc_out, X),
    (number_not_shared, X),
    (copies_are_not_aliases, X),
]
IDS = [f.__name__ for f, _ in PROGRAMS]


def _fresh(f):
    """``f`` on a copy of its argument: NumPy's run changes the array it is given."""
    return lambda a: f(a.copy())


@pytest.mark.parametrize(("f", "x"), PROGRAMS, ids=IDS)
def test_interpreted_derivatives_and_values(f, x):
    want = numeric_jacobian(_fresh(f), [x], 0)
    np.testing.assert_allclose(nx.grad(f)(x.copy()), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(nx.jacfwd(f)(x.copy()), want, rtol=1e-6, atol=1e-8)
    value, grad = nx.value_and_grad(f)(x.copy())
    np.testing.assert_allclose(value, f(x.copy()), rtol=1e-12)


@pytest.mark.parametrize(("f", "x"), PROGRAMS, ids=IDS)
def test_values_under_jit(f, x):
    np.testing.assert_allclose(nx.jit(f)(x.copy()), f(x.copy()), rtol=1e-12)


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (slice_in_place, X),
        (rows, M),
        (base_written, X),
        (made_then_written, X),
        (zero_d_rebound, X),
        (written_through_inactive_name, X),
    ],
    ids=[
        "slice_in_place",
        "rows",
        "base_written",
        "made_then_written",
        "zero_d_rebound",
        "written_through_inactive_name",
    ],
)
def test_compiled_gradients(f, x):
    want = numeric_jacobian(_fresh(f), [x], 0)
    np.testing.assert_allclose(nx.jit(nx.grad(f))(x.copy()), want, rtol=1e-6, atol=1e-8)


def test_vmap_of_writes_through_views():
    batch = np.stack([X, X[::-1], 2.0 * X])
    for f in (slice_in_place, view_of_view):
        want = np.array([f(row.copy()) for row in batch])
        np.testing.assert_allclose(nx.vmap(f)(batch.copy()), want, rtol=1e-12)
        grads = nx.vmap(nx.grad(f))(batch.copy())
        for row, got in zip(batch, grads, strict=True):
            np.testing.assert_allclose(got, numeric_jacobian(_fresh(f), [row], 0), rtol=1e-6)


def test_the_callers_array_under_jit_is_numpys():
    # jit runs on the caller's memory, as NumPy does: the write through the view lands
    x, y = X.copy(), X.copy()
    slice_in_place(x)
    nx.jit(slice_in_place)(y)
    np.testing.assert_array_equal(x, y)


# -- refused: writes whose sharing numbax cannot follow, named at both lines ----------
def reshaped(a):
    b = np.reshape(a, (2, 2))
    b[0, 0] = 1.0
    return np.sum(a)


def branch_view(a, flag):
    if flag:
        b = a[:2]
    else:
        b = a[1:]
    b[0] = 1.0
    return np.sum(a)


def _first_two(v):
    return v[:2]


def helper_view(a):
    b = _first_two(a)
    b[0] = 0.0
    return np.sum(a * a)


def raveled_in_place(a):
    m = np.outer(a, a)
    b = m.ravel()  # an array whatever m is: += changes it in place, and m with it
    b += 1.5
    return np.sum(m * m)


@pytest.mark.parametrize(
    ("f", "made", "written"),
    [
        (reshaped, "b = np.reshape", "b[0, 0] = 1.0"),
        (branch_view, "b = a[:2]", "b[0] = 1.0"),
        (helper_view, "b = _first_two(a)", "b[0] = 0.0"),
        (raveled_in_place, "b = m.ravel()", "b += 1.5"),
    ],
    ids=["reshape", "branch", "helper", "ravel_in_place"],
)
def test_refused_naming_both_lines(f, made, written):
    args = (X.copy(), True) if f is branch_view else (X.copy(),)
    for transform in (nx.grad, nx.jit):
        with pytest.raises(nx.TransformError) as info:
            transform(f)(*args)
        message = str(info.value)
        assert info.value.lineno == line_of(f, written), message
        assert f"made at line {line_of(f, made)}" in message, message
        assert ".copy()" in message, message


def maybe_shared(a, flag):
    if flag > 0.0:
        b = a
    else:
        b = a * 2.0
    b += 1.0
    return np.sum(a * b)


def test_in_place_through_a_name_of_either_kind_is_refused_where_it_runs():
    # b is a or a new array, depending on the run: numbax refuses the write where b holds
    # an array (a number would be rebound, changing nothing else)
    with pytest.raises(ValueError, match="may also change `a`"):
        nx.grad(maybe_shared)(X.copy(), 1.0)


def _zero_first(v):
    v[0] = 0.0


def helper_writes_into_view(a):
    b = a[:2]
    _zero_first(b)  # writes into a through b
    return np.sum(a) * a[2]


def test_a_helper_writing_into_a_view_is_refused_for_derivatives():
    # the write reaches a (a[:2] = b after the call), and a call for its effect on a value
    # that carries a derivative is refused: never the derivative of the unchanged a
    with pytest.raises(nx.TransformError, match="called for its effect"):
        nx.grad(helper_writes_into_view)(X.copy())
    x = X.copy()
    assert nx.jit(helper_writes_into_view)(x) == helper_writes_into_view(X.copy())


def held_by_a_list(a):
    x = a * 1.0
    xs = []
    xs.append(x)
    x[0] = 5.0  # xs[0] is x: NumPy's list sees the write
    return np.sum(xs[0] * a)


def swapped_then_updated(a):
    x = a[:2] * 1.0
    y = a[2:] * 1.0
    pair = [x * 0.0, y * 0.0]
    pair[0] = y * 2.0  # a new array: the list holds neither x nor y
    x, y = y, x
    x += 1.0  # x is the old y: nothing else holds it
    return np.sum(x * y) + np.sum(pair[0])


def test_an_array_a_list_holds_is_refused_where_written():
    with pytest.raises(nx.TransformError, match="may also change `xs`") as info:
        nx.grad(held_by_a_list)(X.copy())
    assert info.value.lineno == line_of(held_by_a_list, "x[0] = 5.0")


def test_lists_and_swaps_that_share_nothing_stay_as_they_are():
    want = numeric_jacobian(_fresh(swapped_then_updated), [X], 0)
    np.testing.assert_allclose(nx.grad(swapped_then_updated)(X.copy()), want, rtol=1e-6)
    assert nx.jit(swapped_then_updated)(X.copy()) == swapped_then_updated(X.copy())


def test_forward_mode_under_jit_reads_the_value_written_through_another_name():
    # the copy w = y written into: y = w stays, so the compiled code never recomputes y
    f = written_through_inactive_name
    tangent = np.array([1.0, 2.0, -1.0, 0.5])
    want = numeric_jacobian(_fresh(f), [X], 0)
    value, derivative = nx.jit(lambda a, t: nx.jvp(f, (a,), (t,)))(X.copy(), tangent)
    assert value == pytest.approx(f(X.copy()), rel=1e-12)
    assert derivative == pytest.approx(want @ tangent, rel=1e-6)
    np.testing.assert_allclose(nx.jit(nx.jacfwd(f))(X.copy()), want, rtol=1e-6)


def unpacked(params, x):
    u, v = params
    u[0] = 0.0  # params[0] is u: NumPy's params sees the write
    return np.sum(params[0] * x) + np.sum(u * v[0])


def test_an_item_of_a_pytree_argument_written_is_refused():
    params = [np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5])]
    for transform in (nx.grad, lambda f: nx.jit(nx.grad(f)), nx.jit):
        with pytest.raises(nx.TransformError, match="may also change `params`") as info:
            transform(unpacked)([p.copy() for p in params], X.copy())
        assert info.value.lineno == line_of(unpacked, "u[0] = 0.0")
        assert f"made at line {line_of(unpacked, 'u, v = params')}" in str(info.value)


def _doubled_first(v):
    v[0] = 2.0 * v[1]
    return v


def helper_returns_its_argument(x):
    z = x - 1.0
    w = _doubled_first(z)  # writes into z too
    return np.sum(w * z) + np.sum(x * x)


def test_a_helper_writing_into_an_array_read_after_the_call_is_refused():
    x, tangent = np.array([0.3, -0.5, 0.9]), np.array([1.0, 2.0, -1.0])
    transforms = [nx.grad, nx.jacfwd, lambda f: nx.jit(nx.grad(f))]
    transforms.append(lambda f: lambda a: nx.jvp(f, (a,), (tangent,)))
    for transform in transforms:
        with pytest.raises(nx.TransformError, match="writes into `z`") as info:
            transform(helper_returns_its_argument)(x.copy())
        assert info.value.lineno == line_of(helper_returns_its_argument, "w = _doubled_first(z)")
        assert f"line {line_of(_doubled_first, 'v[0] = 2.0')}" in str(info.value)
    # compiled alone, the helper writes into the caller's memory, as NumPy does; vmap
    # calls the function once per example
    want = helper_returns_its_argument(x.copy())
    assert nx.jit(helper_returns_its_argument)(x.copy()) == pytest.approx(want, rel=1e-12)
    batch = np.stack([x, 2.0 * x])
    want = [helper_returns_its_argument(row.copy()) for row in batch]
    np.testing.assert_allclose(nx.vmap(helper_returns_its_argument)(batch), want, rtol=1e-12)


def scaled_in_place(a):
    a *= 3.0  # the caller's array: NumPy's f changes it
    return np.sum(a * a * np.array([1.0, 2.0, 4.0, 0.5]))


def reversed_in_place(a):
    b = a[::-1]
    b *= 3.0
    return np.sum(a * a * np.array([1.0, 2.0, 4.0, 0.5]))


def rebound_then_written(x):
    a = x  # x's array under another name: the writes reach the caller's array
    b = a[::-1]
    b *= 3.0
    a[0] = np.tanh(a[1])
    return np.sum(np.sin(a) * np.array([1.0, 2.0, 4.0, 0.5])) + np.sum(x * x)


@pytest.mark.parametrize("f", [scaled_in_place, reversed_in_place, rebound_then_written])
def test_vjp_and_jacrev_of_a_function_that_writes_into_its_argument(f):
    # the value that vjp and jacrev compute first must not change the primals the
    # derivative is then taken at
    want = numeric_jacobian(_fresh(f), [X], 0)
    value, pullback = nx.vjp(f, X.copy())
    assert value == pytest.approx(f(X.copy()), rel=1e-12)
    np.testing.assert_allclose(pullback(1.0)[0], want, rtol=1e-6)
    np.testing.assert_allclose(nx.jacrev(f)(X.copy()), want, rtol=1e-6)
    np.testing.assert_allclose(nx.jit(nx.jacrev(f))(X.copy()), want, rtol=1e-6)


def scaled_through_views(x, s):
    a = x  # x's array under another name: the writes reach the caller's array
    b = a[::-1]
    b *= np.abs(s)
    c = a
    c += x - 0.5
    return np.sum(np.sin(a) * np.array([1.0, 2.0, 4.0, 0.5])) + np.sum(a * a)


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "jit"])
def test_jacfwd_of_a_function_that_writes_into_its_argument_through_a_view(compiled):
    # jacfwd runs the forward derivative once per column on the same primals: a write
    # through a view must not reach them (the derivative code works on a copy)
    s = -0.3
    want = [
        numeric_jacobian(lambda x, s: scaled_through_views(x.copy(), s), [X, s], k) for k in (0, 1)
    ]
    jacobian = nx.jacfwd(scaled_through_views, argnums=(0, 1))
    got = (nx.jit(jacobian) if compiled else jacobian)(X.copy(), s)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


def scaled_through_an_unread_alias(x, s):
    a = (x[::-1])[::-1]  # a view of x's array
    b1 = a[:]
    b1[1] = s
    b2 = a
    b2 *= np.sqrt(0.5 + s * s)  # written through b2: a, b1 and x change
    return np.sum(np.sin(a) * np.array([0.3, 0.56, 0.6])) + np.sum(np.cos(b1)) + np.sum(np.cos(b2))


@pytest.mark.parametrize("compiled", [False, True], ids=["interpreted", "jit"])
def test_a_value_recomputed_after_a_write_reads_what_was_there_before(compiled):
    # Under jit, a fused loop computes the scaled b2 again from b2 instead of reading it
    # stored; b2's memory is x's, which the write-back changed before that loop runs
    x, s = X[:3].copy(), -0.7363
    want = [
        numeric_jacobian(lambda x, s: scaled_through_an_unread_alias(x.copy(), s), [x, s], k)
        for k in (0, 1)
    ]
    gradient = nx.grad(scaled_through_an_unread_alias, argnums=(0, 1))
    got = (nx.jit(gradient) if compiled else gradient)(x.copy(), s)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
