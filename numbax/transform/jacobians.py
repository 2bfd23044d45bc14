"""Jacobians as generated source: a loop of JVPs over the input's basis (``jacfwd``) or
of VJPs over the output's basis (``jacrev``), filling a flat buffer.

Written as ordinary core-language source that calls the function's own generated
JVP/VJP, so a Jacobian is itself differentiable (``hessian = jacfwd(jacrev(f))``),
jittable, and readable::

    def jacrev_f(x):
        _out = f(x)
        _jac = nxrt.jac_buffer(_out, x)
        for _row in range(nxrt.jac_size(_out)):
            _ct_out = nxrt.jac_basis(_out, _row)
            _ct_x, = _vjp_f(x, _ct_out)
            _jac[_row, :] = nxrt.jac_ravel(_ct_x)
        return nxrt.jac_unflatten(_jac, _out, x)

The same source serves arrays and pytrees: the ``nxrt.jac_*`` helpers
(``numba_backend/ad_jacobians.py``) see a pytree as the concatenation of its leaves, and
``jac_unflatten`` cuts the buffer into JAX's result, the output's structure holding the
input's at each output leaf, each leaf shaped ``out_leaf.shape + x_leaf.shape``.
"""

from __future__ import annotations

import gast

from numbax.transform.ad_common import DeriveCallee, located, runtime_call, stored_into
from numbax.transform.names import Namer
from numbax.transform.normalize_nodes import assign, clone, load, store


def _call(name: str, args: list[gast.expr]) -> gast.Call:
    return gast.Call(load(name), args, [])


def jacobian_function(
    fn: gast.FunctionDef,
    callee: object,
    positions: tuple[int, ...],
    derive: DeriveCallee,
    name: str,
    *,
    forward: bool,
    has_aux: bool = False,
    callee_name: str = "_fun",
    as_tuple: bool = False,
) -> tuple[gast.FunctionDef, str]:
    """A function with ``fn``'s parameters returning the Jacobian of ``callee`` (one per
    position, a tuple for several). ``callee`` is bound under the returned name."""
    namer = Namer.for_function(fn)
    params = [a.id for a in fn.args.posonlyargs + fn.args.args]
    stored = stored_into(fn)  # the primal call gets a copy of what it writes into
    primal_args = [runtime_call("owned", load(p)) if p in stored else load(p) for p in params]
    line = fn.lineno
    body: list[gast.stmt] = []
    out, aux = namer.fresh("out"), None
    if has_aux:
        value, aux = namer.fresh("value"), namer.fresh("aux")
        body.append(assign(value, _call(callee_name, primal_args)))
        body.append(assign(gast.Tuple([store(out), store(aux)], gast.Store()), load(value)))
    else:
        body.append(assign(out, _call(callee_name, primal_args)))
    jacobians = []
    for position in positions:
        x = params[position]
        jac = namer.fresh(f"jac_{x.lstrip('_')}" if len(positions) > 1 else "jac")
        body.append(assign(jac, runtime_call("jac_buffer", load(out), load(x))))
        if forward:
            body += _forward_columns(namer, derive, callee, params, position, out, jac, has_aux)
        else:
            body += _reverse_rows(namer, derive, callee, params, position, out, jac, has_aux)
        result = namer.fresh(f"jacobian_{x.lstrip('_')}")
        body.append(assign(result, runtime_call("jac_unflatten", load(jac), load(out), load(x))))
        jacobians.append(load(result))
    value = jacobians[0] if not as_tuple else gast.Tuple(jacobians, gast.Load())
    if aux is not None:
        value = gast.Tuple([value, load(aux)], gast.Load())
    new = clone(fn)
    new.name = name
    new.body = located(body + [gast.Return(value)], line)
    return new, callee_name


def _forward_columns(namer, derive, callee, params, position, out, jac, has_aux):
    x = params[position]
    column, tangent = namer.fresh("column"), namer.fresh(f"d_{x.lstrip('_')}")
    out_again, d_out = namer.fresh("out_again"), namer.fresh("d_out")
    jvp = derive(callee, "jvp", (position,))
    call = _call(jvp, [load(p) for p in params] + [load(tangent)])
    body = [assign(tangent, runtime_call("jac_basis", load(x), load(column)))]
    if has_aux:
        d_value = namer.fresh("d_value")
        body.append(assign(gast.Tuple([store(out_again), store(d_value)], gast.Store()), call))
        body.append(
            assign(d_out, gast.Subscript(load(d_value), gast.Constant(0, None), gast.Load()))
        )
    else:
        body.append(assign(gast.Tuple([store(out_again), store(d_out)], gast.Store()), call))
    every_row = gast.Slice(None, None, None)
    target = gast.Subscript(
        load(jac), gast.Tuple([every_row, load(column)], gast.Load()), gast.Store()
    )
    body.append(assign(target, runtime_call("jac_ravel", load(d_out))))
    size = runtime_call("jac_size", load(x))
    return [gast.For(store(column), _call("range", [size]), body, [], None)]


def _reverse_rows(namer, derive, callee, params, position, out, jac, has_aux):
    x = params[position]
    row, ct_out = namer.fresh("row"), namer.fresh("ct_out")
    ct_x = namer.fresh(f"ct_{x.lstrip('_')}")
    vjp = derive(callee, "vjp_aux" if has_aux else "vjp", (position,))
    call = _call(vjp, [load(p) for p in params] + [load(ct_out)])
    body = [assign(ct_out, runtime_call("jac_basis", load(out), load(row)))]
    cotangents = gast.Tuple([store(ct_x)], gast.Store())
    if has_aux:  # the VJP of a function with aux returns ((cotangents...), aux)
        cotangents = gast.Tuple([cotangents, store(namer.fresh("aux_again"))], gast.Store())
    body.append(assign(cotangents, call))
    every_column = gast.Slice(None, None, None)
    target = gast.Subscript(
        load(jac), gast.Tuple([load(row), every_column], gast.Load()), gast.Store()
    )
    body.append(assign(target, runtime_call("jac_ravel", load(ct_x))))
    size = runtime_call("jac_size", load(out))
    return [gast.For(store(row), _call("range", [size]), body, [], None)]
