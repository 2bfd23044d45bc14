"""The programs whose first call ``benchmarks/compile.py`` times: plain NumPy, as a user
porting autograd's examples and JAX's quickstart would write them.

Only ``numpy`` is imported here, as ``np``: the JAX twins (:func:`jax_twin`) are this
same source run with ``jax.numpy`` in its place, so both peers compile the same program.
"""

from __future__ import annotations

import sys
import types

import numpy as np

# -- autograd's examples/rnn.py: a character RNN's log-likelihood ----------------------


def logsumexp(x):
    """Row-wise log-sum-exp, stabilized by the row maximum."""
    m = np.max(x, axis=1, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def rnn_log_likelihood(params, inputs, targets):
    """Mean log-probability of each next character (``inputs``: time × batch × vocab)."""
    hiddens = params["init_hiddens"] + np.zeros((inputs.shape[1], 1))
    loglik = 0.0
    for t in range(inputs.shape[0]):
        hiddens = np.tanh(inputs[t] @ params["w_in"] + hiddens @ params["w_hid"] + params["b"])
        output = hiddens @ params["w_out"] + params["b_out"]
        logprobs = output - logsumexp(output)
        loglik = loglik + np.sum(logprobs * targets[t])
    return loglik / (inputs.shape[0] * inputs.shape[1])


# -- autograd's examples/lstm.py: the same task with an LSTM cell ----------------------


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)


def lstm_log_likelihood(params, inputs, targets):
    """Mean log-probability of each next character under a one-layer LSTM."""
    hiddens = params["init_hiddens"] + np.zeros((inputs.shape[1], 1))
    cells = params["init_cells"] + np.zeros((inputs.shape[1], 1))
    loglik = 0.0
    for t in range(inputs.shape[0]):
        x = inputs[t]
        change = np.tanh(x @ params["change_x"] + hiddens @ params["change_h"])
        forget = sigmoid(x @ params["forget_x"] + hiddens @ params["forget_h"])
        ingate = sigmoid(x @ params["ingate_x"] + hiddens @ params["ingate_h"])
        outgate = sigmoid(x @ params["outgate_x"] + hiddens @ params["outgate_h"])
        cells = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        output = hiddens @ params["w_out"] + params["b_out"]
        logprobs = output - logsumexp(output)
        loglik = loglik + np.sum(logprobs * targets[t])
    return loglik / (inputs.shape[0] * inputs.shape[1])


def sequence_inputs(rng: np.random.Generator, steps: int, batch: int, vocab: int) -> tuple:
    """One-hot characters and the next character of each, time-major."""
    chars = rng.integers(0, vocab, size=(steps + 1, batch))
    one_hot = np.eye(vocab)[chars]
    return one_hot[:-1], one_hot[1:]


def rnn_params(rng: np.random.Generator, vocab: int, hidden: int) -> dict:
    shapes = {
        "init_hiddens": (1, hidden),
        "w_in": (vocab, hidden),
        "w_hid": (hidden, hidden),
        "b": (hidden,),
        "w_out": (hidden, vocab),
        "b_out": (vocab,),
    }
    return {k: 0.1 * rng.standard_normal(s) for k, s in shapes.items()}


def lstm_params(rng: np.random.Generator, vocab: int, hidden: int) -> dict:
    shapes = {"init_hiddens": (1, hidden), "init_cells": (1, hidden)}
    for gate in ("change", "forget", "ingate", "outgate"):
        shapes[f"{gate}_x"] = (vocab, hidden)
        shapes[f"{gate}_h"] = (hidden, hidden)
    shapes.update(w_out=(hidden, vocab), b_out=(vocab,))
    return {k: 0.1 * rng.standard_normal(s) for k, s in shapes.items()}


# -- autograd's examples/tanh.py: derivatives of tanh, nested ---------------------------


def tanh(x):
    """autograd's own tanh, written with exp."""
    y = np.exp(-2.0 * x)
    return (1.0 - y) / (1.0 + y)


def sum_tanh(x):
    return np.sum(tanh(x))


# -- JAX's quickstart: a Hessian, and an MLP whose parameters are a dict ----------------


def sum_logistic(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


def mlp_dict_loss(params, x, y):
    """Mean squared error of a two-layer tanh MLP, parameters by name."""
    hidden = np.tanh(x @ params["w1"] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]
    return np.mean((out - y) ** 2)


def mlp_dict_params(rng: np.random.Generator, sizes: tuple[int, int, int]) -> dict:
    n_in, n_hidden, n_out = sizes
    return {
        "w1": 0.1 * rng.standard_normal((n_in, n_hidden)),
        "b1": np.zeros(n_hidden),
        "w2": 0.1 * rng.standard_normal((n_hidden, n_out)),
        "b2": np.zeros(n_out),
    }


# -- autograd's examples/fluidsim: semi-Lagrangian smoke on a periodic grid -------------


def project(vx, vy):
    """Make the velocity field divergence-free (Jacobi iterations on the pressure)."""
    p = np.zeros(vx.shape)
    h = 1.0 / vx.shape[0]
    div = (
        -0.5
        * h
        * (
            np.roll(vx, -1, axis=0)
            - np.roll(vx, 1, axis=0)
            + np.roll(vy, -1, axis=1)
            - np.roll(vy, 1, axis=1)
        )
    )
    for _ in range(10):
        p = (
            div
            + np.roll(p, 1, axis=0)
            + np.roll(p, -1, axis=0)
            + np.roll(p, 1, axis=1)
            + np.roll(p, -1, axis=1)
        ) / 4.0
    vx = vx - 0.5 * (np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)) / h
    vy = vy - 0.5 * (np.roll(p, -1, axis=1) - np.roll(p, 1, axis=1)) / h
    return vx, vy


def advect(f, vx, vy):
    """Move field ``f`` along the velocity, interpolating bilinearly."""
    rows, cols = f.shape
    cell_ys = np.arange(rows * cols) % cols
    cell_xs = np.arange(rows * cols) // cols
    center_xs = cell_xs - vx.ravel()
    center_ys = cell_ys - vy.ravel()
    left = np.floor(center_xs)
    top = np.floor(center_ys)
    rw = center_xs - left
    bw = center_ys - top
    left_ix = np.mod(left.astype(np.int64), rows)
    right_ix = np.mod(left_ix + 1, rows)
    top_ix = np.mod(top.astype(np.int64), cols)
    bot_ix = np.mod(top_ix + 1, cols)
    flat = f.ravel()
    out = (1.0 - rw) * (
        (1.0 - bw) * flat[left_ix * cols + top_ix] + bw * flat[left_ix * cols + bot_ix]
    ) + rw * ((1.0 - bw) * flat[right_ix * cols + top_ix] + bw * flat[right_ix * cols + bot_ix])
    return np.reshape(out, (rows, cols))


def simulate(vx, vy, smoke, num_time_steps):
    for _ in range(num_time_steps):
        vx_updated = advect(vx, vx, vy)
        vy_updated = advect(vy, vx, vy)
        vx, vy = project(vx_updated, vy_updated)
        smoke = advect(smoke, vx, vy)
    return smoke


# -- a force field fit's inner function: vmap of a body only its loop can batch ---------


def pair_energy(positions, params):
    """Lennard-Jones energy of one configuration, pairs beyond the cutoff skipped (the
    data-dependent branch is what makes ``vmap`` batch it by a loop)."""
    epsilon = params[0]
    sigma = params[1]
    energy = 0.0
    n = positions.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = positions[i] - positions[j]
            r2 = np.sum(d * d)
            if r2 < 6.25:
                s6 = (sigma * sigma / r2) ** 3
                energy = energy + 4.0 * epsilon * (s6 * s6 - s6)
    return energy


# -- the smoke test's program -----------------------------------------------------------


def tiny(x):
    return np.sum(np.sin(x) * x)


def jax_twin() -> types.ModuleType:
    """This module's functions with ``jax.numpy`` as ``np`` (the JAX peer's programs)."""
    import jax.numpy as jnp  # the optional peer, imported where it is used

    with open(__file__, encoding="utf-8") as handle:
        code = compile(handle.read(), __file__, "exec")
    twin = types.ModuleType(f"{__name__}_jax")
    twin.__dict__["__file__"] = __file__
    sys.modules[twin.__name__] = twin
    exec(code, twin.__dict__)  # noqa: S102 (this file)
    twin.np = jnp
    return twin


def summed(derivative):
    """The sum of ``derivative``'s elementwise values: what the next ``grad`` takes."""

    def total(x):
        return np.sum(derivative(x))

    return total
