"""Helpers the tests share, each defined once: finite-difference derivatives and checks of
numbax's against them (``fd``), comparisons of pytrees leaf by leaf (``trees``) and of
arrays bit for bit (``arrays``), JAX as a reference in float64 (``jax_x64``), the file
line of a test function's text (``source``), counts of Numba's cache hits and misses and
modules unique to a test (``caches``), and small programs covering the core language with
example arguments (``programs``)."""
