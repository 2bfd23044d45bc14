"""Programs right when interpreted are right under ``nx.jit`` too: a write into an array
taken out of a list or dict argument (compiled code holds those as tuples), a list of
arrays of different ranks as the result, a ``vmap`` of a function with a default (the
default is not mapped, though compiled code passes it), and the gradient of boolean-mask
indexing. Values are compared with NumPy (the caller's arrays changed as NumPy changes
them), derivatives with central differences (float64), eager and compiled alike."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import numbax as nx
from numbax.errors import CompileError, TransformError
from tests.helpers.fd import numeric_jacobian
from tests.helpers.trees import assert_tree_close

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 3.0, 1.0], [0.1, 0.2, 0.3]])


# -- a write into an item of a list or dict argument -----------------------------------
def zero_first_of_list(params):
    u = params[0]
    u[0] = 0.0
    return np.sum(np.sin(u) * params[1])


def one_first_of_dict(p):
    w = p["w"]
    w[0] = 1.0
    return np.sum(np.sin(p["w"]) * p["b"])


def scaled_in_a_loop(params):
    u = params[0]
    for i in range(2):
        u[i] = u[i] * params[1][i]
    return np.sum(np.sin(params[0]))


def store_into_the_list(params):
    params[0] = params[0] * 2.0
    return np.sum(params[0])


def writing_helper(params):
    u = params[0]
    u[0] = 0.0
    return np.sum(np.sin(u) * params[1])


def calls_a_writing_helper(params):
    return writing_helper(params) * 2.0


Pair = collections.namedtuple("Pair", "w b")


def write_through_a_field(p):
    w = p.w
    w[1] = 5.0
    return np.sum(p.w * p.b)


def _list():
    return [np.array([0.5, 2.0, 3.0]), np.array([2.0, 3.0, -4.0])]


def _dict():
    return {"w": np.array([0.5, 2.0, 3.0]), "b": np.array([2.0, 3.0, -4.0])}


WRITES = [
    (zero_first_of_list, _list),
    (one_first_of_dict, _dict),
    (scaled_in_a_loop, _list),
    (calls_a_writing_helper, _list),
]


@pytest.fixture(scope="module", params=WRITES, ids=lambda case: case[0].__name__)
def write(request):
    fun, make = request.param
    return fun, make, nx.jit(fun), nx.jit(nx.grad(fun))


def _leaves(tree):
    return list(tree.values()) if isinstance(tree, dict) else list(tree)


def _numeric_gradient(fun, make):
    """Central differences of ``fun`` in each leaf of a fresh argument (each evaluation on
    a copy: the function writes into it)."""
    grads = []
    for k, leaf in enumerate(_leaves(make())):

        def of_leaf(x, k=k):
            arg = make()
            keys = list(arg) if isinstance(arg, dict) else range(len(arg))
            arg[list(keys)[k]] = x.copy()
            return fun(arg)

        grads.append(numeric_jacobian(of_leaf, (leaf,), 0))
    return grads


def test_jit_of_a_write_into_an_item_changes_the_caller_as_numpy(write):
    fun, make, jitted, _ = write
    want_arg, got_arg = make(), make()
    want = fun(want_arg)
    for _ in range(2):  # the second call: the fast path
        got_arg = make()
        np.testing.assert_allclose(jitted(got_arg), want)
        assert type(got_arg) is type(want_arg)
        for got, expected in zip(_leaves(got_arg), _leaves(want_arg), strict=True):
            np.testing.assert_array_equal(got, expected)  # the caller's array, written


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_grad_of_a_write_into_an_item(write, mode):
    fun, make, _, jit_grad = write
    grad = jit_grad if mode == "jit" else nx.grad(fun)
    arg = make()
    got = grad(arg)
    assert type(got) is type(arg)
    if isinstance(arg, dict):
        assert got.keys() == arg.keys()
    for g, w in zip(_leaves(got), _numeric_gradient(fun, make), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
    if fun is not calls_a_writing_helper:  # a helper's own writes stay (as with arrays)
        for left, fresh in zip(_leaves(arg), _leaves(make()), strict=True):
            np.testing.assert_array_equal(left, fresh)  # the caller's, as they were


def test_jit_refuses_a_store_into_a_list_argument():
    """NumPy changes the caller's list; compiled code cannot: refused at the line."""
    with pytest.raises(CompileError, match=r"a store into `params`.*line \d+: `params\[0\] ="):
        nx.jit(store_into_the_list)(_list())


def test_a_write_through_a_namedtuple_field_is_refused():
    """A NamedTuple cannot take the array back (``p.w = w``): refused where it is read
    again, rather than a derivative that misses the write."""
    p = Pair(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0]))
    with pytest.raises(TransformError, match=r"a write into `w` that may also change `p`"):
        nx.grad(write_through_a_field)(p)


# -- vmap of a function with a default --------------------------------------------------
def scaled_sum(x, scale=2.0):
    return np.sum(np.sin(x)) * scale


def sum_of_batch(x):
    return np.sum(nx.vmap(scaled_sum)(x))


@pytest.fixture(scope="module")
def jit_vmap():
    return nx.jit(nx.vmap(scaled_sum))


def test_jit_vmap_leaves_a_default_unmapped(jit_vmap):
    want = np.array([scaled_sum(row) for row in X])
    np.testing.assert_allclose(nx.vmap(scaled_sum)(X), want)
    np.testing.assert_allclose(jit_vmap(X), want)
    np.testing.assert_allclose(jit_vmap(X), want)  # the second call: the fast path


def test_jit_vmap_maps_a_keyword_and_refuses_a_mapped_scalar(jit_vmap):
    scales = np.array([1.0, 2.0, 3.0, 4.0])
    want = np.array([scaled_sum(row, s) for row, s in zip(X, scales, strict=True)])
    np.testing.assert_allclose(jit_vmap(X, scale=scales), want)
    with pytest.raises(ValueError, match="axis 0"):  # as JAX: a given scalar is mapped
        jit_vmap(X, 3.0)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_grad_of_a_vmap_with_a_default_inside(mode):
    g = nx.grad(sum_of_batch)
    g = nx.jit(g) if mode == "jit" else g
    want = numeric_jacobian(sum_of_batch, (X,), 0)
    np.testing.assert_allclose(g(X), want, rtol=1e-6, atol=1e-8)


# -- gradient of boolean-mask indexing ---------------------------------------------------
def masked_squares(x):
    return np.sum(x[x > 0] ** 2)


def masked_rows(m):
    return np.sum(np.sin(m[m[:, 0] > 0, 1:]))


def test_grad_of_a_boolean_mask():
    x = X[0].copy()
    want = numeric_jacobian(masked_squares, (x,), 0)
    for g in (nx.grad(masked_squares), nx.jit(nx.grad(masked_squares))):
        np.testing.assert_allclose(g(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(nx.jit(masked_squares)(x), masked_squares(x))


def test_grad_of_a_boolean_mask_of_rows_beside_a_slice():
    want = numeric_jacobian(masked_rows, (X,), 0)
    for g in (nx.grad(masked_rows), nx.jit(nx.grad(masked_rows))):
        np.testing.assert_allclose(g(X), want, rtol=1e-6, atol=1e-8)


# -- a list of arrays of different ranks as the result -----------------------------------
def ranked_list(x):
    return [np.sum(x), x * 2.0, np.outer(x, x)]


def nested_lists(x):
    return [x, (np.sum(x), [x * 2.0, np.outer(x, x)])]


@pytest.mark.parametrize("fun", [ranked_list, nested_lists])
def test_jit_returns_a_list_of_arrays_of_different_ranks(fun):
    x = X[1].copy()
    jitted = nx.jit(fun)
    assert_tree_close(jitted(x), fun(x), rtol=1e-7, atol=0)
    assert_tree_close(jitted(x), fun(x), rtol=1e-7, atol=0)  # the second call: the fast path


def test_vmap_of_a_list_result_under_jit():
    want = nx.vmap(ranked_list)(X)
    assert_tree_close(nx.jit(nx.vmap(ranked_list))(X), want, rtol=1e-7, atol=0)
    np.testing.assert_allclose(want[2][1], np.outer(X[1], X[1]))
