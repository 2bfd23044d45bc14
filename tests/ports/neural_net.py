# ruff: noqa: B007, B008, B905  (the example's code is kept as autograd writes it)
"""autograd's ``examples/neural_net.py`` (a multi-layer perceptron classifying MNIST
digits), ported to numbax by swapping its imports:

    autograd.numpy               -> numpy
    autograd.numpy.random        -> numpy.random
    autograd.scipy.special       -> scipy.special
    autograd.grad                -> numbax.grad
    autograd.misc.optimizers     -> numbax.misc.optimizers

What else changed, and why:

* ``l2_norm`` sums the squares of each layer's weights and biases in a loop, where
  autograd flattens the parameters (``autograd.misc.flatten.flatten``) and takes the dot
  product of the vector with itself. numbax's flattening,
  ``numbax.flatten_util.ravel_pytree``, runs on a pytree outside a transformation but
  cannot be differentiated where it is called inside one (it is refused with a
  ``TransformError``), so the flattening is written out. The value is the same.
* The script's ``__main__`` block is the function ``train``, which takes the data (the
  original loads MNIST) and the sizes, and returns the trained parameters with what the
  callback printed, so that a test can run it on small synthetic data.
"""

from __future__ import annotations

import numpy as np
import numpy.random as npr
from scipy.special import logsumexp

from numbax import grad
from numbax.misc.optimizers import adam


def init_random_params(scale, layer_sizes, rs=npr.RandomState(0)):
    """A list of (weights, biases) pairs, one per layer of the net."""
    return [
        (
            scale * rs.randn(m, n),  # weight matrix
            scale * rs.randn(n),  # bias vector
        )
        for m, n in zip(layer_sizes[:-1], layer_sizes[1:])
    ]


def neural_net_predict(params, inputs):
    """The normalized class log-probabilities of a tanh network: ``params`` is a list of
    (weights, bias) pairs and ``inputs`` an (N x D) matrix."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    """The squared L2 norm of all the parameters (see the module's docstring)."""
    total = 0.0
    for W, b in params:
        total = total + np.sum(W * W) + np.sum(b * b)
    return total


def log_posterior(params, inputs, targets, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_lik = np.sum(neural_net_predict(params, inputs) * targets)
    return log_prior + log_lik


def accuracy(params, inputs, targets):
    target_class = np.argmax(targets, axis=1)
    predicted_class = np.argmax(neural_net_predict(params, inputs), axis=1)
    return np.mean(predicted_class == target_class)


def train(
    train_images,
    train_labels,
    test_images,
    test_labels,
    layer_sizes=(784, 200, 100, 10),
    L2_reg=1.0,
    param_scale=0.1,
    batch_size=256,
    num_epochs=5,
    step_size=0.001,
):
    """The original's ``__main__`` block: Adam on minibatches of the training set, with
    a callback that prints the accuracies once per epoch. Returns the initial and the
    optimized parameters, the training objective, and the lines the callback printed."""
    layer_sizes = list(layer_sizes)
    init_params = init_random_params(param_scale, layer_sizes)

    num_batches = int(np.ceil(len(train_images) / batch_size))

    def batch_indices(iter):
        idx = iter % num_batches
        return slice(idx * batch_size, (idx + 1) * batch_size)

    # Define training objective
    def objective(params, iter):
        idx = batch_indices(iter)
        return -log_posterior(params, train_images[idx], train_labels[idx], L2_reg)

    # Get gradient of objective using numbax.
    objective_grad = grad(objective)

    printed = ["     Epoch     |    Train accuracy  |       Test accuracy  "]
    print(printed[0])

    def print_perf(params, iter, gradient):
        if iter % num_batches == 0:
            train_acc = accuracy(params, train_images, train_labels)
            test_acc = accuracy(params, test_images, test_labels)
            printed.append(f"{iter // num_batches:15}|{train_acc:20}|{test_acc:20}")
            print(printed[-1])

    # The optimizers provided can optimize lists, tuples, or dicts of parameters.
    optimized_params = adam(
        objective_grad,
        init_params,
        step_size=step_size,
        num_iters=num_epochs * num_batches,
        callback=print_perf,
    )
    return init_params, optimized_params, objective, printed
