"""Loops that sum a fused kernel's values as they make them: the Numba implementations of
a kernel declared ``@nxrt.elementwise(summed=axis)`` or ``@nxrt.elementwise(
unbroadcast=True)`` (``fuse.py`` writes them; ``elementwise.py`` declares them).

``np.sum(x, axis=2)`` of a fused loop's values ``x``, or the ``unbroadcast`` of a
cotangent back to the shape of an operand that was broadcast, would otherwise store the
whole array of values and read it back to sum it: for the pair forces of a
molecular-dynamics step, an (n, n, 3) array written and read several times a step. Here
one loop over the broadcast shape of the kernel's arguments computes each value and
adds it into the result.

Each argument is read through a view of the broadcast shape, of stride 0 along the axes
it is broadcast along (indexing such views costs less than multiplying each index by
whether its axis is broadcast). Sums run in the order ``nxrt.sum`` and ``unbroadcast``
add, so a fused sum equals the stored one to the bit: a trailing run of reduced axes is
folded row by row (pairwise from 8 values on, as NumPy), every other axis in C order.

The implementations take the kernel's arguments only (the axes and the kernel are the
declaration's), so Numba's cache of them serves a new process.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from numba import types
from numba.extending import register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.generated import Code
from numbax.numba_backend.reductions import _accumulating, _fold1d, _sum_op
from numbax.runtime.broadcasting import unbroadcast


class Kernel(Protocol):
    """What the loops need of a fused kernel (``elementwise.ScalarKernel``)."""

    inlined: Any  # its scalar function, inlined into the loop that calls it

    def element_types(self, args: tuple) -> tuple[dict[int, types.Type], tuple, types.Type]:
        """The casts of weak scalars, the element types and the result type."""


@register_jitable
def _bdim(a, b):
    """The broadcast of two dimension lengths, or NumPy's ValueError."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    raise ValueError("operands could not be broadcast together")


class _Nest:
    """The loop nest over the broadcast shape of a kernel's arguments ``a0``..., with
    each element's value ``_scalar(...)``, as lines of source under construction."""

    def __init__(self, header: str, args: tuple, casts: dict[int, types.Type]) -> None:
        self.args = args
        self.arrays = [i for i, a in enumerate(args) if isinstance(a, types.Array)]
        self.ndim = builtins.max((args[i].ndim for i in self.arrays), default=0)
        self.code = Code(header, {"np": np, "_bdim": _bdim, "U": np.uint64}, "fused sum")
        params = ", ".join(f"a{i}" for i in range(len(args)))
        self.code(f"{params}{',' if len(args) == 1 else ''} = args")
        for i, target in casts.items():
            self.code.names[f"_cast{i}"] = as_dtype(target).type
            self.code(f"a{i} = _cast{i}(a{i})")
        for d in range(self.ndim):
            lengths = [f"a{i}.shape[{k}]" for i in self.arrays if (k := self._axis(i, d)) >= 0]
            shape = lengths[0]
            for length in lengths[1:]:
                shape = f"_bdim({shape}, {length})"
            self.code(f"n{d} = {shape}")

    def _axis(self, i: int, d: int) -> int:
        """Axis of array ``a<i>`` that is axis ``d`` of the broadcast shape (-1: none)."""
        return d - (self.ndim - self.args[i].ndim)

    def views(self) -> None:
        """The views ``v<i>`` of the arrays over the broadcast shape ``n0``... (once
        final) that :meth:`value` reads."""
        for i in self.arrays:
            if self.ndim:
                self.code(f"v{i} = {self.spread(f'a{i}', self.args[i].ndim)}")

    def spread(self, array: str, ndim: int) -> str:
        """A view of ``array`` (of ``ndim`` dims) over the broadcast shape: stride 0
        along the axes it is broadcast along."""
        shape, strides = [], []
        for d in range(self.ndim):
            shape.append(f"n{d}")
            k = d - (self.ndim - ndim)
            strides.append(f"{array}.strides[{k}] * ({array}.shape[{k}] != 1)" if k >= 0 else "0")
        return f"np.lib.stride_tricks.as_strided({array}, {_tuple(shape)}, {_tuple(strides)})"

    def value(self) -> str:
        """The kernel's value at the loop indices ``i0``..."""
        elements = []
        for i in range(len(self.args)):
            if i not in self.arrays:
                elements.append(f"a{i}")
            elif self.ndim:
                elements.append(f"v{i}[{', '.join(f'i{d}' for d in range(self.ndim))}]")
            else:
                elements.append(f"a{i}[()]")
        return f"_scalar({', '.join(elements)})"

    def loops(self, dims: range) -> None:
        for d in dims:
            self.code(f"for i{d} in range(n{d}):")
            self.code.depth += 1


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _normalized(axes: tuple[int, ...], ndim: int) -> tuple[int, ...] | None:
    """``axes`` counted from 0 and sorted, or None when NumPy refuses them."""
    if any(not -ndim <= axis < ndim for axis in axes):
        return None
    normalized = sorted(axis % ndim for axis in axes)
    return tuple(normalized) if len(set(normalized)) == len(normalized) else None


def sum_loop(
    kernel: Kernel, args: tuple, axes: tuple[int, ...], keepdims: bool, stored: Callable
) -> Callable:
    """The implementation of ``np.sum(kernel(*args), axis=axes, keepdims=keepdims)``
    for arguments of types ``args``. ``stored(*args)``: that sum of the stored values,
    for what there is no loop to fuse (numbers only) or an axis NumPy refuses (its
    error)."""
    casts, _, result = kernel.element_types(args)
    nest = _Nest("def impl(*args):", args, casts)
    n = nest.ndim
    reduced = _normalized(axes, n)
    if not nest.arrays or reduced is None:
        return lambda *args: stored(*args)
    nest.views()
    acc = _accumulating(result)
    code = nest.code
    code.names.update(_scalar=kernel.inlined, T=as_dtype(acc).type, fold=_fold1d(_sum_op(acc)))
    kept = [d for d in range(n) if d not in reduced]
    tail = 0
    while tail < n and n - 1 - tail in reduced:
        tail += 1
    lead = n - tail
    code(f"out = np.zeros({_tuple([f'n{d}' for d in kept] or ['1'])}, T)")
    at = f"out[{', '.join([f'U(i{d})' for d in kept] or ['0'])}]"
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
    if keepdims:
        code(f"return out.reshape({_tuple(['1' if d in reduced else f'n{d}' for d in range(n)])})")
    else:
        code("return out" if kept else "return out[0]")
    return code.compile("sum")


def unbroadcast_loop(kernel: Kernel, args: tuple, stored: Callable) -> Callable:
    """The implementation of ``unbroadcast(kernel(*args[1:]), args[0])`` for arguments of
    types ``args``: the values summed into the shape of ``like = args[0]``. ``stored(like,
    *values)``: the same of the stored values, where nothing is summed (a number, or a
    ``like`` of more axes than the values, which ``unbroadcast`` spreads them over)."""
    like, values = args[0], args[1:]
    casts, _, result = kernel.element_types(values)
    nest = _Nest("def impl(like, *args):", values, casts)
    n = nest.ndim
    if not (isinstance(like, types.Array) and nest.arrays and like.ndim <= n):
        return lambda like, *args: stored(like, *args)
    code = nest.code
    for d in range(n):  # a like of larger shape (a value to spread) broadcasts the loop
        if (k := d - (n - like.ndim)) >= 0:
            code(f"n{d} = _bdim(n{d}, like.shape[{k}])")
    nest.views()
    if like.ndim == n:  # nothing to sum when the shapes are equal: the kernel's own loop
        code.names["stored"] = stored
        same = " and ".join(f"n{d} == like.shape[{d}]" for d in range(n)) or "True"
        code(f"if {same}:", "    return stored(like, *args)")
    ldtype = like.dtype
    target = ldtype if isinstance(ldtype, types.Float | types.Complex) else result
    real = isinstance(result, types.Complex) and not isinstance(target, types.Complex)
    vreal = result.underlying_float if real else result
    acc = np.result_type(as_dtype(vreal), as_dtype(target)).type
    code.names.update(_scalar=kernel.inlined, ACC=acc, R=as_dtype(target).type)
    code("out = np.zeros(like.shape, ACC)", f"into = {nest.spread('out', like.ndim)}")
    nest.loops(range(n))
    at = f"into[{', '.join(f'i{d}' for d in range(n))}]"
    code(f"{at} += {nest.value()}{'.real' if real else ''}")
    code.depth = 1
    code("return out" if acc is as_dtype(target).type else "return out.astype(R)")
    return code.compile("unbroadcast")


def stored_unbroadcast(apply: Callable) -> Callable:
    """``unbroadcast(apply(*values), like)``, as a function Numba compiles."""

    def stored(like, *args):
        return unbroadcast(apply(*args), like)

    return register_jitable(stored)
