"""autograd's ``autograd.misc.optimizers``: ``sgd`` (with momentum), ``rmsprop`` and
``adam`` take the gradient function and run the loop themselves, so an autograd
program ports with ``from numbax.misc.optimizers import adam``::

    params = adam(nx.grad(objective), init_params, step_size=0.01, num_iters=500,
                  callback=print_perf)

``grad(params, i)`` is called with the current parameters and the iteration number;
``callback(params, i, g)``, if given, before each step. The parameters may be a pytree
(dicts, lists, tuples of arrays): as in autograd, the optimizer works on them flattened
into one vector (:func:`numbax.flatten_util.ravel_pytree`) and returns them in their
structure. (JAX's ``init/update/get_params`` optimizers are in
:mod:`numbax.example_libraries.optimizers`.)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from numbax.flatten_util import ravel_pytree

__all__ = ["adam", "rmsprop", "sgd", "unflatten_optimizer"]

Gradient = Callable[[Any, int], Any]
Callback = Callable[[Any, int, Any], Any] | None


def unflatten_optimizer(optimize: Callable) -> Callable:
    """Let an optimizer written for one flat vector take and return a pytree, calling
    ``grad`` and ``callback`` with the pytree (autograd's decorator of the same name)."""

    @functools.wraps(optimize)
    def _optimize(grad: Gradient, x0: Any, callback: Callback = None, *args: Any, **kwargs: Any):
        flat_x0, unflatten = ravel_pytree(x0)

        def flat_grad(x: np.ndarray, i: int) -> np.ndarray:
            return ravel_pytree(grad(unflatten(x), i))[0]

        flat_callback = None
        if callback is not None:

            def flat_callback(x: np.ndarray, i: int, g: np.ndarray) -> Any:
                return callback(unflatten(x), i, unflatten(g))

        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))

    return _optimize


@unflatten_optimizer
def sgd(
    grad: Gradient,
    x: np.ndarray,
    callback: Callback = None,
    num_iters: int = 200,
    step_size: float = 0.1,
    mass: float = 0.9,
) -> np.ndarray:
    """Stochastic gradient descent with momentum; ``grad(x, i)`` is the gradient."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(
    grad: Gradient,
    x: np.ndarray,
    callback: Callback = None,
    num_iters: int = 100,
    step_size: float = 0.1,
    gamma: float = 0.9,
    eps: float = 1e-8,
) -> np.ndarray:
    """Root mean squared prop: see Adagrad paper for details."""
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@unflatten_optimizer
def adam(
    grad: Gradient,
    x: np.ndarray,
    callback: Callback = None,
    num_iters: int = 100,
    step_size: float = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> np.ndarray:
    """Adam as described in http://arxiv.org/pdf/1412.6980.pdf."""
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m  # first moment estimate
        v = (1 - b2) * (g**2) + b2 * v  # second moment estimate
        mhat = m / (1 - b1 ** (i + 1))  # bias correction
        vhat = v / (1 - b2 ** (i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return x
