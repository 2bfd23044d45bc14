"""The programs ``python -m numbax precompile`` runs to compile numbax's runtime for the
common dtypes and ranks (``codegen/installed_runtime.py``).

What they are for is the helpers their compiled code calls, not their own code: each
family of operations users write (elementwise math and broadcasting, reductions,
products, the derivatives of each, Jacobians, ``vmap``) in float64 and float32, on 1-D
and 2-D arrays, with parameters as an array, a tuple, a list and a nested dict. Their
generated code is compiled too, into a scratch cache that is thrown away. About 80 s
on one core.

Run as ``python -m numbax.precompile_programs`` in a process whose cache is that scratch
directory; it prints nothing. (Run so, its functions are a user's ``__main__``: numbax
transforms its users' code, and takes its own modules' functions for helpers with
rules.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import numbax as nx


def elementwise_math(a, b):
    shifted = a - 0.5 * b
    return (
        np.tanh(a) * b
        + np.exp(-np.abs(shifted))
        + np.log1p(a * a)
        + np.sqrt(b * b + 1.0)
        + np.sin(a) * np.cos(b)
        + np.maximum(a, b)
        + shifted**2
        + a / (1.0 + b * b)
    )


def reductions(m):
    rows = np.sum(m, axis=1, keepdims=True)
    centered = m - np.mean(m, axis=0)
    return np.sum(centered * centered) + np.max(rows) + np.sum(np.mean(m, axis=1))


def linear_least_squares(coefficients, features, targets):
    slope, intercept = coefficients
    residual = features @ slope + intercept - targets
    return np.mean(residual**2)


def logistic_regression(weights, features, labels):
    logits = features @ weights
    return np.mean(np.log1p(np.exp(-logits)) + (1.0 - labels) * logits)


def softmax_cross_entropy(logits, labels):
    top = np.max(logits, axis=1, keepdims=True)
    normalizer = top + np.log(np.sum(np.exp(logits - top), axis=1, keepdims=True))
    return -np.mean(np.sum((logits - normalizer) * labels, axis=1))


def layered_network(layers, features, labels):
    activations = features
    for weight, bias in layers[:-1]:
        activations = np.tanh(activations @ weight + bias)
    weight, bias = layers[-1]
    return softmax_cross_entropy(activations @ weight + bias, labels)


def named_network(parameters, features, targets):
    hidden = parameters["hidden"]
    output = parameters["output"]
    activations = np.tanh(features @ hidden["weight"] + hidden["bias"])
    predictions = activations @ output["weight"] + output["bias"]
    return np.mean((predictions - targets) ** 2)


def squashed(v):
    return np.tanh(v) * v + 1.0 / (1.0 + np.exp(-v))


def total_squashed(v):
    return np.sum(squashed(v))


slope_of_squashed = nx.grad(total_squashed)


def total_second_derivative(v):
    """The elementwise second derivative summed: ``grad`` of a sum of a gradient."""
    return np.sum(slope_of_squashed(v))


def per_example(weights, features):
    return np.tanh(weights @ features)


def _run(dtype: Any, jit: Callable = nx.jit) -> None:
    """Every program on arrays of ``dtype``, each wrapped in ``jit`` (the identity runs
    them interpreted, as the tests check them)."""
    generator = np.random.default_rng(0)

    def sample(*shape: int) -> Any:
        return generator.standard_normal(shape).astype(dtype)

    vector, other = sample(16), sample(16)
    matrix, other_matrix = sample(12, 16), sample(12, 16)
    features, labels = sample(12, 8), sample(12, 3)
    targets = sample(12)
    calls: list[tuple[Callable, tuple]] = [
        (jit(elementwise_math), (vector, other)),
        (jit(elementwise_math), (matrix, other_matrix)),
        (jit(nx.value_and_grad(reductions)), (matrix,)),
        (
            jit(nx.value_and_grad(linear_least_squares)),
            ((sample(8), sample(1)[0]), features, targets),
        ),
        (jit(nx.grad(logistic_regression)), (sample(8), features, np.sign(targets))),
        (
            jit(nx.grad(layered_network)),
            ([(sample(8, 6), sample(6)), (sample(6, 3), sample(3))], features, labels),
        ),
        (
            jit(nx.grad(named_network)),
            (
                {
                    "hidden": {"weight": sample(8, 6), "bias": sample(6)},
                    "output": {"weight": sample(6, 3), "bias": sample(3)},
                },
                features,
                labels,
            ),
        ),
        (jit(nx.jacfwd(squashed)), (vector,)),
        (jit(nx.jacrev(squashed)), (vector,)),
        (jit(nx.hessian(total_squashed)), (vector,)),
        (jit(nx.grad(total_second_derivative)), (vector,)),
        (jit(nx.vmap(per_example, in_axes=(None, 0))), (sample(4, 8), features)),
        (
            jit(nx.vmap(nx.grad(logistic_regression), in_axes=(None, 0, 0))),
            (sample(8), features, targets),
        ),
    ]
    for function, args in calls:
        function(*args)


def main() -> None:
    """Run every program in float64, then in float32."""
    for dtype in (np.float64, np.float32):
        _run(dtype)


if __name__ == "__main__":
    main()
