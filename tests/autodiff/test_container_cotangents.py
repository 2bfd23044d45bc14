"""Lists, tuples, dicts and NamedTuples of arrays as arguments: cotangents of one
container add leaf by leaf (never join), derivatives come back in the argument's exact
structure (a list stays a list, under ``jit`` too), ``isinstance``/``type`` see the
caller's container types under ``jit``, and containers pass through helpers and
``ravel_pytree``. Values are checked against NumPy (the function run as it is),
derivatives against central differences, structures with ``tree_structure`` (which
tells a list from a tuple), interpreted and under ``nx.jit``."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import numbax as nx
from numbax import tree_util
from numbax.flatten_util import ravel_pytree
from tests.helpers.fd import EPS, numeric_grad
from tests.helpers.trees import assert_tree_close

RNG = np.random.default_rng(51)


def normal(*shape: int) -> np.ndarray:
    return RNG.normal(size=shape)


# -- autograd's L2 penalty: ravel_pytree(params) beside a direct use of params ------------


def predict(params, inputs):
    for W, b in params:
        outputs = inputs @ W + b
        inputs = np.tanh(outputs)
    return outputs


def l2_loss(params, x):
    flat, _ = ravel_pytree(params)
    return np.sum(predict(params, x)) + 0.1 * np.sum(flat**2)


def l2_first_layer(params, x):
    flat, _ = ravel_pytree(params)
    W, b = params[0]
    return np.sum(np.tanh(x @ W + b)) + 0.1 * np.sum(flat**2) + np.sum(params[1][1])


LAYERS = [(normal(3, 4), normal(4)), (normal(4, 2), normal(2))]
X = normal(5, 3)


@pytest.mark.parametrize("loss", [l2_loss, l2_first_layer])
def test_l2_penalty_adds_cotangents_leaf_by_leaf(loss):
    want = numeric_grad(loss, (LAYERS, X))
    assert_tree_close(nx.grad(loss)(LAYERS, X), want, f"grad of {loss.__name__}")
    assert_tree_close(nx.jit(nx.grad(loss))(LAYERS, X), want, f"jit(grad) of {loss.__name__}")


def test_l2_penalty_value_and_grad():
    value, grads = nx.value_and_grad(l2_loss)(LAYERS, X)
    np.testing.assert_allclose(value, l2_loss(LAYERS, X))
    assert_tree_close(grads, numeric_grad(l2_loss, (LAYERS, X)), "value_and_grad")
    value, grads = nx.jit(nx.value_and_grad(l2_loss))(LAYERS, X)
    np.testing.assert_allclose(value, l2_loss(LAYERS, X))
    assert_tree_close(grads, numeric_grad(l2_loss, (LAYERS, X)), "jit(value_and_grad)")


# -- nested containers come back in the argument's structure --------------------------------


class Params(NamedTuple):
    w: Any
    b: Any


def list_of_lists(p):
    return np.sum(p[0][0] * p[0][1]) + np.sum(np.sin(p[1][0]))


def dict_of_lists(p):
    return np.sum(p["a"][0] ** 2) + np.sum(p["a"][1] * p["c"])


def tuple_of_dicts(p):
    return np.sum(p[0]["w"] * p[1]["v"]) + np.sum(p[1]["w"] ** 3)


def named_with_a_list(p):
    return np.sum(p.w * p.b[0]) + np.sum(np.cos(p.b[1]))


def loop_over_pairs(p):
    s = 0.0
    for q in p:
        s = s + np.sum(q[0] * q[1])
    return s


NESTED = [
    (list_of_lists, [[normal(3), normal(3)], [normal(2)]]),
    (dict_of_lists, {"a": [normal(3), normal(3)], "c": normal(3)}),
    (tuple_of_dicts, ({"w": normal(2)}, {"v": normal(2), "w": normal(2)})),
    (named_with_a_list, Params(normal(3), [normal(3), normal(2)])),
    (loop_over_pairs, [[normal(3), normal(3)], [normal(2), normal(2)]]),
]


@pytest.mark.parametrize("f, p", NESTED, ids=[f.__name__ for f, _ in NESTED])
def test_gradients_keep_the_structure(f, p):
    want = numeric_grad(f, (p,))
    assert_tree_close(nx.grad(f)(p), want, "grad")
    assert_tree_close(nx.jit(nx.grad(f))(p), want, "jit(grad)")
    assert_tree_close(nx.value_and_grad(f)(p)[1], want, "value_and_grad")
    (cotangent,) = nx.vjp(f, p)[1](1.0)
    assert_tree_close(cotangent, want, "vjp")
    assert_tree_close(nx.jacrev(f)(p), want, "jacrev")
    assert_tree_close(nx.jacfwd(f)(p), want, "jacfwd")


@pytest.mark.parametrize("f, p", NESTED[:2], ids=[f.__name__ for f, _ in NESTED[:2]])
def test_jacobians_under_jit_keep_the_structure(f, p):
    want = numeric_grad(f, (p,))
    assert_tree_close(nx.jit(nx.jacrev(f))(p), want, "jit(jacrev)")
    assert_tree_close(nx.jit(nx.jacfwd(f))(p), want, "jit(jacfwd)")
    value, grads = nx.jit(nx.value_and_grad(f))(p)
    np.testing.assert_allclose(value, f(p))
    assert_tree_close(grads, want, "jit(value_and_grad)")


def two_outputs(p):
    return (p[0] * 2.0, np.sum(p[1][0] * p[1][1]))


def test_jacobian_of_a_tuple_output_holds_lists():
    p = [normal(2), [normal(2), normal(2)]]
    eager = nx.jacrev(two_outputs)(p)
    assert tree_util.tree_structure(eager) == tree_util.tree_structure((p, p))
    assert_tree_close(nx.jit(nx.jacrev(two_outputs))(p), eager, "jit(jacrev)")


def quadratic(p):
    return np.sum(p[0] ** 2 * p[1][0]) + np.sum(p[1][1] ** 3)


def test_hessian_under_jit_is_a_list_of_lists():
    p = [normal(2), [normal(2), normal(2)]]
    eager = nx.hessian(quadratic)(p)
    assert tree_util.tree_structure(eager) == tree_util.tree_structure([p, [p, p]])
    assert_tree_close(nx.jit(nx.hessian(quadratic))(p), eager, "jit(hessian)")
    sizes = [leaf.size for leaf in tree_util.tree_leaves(p)]
    blocks = iter(tree_util.tree_leaves(eager))  # output leaf by output leaf
    matrix = np.block([[next(blocks).reshape(m, n) for n in sizes] for m in sizes])
    flat, unravel = ravel_pytree(p)
    gradient = nx.grad(quadratic)
    columns = [
        ravel_pytree(gradient(unravel(flat + step)))[0]
        - ravel_pytree(gradient(unravel(flat - step)))[0]
        for step in np.eye(flat.size) * EPS
    ]
    np.testing.assert_allclose(matrix, np.array(columns).T / (2 * EPS), atol=1e-5)


def rows_as_array(p):
    return np.sum(np.asarray(p) ** 2)


def test_nested_lists_used_as_an_array():
    # compiled code cannot make an array of a nested tuple of arrays: interpreted only
    p = [[normal(2), normal(2)], [normal(2), normal(2)]]
    want = numeric_grad(rows_as_array, (p,))
    assert_tree_close(nx.grad(rows_as_array)(p), want, "grad")
    assert_tree_close(nx.vjp(rows_as_array, p)[1](1.0)[0], want, "vjp")


# -- a JAX-style optimizer loop over jit(grad) ---------------------------------------------


def test_optimizer_loop_with_tree_map():
    step = nx.jit(nx.grad(l2_loss))
    params, eager_params = LAYERS, LAYERS
    for _ in range(3):
        grads = step(params, X)
        params = tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        eager_grads = nx.grad(l2_loss)(eager_params, X)
        eager_params = tree_util.tree_map(lambda p, g: p - 0.1 * g, eager_params, eager_grads)
    assert isinstance(params, list) and isinstance(params[0], tuple)
    assert_tree_close(params, eager_params, "three steps")


# -- isinstance and type see the caller's containers ----------------------------------------


def branch_on_kind(p):
    s = 0.0
    for q in p:
        if type(q) is list and isinstance(p, list):
            s = s + np.sum(q[0] ** 2)
        else:
            s = s + np.sum(np.sin(q[0]))
    if isinstance(p[0], (list, dict)):
        s = s * 2.0
    return s


BRANCH = nx.jit(branch_on_kind)
BRANCH_GRAD = nx.jit(nx.grad(branch_on_kind))


@pytest.mark.parametrize(
    "p",
    [
        [[normal(2)], [normal(3)]],
        [(normal(2),), (normal(3),)],
        ((normal(2),), (normal(3),)),
    ],
    ids=["list_of_lists", "list_of_tuples", "tuple_of_tuples"],
)
def test_isinstance_sees_the_callers_containers(p):
    want = branch_on_kind(p)
    np.testing.assert_allclose(BRANCH(p), want)
    gradient = numeric_grad(branch_on_kind, (p,))
    assert_tree_close(nx.grad(branch_on_kind)(p), gradient, "grad")
    assert_tree_close(BRANCH_GRAD(p), gradient, "jit(grad)")


def test_ahead_of_time_compile_is_for_the_container_types():
    p = [[normal(2)], [normal(3)]]
    compiled = nx.jit(branch_on_kind).lower(p).compile()
    np.testing.assert_allclose(compiled(p), branch_on_kind(p))
    with pytest.raises(TypeError, match="pytree arguments"):
        compiled(tuple(p))


# -- containers through helpers and ravel_pytree ----------------------------------------------


def layer(p, x):
    return [np.tanh(x @ p["w"]), x * 2.0]


def norm(d):
    return np.sum(d["w"] ** 2) + np.sum(d["b"] ** 2)


def pair(x):
    return (x * 2.0, [np.sin(x), x**2])


def through_helpers(params, x):
    h, y = layer(params, x)
    a, (b, c) = pair(h)
    return np.sum(a * b) + np.sum(c) + norm(params) + np.sum(y)


def through_unravel(params, x):
    flat, unravel = ravel_pytree(params)
    doubled = unravel(flat * 2.0)
    return np.sum(np.tanh(x @ doubled["w"])) + np.sum(doubled["b"] ** 2) + np.sum(flat[:2])


def helper_list_indexed(params, x):
    out = layer(params, params["b"])
    return np.sum(out[0]) + np.sum(out[1]) + np.sum(x)


P = {"w": normal(2, 2), "b": normal(2)}
XS = normal(3, 2)


@pytest.mark.parametrize("f", [through_helpers, through_unravel, helper_list_indexed])
def test_containers_through_helpers(f):
    want = f(P, XS)
    np.testing.assert_allclose(nx.jit(f)(P, XS), want)
    gradient = numeric_grad(f, (P, XS))
    assert_tree_close(nx.grad(f)(P, XS), gradient, "grad")
    assert_tree_close(nx.jit(nx.grad(f))(P, XS), gradient, "jit(grad)")


# -- jvp and vjp of containers whose leaves differ in shape -------------------------------


def ragged_layers(p, x, s):
    return np.sum(p[1] ** 2) + s * np.sum(p[0][1] * x) + np.sum(np.tanh(x @ p[0][0]))


def ragged_outputs(p):
    return (p[0][0] * 2.0, np.sin(p[1]))


RAGGED = [[normal(4, 3), normal(4)], normal(3)]
RAGGED_ARGS = (RAGGED, normal(4), 0.5)


def numeric_jvp(f, primals: tuple, tangents: tuple) -> Any:
    """Central differences of ``f`` along ``tangents``, in the output's structure."""

    def at(sign: float) -> Any:
        moved = tree_util.tree_map(lambda p, t: p + sign * EPS * t, primals, tangents)
        return f(*moved)

    return tree_util.tree_map(lambda a, b: (a - b) / (2 * EPS), at(1.0), at(-1.0))


def test_jvp_of_containers_with_leaves_of_different_shapes():
    tangents = tree_util.tree_map(lambda p: normal(*np.shape(p)), RAGGED_ARGS)
    want = numeric_jvp(ragged_layers, RAGGED_ARGS, tangents)
    for label, fun in [("jvp", ragged_layers), ("jvp of jit", nx.jit(ragged_layers))]:
        value, tangent = nx.jvp(fun, RAGGED_ARGS, tangents)
        np.testing.assert_allclose(value, ragged_layers(*RAGGED_ARGS), err_msg=label)
        np.testing.assert_allclose(tangent, want, rtol=1e-6, err_msg=label)
    wrong = ([[normal(4, 3), normal(3)], normal(3)], *tangents[1:])
    with pytest.raises(ValueError, match=r"primal 0 has shape \[\[\(4, 3\), \(4,\)\], \(3,\)\]"):
        nx.jvp(ragged_layers, RAGGED_ARGS, wrong)


def test_vjp_of_a_tuple_output_with_leaves_of_different_shapes():
    out, vjp_fun = nx.vjp(ragged_outputs, RAGGED)
    assert_tree_close(out, ragged_outputs(RAGGED), "value")
    cotangent = (normal(4, 3), normal(3))

    def contracted(p):
        return sum(np.sum(c * o) for c, o in zip(cotangent, ragged_outputs(p), strict=True))

    want = numeric_grad(contracted, (RAGGED,))
    assert_tree_close(vjp_fun(cotangent)[0], want, "vjp")
    assert_tree_close(nx.vjp(nx.jit(ragged_outputs), RAGGED)[1](cotangent)[0], want, "jit")
    with pytest.raises(ValueError, match=r"the cotangent has shape \(\(4, 3\), \(4,\)\)"):
        vjp_fun((normal(4, 3), normal(4)))


# -- an unpacked container used as well as it is: tuple and list cotangents add -------------


def unpacked_and_indexed(p, x):
    e1, e2 = p
    return np.sum(e1 * e2) + np.sum(p[0] * x)


def indexed_then_unpacked(p, x):
    y = np.sum(np.sin(p[1]) * x)
    (u, v), w = p[0], p[1]
    first, rest = p
    return y + np.sum(u * v * w) + np.sum(first[1] ** 2) + np.sum(rest)


UNPACKED = [
    (unpacked_and_indexed, [normal(3), normal(3)]),
    (unpacked_and_indexed, Params(normal(3), normal(3))),
    (unpacked_and_indexed, (normal(3), normal(3))),
    (indexed_then_unpacked, [[normal(3), normal(3)], normal(3)]),
    (indexed_then_unpacked, [(normal(3), normal(3)), normal(3)]),
]
UNPACKED_GRADS = {f: nx.jit(nx.grad(f)) for f in {f for f, _ in UNPACKED}}


@pytest.mark.parametrize(
    "f, p", UNPACKED, ids=[f"{f.__name__}-{type(p).__name__}" for f, p in UNPACKED]
)
def test_unpacked_and_indexed_cotangents_add(f, p):
    x = normal(3)
    want = numeric_grad(f, (p, x))
    assert_tree_close(nx.grad(f)(p, x), want, "grad")
    assert_tree_close(UNPACKED_GRADS[f](p, x), want, "jit(grad)")
    assert_tree_close(nx.vjp(f, p, x)[1](1.0)[0], want, "vjp")
    tangent = tree_util.tree_map(lambda leaf: normal(*leaf.shape), p)
    value, derivative = nx.jvp(f, (p, x), (tangent, np.zeros(3)))
    np.testing.assert_allclose(value, f(p, x))
    np.testing.assert_allclose(derivative, numeric_jvp(f, (p, x), (tangent, np.zeros(3))))


# -- ravel_pytree's unravel is its argument: their cotangents add leaf by leaf -----------------


def unravel_beside_direct_uses(p, x, s):
    t1 = np.sum(p[0] * x)
    flat, unravel = ravel_pytree(p)
    q = unravel(flat * s)
    return t1 + np.sum(np.sin(q[0]) * x) + np.sum(p[1] ** 2)


RAVELLED = [
    [normal(3), normal(3)],
    (normal(3), normal(3)),
]
RAVELLED_GRAD = nx.jit(nx.grad(unravel_beside_direct_uses, (0, 1)))


@pytest.mark.parametrize("p", RAVELLED, ids=["list", "tuple"])
def test_unravel_beside_direct_uses(p):
    args = (p, normal(3), -0.8)
    want = tuple(numeric_grad(unravel_beside_direct_uses, args, k) for k in (0, 1))
    assert_tree_close(nx.grad(unravel_beside_direct_uses, (0, 1))(*args), want, "grad")
    assert_tree_close(RAVELLED_GRAD(*args), want, "jit(grad)")
    assert_tree_close(nx.jacrev(unravel_beside_direct_uses)(*args), want[0], "jacrev")
    assert_tree_close(nx.vjp(unravel_beside_direct_uses, *args)[1](1.0)[:2], want, "vjp")


# -- jit gives back an argument's list as a list ------------------------------------------


def returns_its_argument(p, x):
    return p


def returns_a_part(p, x):
    if x > 0:
        return p[1], x * 2.0
    return p[1], x


def returns_an_entry(p, x):
    return p["w"]


def returns_a_field(p, x):
    return p.b


def returns_a_new_list(p, x):
    return [p[0], x]


RETURNED = [
    (returns_its_argument, [normal(2), (normal(2), [normal(3)])]),
    (returns_a_part, [normal(2), [normal(2), (normal(3),)]]),
    (returns_an_entry, {"b": normal(2), "w": [normal(2), (normal(2),)]}),
    (returns_a_field, Params(normal(2), [normal(2), normal(3)])),
]


@pytest.mark.parametrize(
    "f, p", RETURNED, ids=[f"{f.__name__}-{type(p).__name__}" for f, p in RETURNED]
)
def test_jit_returns_the_arguments_containers(f, p):
    assert_tree_close(nx.jit(f)(p, 1.5), f(p, 1.5), "jit")


def test_jit_returns_a_list_it_builds_as_a_list():
    p, x = [normal(2), normal(2)], normal(2)
    assert_tree_close(nx.jit(returns_a_new_list)(p, x), returns_a_new_list(p, x), "jit")
