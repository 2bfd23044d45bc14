"""Numba versions of the collectives over a batch (``numbax/runtime/collectives.py``):
``all_gathered``, ``psum_scattered`` and ``ppermuted``, each generated for its
operand's rank and its constant axes, as loops over the examples in their order.
"""

from __future__ import annotations

from typing import Any

from numba import literally, types
from numba.extending import overload

from numbax.numba_backend.runtime.common import _define, _fail
from numbax.runtime.collectives import (
    all_gathered,
    canonical_axis,
    ppermuted,
    psum_scattered,
)

__all__ = ["all_gathered", "ppermuted", "psum_scattered"]


def _literally(params: str, **constants: Any) -> Any:
    """An implementation asking Numba for the value of the first of ``constants`` (the
    parameters that must be constants) that has reached it without one, else None."""
    for name, value in constants.items():
        if isinstance(value, types.Integer | types.Boolean) and not isinstance(
            value, types.IntegerLiteral | types.BooleanLiteral
        ):
            source = f"def impl({params}):\n    return literally({name})\n"
            return _define(source, "impl", {"literally": literally})
    return None


def _value(literal: Any) -> Any:
    return None if isinstance(literal, types.NoneType) else literal.literal_value


def _index(ndim: int, axis: int, index: str) -> str:
    parts = [":"] * ndim
    parts[axis] = index
    return ", ".join(parts) + ("," if ndim == 1 else "")


class _Operand:
    """The operand's source for one example ``k`` and its per-example dimensions."""

    def __init__(self, x: types.Type, b: int | None, what: str) -> None:
        if isinstance(x, types.Array):
            self.ndim, self.dtype = x.ndim, x.dtype
        elif isinstance(x, types.Number | types.Boolean) and b is None:
            self.ndim, self.dtype = 0, types.unliteral(x)
        else:
            raise _fail(what, f"expected an array or a number, got {x}")
        self.b = None if b is None else canonical_axis(b, self.ndim, what)
        self.rank = self.ndim if b is None else self.ndim - 1
        kept = [k for k in range(self.ndim) if k != self.b]
        self.dims = [f"x.shape[{k}]" for k in kept]

    def example(self, k: str) -> str:
        return "x" if self.b is None else f"x[{_index(self.ndim, self.b, k)}]"


def _shape(dims: list[str]) -> str:
    return f"({', '.join(dims)},)"


@overload(all_gathered)
def _all_gathered_jit(x, b, size, axis, tiled):
    asked = _literally("x, b, size, axis, tiled", b=b, axis=axis, tiled=tiled)
    if asked is not None:
        return asked
    operand = _Operand(x, _value(b), "all_gathered")
    dims, rank = list(operand.dims), operand.rank
    if _value(tiled):
        if rank == 0:
            raise _fail("all_gathered", "all_gather(tiled=True) needs an operand with an axis")
        a = canonical_axis(_value(axis), rank, "all_gather")
        width = dims[a]
        dims[a] = f"size * {width}"
        put = f"out[{_index(rank, a, 'k * c:(k + 1) * c')}] = {operand.example('k')}"
        first = f"    c = {width}\n"
    else:
        a = canonical_axis(_value(axis), rank + 1, "all_gather")
        dims.insert(a, "size")
        put = f"out[{_index(rank + 1, a, 'k')}] = {operand.example('k')}"
        first = ""
    source = (
        "def impl(x, b, size, axis, tiled):\n"
        f"{first}"
        f"    out = np.empty({_shape(dims)}, dtype)\n"
        "    for k in range(size):\n"
        f"        {put}\n"
        "    return out\n"
    )
    return _define(source, "impl", {"dtype": operand.dtype})


@overload(psum_scattered)
def _psum_scattered_jit(x, b, size, scatter_dimension, tiled):
    params = "x, b, size, scatter_dimension, tiled"
    asked = _literally(params, b=b, scatter_dimension=scatter_dimension, tiled=tiled)
    if asked is not None:
        return asked
    operand = _Operand(x, _value(b), "psum_scattered")
    rank = operand.rank
    d = canonical_axis(_value(scatter_dimension), rank, "psum_scatter")
    if operand.b is None:
        total = "    total = x * size\n"
    else:  # the examples in their order
        total = (
            f"    total = {operand.example('0')}.copy()\n"
            "    for k in range(1, size):\n"
            f"        total += {operand.example('k')}\n"
        )
    dims = [f"total.shape[{k}]" for k in range(rank)]
    if _value(tiled):
        check = "    if total.shape[d] % size:\n        raise ValueError(_TILED)\n"
        dims[d] = "c"
        take = f"total[{_index(rank, d, 'k * c:(k + 1) * c')}]"
    else:
        check = "    if total.shape[d] != size:\n        raise ValueError(_SIZE)\n"
        del dims[d]
        take = f"total[{_index(rank, d, 'k')}]"
    source = (
        "def impl(x, b, size, scatter_dimension, tiled):\n"
        f"{total}"
        f"    d = {d}\n"
        f"{check}"
        "    c = total.shape[d] // size\n"
        f"    out = np.empty({_shape(['size', *dims])}, total.dtype)\n"
        "    for k in range(size):\n"
        f"        out[k] = {take}\n"
        "    return out\n"
    )
    messages = {
        "_TILED": "psum_scatter(tiled=True): the scatter dimension's size must be divisible "
        "by the batch size",
        "_SIZE": "psum_scatter: the scatter dimension's size must match the batch size",
    }
    return _define(source, "impl", messages)


@overload(ppermuted)
def _ppermuted_jit(x, b, size, perm, inverse):
    asked = _literally("x, b, size, perm, inverse", b=b, inverse=inverse)
    if asked is not None:
        return asked
    operand = _Operand(x, _value(b), "ppermuted")
    ends = "pair[1], pair[0]" if _value(inverse) else "pair[0], pair[1]"
    send = (
        f"source, destination = {ends}\n"
        "if not (0 <= source < size and 0 <= destination < size):\n"
        "    raise ValueError(_OUTSIDE)\n"
        "if sources[source] or destinations[destination]:\n"
        "    raise ValueError(_TWICE)\n"
        "sources[source] = True\n"
        "destinations[destination] = True\n"
        f"out[destination] = {operand.example('source')}\n"
    )
    if isinstance(perm, types.BaseTuple):  # pairs of constants: each its own code
        pairs = "".join(
            f"    pair = perm[{j}]\n" + "".join(f"    {line}\n" for line in send.splitlines())
            for j in range(len(perm))
        )
    elif isinstance(perm, types.List | types.ListType):
        pairs = "    for pair in perm:\n" + "".join(f"        {s}\n" for s in send.splitlines())
    else:
        raise _fail("ppermuted", f"perm must be pairs of positions, got {perm}")
    source = (
        "def impl(x, b, size, perm, inverse):\n"
        f"    out = np.zeros({_shape(['size', *operand.dims])}, dtype)\n"
        "    sources = np.zeros(size, np.bool_)\n"
        "    destinations = np.zeros(size, np.bool_)\n"
        f"{pairs}"
        "    return out\n"
    )
    messages = {
        "_OUTSIDE": "ppermute: perm names a position outside the batch",
        "_TWICE": "ppermute sources and destinations must be unique",
        "dtype": operand.dtype,
    }
    return _define(source, "impl", messages)
