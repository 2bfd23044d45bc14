"""JAX's ``jax.example_libraries.optimizers``: each optimizer is a triple of functions
``(init_fun, update_fun, get_params)`` over pytrees of arrays, with the same names,
arguments and state layout (:class:`OptimizerState`, a pytree), so a JAX training loop
runs with the import swapped::

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    opt_state = opt_init(params)
    for i in range(steps):
        opt_state = opt_update(i, grad_loss(get_params(opt_state), batch), opt_state)

The update runs in NumPy between calls of your (jitted) gradient: jit ``grad(loss)``,
not the update step. Step sizes are numbers or schedules (functions of the step
number): :func:`constant`, :func:`exponential_decay`, :func:`inverse_time_decay`,
:func:`polynomial_decay`, :func:`piecewise_constant`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from numbax import tree_util

__all__ = [
    "Optimizer",
    "OptimizerState",
    "adagrad",
    "adam",
    "adamax",
    "clip_grads",
    "constant",
    "exponential_decay",
    "inverse_time_decay",
    "l2_norm",
    "make_schedule",
    "momentum",
    "nesterov",
    "optimizer",
    "piecewise_constant",
    "polynomial_decay",
    "rmsprop",
    "rmsprop_momentum",
    "sgd",
]

Schedule = Callable[[int], float]
StepSize = float | Schedule


@dataclass(frozen=True)
class OptimizerState:
    """An optimizer's state over a pytree of parameters, packed as JAX packs it: the
    flattened per-leaf states, the parameters' tree structure, and each leaf state's
    structure. A pytree whose leaves are the states' arrays; unpacks as JAX's
    namedtuple does (``packed_state, tree_def, subtree_defs = state``)."""

    packed_state: list
    tree_def: Any
    subtree_defs: tuple

    def __iter__(self) -> Iterator[Any]:
        return iter((self.packed_state, self.tree_def, self.subtree_defs))


tree_util.register_pytree_node(
    OptimizerState,
    lambda state: ((state.packed_state,), (state.tree_def, state.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], *aux),
)


class Optimizer(NamedTuple):
    """What every optimizer here returns: ``(init_fn, update_fn, params_fn)``."""

    init_fn: Callable[[Any], OptimizerState]
    update_fn: Callable[[int, Any, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Any]


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]) -> Callable:
    """Lift an optimizer written for one array (``init(x0) -> state``, ``update(i, g,
    state) -> state``, ``get_params(state) -> x``; a state is a pytree of arrays) to
    pytrees of parameters, as JAX's decorator of the same name does."""

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree: Any) -> OptimizerState:
            x0_flat, tree = tree_util.tree_flatten(x0_tree)
            flats, subtrees = _flatten_each(init(np.asarray(x0)) for x0 in x0_flat)
            return OptimizerState(flats, tree, subtrees)

        def tree_update(i: int, grad_tree: Any, opt_state: OptimizerState) -> OptimizerState:
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_util.tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not "
                    f"match the parameter tree structure with which it was initialized: "
                    f"parameter tree {tree} and grad tree {grad_tree_def}."
                )
            states = map(tree_util.tree_unflatten, subtrees, states_flat)
            new = (update(i, np.asarray(g), s) for g, s in zip(grad_flat, states, strict=True))
            flats, new_subtrees = _flatten_each(new)
            for before, after in zip(subtrees, new_subtrees, strict=True):
                if before != after:
                    raise TypeError(
                        "optimizer update function produced an output structure that did "
                        f"not match its input structure: input {before} and output {after}."
                    )
            return OptimizerState(flats, tree, subtrees)

        def tree_get_params(opt_state: OptimizerState) -> Any:
            states_flat, tree, subtrees = opt_state
            states = map(tree_util.tree_unflatten, subtrees, states_flat)
            return tree_util.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


def _flatten_each(states: Any) -> tuple[list, tuple]:
    flats, subtrees = [], []
    for state in states:
        flat, subtree = tree_util.tree_flatten(state)
        flats.append(flat)
        subtrees.append(subtree)
    return flats, tuple(subtrees)


# -- optimizers -------------------------------------------------------------------------


@optimizer
def sgd(step_size: StepSize) -> tuple[Callable, Callable, Callable]:
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> np.ndarray:
        return x0

    def update(i: int, g: np.ndarray, x: np.ndarray) -> np.ndarray:
        return x - step_size(i) * g

    def get_params(x: np.ndarray) -> np.ndarray:
        return x

    return init, update, get_params


@optimizer
def momentum(step_size: StepSize, mass: float) -> tuple[Callable, Callable, Callable]:
    """Gradient descent with momentum: ``v = mass * v + g; x - step_size(i) * v``."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, _first


@optimizer
def nesterov(step_size: StepSize, mass: float) -> tuple[Callable, Callable, Callable]:
    """Nesterov's accelerated gradient: ``v = mass * v + g; x - step_size(i) * (mass *
    v + g)``."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, _first


@optimizer
def adagrad(step_size: StepSize, momentum: float = 0.9) -> tuple[Callable, Callable, Callable]:
    """Adagrad (Duchi et al., 2011) with momentum, as JAX's."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0), np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, g_sq, m = state
        g_sq = g_sq + np.square(g)
        positive = g_sq > 0
        g_sq_inv_sqrt = np.where(positive, 1.0 / np.sqrt(np.where(positive, g_sq, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(
    step_size: StepSize, gamma: float = 0.9, eps: float = 1e-8
) -> tuple[Callable, Callable, Callable]:
    """RMSProp (Tieleman and Hinton, 2012): ``x - step_size(i) * g / sqrt(avg_sq + eps)``."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + np.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / np.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, _first


@optimizer
def rmsprop_momentum(
    step_size: StepSize, gamma: float = 0.9, eps: float = 1e-8, momentum: float = 0.9
) -> tuple[Callable, Callable, Callable]:
    """RMSProp with momentum, as JAX's."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0), np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + np.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / np.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


@optimizer
def adam(
    step_size: StepSize, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> tuple[Callable, Callable, Callable]:
    """Adam (Kingma and Ba, 2014), with bias-corrected moments."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0), np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, m, v = state
        m = (1 - b1) * g + b1 * m  # first moment estimate
        v = (1 - b2) * np.square(g) + b2 * v  # second moment estimate
        mhat = m / (1 - np.asarray(b1, m.dtype) ** (i + 1))  # bias correction
        vhat = v / (1 - np.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (np.sqrt(vhat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(
    step_size: StepSize, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> tuple[Callable, Callable, Callable]:
    """AdaMax, Adam's infinity-norm variant (Kingma and Ba, 2014, section 7)."""
    step_size = make_schedule(step_size)

    def init(x0: np.ndarray) -> tuple:
        return x0, np.zeros_like(x0), np.zeros_like(x0)

    def update(i: int, g: np.ndarray, state: tuple) -> tuple:
        x, m, u = state
        m = (1 - b1) * g + b1 * m  # first moment estimate
        u = np.maximum(b2 * u, np.abs(g))  # weighted infinity norm
        x = x - (step_size(i) / (1 - np.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, _first


def _first(state: tuple) -> np.ndarray:
    return state[0]


# -- step-size schedules ----------------------------------------------------------------


def constant(step_size: float) -> Schedule:
    """The same step size at every step."""

    def schedule(i: int) -> float:
        return step_size

    return schedule


def exponential_decay(step_size: float, decay_steps: float, decay_rate: float) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``."""

    def schedule(i: int) -> float:
        return step_size * decay_rate ** (i / decay_steps)

    return schedule


def inverse_time_decay(
    step_size: float, decay_steps: float, decay_rate: float, staircase: bool = False
) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (``staircase``: with
    ``floor(i / decay_steps)``)."""

    def schedule(i: int) -> float:
        steps = np.floor(i / decay_steps) if staircase else i / decay_steps
        return step_size / (1 + decay_rate * steps)

    return schedule


def polynomial_decay(
    step_size: float, decay_steps: int, final_step_size: float, power: float = 1.0
) -> Schedule:
    """From ``step_size`` down to ``final_step_size`` over ``decay_steps`` steps along
    ``(1 - i / decay_steps) ** power``, then constant."""

    def schedule(step_num: int) -> float:
        step_num = min(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` for steps ``i`` with ``k`` boundaries below ``i``: ``values[0]``
    until ``boundaries[0]`` (inclusive), ..., ``values[-1]`` after the last boundary."""
    boundaries = np.asarray(boundaries)
    values = np.asarray(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")

    def schedule(i: int) -> Any:
        return values[np.sum(i > boundaries)]

    return schedule


def make_schedule(scalar_or_schedule: StepSize) -> Schedule:
    """A schedule as it is, a number as the :func:`constant` schedule."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if np.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


# -- utilities --------------------------------------------------------------------------


def l2_norm(tree: Any) -> Any:
    """The l2 norm of all the leaves of a pytree, as one vector."""
    leaves = tree_util.tree_leaves(tree)
    return np.sqrt(sum(np.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: float) -> Any:
    """The gradients scaled down so that their :func:`l2_norm` is at most ``max_norm``."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(
        lambda g: np.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree
    )
