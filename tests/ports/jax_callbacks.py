"""The snippets of JAX's "External callbacks" guide (docs/external-callbacks.md), ported
to numbax by swapping ``import jax`` for ``import numbax as nx`` and ``jax.numpy`` for
``numpy``; the rest is as the guide writes it.

``f`` declares ``vmap_method="sequential"``, which recent JAX asks for before it batches
a ``pure_callback``; the Bessel function ``jv`` declares ``"broadcast_all"`` as the
guide's current version does (older ones wrote ``vectorized=True``).

Not yet as in JAX: ``nx.jit(j1)`` fails to compile, as Numba cannot type the abstract
``np.integer`` in ``jv``'s check ``np.issubdtype(v.dtype, np.integer)``; interpreted,
batched and differentiated (``grad``, ``hessian``), ``j1`` runs as the guide shows.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.special

import numbax as nx
from numbax import debug
from numbax.experimental import io_callback

# -- jax.debug.print in a jitted function ----------------------------------------------


@nx.jit
def f_print(x):
    y = x + 1
    nx.debug.print("intermediate value: {}", y)
    return y * 2


# -- pure_callback of a NumPy function -------------------------------------------------


def f_host(x):
    # call a numpy (not jax.numpy) operation:
    return np.sin(x).astype(x.dtype)


def f(x):
    result_shape = nx.ShapeDtypeStruct(x.shape, x.dtype)
    return nx.pure_callback(f_host, result_shape, x, vmap_method="sequential")


# -- io_callback of a random generator with state --------------------------------------

global_rng = np.random.default_rng(0)


def host_side_random_like(x):
    """Generate a random array like x using the global_rng state"""
    # We have two side-effects here:
    # - printing the shape and dtype
    # - calling global_rng, thus updating its state
    print(f"generating {x.dtype}{list(x.shape)}")
    return global_rng.uniform(size=x.shape).astype(x.dtype)


@nx.jit
def numpy_random_like(x):
    return io_callback(host_side_random_like, x, x)


# -- debug.callback --------------------------------------------------------------------


def log_value(x):
    # This could be an actual logging call; we'll use
    # print() for demonstration
    print("log:", x)


@nx.jit
def f_log(x):
    debug.callback(log_value, x)
    return x


# -- pure_callback of SciPy with custom_jvp --------------------------------------------


def jv(v, z):
    v, z = np.asarray(v), np.asarray(z)

    # Require the order v to be integer type: this simplifies
    # the JVP rule below.
    assert np.issubdtype(v.dtype, np.integer)

    # Promote the input to inexact (float/complex).
    z = z.astype(np.result_type(float, z.dtype))

    # Wrap scipy function to return the expected dtype.
    _scipy_jv = lambda v, z: scipy.special.jv(v, z).astype(z.dtype)  # noqa: E731

    # Define the expected shape & dtype of output.
    result_shape_dtype = nx.ShapeDtypeStruct(
        shape=np.broadcast_shapes(v.shape, z.shape), dtype=z.dtype
    )

    # Use vmap_method="broadcast_all" because scipy.special.jv handles broadcasted inputs.
    return nx.pure_callback(_scipy_jv, result_shape_dtype, v, z, vmap_method="broadcast_all")


jv = nx.custom_jvp(jv)


@jv.defjvp
def _jv_jvp(primals, tangents):
    v, z = primals
    _, z_dot = tangents  # Note: v_dot is always 0 because v is integer.
    jv_minus_1, jv_plus_1 = jv(v - 1, z), jv(v + 1, z)
    djv_dz = np.where(v == 0, -jv_plus_1, 0.5 * (jv_minus_1 - jv_plus_1))
    return jv(v, z), z_dot * djv_dz


j1 = partial(jv, 1)
