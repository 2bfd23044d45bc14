# ruff: noqa: B007, B008, B905  (the example's code is kept as autograd writes it)
"""autograd's ``examples/lstm.py`` (a long short-term memory character model,
vectorized over several sequences of one fixed length), ported to numbax by swapping
its imports:

    autograd.numpy               -> numpy
    autograd.numpy.random        -> numpy.random
    autograd.scipy.special       -> scipy.special
    autograd.grad                -> numbax.grad
    autograd.misc.optimizers     -> numbax.misc.optimizers
    rnn (the example next to it) -> tests.ports.rnn

What else changed, and why: the script's ``__main__`` block is the function ``train``,
which takes the encoded training sequences (the original encodes the lines of its own
source file) and the sizes, and returns the trained parameters with the losses the
callback printed, so that a test can run it on small synthetic data; the text
generation after training is ``generate``.
"""

from __future__ import annotations

import numpy as np
import numpy.random as npr
from scipy.special import logsumexp

from numbax import grad
from numbax.misc.optimizers import adam
from tests.ports.rnn import concat_and_multiply, one_hot_to_string, sigmoid, string_to_one_hot


def init_lstm_params(input_size, state_size, output_size, param_scale=0.01, rs=npr.RandomState(0)):
    def rp(*shape):
        return rs.randn(*shape) * param_scale

    return {
        "init cells": rp(1, state_size),
        "init hiddens": rp(1, state_size),
        "change": rp(input_size + state_size + 1, state_size),
        "forget": rp(input_size + state_size + 1, state_size),
        "ingate": rp(input_size + state_size + 1, state_size),
        "outgate": rp(input_size + state_size + 1, state_size),
        "predict": rp(state_size + 1, output_size),
    }


def lstm_predict(params, inputs):
    def update_lstm(input, hiddens, cells):
        change = np.tanh(concat_and_multiply(params["change"], input, hiddens))
        forget = sigmoid(concat_and_multiply(params["forget"], input, hiddens))
        ingate = sigmoid(concat_and_multiply(params["ingate"], input, hiddens))
        outgate = sigmoid(concat_and_multiply(params["outgate"], input, hiddens))
        cells = cells * forget + ingate * change
        hiddens = outgate * np.tanh(cells)
        return hiddens, cells

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)  # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    cells = np.repeat(params["init cells"], num_sequences, axis=0)

    output = [hiddens_to_output_probs(hiddens)]
    for input in inputs:  # Iterate over time steps.
        hiddens, cells = update_lstm(input, hiddens, cells)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def lstm_log_likelihood(params, inputs, targets):
    logprobs = lstm_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


# -- training (the original's __main__ block) ------------------------------------------


def train(train_inputs, state_size=40, param_scale=0.01, step_size=0.1, num_iters=1000):
    """Adam on the negative log-likelihood of ``train_inputs`` (time steps x sequences x
    characters), printing the loss every 10 iterations. Returns the initial and trained
    parameters, the training loss, and the losses the callback printed (with the
    predicted text)."""
    num_chars = train_inputs.shape[2]
    init_params = init_lstm_params(
        input_size=num_chars, output_size=num_chars, state_size=state_size, param_scale=param_scale
    )

    def print_training_prediction(weights):
        print("Training text                         Predicted text")
        logprobs = np.asarray(lstm_predict(weights, train_inputs))
        for t in range(logprobs.shape[1]):
            training_text = one_hot_to_string(train_inputs[:, t, :])
            predicted_text = one_hot_to_string(logprobs[:, t, :])
            print(training_text.replace("\n", " ") + "|" + predicted_text.replace("\n", " "))

    def training_loss(params, iter):
        return -lstm_log_likelihood(params, train_inputs, train_inputs)

    printed = []

    def callback(weights, iter, gradient):
        if iter % 10 == 0:
            printed.append(training_loss(weights, 0))
            print("Iteration", iter, "Train loss:", printed[-1])
            print_training_prediction(weights)

    # Build gradient of loss function using numbax.
    training_loss_grad = grad(training_loss)

    print("Training LSTM...")
    trained_params = adam(
        training_loss_grad, init_params, step_size=step_size, num_iters=num_iters, callback=callback
    )
    return init_params, trained_params, training_loss, printed


def generate(trained_params, num_chars=128, num_letters=30, rs=npr):
    """Text sampled from the trained model, one character at a time."""
    text = ""
    for i in range(num_letters):
        seqs = string_to_one_hot(text, num_chars)[:, np.newaxis, :]
        logprobs = lstm_predict(trained_params, seqs)[-1].ravel()
        text += chr(rs.choice(len(logprobs), p=np.exp(logprobs)))
    return text
