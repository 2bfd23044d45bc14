"""JAX's ``jax.debug``: see values while transformed code runs.

``nx.debug.print("x = {x}", x=x)`` prints the value ``x`` has when the code runs (under
``nx.jit`` too), and ``nx.debug.callback(fun, *args)`` calls any Python function with
them. Both are transparent to derivatives (under ``grad`` they see the primal values,
once, in the forward pass) and run once per example under ``vmap``.
"""

from numbax.runtime.callbacks import debug_callback as callback
from numbax.runtime.callbacks import debug_print as print  # noqa: A004 (JAX's name)

__all__ = ["callback", "print"]
