"""The Threefry-2x32 counter-based hash (Salmon et al., 2011), as used by JAX.

``threefry2x32`` only does uint32 arithmetic on its arguments (no Python objects, no
data-dependent branches), so the same code hashes whole NumPy arrays at once and can
later be compiled element-wise by Numba.  Pass arrays rather than NumPy scalars: uint32
scalar arithmetic warns on the (intended) wrap-around.
"""

from __future__ import annotations

import numpy as np

_ROTATIONS = (
    (np.uint32(13), np.uint32(15), np.uint32(26), np.uint32(6)),
    (np.uint32(17), np.uint32(29), np.uint32(16), np.uint32(24)),
)
_PARITY = np.uint32(0x1BD11BDA)
_WORD_BITS = np.uint32(32)


def _rotl(x, r):
    return (x << r) | (x >> (_WORD_BITS - r))


def threefry2x32(k0, k1, x0, x1):
    """Hash the counter pairs ``(x0, x1)`` under the key ``(k0, k1)``; all uint32.

    20 rounds with the Threefry-2x32 rotation constants and a key injection every 4
    rounds, as in Salmon et al. (2011) and JAX's ``threefry2x32`` primitive.
    Returns the two hashed words.
    """
    ks = (k0, k1, k0 ^ k1 ^ _PARITY)
    x0 = x0 + ks[0]
    x1 = x1 + ks[1]
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + np.uint32(i + 1)
    return x0, x1
