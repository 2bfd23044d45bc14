"""A pytree's cotangent filled in, not added up, where its entries are still zero.

Reverse mode gives a dict (or NamedTuple) argument its cotangent one read at a time:
``_ct_params = nxrt.zeros_like(params)``, then for each ``params["w"]`` the function read,
``_ct_params = nxrt.index_add(_ct_params, "w", _ct_w)``: a new record whose entry is the
zero plus the read's cotangent. Compiled, each such sum of arrays is Numba's
broadcasting loop (2,600 LLVM instructions for a matrix), emitted again in every
program's machine code: the first call of ``jit(grad)`` of an MLP whose parameters are
a dict took 5.15 s with them, 4.57 s without (numbax's helpers compiled anew).

Where the program shows that the entry is still the zero (:func:`fill_fresh_fields`),
the call becomes ``nxrt.field_filled``, which compiled puts the cotangent in the zero's
place when it has the zero's type, and otherwise adds as ``index_add`` does. The values
are the same but for the sign of a zero (``0.0 + -0.0`` is ``0.0``), which JAX, which
adds no zeros, gives as ``-0.0`` too.

An entry is known to be zero from the ``zeros_like`` call to the first ``index_add``
of its key (a string constant) along a chain of records in one block of straight-line
code; a block nested in it (an ``if``, a loop) is followed on its own, and whatever it
assigns is no longer known. Records are values (``index_add`` of a key returns a new
one), so reading one does not change what is known of it.
"""

from __future__ import annotations

import gast

from numbax.runtime import nxrt as runtime
from numbax.transform.analysis.dataflow import assigned_names
from numbax.transform.resolve import Resolver

_BLOCKS = ("body", "orelse", "finalbody")


def fill_fresh_fields(body: list[gast.stmt], resolver: Resolver) -> None:
    """In place, in ``body`` and each block nested in it: an ``index_add`` of a string
    key into a record whose entry at that key is still ``zeros_like``'s zero becomes
    ``nxrt.field_filled``."""
    filled: dict[str, frozenset[str]] = {}  # a record known zero but for these keys
    for stmt in body:
        for block in _BLOCKS:
            nested = getattr(stmt, block, None)
            if nested:
                fill_fresh_fields(nested, resolver)
        target, call = _assigned_call(stmt)
        callee = resolver.resolve(call.func) if call is not None else None
        if callee is runtime.zeros_like:
            filled[target] = frozenset()
            continue
        if callee is runtime.index_add:
            record, key = _record_and_key(call)
            if record in filled and key is not None and key not in filled[record]:
                call.func = gast.Attribute(call.func.value, "field_filled", gast.Load())
                filled[target] = filled[record] | {key}
                continue
        for name in assigned_names([stmt]):
            filled.pop(name, None)


def _assigned_call(stmt: gast.stmt) -> tuple[str | None, gast.Call | None]:
    """``(t, the call)`` for ``t = <call>``, else ``(None, None)``."""
    if (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
        and isinstance(stmt.value, gast.Call)
    ):
        return stmt.targets[0].id, stmt.value
    return None, None


def _record_and_key(call: gast.Call) -> tuple[str | None, str | None]:
    """``index_add(record, key, value)``'s record (a name) and key (a string constant)."""
    if len(call.args) != 3 or call.keywords:
        return None, None
    record, key = call.args[0], call.args[1]
    name = record.id if isinstance(record, gast.Name) else None
    is_string = isinstance(key, gast.Constant) and isinstance(key.value, str)
    return name, key.value if is_string else None
