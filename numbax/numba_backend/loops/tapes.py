"""Reverse mode's loop tapes as arrays under jit: the helpers the tapes pass writes calls to.

The pass (``passes/tapes.py``) rewrites reverse mode's tapes, Python lists pushed in a
loop and popped in the loop that runs it backwards, into arrays made at the first push:
``nxrt.tape(x, n)`` (a tape of ``n`` slots for values like ``x``), ``nxrt.grown(tape)``
(one that doubles when full), and in one GPU thread's code ``nxrt.local_tape(x, n)``
(``n`` a constant). Here are those helpers: plain Python, where each makes a list, and
their Numba versions. Compiled, a tape of numbers is an array of the value's dtype
(:class:`TapeArray`, so that a tape first typed from an int and then from a float
becomes one tape of floats), and a tape of anything else (an array, whose shape may
change from one iteration to the next) a list of slots.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import types
from numba.core.datamodel.models import ArrayModel
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload, register_jitable, register_model
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.redirects import lowering_helper


@lowering_helper
def tape(value: Any, length: int) -> Any:
    """A tape of ``length`` slots for values like ``value``, one per iteration of a loop
    (a list outside Numba, where it holds any value as a Python list does)."""
    return [value] * length


@lowering_helper
def grown(tape: Any) -> Any:
    """``tape`` with twice the slots, the first ones holding its values."""
    return tape + tape


@register_jitable
def list_tape(value: Any, length: int) -> list:
    """:func:`tape` in a file ``nx.export`` writes, which registers no Numba types of
    numbax's (:class:`TapeArray`): the list of slots, for values of any type."""
    return [value] * length


@register_jitable
def list_grown(tape: list) -> list:
    """:func:`grown` in a file ``nx.export`` writes (its tapes are lists)."""
    return tape + tape


class TapeArray(types.Array):
    """The type of a tape of numbers: a 1-d array that unifies with a tape of another
    dtype as their values do. Numba types the tape's making once per type it sees the
    value take while it infers: ``x = 0`` before a loop that adds floats to it gives
    first a tape of ints, then one of floats, which must become one tape of floats (two
    arrays of different dtypes do not unify)."""

    def __init__(self, dtype: types.Type) -> None:
        super().__init__(dtype, 1, "C", name=f"tape({dtype})")

    def unify(self, typingctx, other):
        if isinstance(other, TapeArray):
            dtype = typingctx.unify_pairs(self.dtype, other.dtype)
            if isinstance(dtype, (types.Number, types.Boolean)):
                return TapeArray(dtype)
        return None


register_model(TapeArray)(ArrayModel)


@intrinsic
def _as_tape(typingctx, array):
    """``array`` (1-d, C order) typed as a :class:`TapeArray`: the same value."""

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return TapeArray(array.dtype)(array), codegen


@overload(tape)
def _tape_jit(value, length):
    kind = types.unliteral(value)
    if isinstance(kind, (types.Number, types.Boolean)):
        dtype = as_dtype(kind)
        return lambda value, length: _as_tape(np.empty(length, dtype))
    return lambda value, length: [value] * length


@overload(grown)
def _grown_jit(tape):
    if isinstance(tape, TapeArray):
        dtype = as_dtype(tape.dtype)

        def impl(tape):
            more = np.empty(2 * len(tape), dtype)
            more[: len(tape)] = tape
            return _as_tape(more)

        return impl
    return lambda tape: tape + tape


@lowering_helper
def local_tape(value: Any, capacity: int) -> Any:
    """A tape of ``capacity`` slots for values like ``value`` in one GPU thread's local
    memory (``capacity`` a constant; a list outside device code, as :func:`tape`)."""
    return [value] * capacity
