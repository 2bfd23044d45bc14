"""Values computed only for their shape and dtype, not computed.

``grad`` of ``np.sum(derivative(x))``, with ``derivative = grad(f)`` (autograd's way to
an elementwise higher derivative), reads the inner gradient's value for two things
only: the dtype of the seed (``nxrt.seed_of_total``, once fusion has dropped the sum)
and the shape its cotangent is spread over (``nxrt.broadcast_reduced``). The VJP of
``derivative`` that follows computes that gradient again, as it needs it. Compiled, the
call still ran, and compiled, every lower order: the 4th derivative of ``tanh`` compiled
16 generated functions where 6 do the work. A gradient of one real argument has that
argument's shape and dtype (``grad(f)``'s ``__numbax_gradient_of__()``), so where every
read of such a call's value is one of those (:data:`_SHAPE_READS`), the call becomes
``nxrt.gradient_stand_in(x)``: ``x`` itself, after ``grad``'s check of its dtype.

A Jacobian calls its function for the shape and dtype of the output alone (``jacrev``
of ``sum_logistic``: the sum, its reduction compiled and run for a scalar's type). Such
a call of a user's function is marked (:data:`RESULT_TYPE_ONLY`) and compiled as a
variant of the function whose result is a stand-in where its value is a reduction over
all of an array (:func:`stand_in_result`): a zero of the reduction's type, and the fused
loop that made the array, when nothing else reads it, a zero of its values' type. Where
the function ends otherwise, the variant is the function itself.

In the same way, once fused (:func:`shape_stand_ins`), a fused loop or an arithmetic
operator whose value gives only shapes and dtypes (a mean's seed and count, the like of
an unbroadcasting loop) becomes ``nxrt.shape_stand_in``: an array of the result's shape
and dtype whose values are never set. The loss of ``jit(grad)`` of ``np.mean((out - y)
** 2)`` is such a value, and ``out`` too when the adjoint loop recomputes it: their two
loops were compiled (0.5 s of the MLP's first call) and run for their shapes. A fused
loop's stand-in takes its dtype from typing the loop's scalar kernel, not compiling it
(``result_types.py``).

Only a function known to be effect free is replaced or marked
(``transform/analysis/effects.py``): skipping it skips nothing but its value and the
errors it raises; its lines run again in the VJP or JVP that follows.
"""

from __future__ import annotations

import types
from collections import Counter

import gast
import numpy as np

from numbax.runtime import nxrt as runtime
from numbax.transform.analysis import effects
from numbax.transform.resolve import Resolver
from numbax.transform.walk import name_nodes, walk

_SHAPE_READS = {
    runtime.seed_of_total: (0,),
    runtime.seed_of_mean: (0,),
    runtime.broadcast_reduced: (1,),
    runtime.unbroadcast: (1,),
    runtime.reduced_count: (0, 1),
    runtime.jac_buffer: (0,),
    runtime.jac_size: (0,),
    runtime.jac_basis: (0,),
    runtime.jac_unflatten: (1,),
    runtime.jac_diagonal: (1,),
}
"""Runtime helpers → the positions of the arguments of which they read only the shape
and dtype (``shape_stand_in``: every argument after the operation)."""

_ARITHMETIC = {gast.Add: "op_add", gast.Sub: "op_sub", gast.Mult: "op_mul", gast.Div: "op_truediv"}
"""Binary operators → the runtime helper a stand-in names as its operation."""


RESULT_TYPE_ONLY = "numbax_result_type_only"
"""The attribute set on a call of a user's function whose result is read only for its
shape and dtype: lowering binds the function's variant (:func:`stand_in_result`)."""

_REDUCTIONS = {np.sum: "sum", np.mean: "mean"}


def stand_ins(fn: gast.FunctionDef, resolver: Resolver) -> None:
    """In place, in ``fn``: each gradient whose value only gives shapes and dtypes
    becomes ``nxrt.gradient_stand_in`` of its argument, and each such call of a user's
    function is marked :data:`RESULT_TYPE_ONLY`."""
    for node in _read_for_shapes_only(fn, resolver):
        argument = _gradient_argument(node.value, resolver)
        if argument is not None:
            node.value = gast.Call(_runtime("gradient_stand_in"), [argument], [])
        elif _effect_free_function_call(node.value, resolver):
            setattr(node.value, RESULT_TYPE_ONLY, True)


def shape_stand_ins(
    fn: gast.FunctionDef, resolver: Resolver, kernels: list[gast.FunctionDef]
) -> None:
    """In place, in fused ``fn``: each call of one of its plain fused ``kernels`` and each
    arithmetic operator of two names whose value is read only for its shape and dtype
    becomes ``nxrt.shape_stand_in`` of it; again until none is left, since a stand-in
    reads its own arguments only for theirs."""
    plain = {k.name for k in kernels if not getattr(k, "numbax_sum", None)}
    likes = {  # an unbroadcasting loop's first arguments: the shapes its sums take
        k.name: 1 + ("also" in k.numbax_sum)
        for k in kernels
        if "unbroadcast" in (getattr(k, "numbax_sum", None) or {})
    }
    changed = True
    while changed:
        changed = False
        for node in _read_for_shapes_only(fn, resolver, likes):
            operation = _operation(node.value, plain)
            if operation is not None:
                node.value = gast.Call(_runtime("shape_stand_in"), operation, [])
                changed = True


def _read_for_shapes_only(
    fn: gast.FunctionDef, resolver: Resolver, likes: dict[str, int] | None = None
) -> list[gast.Assign]:
    """The assignments of ``fn`` to a local name read somewhere, and only ever for its
    shape and dtype (:func:`_shape_reads`), as the reads are when this is called."""
    reads = Counter(n.id for n in name_nodes(fn, gast.Load))
    shape_reads = Counter(_shape_reads(fn, resolver, likes))
    found = []
    for node in walk(fn):
        if not (isinstance(node, gast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not isinstance(target, gast.Name) or target.id not in resolver.locals:
            continue
        if 0 < reads[target.id] == shape_reads[target.id]:
            found.append(node)
    return found


def _operation(value: gast.expr, plain: set[str]) -> list[gast.expr] | None:
    """``[operation, *arguments]`` of a call of a plain fused kernel by position, or of
    an arithmetic operator of two names; else None."""
    if isinstance(value, gast.BinOp) and type(value.op) in _ARITHMETIC:
        if isinstance(value.left, gast.Name) and isinstance(value.right, gast.Name):
            return [_runtime(_ARITHMETIC[type(value.op)]), value.left, value.right]
        return None
    if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Name)):
        return None
    if value.func.id not in plain or value.keywords:
        return None
    if not all(isinstance(a, gast.Name | gast.Constant) for a in value.args):
        return None
    return [value.func, *value.args]


def stand_in_result(
    fn: gast.FunctionDef, resolver: Resolver, kernels: list[gast.FunctionDef]
) -> bool:
    """Rewrite ``fn`` (fused, not yet lowered), whose callers read only its result's
    shape and dtype, so that a result reduced over all of an array is a stand-in:
    ``_sum = np.sum(_values)`` becomes ``nxrt.reduction_stand_in(_values, 'sum')``, and
    ``_values = _kernel(x)``, a fused loop nothing else reads, ``nxrt.loop_stand_in(_kernel,
    x)``. Whether ``fn`` changed."""
    last = fn.body[-1] if fn.body else None
    if not (isinstance(last, gast.Return) and isinstance(last.value, gast.Name)):
        return False
    reads = Counter(n.id for n in name_nodes(fn, gast.Load))
    stores = Counter(n.id for n in name_nodes(fn, gast.Store))
    reduced = _assignment(fn.body, last.value.id, reads, stores)
    if reduced is None or len(reduced.value.args) != 1:
        return False
    reduction = next(
        (r for f, r in _REDUCTIONS.items() if f is resolver.resolve(reduced.value.func)), None
    )
    values = reduced.value.args[0]
    if reduction is None or not isinstance(values, gast.Name):
        return False
    reduced.value = gast.Call(
        _runtime("reduction_stand_in"), [values, gast.Constant(reduction, None)], []
    )
    loop = _assignment(fn.body, values.id, reads, stores)
    plain = {k.name for k in kernels if not getattr(k, "numbax_sum", None)}
    if loop is not None and isinstance(loop.value.func, gast.Name) and loop.value.func.id in plain:
        loop.value = gast.Call(_runtime("loop_stand_in"), [loop.value.func, *loop.value.args], [])
    return True


def _assignment(
    body: list[gast.stmt], name: str, reads: Counter, stores: Counter
) -> gast.Assign | None:
    """The statement of ``body`` (not nested) that assigns ``name`` a call by position,
    when it is the only one and one statement reads ``name``."""
    if reads[name] != 1 or stores[name] != 1:
        return None
    for stmt in body:
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if isinstance(target, gast.Name) and target.id == name:
                plain = isinstance(value, gast.Call) and not value.keywords
                if plain and all(isinstance(a, gast.Name | gast.Constant) for a in value.args):
                    return stmt
                return None
    return None


def _effect_free_function_call(value: gast.expr, resolver: Resolver) -> bool:
    """Whether ``value`` calls, by position, a user's function known to be effect free."""
    if not isinstance(value, gast.Call) or value.keywords:
        return False
    if any(isinstance(a, gast.Starred) for a in value.args):
        return False
    callee = resolver.resolve(value.func)
    return isinstance(callee, types.FunctionType) and effects.known_effect_free(callee)


def _shape_reads(
    fn: gast.FunctionDef, resolver: Resolver, likes: dict[str, int] | None = None
) -> list[str]:
    """The names read as an argument of which a helper reads only the shape and dtype,
    once for each such read; ``likes``: the fused loops that unbroadcast, by name, with
    how many of their first arguments are likes."""
    found = []
    for node in walk(fn):
        if not isinstance(node, gast.Call) or node.keywords:
            continue
        if isinstance(node.func, gast.Name) and node.func.id in (likes or {}):
            positions = range(likes[node.func.id])
        else:
            callee = resolver.resolve(node.func)
            if callee is runtime.shape_stand_in:
                positions = range(1, len(node.args))
            else:
                positions = next((p for f, p in _SHAPE_READS.items() if f is callee), ())
        for position in positions:
            argument = node.args[position] if position < len(node.args) else None
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


def _runtime(helper: str) -> gast.Attribute:
    return gast.Attribute(gast.Name("nxrt", gast.Load(), None, None), helper, gast.Load())
