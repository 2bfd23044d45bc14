"""The derivatives of a batched function: the batched derivative of the function.

The JVP of ``vmap(f)`` is ``vmap`` of ``f``'s JVP, and its VJP is ``vmap`` of ``f``'s
VJP, with the cotangents of the arguments the batch shares summed over the batch:

    def vjp_vmap_loss(w, x, y, _ct_out):
        _cts = _batched_vjp(w, x, y, _ct_out)
        return (nxrt.batch_sum(_cts[0]),)
"""

from __future__ import annotations

import gast

from numbax.transform.ad.common import runtime_call
from numbax.transform.cleanup import cleanup
from numbax.transform.nodes import assign, function, item, load

BATCHED_JVP = "_batched_jvp"
"""The name the JVP function calls the batched JVP by."""

BATCHED_VJP = "_batched_vjp"
"""The name the VJP function calls the batched VJP by."""

COTANGENTS = "_cts"


def jvp_function(name: str, params: list[str]) -> gast.FunctionDef:
    """``def <name>(<params>): return _batched_jvp(<params>)`` (the primal's parameters,
    then the tangents')."""
    call = gast.Call(load(BATCHED_JVP), [load(p) for p in params], [])
    return cleanup(function(name, params, [gast.Return(call)]))


def vjp_function(name: str, params: list[str], shared: list[bool]) -> gast.FunctionDef:
    """``def <name>(<params>)`` (the primal's parameters, then the output's cotangent):
    the batched VJP's cotangents, each ``shared`` one summed over the batch."""
    call = gast.Call(load(BATCHED_VJP), [load(p) for p in params], [])
    cotangents = [
        runtime_call("batch_sum", item(load(COTANGENTS), k))
        if summed
        else item(load(COTANGENTS), k)
        for k, summed in enumerate(shared)
    ]
    result = gast.Tuple(cotangents, gast.Load())
    return cleanup(function(name, params, [assign(COTANGENTS, call), gast.Return(result)]))
