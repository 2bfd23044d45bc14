"""Host callbacks (``numbax/runtime/callbacks.py``) as the transformations see them.

``debug.print`` and ``debug.callback`` return nothing and are transparent: declared
without derivative, they stay in derivative code and see the primal values. A
``ShapeDtypeStruct`` is a declaration, a constant. ``pure_callback`` and ``io_callback``
have no rule on purpose: the Python they call cannot be differentiated, so a call on a
value that carries a derivative is refused (with their own advice: wrap it in
``nx.custom_jvp``), as in JAX.
"""

from numbax.runtime.callbacks import ShapeDtypeStruct, batch_spec, debug_callback, debug_print
from numbax.transform.rules.batch_kinds import BatchOp, Decline
from numbax.transform.rules.registry import nondifferentiable


def _declaration(op: BatchOp) -> tuple[str, int | None]:
    """``ShapeDtypeStruct(shape, dtype)`` of one example: its rank is the number of
    dimensions it declares (what ``vmap`` needs of a ``pure_callback``'s result)."""
    if op.batched:
        raise Decline("a ShapeDtypeStruct of a value that depends on the batch")
    shape = op.value("args0") if "args0" in op.bound else None
    return "", None if shape is None or shape.elements is None else len(shape.elements)


nondifferentiable([ShapeDtypeStruct], batch=_declaration)
nondifferentiable([debug_callback, debug_print, batch_spec])
