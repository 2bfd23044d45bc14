"""The collectives of ``numbax.lax`` (``psum``, ``all_gather``, ``ppermute``...) as
runtime helpers, and what ``vmap`` computes for them over the whole batch.

The collectives themselves: derivative rules emit them (the JVP of a ``psum`` is a
``psum``, the VJP of an ``all_gather`` a ``psum_scatter``), and ``vmap`` rewrites each
call under a named axis into an operation on the batch. They are defined with the
other operations users call, in ``numbax.lax``; registering them here gives generated
code ``nxrt.psum`` and puts them under the check that every helper has its rules.

The operations on the batch (``all_gathered``, ``psum_scattered``, ``ppermuted``) take
the operand ``x`` with its examples along axis ``b`` (None: the batch shares it) and
the batch size; their Numba versions are in ``numba_backend/runtime/collectives.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from numbax import lax
from numbax.runtime.registry import helper

psum = helper(lax.psum)
pmean = helper(lax.pmean)
pmax = helper(lax.pmax)
pmin = helper(lax.pmin)
all_gather = helper(lax.all_gather)
psum_scatter = helper(lax.psum_scatter)
ppermute = helper(lax.ppermute)
ppermute_inverse = helper(lax.ppermute_inverse)
axis_index = helper(lax.axis_index)
axis_size = helper(lax.axis_size)


def canonical_axis(axis: int, ndim: int, what: str) -> int:
    """``axis`` of an array of rank ``ndim``, negative counting from the end."""
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis {axis} is out of bounds for rank {ndim}")
    return axis % ndim


def _examples_first(x: Any, b: int | None, size: int) -> np.ndarray:
    """The batch with its examples along axis 0 (repeated where the batch shares ``x``)."""
    if b is None:
        x = np.asarray(x)
        return np.broadcast_to(x, (size, *x.shape))
    return np.moveaxis(np.asarray(x), b, 0)


@helper
def all_gathered(x: Any, b: int | None, size: int, axis: int, tiled: bool) -> np.ndarray:
    """``all_gather`` over the batch: the examples' values stacked along a new ``axis``
    or (``tiled``) concatenated along their ``axis``, the same for every example."""
    batch = _examples_first(x, b, size)
    rank = batch.ndim - 1
    if tiled:
        if rank == 0:
            raise ValueError("all_gather(tiled=True) needs an operand with an axis to tile")
        a = canonical_axis(axis, rank, "all_gather")
        return np.concatenate(list(batch), axis=a)
    return np.moveaxis(batch, 0, canonical_axis(axis, rank + 1, "all_gather")).copy()


@helper
def psum_scattered(
    x: Any, b: int | None, size: int, scatter_dimension: int, tiled: bool
) -> np.ndarray:
    """``psum_scatter`` over the batch: the sum's entries (or ``tiled``: blocks) along
    ``scatter_dimension``, one per example, the examples along axis 0."""
    total = np.asarray(x) * size if b is None else np.sum(np.asarray(x), axis=b)
    d = canonical_axis(scatter_dimension, total.ndim, "psum_scatter")
    length = total.shape[d]
    if tiled:
        if length % size:
            raise ValueError(
                f"psum_scatter(tiled=True): the scatter dimension's size {length} must be "
                f"divisible by the batch size {size}"
            )
        blocks = total.shape[:d] + (size, length // size) + total.shape[d + 1 :]
        return np.moveaxis(total.reshape(blocks), d, 0).copy()
    if length != size:
        raise ValueError(
            f"psum_scatter: the scatter dimension's size {length} must match the batch size {size}"
        )
    return np.moveaxis(total, d, 0).copy()


@helper
def ppermuted(x: Any, b: int | None, size: int, perm: Any, inverse: bool) -> np.ndarray:
    """``ppermute`` over the batch (``inverse``: by each pair of ``perm`` reversed): each
    destination gets its source's value, the others zeros; the examples along axis 0."""
    batch = _examples_first(x, b, size)
    out = np.zeros_like(batch)
    sources, destinations = np.zeros(size, np.bool_), np.zeros(size, np.bool_)
    for pair in perm:
        source, destination = (pair[1], pair[0]) if inverse else (pair[0], pair[1])
        if not (0 <= source < size and 0 <= destination < size):
            raise ValueError(f"ppermute: {tuple(pair)} names a position outside the batch")
        if sources[source] or destinations[destination]:
            raise ValueError("ppermute sources and destinations must be unique")
        sources[source] = destinations[destination] = True
        out[destination] = batch[source]
    return out
