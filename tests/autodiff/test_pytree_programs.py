"""Reverse (and forward) mode over lists, tuples, dicts and nested pytrees of
parameters: helpers that take the whole tree, loops over a list of layers, lists built
by ``append``, dict keys that are not identifiers, branches that index a parameter.
Every gradient is checked against central differences, interpreted and under
``nx.jit``."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import numbax as nx
from tests.helpers.fd import check_jacobians, numeric_grad
from tests.helpers.trees import assert_tree_close


def check_grad(f, *args: Any, argnum: int = 0, jit: bool = True) -> None:
    """grad of ``f`` w.r.t. ``args[argnum]`` (any pytree) agrees with central
    differences, interpreted and (``jit``) under ``nx.jit``, in the argument's
    structure."""
    want = numeric_grad(f, args, argnum)
    gradient = nx.grad(f, argnums=argnum)
    assert_tree_close(gradient(*args), want, f"grad of {f.__name__}, interpreted")
    if jit:
        got = nx.jit(gradient)(*args)
        assert_tree_close(got, want, f"grad of {f.__name__}, under jit")


# -- helpers that take the whole tree ----------------------------------------------------


def first_squared(ps):
    return np.sum(ps[0] ** 2)


def second_summed(ps):
    return np.sum(np.sin(ps[1]))


def two_helpers(ps):
    return first_squared(ps) + second_summed(ps)


def test_helpers_on_a_list():
    check_grad(two_helpers, [np.array([0.5, -1.0]), np.array([0.1, 0.2, 0.3])])


def test_helpers_on_a_tuple():
    check_grad(two_helpers, (np.array([0.5, -1.0]), np.array([0.1, 0.2, 0.3])))


def keyed_a(ps):
    return np.sum(ps["a"] ** 2)


def keyed_b(ps):
    return np.sum(ps["b"] * ps["c"][0])


def keyed_helpers(ps):
    return keyed_a(ps) + keyed_b(ps) + keyed_a(ps)


def test_helpers_on_a_nested_dict():
    ps = {"a": np.array([0.5, -1.0]), "b": np.array([0.1, 0.2]), "c": (1.5, np.ones(1))}
    check_grad(keyed_helpers, ps)


class Layer(NamedTuple):
    w: np.ndarray
    b: np.ndarray


def layer_w(layer):
    return np.sum(layer.w**2)


def layer_both(layer):
    return layer_w(layer) * np.sum(layer.b)


def test_helpers_on_a_named_tuple():
    check_grad(layer_both, Layer(np.array([0.5, -1.0]), np.array([0.1, 0.3])))


# -- lists the function builds -----------------------------------------------------------


def appended_to_a_display(w, x):
    values = [w * x]
    for i in range(3):
        values.append(w * i)
    return values[0] + values[1] + values[2] + values[3]


def test_list_display_then_appended():
    assert nx.grad(appended_to_a_display)(2.0, 4.0) == 7.0
    check_grad(appended_to_a_display, 2.0, 4.0)
    check_grad(appended_to_a_display, 2.0, 4.0, argnum=1)
    check_jacobians(appended_to_a_display, 2.0, 4.0)


def states_appended(w, h):
    states = [h]
    for _ in range(3):
        h = np.tanh(w * states[-1])
        states.append(h)
    total = 0.0
    for s in states:
        total = total + np.sum(s**2)
    return total + np.sum(states.pop())


def test_states_appended_read_back_and_popped():
    w, h = np.array([0.5, -0.7]), np.array([0.3, 0.9])
    check_grad(states_appended, w, h)
    check_grad(states_appended, w, h, argnum=1)
    check_jacobians(states_appended, w, h, jit=False)


# -- dicts -------------------------------------------------------------------------------


def spaced_keys(p):
    return np.sum(p["init hiddens"] ** 2) + np.sum(p["w"] * p["_private"])


def test_dict_keys_that_are_not_identifiers():
    p = {"init hiddens": np.array([1.0, -2.0]), "w": np.array([0.5]), "_private": 3.0}
    check_grad(spaced_keys, p)


# -- loops over a list of layers ---------------------------------------------------------

RNG = np.random.default_rng(0)
WIDTHS = [3, 4, 2, 5]
LAYERS = [
    (0.5 * RNG.normal(size=(m, n)), 0.5 * RNG.normal(size=n))
    for m, n in zip(WIDTHS[:-1], WIDTHS[1:], strict=True)
]
INPUTS = RNG.normal(size=(2, 3))


def mlp(params, x):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum(x**2)


def mlp_all_but_last(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    return np.sum((x @ W + b) ** 2)


def mlp_by_index(params, x):
    for i, layer in enumerate(params):
        W = layer[0]
        x = np.tanh(x @ W + layer[1]) * (i + 1)
    return np.sum(x**2)


SCALES = (1.0, 2.0, 0.5)


def mlp_zipped(params, x):
    for (W, b), s in zip(params, SCALES, strict=False):
        x = np.tanh(x @ W + b) * s
    return np.sum(x**2)


def mlp_last_layer_reused(params, x):
    for W, b in params:
        x = np.tanh(x @ W + b)
    return np.sum(x**2) + np.sum(W**2) + np.sum(b)


LAYER_TUPLE = tuple(LAYERS)  # a global list cannot be compiled by Numba; a tuple can


def mlp_of_inputs(x):
    return mlp(LAYER_TUPLE, x)


def test_mlp_of_layers_of_different_widths():
    check_grad(mlp, LAYERS, INPUTS)
    check_grad(mlp, LAYERS, INPUTS, argnum=1)
    check_jacobians(mlp_of_inputs, INPUTS, jit=False)


def test_mlp_over_a_slice_of_the_layers():
    check_grad(mlp_all_but_last, LAYERS, INPUTS)


def test_mlp_by_enumerate_and_index():
    check_grad(mlp_by_index, LAYERS, INPUTS)


def test_mlp_zipped_with_a_tuple():
    check_grad(mlp_zipped, LAYERS, INPUTS)


def test_mlp_whose_last_layer_is_read_after_the_loop():
    check_grad(mlp_last_layer_reused, LAYERS, INPUTS)
    check_grad(mlp_last_layer_reused, LAYERS[::-1][:2][::-1], np.ones((2, 4)))


def test_zip_strict_checks_the_lengths():
    def zipped_strictly(params, x):
        for (W, b), s in zip(params, SCALES, strict=True):
            x = np.tanh(x @ W + b) * s
        return np.sum(x)

    with pytest.raises(ValueError, match="different lengths"):
        nx.grad(zipped_strictly)(LAYERS[:2], INPUTS)


# -- a recurrent network, as autograd's examples write it ------------------------------


def concat_and_multiply(weights, a, b):
    cat_state = np.hstack((a, b, np.ones((a.shape[0], 1))))
    return np.dot(cat_state, weights)


def hiddens_to_output_probs(params, hiddens):
    output = np.dot(np.hstack((hiddens, np.ones((hiddens.shape[0], 1)))), params["predict"])
    m = np.max(output, axis=1, keepdims=True)
    return output - m - np.log(np.sum(np.exp(output - m), axis=1, keepdims=True))


def rnn_predict(params, inputs):
    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    output = [hiddens_to_output_probs(params, hiddens)]
    for input in inputs:  # time steps
        hiddens = np.tanh(concat_and_multiply(params["change"], input, hiddens))
        output.append(hiddens_to_output_probs(params, hiddens))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def test_rnn_over_a_list_of_hidden_states():
    rs = np.random.RandomState(0)
    n_in, n_state, n_out = 2, 3, 2
    params = {
        "init hiddens": rs.randn(1, n_state) * 0.5,
        "change": rs.randn(n_in + n_state + 1, n_state) * 0.5,
        "predict": rs.randn(n_state + 1, n_out) * 0.5,
    }
    inputs, targets = rs.randn(4, 2, n_in), rs.randn(4, 2, n_out)
    check_grad(rnn_log_likelihood, params, inputs, targets)


def test_vjp_of_a_returned_list_leaves_the_cotangent_alone():
    rs = np.random.RandomState(1)
    params = {
        "init hiddens": rs.randn(1, 3),
        "change": rs.randn(6, 3),
        "predict": rs.randn(4, 2),
    }
    inputs = rs.randn(2, 1, 2)
    out, vjp_fun = nx.vjp(rnn_predict, params, inputs)
    ct = [np.ones_like(o) for o in out]
    first = vjp_fun(ct)
    assert len(ct) == len(out)
    assert_tree_close(vjp_fun(ct), first, "a second vjp with the same cotangent")


# -- branches and made functions -----------------------------------------------------------


def first_in_a_branch(a, c):
    if np.mean(a) > 5.0:
        t = a
    else:
        t = c[0] + a
    return np.sum(t)


def max_in_a_branch(a, c):
    if np.mean(a) > 5.0:
        t = a
    else:
        t = np.max(c) * a
    return np.sum(t)


def test_indexing_and_reducing_a_parameter_in_a_branch():
    a = np.ones(3)
    np.testing.assert_allclose(nx.jit(nx.grad(first_in_a_branch, argnums=1))(a, a), [3, 0, 0])
    c = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(nx.jit(nx.grad(max_in_a_branch, argnums=1))(a, c), [0, 0, 3])
    check_grad(first_in_a_branch, a, np.array([0.5, 0.2]), argnum=1)
    check_grad(first_in_a_branch, a, [0.5, 0.2], argnum=1)
    check_grad(max_in_a_branch, a, c, argnum=1)


def make_scaler(a):
    return lambda x: a * x


def call_made_function(a, x):
    f = make_scaler(a)
    return f(x)


def test_a_function_made_from_a_differentiated_value_is_refused():
    with pytest.raises(
        nx.TransformError, match="f is a value of the function \\(a parameter, or made while"
    ) as info:
        nx.grad(call_made_function)(2.0, 3.0)
    assert "call_made_function" in str(info.value)
    with pytest.raises(
        nx.TransformError, match="f is a value of the function \\(a parameter, or made while"
    ):
        nx.grad(call_made_function, argnums=1)(2.0, 3.0)
