"""Random numbers following ``jax.random``: explicit keys, no global state.

The keys, the hashing and the basic samplers are in :mod:`numbax.random.core`, the
other distributions in :mod:`numbax.random.more`; see core's docstring for the design.
Importing this package also makes ``nx.jit`` compile calls of its functions (see
:func:`numbax.numba_backend.random.jit.register_random`).
"""

from numbax.numba_backend.random import jit as _random_jit
from numbax.numba_backend.random import jit_more as _random_jit_more
from numbax.random import core as _core
from numbax.random import more as _more
from numbax.random.core import *  # noqa: F403 (the names of core.__all__)
from numbax.random.more import *  # noqa: F403 (the names of more.__all__)

# A sampler is added to its module's ``__all__`` only: it is exported and registered here.
__all__ = sorted([*_core.__all__, *_more.__all__])


def _compile_under_jit() -> None:
    """Overload each function of ``__all__`` with its Numba implementation, found by name.

    Why here: the implementations live in ``numba_backend``, a layer below this package,
    which therefore cannot import these functions to register them itself.
    """
    implementations = _random_jit.IMPLEMENTATIONS | _random_jit_more.IMPLEMENTATIONS
    for name in __all__:
        _random_jit.register_random(globals()[name], implementations[name])


_compile_under_jit()
