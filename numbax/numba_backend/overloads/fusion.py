"""Numba versions of the fused kernels' helpers (``numbax/runtime/fusion.py``): ``first``
compiles as it is; ``cotangent_as`` converts a scalar; ``seed_of_sum`` is decided by
types alone."""

from __future__ import annotations

import builtins

import numpy as np
from numba.core import types
from numba.core.registry import cpu_target
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend import reductions
from numbax.numba_backend.elementwise import ScalarKernel
from numbax.numba_backend.overloads.common import _bdim, _code, _define, _fail, _subscript, _tuple
from numbax.numba_backend.reductions import _accumulating, _axes, _fold1d, _keepdims, _sum_op
from numbax.runtime.broadcasting import unbroadcast
from numbax.runtime.fusion import (
    cotangent_as,
    expand_reduced,
    first,
    seed_of_sum,
    sum_of,
    unbroadcast_of,
)
from numbax.runtime.seeds import grad_seed

register_jitable(first)


@overload(cotangent_as)
def _cotangent_as_jit(value, like):
    """On scalars, as ``unbroadcast`` converts: to like's dtype when it is inexact (the
    real part of a complex value for a real like), else value's own."""
    if not isinstance(value, types.Number | types.Boolean) or not isinstance(
        like, types.Number | types.Boolean
    ):
        return None
    if not isinstance(like, types.Float | types.Complex) or like == value:
        return lambda value, like: value
    cast = as_dtype(like).type
    if isinstance(value, types.Complex) and not isinstance(like, types.Complex):
        return lambda value, like: cast(value.real)
    return lambda value, like: cast(value)


@overload(seed_of_sum)
def _seed_of_sum_jit(kernel, *args):
    """One of the type of ``np.sum(kernel(*args))``, with ``grad_seed``'s checks; neither
    the loop nor the sum runs."""
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    typing = cpu_target.typing_context
    values = typing.resolve_function_type(kernel, tuple(args), {})
    if values is None:
        return None
    total = typing.resolve_function_type(
        typing.resolve_value_type(np.sum), (values.return_type,), {}
    )
    if total is None:
        return None
    scalar = as_dtype(total.return_type).type

    def impl(kernel, *args):
        return grad_seed(scalar(0))

    return impl


# -- fused reductions: a kernel's values reduced as they are made ------------------------
# ``sum_of(kernel, axis, keepdims, *args)`` and ``unbroadcast_of(kernel, like, *args)``
# (``fuse.py`` writes them) loop over the broadcast shape of ``args``, call the kernel's
# scalar function on each element and add its value into the result: the values are
# never stored. Sums run in the order ``reductions.sum`` and ``unbroadcast`` add, so a
# fused reduction equals the unfused one to the bit: a trailing run of reduced axes is
# folded row by row (pairwise from 8 values on, as NumPy), every other axis in C order.


def _scalar_kernel(kernel: types.Type) -> ScalarKernel:
    scalar = getattr(getattr(kernel, "typing_key", None), "__numbax_scalar__", None)
    if scalar is None:
        raise _fail("fused reduction", f"expected a fused kernel, got {kernel}")
    return scalar


def _star(args: tuple) -> tuple:
    if args and isinstance(args[0], types.StarArgTuple):
        args = args[0].types
    return tuple(types.unliteral(a) for a in args)


class _Nest:
    """The loop nest over the broadcast shape of a kernel's arguments ``a0``..., with
    each element's value ``_scalar(...)``, as lines of source under construction."""

    def __init__(self, header: str, args: tuple, casts: dict[int, types.Type]) -> None:
        self.args = args
        self.arrays = [i for i, a in enumerate(args) if isinstance(a, types.Array)]
        self.ndim = builtins.max((args[i].ndim for i in self.arrays), default=0)
        # unsigned indices: Numba then checks for no negative index, which costs as much
        # as the arithmetic in these loops
        self.code = _code(header, {"_bdim": _bdim, "U": np.uint64})
        params = ", ".join(f"a{i}" for i in range(len(args)))
        self.code(f"{params}{',' if len(args) == 1 else ''} = args")
        for i, target in casts.items():
            self.code.names[f"_cast{i}"] = as_dtype(target).type
            self.code(f"a{i} = _cast{i}(a{i})")
        for d in range(self.ndim):
            axes = [(i, self._axis(i, d)) for i in self.arrays]
            lengths = [f"a{i}.shape[{k}]" for i, k in axes if k >= 0]
            shape = lengths[0]
            for length in lengths[1:]:
                shape = f"_bdim({shape}, {length})"
            self.code(f"n{d} = {shape}")
            for i in self.arrays:
                if (k := self._axis(i, d)) >= 0:
                    self.code(f"s{i}_{d} = int(a{i}.shape[{k}] != 1)")

    def _axis(self, i: int, d: int) -> int:
        """Axis of array ``a<i>`` that is axis ``d`` of the broadcast shape (-1: none)."""
        return d - (self.ndim - self.args[i].ndim)

    def value(self) -> str:
        """The kernel's value at the loop indices ``i0``..."""
        elements = []
        for i in range(len(self.args)):
            if i not in self.arrays:
                elements.append(f"a{i}")
                continue
            index = [f"U(i{d} * s{i}_{d})" for d in range(self.ndim) if self._axis(i, d) >= 0]
            elements.append(f"a{i}[{_subscript(index)}]" if index else f"a{i}[()]")
        return f"_scalar({', '.join(elements)})"

    def loops(self, dims: range) -> None:
        for d in dims:
            self.code(f"for i{d} in range(n{d}):")
            self.code.depth += 1


@overload(sum_of, prefer_literal=True)
def _sum_of_jit(kernel, axis, keepdims, *args):
    args = _star(args)
    fused = _scalar_kernel(kernel)
    casts, _, result = fused.element_types(args)
    nest = _Nest("def impl(kernel, axis, keepdims, *args):", args, casts)
    n = nest.ndim
    ax = _axes("sum_of", axis, n)
    if not nest.arrays or ax.static is None or ax.error:
        # no loop to fuse, or an axis NumPy refuses: the sum of the stored values says so
        def unfused(kernel, axis, keepdims, *args):
            return reductions.sum(kernel(*args), axis, keepdims=keepdims)

        return unfused
    keep = _keepdims("sum_of", keepdims)
    acc = _accumulating(result)
    op = _sum_op(acc)
    code = nest.code
    code.names.update(_scalar=fused.scalar, T=as_dtype(acc).type, fold=_fold1d(op))
    kept = [d for d in range(n) if d not in ax.static]
    tail = 0
    while tail < n and n - 1 - tail in ax.static:
        tail += 1
    lead = n - tail
    code(f"out = np.zeros({_tuple([f'n{d}' for d in kept] or ['1'])}, T)")
    at = f"out[{_subscript([f'U(i{d})' for d in kept] or ['0'])}]"
    if tail:
        code(f"row = {' * '.join(f'n{d}' for d in range(lead, n))}")
        code("buffer = np.empty(row if row >= 8 else 0, T)")
        nest.loops(range(lead))
        code("if row < 8:")  # NumPy's pairwise sum of a short row: one after the other
        code.depth += 1
        code("r = T(-0.0)")
        nest.loops(range(lead, n))
        code(f"r = T(r + T({nest.value()}))")
        code.depth = 2 + lead
        code(f"{at} = T({at} + r)")
        code.depth = 1 + lead
        code("else:")
        code.depth += 1
        code("k = 0")
        nest.loops(range(lead, n))
        code(f"buffer[k] = T({nest.value()})", "k += 1")
        code.depth = 2 + lead
        code(f"{at} = fold(buffer, 0, row, {at})")
    else:
        nest.loops(range(n))
        code(f"{at} = T({at} + T({nest.value()}))")
    code.depth = 1
    if keep:
        full = ["1" if d in ax.static else f"n{d}" for d in range(n)]
        code(f"return out.reshape({_tuple(full)})")
    else:
        code("return out" if kept else "return out[0]")
    return code.compile("sum_of")


@overload(unbroadcast_of)
def _unbroadcast_of_jit(kernel, like, *args):
    args = _star(args)
    fused = _scalar_kernel(kernel)
    casts, _, result = fused.element_types(args)
    nest = _Nest("def impl(kernel, like, *args):", args, casts)
    if not isinstance(like, types.Array) or not nest.arrays or like.ndim > nest.ndim:
        # a number, or a value smaller than like (which unbroadcast spreads): nothing to sum
        return lambda kernel, like, *args: unbroadcast(kernel(*args), like)
    n, lnd = nest.ndim, like.ndim
    ldtype = like.dtype
    target = ldtype if isinstance(ldtype, types.Float | types.Complex) else result
    real = isinstance(result, types.Complex) and not isinstance(target, types.Complex)
    vreal = result.underlying_float if real else result
    acc = np.result_type(as_dtype(vreal), as_dtype(target)).type
    code = nest.code
    code.names.update(_scalar=fused.scalar, ACC=acc, R=as_dtype(target).type)
    index = []
    for d in range(n):
        if (k := d - (n - lnd)) >= 0:
            code(f"n{d} = _bdim(n{d}, like.shape[{k}])", f"l{d} = int(like.shape[{k}] != 1)")
            index.append(f"U(i{d} * l{d})")
    if lnd == n:  # nothing to sum when the shapes are equal: the kernel's own loop
        code.names["unbroadcast"] = unbroadcast
        same = " and ".join(f"n{d} == like.shape[{d}]" for d in range(n)) or "True"
        code(f"if {same}:", "    return unbroadcast(kernel(*args), like)")
    code("out = np.zeros(like.shape, ACC)")
    nest.loops(range(n))
    at = f"out[{_subscript(index)}]" if index else "out[()]"
    code(f"{at} += {nest.value()}{'.real' if real else ''}")
    code.depth = 1
    code("return out" if acc is as_dtype(target).type else "return out.astype(R)")
    return code.compile("unbroadcast_of")


@overload(expand_reduced, prefer_literal=True)
def _expand_reduced_jit(value, axis, keepdims):
    keep = _keepdims("expand_reduced", keepdims)
    if keep or not isinstance(value, types.Array):
        return lambda value, axis, keepdims: value
    ndim = value.ndim + (len(axis.types) if isinstance(axis, types.BaseTuple) else 1)
    ax = _axes("expand_reduced", axis, ndim)
    if ax.static is None or ax.error:
        raise _fail("expand_reduced", f"axis must be constant and valid, got {axis}")
    shape, j = [], 0
    for d in range(ndim):
        if d in ax.static:
            shape.append("1")
        else:
            shape.append(f"value.shape[{j}]")
            j += 1
    source = (
        "def impl(value, axis, keepdims):\n"
        f"    return np.ascontiguousarray(value).reshape({_tuple(shape)})\n"
    )
    return _define(source, "impl", {})
