"""Numba version of the fused kernels' helper (``numbax/runtime/fusion.py``): its plain
Python compiles as it is."""

from numbax.numba_backend.runtime_cache import register_jitable
from numbax.runtime.fusion import first

register_jitable(first)
