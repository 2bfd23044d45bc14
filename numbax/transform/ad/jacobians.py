"""Jacobians as generated source: ``vmap`` of the JVP over the input's whole basis
(``jacfwd``), or a loop of VJPs over the output's basis (``jacrev``), filling a flat
buffer.

Written as ordinary core-language source that calls the function's own generated
JVP/VJP, so a Jacobian is itself differentiable (``hessian = jacfwd(jacrev(f))``),
jittable, and readable::

    def jacfwd_f(x):
        _d_x = nxrt.jac_basis_all(x)
        _out, _d_out = _vmap_jvp_f(x, _d_x)
        _jac = nxrt.jac_buffer(_out, x, 'jacfwd')
        _jac[:, :] = np.transpose(nxrt.ravel_batch(_d_out))
        return nxrt.jac_unflatten(_jac, _out, x)

``_vmap_jvp_f`` is ``vmap(jvp_f, in_axes=(None, 0), out_axes=(None, 0))``: vectorized
where the JVP's body batches (then the primal part runs once, on the shared ``x``),
else a loop over the columns. Its unbatched primal output is ``f(x)``, so ``f`` is not
called again for the buffer's shape. ``jacrev`` loops over the output's rows::

    def jacrev_f(x):
        _out = f(x)
        _jac = nxrt.jac_buffer(_out, x, 'jacrev')
        for _row in range(nxrt.jac_size(_out)):
            _ct_out = nxrt.jac_basis(_out, _row)
            _ct_x, = _vjp_f(x, _ct_out)
            _jac[_row, :] = nxrt.ravel_pytree(_ct_x)
        return nxrt.jac_unflatten(_jac, _out, x)

A Hessian of a sum of elementwise terms (``separable.py``) is diagonal: ``jacfwd`` of
its gradient is then one JVP along ``ones_like(x)``, the sum of the basis vectors, and
``jacrev`` one VJP of ``ones_like(out)``, which ``nxrt.jac_diagonal`` writes on the
diagonal of zeros.

The same source serves arrays and pytrees: the ``nxrt.jac_*`` helpers
(``runtime/jacobians.py``) see a pytree as the concatenation of its leaves, and
``jac_unflatten`` cuts the buffer into JAX's result, the output's structure holding the
input's at each output leaf, each leaf shaped ``out_leaf.shape + x_leaf.shape``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gast

from numbax.transform.ad.common import DeriveCallee, located, runtime_call, stored_into
from numbax.transform.cleanup import cleanup
from numbax.transform.names import Namer
from numbax.transform.nodes import assign, clone, dotted, load, store


def _call(name: str, args: list[gast.expr]) -> gast.Call:
    return gast.Call(load(name), args, [])


BatchCallee = Callable[[str, tuple, Any], str]
"""``batch(name, in_axes, out_axes)``: the name under which the generated module calls
``vmap`` of the function it binds as ``name``."""


def jacobian_function(
    fn: gast.FunctionDef,
    callee: object,
    positions: tuple[int, ...],
    derive: DeriveCallee,
    name: str,
    *,
    forward: bool,
    batch: BatchCallee | None = None,
    has_aux: bool = False,
    callee_name: str = "_fun",
    as_tuple: bool = False,
    holomorphic: bool = False,
    diagonal: bool = False,
) -> tuple[gast.FunctionDef, str]:
    """A function with ``fn``'s parameters returning the Jacobian of ``callee`` w.r.t.
    the arguments at ``positions``. ``callee`` is bound under the returned name.

    With ``as_tuple`` (JAX's tuple ``argnums``) the arguments are differentiated as one
    pytree, the tuple of them, in one loop: as in JAX, the result is the output's
    structure holding that tuple at each output leaf. ``holomorphic``: complex inputs
    and outputs, as JAX's ``holomorphic=True`` (``nxrt.jac_buffer`` checks the dtypes).
    ``batch`` binds ``vmap`` of a derivative (``jacfwd``'s JVP over the basis).
    ``diagonal``: a Jacobian known to be diagonal (a separable function's Hessian,
    ``separable.py``): one JVP along ``ones_like(x)`` gives its diagonal (``jacfwd``),
    or one VJP of ``ones_like(out)`` (``jacrev``)."""
    namer = Namer.for_function(fn)
    params = [a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    line = fn.lineno
    body: list[gast.stmt] = []
    wrt = [params[k] for k in positions]
    if as_tuple:  # the arguments as one pytree
        x = namer.fresh("wrt")
        body.append(assign(x, gast.Tuple([load(p) for p in wrt], gast.Load())))
    else:
        x = wrt[0]
    out, aux = namer.fresh("out"), namer.fresh("aux") if has_aux else None
    loop = _Loop(namer, derive, callee, params, positions, wrt, x, out, namer.fresh("jac"), batch)
    checks = [gast.Constant("jacfwd" if forward else "jacrev", None)]
    if holomorphic:
        checks.append(gast.Constant(True, None))
    buffer = assign(loop.jac, runtime_call("jac_buffer", load(out), load(x), *checks))
    if forward and diagonal:
        body += loop.diagonal()
    elif forward:  # the vmapped JVP gives the primal output too
        body += loop.forward_columns(aux, as_tuple, buffer)
    else:  # the primal call gets copies where it writes into an array: through any
        # name, which may be a parameter's (a = x; a[0] = v)
        copied = bool(stored_into(fn))
        args = [runtime_call("owned", load(p)) if copied else load(p) for p in params]
        body += _primal(callee_name, args, out, aux, namer)
        body += (
            loop.reverse_diagonal() if diagonal else [buffer, *loop.reverse_rows(has_aux, as_tuple)]
        )
    result = namer.fresh("jacobian" if as_tuple else f"jacobian_{x.lstrip('_')}")
    body.append(assign(result, runtime_call("jac_unflatten", load(loop.jac), load(out), load(x))))
    value: gast.expr = load(result)
    if aux is not None:
        value = gast.Tuple([value, load(aux)], gast.Load())
    new = clone(fn)
    new.name = name
    new.body = located(body + [gast.Return(value)], line)
    return cleanup(new), callee_name


def _primal(
    callee_name: str, args: list[gast.expr], out: str, aux: str | None, namer: Namer
) -> list[gast.stmt]:
    """``out = f(*args)``, or ``out, aux = f(*args)`` for a function with aux."""
    if aux is None:
        return [assign(out, _call(callee_name, args))]
    value = namer.fresh("value")
    pair = gast.Tuple([store(out), store(aux)], gast.Store())
    return [assign(value, _call(callee_name, args)), assign(pair, load(value))]


class _Loop:
    """The loop filling buffer ``jac`` with the Jacobian of ``out`` w.r.t. ``x`` (the
    argument ``wrt[0]``, or the tuple of the arguments ``wrt``)."""

    def __init__(self, namer, derive, callee, params, positions, wrt, x, out, jac, batch):
        self.namer, self.derive, self.callee, self.batch = namer, derive, callee, batch
        self.params, self.positions, self.wrt = params, positions, wrt
        self.x, self.out, self.jac = x, out, jac

    def _unpack(self, names: list[str], value: gast.expr, packed: str) -> list[gast.stmt]:
        """``names`` unpacked from the tuple ``value`` (through variable ``packed``)."""
        targets = gast.Tuple([store(n) for n in names], gast.Store())
        return [assign(packed, value), assign(targets, load(packed))]

    def forward_columns(
        self, aux: str | None, as_tuple: bool, buffer: gast.stmt
    ) -> list[gast.stmt]:
        """Every column at once: ``vmap`` of the JVP over the batch of the input's basis
        vectors, whose unbatched primal output is ``out`` (and ``aux``), then the Jacobian
        ``buffer`` made for it and the batch of output tangents raveled into its columns."""
        namer = self.namer
        tangents = [namer.fresh(f"d_{x.lstrip('_')}") for x in self.wrt]
        d_out = namer.fresh("d_out")
        jvp = self.derive(self.callee, "jvp", self.positions)
        in_axes = (None,) * len(self.params) + (0,) * len(tangents)
        vmapped = self.batch(jvp, in_axes, (None, 0))
        call = _call(vmapped, [load(p) for p in self.params] + [load(t) for t in tangents])
        basis = runtime_call("jac_basis_all", load(self.x))
        if as_tuple:
            body = self._unpack(tangents, basis, namer.fresh(f"d_{self.x.lstrip('_')}"))
        else:
            body = [assign(tangents[0], basis)]
        if aux is not None:  # the JVP of (out, aux): ((out, aux), (d_out, d_aux))
            value, d_value = namer.fresh("value"), namer.fresh("d_value")
            body.append(assign(gast.Tuple([store(value), store(d_value)], gast.Store()), call))
            body.append(
                assign(gast.Tuple([store(self.out), store(aux)], gast.Store()), load(value))
            )
            first = gast.Subscript(load(d_value), gast.Constant(0, None), gast.Load())
            body.append(assign(d_out, first))
        else:
            body.append(assign(gast.Tuple([store(self.out), store(d_out)], gast.Store()), call))
        every = gast.Tuple([gast.Slice(None, None, None)] * 2, gast.Load())
        target = gast.Subscript(load(self.jac), every, gast.Store())
        columns = gast.Call(dotted("np.transpose"), [runtime_call("ravel_batch", load(d_out))], [])
        body += [buffer, assign(target, columns)]
        return body

    def diagonal(self) -> list[gast.stmt]:
        """A diagonal Jacobian: the JVP along ``ones_like(x)``, the sum of the basis
        vectors, is the diagonal, written into a buffer of zeros."""
        namer = self.namer
        tangent, d_out = namer.fresh(f"d_{self.x.lstrip('_')}"), namer.fresh("d_out")
        jvp = self.derive(self.callee, "jvp", self.positions)
        call = _call(jvp, [load(p) for p in self.params] + [load(tangent)])
        pair = gast.Tuple([store(self.out), store(d_out)], gast.Store())
        return [
            assign(tangent, runtime_call("ones_like", load(self.x))),
            assign(pair, call),
            self._written_on_the_diagonal(d_out, "jacfwd"),
        ]

    def reverse_diagonal(self) -> list[gast.stmt]:
        """A diagonal Jacobian by reverse mode, after the primal call: the VJP of
        ``ones_like(out)`` sums the Jacobian's rows, which for a diagonal one are its
        diagonal."""
        namer = self.namer
        ct_out, ct_x = namer.fresh("ct_out"), namer.fresh(f"ct_{self.x.lstrip('_')}")
        vjp = self.derive(self.callee, "vjp", self.positions)
        call = _call(vjp, [load(p) for p in self.params] + [load(ct_out)])
        return [
            assign(ct_out, runtime_call("ones_like", load(self.out))),
            assign(gast.Tuple([store(ct_x)], gast.Store()), call),
            self._written_on_the_diagonal(ct_x, "jacrev"),
        ]

    def _written_on_the_diagonal(self, diagonal: str, transformation: str) -> gast.stmt:
        checks = gast.Constant(transformation, None)
        value = runtime_call("jac_diagonal", load(diagonal), load(self.out), load(self.x), checks)
        return assign(self.jac, value)

    def reverse_rows(self, has_aux: bool, as_tuple: bool) -> list[gast.stmt]:
        namer = self.namer
        row, ct_out = namer.fresh("row"), namer.fresh("ct_out")
        cts = [namer.fresh(f"ct_{x.lstrip('_')}") for x in self.wrt]
        vjp = self.derive(self.callee, "vjp_aux" if has_aux else "vjp", self.positions)
        call = _call(vjp, [load(p) for p in self.params] + [load(ct_out)])
        body = [assign(ct_out, runtime_call("jac_basis", load(self.out), load(row)))]
        cotangents = gast.Tuple([store(ct) for ct in cts], gast.Store())
        if has_aux:  # the VJP of a function with aux returns ((cotangents...), aux)
            cotangents = gast.Tuple([cotangents, store(namer.fresh("aux_again"))], gast.Store())
        body.append(assign(cotangents, call))
        if as_tuple:
            packed = namer.fresh(f"ct_{self.x.lstrip('_')}")
            body.append(assign(packed, gast.Tuple([load(ct) for ct in cts], gast.Load())))
            raveled = runtime_call("ravel_pytree", load(packed))
        else:
            raveled = runtime_call("ravel_pytree", load(cts[0]))
        every_column = gast.Slice(None, None, None)
        target = gast.Subscript(
            load(self.jac), gast.Tuple([load(row), every_column], gast.Load()), gast.Store()
        )
        body.append(assign(target, raveled))
        size = runtime_call("jac_size", load(self.out))
        return [gast.For(store(row), _call("range", [size]), body, [], None)]
