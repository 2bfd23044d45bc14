"""Host callbacks (``numbax/runtime/callbacks.py``) as the transformations see them.

``debug.print`` and ``debug.callback`` return nothing and are transparent: declared
without derivative, they stay in derivative code and see the primal values. A
``ShapeDtypeStruct`` is a declaration, a constant. ``pure_callback`` and ``io_callback``
have no rule on purpose: the Python they call cannot be differentiated, so a call on a
value that carries a derivative is refused (with their own advice: wrap it in
``nx.custom_jvp``), as in JAX.
"""

from numbax.runtime.callbacks import ShapeDtypeStruct, debug_callback, debug_print
from numbax.transform.rules.registry import nondifferentiable

nondifferentiable([ShapeDtypeStruct, debug_callback, debug_print])
