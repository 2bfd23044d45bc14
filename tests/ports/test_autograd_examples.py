"""autograd's example programs (neural_net.py, rnn.py, lstm.py) ported by swapping
their imports (the ported modules sit next to this file and list what else changed):
each trains for a few iterations on small synthetic data of the original's shape, and
its gradient is checked against central finite differences on randomly chosen
coordinates of each parameter array, interpreted as autograd users run it. (Their
compiled gradients are timed by ``python -m benchmarks.compile``.)"""

from __future__ import annotations

import numpy as np
import pytest

import numbax as nx
from numbax.example_libraries import optimizers
from numbax.flatten_util import ravel_pytree
from numbax.tree_util import tree_leaves as leaves
from tests.ports import lstm, neural_net, rnn

EPS = 1e-6


def check_gradient_coordinates(loss, params, args=(), per_leaf=2, seed=0):
    """nx.grad(loss) at ``params`` (a pytree) agrees with central differences of
    ``loss`` along ``per_leaf`` randomly chosen coordinates of each parameter array."""
    flat, unravel = ravel_pytree(params)
    gradient = ravel_pytree(nx.grad(loss)(params, *args))[0]
    rng = np.random.default_rng(seed)
    sizes = [np.size(leaf) for leaf in leaves(params)]
    starts = np.cumsum([0, *sizes[:-1]])
    for start, size in zip(starts, sizes, strict=True):
        for k in start + rng.choice(size, size=min(per_leaf, size), replace=False):
            step = np.zeros_like(flat)
            step[k] = EPS
            up, down = loss(unravel(flat + step), *args), loss(unravel(flat - step), *args)
            np.testing.assert_allclose(
                gradient[k],
                (up - down) / (2 * EPS),
                rtol=1e-5,
                atol=1e-8,
                err_msg=f"coordinate {k} of {flat.size}",
            )


# -- neural_net.py: an MLP on MNIST-shaped data ----------------------------------------


def mnist_like(rs, count, pixels=784, classes=10):
    """Images of MNIST's size with one-hot labels a linear map of them decides."""
    images = rs.rand(count, pixels)
    labels = np.eye(classes)[np.argmax(images @ TEACHER, axis=1)]
    return images, labels


TEACHER = np.random.RandomState(1).randn(784, 10)


@pytest.fixture(scope="module")
def trained_net():
    rs = np.random.RandomState(0)
    train_images, train_labels = mnist_like(rs, 96)
    test_images, test_labels = mnist_like(rs, 32)
    init, trained, objective, printed = neural_net.train(
        train_images,
        train_labels,
        test_images,
        test_labels,
        layer_sizes=(784, 16, 8, 10),
        L2_reg=0.01,
        batch_size=32,
        num_epochs=4,
        step_size=0.01,
    )
    return init, trained, objective, printed, (train_images, train_labels)


def test_neural_net_trains(trained_net):
    init, trained, _, printed, (images, labels) = trained_net
    before = -neural_net.log_posterior(init, images, labels, 0.01)
    after = -neural_net.log_posterior(trained, images, labels, 0.01)
    assert after < 0.8 * before, (before, after)
    assert len(printed) == 1 + 4  # the header and one line per epoch
    assert neural_net.accuracy(trained, images, labels) > neural_net.accuracy(init, images, labels)


def test_neural_net_trains_with_jaxs_optimizer_triple():
    """The same objective and nx.grad, stepped by example_libraries.optimizers' adam
    (``init``/``update``/``get_params``), as a JAX user ports the loop."""
    rs = np.random.RandomState(0)
    images, labels = mnist_like(rs, 64)
    params = neural_net.init_random_params(0.1, [784, 16, 10], rs=np.random.RandomState(3))

    def objective(params):
        return -neural_net.log_posterior(params, images, labels, 0.01)

    init, update, get_params = optimizers.adam(0.01)
    state = init(params)
    gradient = nx.grad(objective)
    for step in range(20):
        state = update(step, gradient(get_params(state)), state)
    assert objective(get_params(state)) < 0.8 * objective(params)


def test_neural_net_gradient_matches_finite_differences(trained_net):
    init, trained, objective, _, _ = trained_net
    check_gradient_coordinates(objective, init, (1,))
    check_gradient_coordinates(objective, trained, (2,), seed=1)


# -- rnn.py and lstm.py: character models on a generated text file ---------------------


@pytest.fixture(scope="module")
def text_sequences(tmp_path_factory):
    """The originals train on the lines of their own source file: here, lines of random
    words, encoded by the example's own ``build_dataset``."""
    rs = np.random.RandomState(2)
    words = ["numpy", "grad", "loss", "adam", "step", "state", "cell", "gate"]
    lines = [" ".join(rs.choice(words, size=4)) for _ in range(8)]
    path = tmp_path_factory.mktemp("text") / "lines.txt"
    path.write_text("\n".join(lines) + "\n")
    return rnn.build_dataset(str(path), sequence_length=10, alphabet_size=128, max_lines=8)


@pytest.mark.parametrize("example", [rnn, lstm], ids=["rnn", "lstm"])
def test_character_model_trains_and_generates(example, text_sequences, capsys):
    init, trained, training_loss, printed = example.train(
        text_sequences, state_size=6, step_size=0.1, num_iters=21
    )
    assert len(printed) == 3 and printed[-1] < 0.7 * printed[0], printed
    out = capsys.readouterr().out
    assert "Train loss" in out and "Predicted text" in out
    text = example.generate(trained, num_letters=4, rs=np.random.RandomState(0))
    assert isinstance(text, str) and len(text) == 4
    check_gradient_coordinates(training_loss, init, (0,))
    check_gradient_coordinates(training_loss, trained, (0,), seed=1)


@pytest.mark.parametrize("example", [rnn, lstm], ids=["rnn", "lstm"])
def test_character_model_trains_with_jaxs_optimizer_triple(example, text_sequences):
    """The example's log-likelihood and nx.grad, stepped by example_libraries.optimizers'
    adam (``init``/``update``/``get_params``) on its dict of parameters."""
    create, log_likelihood = (
        (rnn.create_rnn_params, rnn.rnn_log_likelihood)
        if example is rnn
        else (lstm.init_lstm_params, lstm.lstm_log_likelihood)
    )
    params = create(input_size=128, state_size=6, output_size=128, param_scale=0.01)

    def loss(params):
        return -log_likelihood(params, text_sequences, text_sequences)

    init, update, get_params = optimizers.adam(0.1)
    state = init(params)
    gradient = nx.grad(loss)
    for step in range(15):
        state = update(step, gradient(get_params(state)), state)
    assert loss(get_params(state)) < 0.8 * loss(params)
