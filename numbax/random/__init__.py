"""Random numbers following ``jax.random``: explicit keys, no global state.

The keys, the hashing and the basic samplers are in :mod:`numbax.random.core`, the
other distributions in :mod:`numbax.random.more`; see core's docstring for the design.
"""

from numbax.random import core as _core
from numbax.random import more as _more
from numbax.random.core import *  # noqa: F403
from numbax.random.more import *  # noqa: F403

__all__ = _core.__all__ + _more.__all__
