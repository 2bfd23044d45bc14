"""numbax: JAX's transformations for plain NumPy code, by source rewriting and Numba.

Compile ordinary NumPy functions with ``nx.jit``, differentiate them with ``nx.grad``
and its family, batch them with ``nx.vmap``, and read what was generated with
``nx.show``.
"""

from numbax import lax, random, tree_util
from numbax.api.autodiff import (
    grad,
    hessian,
    jacfwd,
    jacobian,
    jacrev,
    jvp,
    linearize,
    value_and_grad,
    vjp,
)
from numbax.api.custom import checkpoint, custom_jvp, custom_vjp, remat
from numbax.api.jit import Jitted, jit
from numbax.api.show import block_until_ready, show, source
from numbax.api.vmap import vmap
from numbax.errors import CompileError, TransformError
from numbax.version import __version__

__all__ = [
    "CompileError",
    "Jitted",
    "TransformError",
    "__version__",
    "block_until_ready",
    "checkpoint",
    "custom_jvp",
    "custom_vjp",
    "grad",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linearize",
    "random",
    "remat",
    "show",
    "source",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]
