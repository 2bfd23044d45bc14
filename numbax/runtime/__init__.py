"""The helpers generated code calls as ``nxrt.<name>``, as plain NumPy (no Numba import).

Generated code runs unchanged interpreted and under ``nx.jit``: interpreted, these
functions are what runs; compiled, ``numba_backend`` supplies their Numba versions.
"""
