"""Random numbers following ``jax.random``: explicit keys, no global state.

The keys, the hashing and the basic samplers are in :mod:`numbax.random.core`, the
other distributions in :mod:`numbax.random.more`; see core's docstring for the design.
Importing this package also makes ``nx.jit`` compile calls of its functions (see
:func:`numbax.numba_backend.random.jit.register_random`).
"""

from numbax.numba_backend.random import jit as _random_jit
from numbax.numba_backend.random import jit_more as _random_jit_more
from numbax.random.core import (
    PRNGKey,
    bits,
    fold_in,
    key,
    key_data,
    normal,
    split,
    uniform,
    wrap_key_data,
)
from numbax.random.more import (
    bernoulli,
    beta,
    categorical,
    choice,
    exponential,
    gamma,
    multivariate_normal,
    permutation,
    randint,
    truncated_normal,
)

__all__ = [
    "PRNGKey",
    "bernoulli",
    "beta",
    "bits",
    "categorical",
    "choice",
    "exponential",
    "fold_in",
    "gamma",
    "key",
    "key_data",
    "multivariate_normal",
    "normal",
    "permutation",
    "randint",
    "split",
    "truncated_normal",
    "uniform",
    "wrap_key_data",
]


def _compile_under_jit() -> None:
    """Overload each function of ``__all__`` with its Numba implementation, found by name.

    Why here: the implementations live in ``numba_backend``, a layer below this package,
    which therefore cannot import these functions to register them itself.
    """
    implementations = _random_jit.IMPLEMENTATIONS | _random_jit_more.IMPLEMENTATIONS
    for name in __all__:
        _random_jit.register_random(globals()[name], implementations[name])


_compile_under_jit()
