"""Automatic differentiation as source transformations: forward mode (``forward.py``),
reverse mode (``reverse.py`` and its ``reverse_*.py`` parts, with what it tapes, reads
again and recomputes), the Jacobians built from them (``jacobians.py``), and the pieces
both modes share (``common.py``). Each works on the core language ``normalize`` produces
and emits it again, so every transformation reads the output of every other."""
