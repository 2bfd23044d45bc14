"""Gradients computed only for their shape and dtype, not computed.

``grad`` of ``np.sum(derivative(x))``, with ``derivative = grad(f)`` (autograd's way to
an elementwise higher derivative), reads the inner gradient's value for two things
only: the dtype of the seed (``nxrt.seed_of_total``, once fusion has dropped the sum)
and the shape its cotangent is spread over (``nxrt.broadcast_reduced``). The VJP of
``derivative`` that follows computes that gradient again, as it needs it. Compiled, the
call still ran, and compiled, every lower order: the 4th derivative of ``tanh`` compiled
16 generated functions where 6 do the work.

A gradient of one real argument has that argument's shape and dtype (``grad(f)``'s
``__numbax_gradient_of__()``), so where every read of such a call's value is one of
those (:data:`_SHAPE_READS`), the call becomes ``nxrt.gradient_stand_in(x)``: ``x``
itself, after ``grad``'s check of its dtype.

Only a function known to be effect free is replaced (``transform/analysis/effects.py``):
skipping it skips nothing but its value and the errors it raises; its lines run again in
its VJP, the one run left.
"""

from __future__ import annotations

from collections import Counter

import gast

from numbax.runtime import nxrt as runtime
from numbax.transform.analysis import effects
from numbax.transform.resolve import Resolver
from numbax.transform.walk import name_nodes, walk

_SHAPE_READS = {
    runtime.seed_of_total: 0,
    runtime.seed_of_mean: 0,
    runtime.broadcast_reduced: 1,
    runtime.unbroadcast: 1,
    runtime.reduced_count: 1,
}
"""Runtime helpers → the position of the argument of which they read only the shape and
dtype."""


def gradient_stand_ins(fn: gast.FunctionDef, resolver: Resolver) -> None:
    """Replace in place, in ``fn``, each gradient whose value only gives shapes and
    dtypes by ``nxrt.gradient_stand_in`` of its argument."""
    reads = Counter(n.id for n in name_nodes(fn, gast.Load))
    shape_reads = Counter(_shape_reads(fn, resolver))
    for node in walk(fn):
        if not (isinstance(node, gast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, gast.Name) or target.id not in resolver.locals:
            continue
        if reads[target.id] == 0 or reads[target.id] != shape_reads[target.id]:
            continue
        argument = _gradient_argument(node.value, resolver)
        if argument is not None:
            node.value = gast.Call(_stand_in(), [argument], [])


def _shape_reads(fn: gast.FunctionDef, resolver: Resolver) -> list[str]:
    """The names read as an argument of which a helper reads only the shape and dtype,
    once for each such read."""
    found = []
    for node in walk(fn):
        if not isinstance(node, gast.Call) or node.keywords:
            continue
        callee = resolver.resolve(node.func)
        position = next((p for f, p in _SHAPE_READS.items() if f is callee), None)
        if position is not None and position < len(node.args):
            argument = node.args[position]
            if isinstance(argument, gast.Name):
                found.append(argument.id)
    return found


def _gradient_argument(value: gast.expr, resolver: Resolver) -> gast.Name | None:
    """The argument whose shape and dtype ``value`` has, when it is a call of an effect
    free gradient by position."""
    if not isinstance(value, gast.Call) or value.keywords:
        return None
    callee = resolver.resolve(value.func)
    position = getattr(callee, "__numbax_gradient_of__", lambda: None)()
    if position is None or position >= len(value.args):
        return None
    if not all(isinstance(a, gast.Name | gast.Constant) for a in value.args):
        return None  # a starred argument moves the positions
    argument = value.args[position]
    if not isinstance(argument, gast.Name) or not effects.known_effect_free(callee):
        return None
    return gast.Name(argument.id, gast.Load(), None, None)


def _stand_in() -> gast.Attribute:
    return gast.Attribute(
        gast.Name("nxrt", gast.Load(), None, None), "gradient_stand_in", gast.Load()
    )
