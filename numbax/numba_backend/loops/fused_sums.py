"""Loops that sum a fused kernel's values as they make them: the Numba implementations of
a kernel declared ``@nxrt.elementwise(summed=axis)`` or ``@nxrt.elementwise(
unbroadcast=True)`` (``passes/fuse.py`` writes them; ``elementwise.py`` declares them).

``np.sum(x, axis=2)`` of a fused loop's values ``x``, or the ``unbroadcast`` of a
cotangent back to the shape of an operand that was broadcast, would otherwise store the
whole array of values and read it back to sum it: for the pair forces of a
molecular-dynamics step, an (n, n, 3) array written and read several times a step. Here
one loop over the broadcast shape of the kernel's arguments computes each value and
adds it into the result.

Each argument is indexed at the loop indices times a flag per axis, 0 where it is
broadcast (faster than reading it through a view of stride 0, measured on the pair
forces: 13 µs against 19). Sums run in the order ``nxrt.sum`` and ``unbroadcast``
add, so a fused sum equals the stored one to the bit: a trailing run of reduced axes is
folded row by row (pairwise from 8 values on, as NumPy), every other axis in C order.

The implementations take the kernel's arguments only (the axes and the kernel are the
declaration's), so Numba's cache of them serves a new process.

They allocate with Numba's ``np.zeros`` and ``np.empty``, called, rather than numbax's
``new_arrays`` lowered in place as the other helpers do: in the summing loop's own
function, the allocation made the molecular-dynamics force 6% slower (``python -m
benchmarks --only md --repeat 3``, two runs each: 39.0 ms against 36.7-36.9 ms).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from numba import types
from numba.extending import register_jitable
from numba.np.numpy_support import as_dtype

from numbax.numba_backend.generated import Code, define
from numbax.numba_backend.loops.broadcast_dims import broadcast_dim
from numbax.numba_backend.np._typing import _accumulating, _tuple
from numbax.numba_backend.np.reduction_folds import _START, _fold1d, _sum_op
from numbax.numba_backend.np.weak import weak_cast
from numbax.runtime.broadcasting import unbroadcast


class Kernel(Protocol):
    """What the loops need of a fused kernel (``elementwise.ScalarKernel``)."""

    scalar: Any  # its scalar function, compiled

    def element_types(self, args: tuple) -> tuple[dict[int, types.Type], tuple, types.Type]:
        """The casts of weak scalars, the element types and the result type."""


class _Nest:
    """The loop nest over the broadcast shape of a kernel's arguments ``a0``..., with
    each element's value ``_scalar(...)``, as lines of source under construction."""

    def __init__(
        self, header: str, args: tuple, casts: dict[int, types.Type], skip: int = 0
    ) -> None:
        """``header`` takes ``*args``; the kernel's arguments are those after the first
        ``skip``, which are bound to ``like0``..."""
        self.args = args
        self.arrays = [i for i, a in enumerate(args) if isinstance(a, types.Array)]
        self.ndim = builtins.max((args[i].ndim for i in self.arrays), default=0)
        self.code = Code(
            header,
            {"np": np, "_bdim": broadcast_dim, "U": np.uint64},
            "fused sum",
        )
        params = ", ".join([f"like{m}" for m in range(skip)] + [f"a{i}" for i in range(len(args))])
        self.code(f"{params}{',' if skip + len(args) == 1 else ''} = args")
        for i, target in casts.items():
            self.code.names[f"_cast{i}"] = weak_cast(args[i], target)
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

    def flags(self) -> None:
        """Per array and axis, whether the array varies along it (``s<i>_<d>``: 0 where it
        is broadcast, so that index ``i<d> * s<i>_<d>`` reads its one element)."""
        for i in self.arrays:
            for d in range(self.ndim):
                if (k := self._axis(i, d)) >= 0:
                    self.code(f"s{i}_{d} = int(a{i}.shape[{k}] != 1)")

    def index(self, array: str, ndim: int, flags: str) -> str:
        """``array`` (of ``ndim`` dims) indexed at the loop indices, by flags named
        ``<flags>_<d>``; unsigned: Numba then skips its check for negative indices."""
        items = [f"U(i{d} * {flags}_{d})" for d in range(self.ndim - ndim, self.ndim)]
        return f"{array}[{', '.join(items)}]" if items else f"{array}[()]"

    def value(self, scalar: str = "_scalar") -> str:
        """The value of the kernel ``scalar`` at the loop indices ``i0``..."""
        elements = [
            self.index(f"a{i}", self.args[i].ndim, f"s{i}") if i in self.arrays else f"a{i}"
            for i in range(len(self.args))
        ]
        return f"{scalar}({', '.join(elements)})"

    def loops(self, dims: range) -> None:
        for d in dims:
            self.code(f"for i{d} in range(n{d}):")
            self.code.depth += 1


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
    nest.flags()
    acc = _accumulating(result)
    code = nest.code
    code.names.update(_scalar=kernel.scalar, T=as_dtype(acc).type, fold=_fold1d(_sum_op(acc)))
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
        code(f"{at} = fold(buffer, {_START}, row, {at})")
    else:
        nest.loops(range(n))
        code(f"{at} = T({at} + T({nest.value()}))")
    code.depth = 1
    if keepdims:
        code(f"return out.reshape({_tuple(['1' if d in reduced else f'n{d}' for d in range(n)])})")
    else:
        code("return out" if kept else "return out[0]")
    return code.compile("sum")


def unbroadcast_loop(
    kernels: list[Kernel], args: tuple, stored: Callable, computed: Callable
) -> Callable:
    """The implementation of ``unbroadcast(kernel(*values), like)`` for each kernel and
    its like, of arguments ``(*likes, *values)`` of types ``args``, one like per kernel:
    one loop computes every kernel's value and adds each into its like's shape.
    ``stored(*likes, *values)``: the same of the stored values, where nothing is summed
    (a number, or a like of more axes than the values, which ``unbroadcast`` spreads
    them over). ``computed(*values)``: the first kernel's values, stored: the result
    itself when there is one like, of the values' shape and dtype (``unbroadcast``
    returns its value then; called directly, its general case is not compiled)."""
    count = len(kernels)
    likes, values = args[:count], args[count:]
    casts, _, _ = kernels[0].element_types(values)
    like_names = [f"like{m}" for m in range(count)]  # bound by the nest
    nest = _Nest("def impl(*args):", values, casts, skip=count)
    n = nest.ndim
    summed = nest.arrays and all(isinstance(like, types.Array) and like.ndim <= n for like in likes)
    if not summed or any(kernel.element_types(values)[0] != casts for kernel in kernels):
        return lambda *args: stored(*args)
    code = nest.code
    as_computed = count == 1 and likes[0].ndim == n and _keeps_dtype(kernels[0], values, likes[0])
    if as_computed:
        code.names["computed"] = computed
        same = " and ".join(f"n{d} == like0.shape[{d}]" for d in range(n)) or "True"
        code(f"if {same}:", "    return computed(*args[1:])")
    for like, name in zip(likes, like_names, strict=True):
        for d in range(n):  # a like of larger shape (a value to spread) broadcasts the loop
            if (k := d - (n - like.ndim)) >= 0:
                code(f"n{d} = _bdim(n{d}, {name}.shape[{k}])")
    nest.flags()
    if count == 1 and likes[0].ndim == n and not as_computed:  # equal shapes: the kernel's own loop
        code.names["stored"] = stored
        same = " and ".join(f"n{d} == like0.shape[{d}]" for d in range(n)) or "True"
        code(f"if {same}:", "    return stored(*args)")
    updates, results = [], []
    for m, (kernel, like) in enumerate(zip(kernels, likes, strict=True)):
        result = kernel.element_types(values)[2]
        ldtype = like.dtype
        target = ldtype if isinstance(ldtype, types.Float | types.Complex) else result
        real = isinstance(result, types.Complex) and not isinstance(target, types.Complex)
        vreal = result.underlying_float if real else result
        acc = np.result_type(as_dtype(vreal), as_dtype(target)).type
        code.names.update({f"_scalar{m}": kernel.scalar, f"ACC{m}": acc})
        code.names[f"R{m}"] = as_dtype(target).type
        code(f"out{m} = np.zeros(like{m}.shape, ACC{m})")
        for d in range(n - like.ndim, n):
            code(f"l{m}_{d} = int(like{m}.shape[{d - (n - like.ndim)}] != 1)")
        at = nest.index(f"out{m}", like.ndim, f"l{m}")
        updates.append(f"{at} += {nest.value(f'_scalar{m}')}{'.real' if real else ''}")
        results.append(f"out{m}" if acc is as_dtype(target).type else f"out{m}.astype(R{m})")
    nest.loops(range(n))
    code(*updates)
    code.depth = 1
    code(f"return {results[0]}" if count == 1 else f"return {_tuple(results)}")
    return code.compile("unbroadcast")


def _keeps_dtype(kernel: Kernel, values: tuple, like: Any) -> bool:
    """Whether ``unbroadcast`` of the kernel's values into ``like``'s shape keeps their
    dtype (it takes like's when that is inexact, and the real part of complex values
    for a real like)."""
    result = kernel.element_types(values)[2]
    return not isinstance(like.dtype, types.Float | types.Complex) or like.dtype == result


def stored_unbroadcast(applied: list[Callable]) -> Callable:
    """``unbroadcast(apply(*values), like)`` of ``(*likes, *values)`` for each of the
    ``applied`` loops and its like (a tuple of them for more than one), as a function
    Numba compiles."""
    count = len(applied)
    likes = [f"like{m}" for m in range(count)]
    each = [f"unbroadcast(apply{m}(*args), like{m})" for m in range(count)]
    result = each[0] if count == 1 else _tuple(each)
    source = f"def stored({', '.join(likes)}, *args):\n    return {result}\n"
    scope = {"unbroadcast": unbroadcast, **{f"apply{m}": f for m, f in enumerate(applied)}}
    return register_jitable(define(source, scope, "fused sum stored", "stored"))
