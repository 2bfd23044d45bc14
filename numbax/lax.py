"""Collectives over a named batch axis (JAX's ``jax.lax.psum`` and friends).

Inside a function mapped by ``nx.vmap(f, axis_name="i")`` or ``nx.pmap(f, "i")``,
``psum(x, "i")`` is the sum of ``x`` over the examples of the batch, the same value in
each; ``pmean``, ``pmax`` and ``pmin`` likewise. ``all_gather`` gives every example the
whole batch's values, ``psum_scatter`` gives each example its own part of the sum,
``ppermute`` sends each example's value to another example, ``axis_index("i")`` is the
example's position in the batch and ``axis_size("i")`` the batch's size.

They are markers for ``vmap``: it rewrites each call in the mapped function's body,
whichever way it batches — as an operation on the whole batch (vectorized), or by
splitting its loop over the examples at the collective (loop; ``pmap`` runs each
part's examples on every core). Called anywhere else they raise JAX's ``NameError``
for an unbound axis name. :data:`COLLECTIVES` says what each computes over the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "COLLECTIVES",
    "all_gather",
    "axis_index",
    "axis_size",
    "pmax",
    "pmean",
    "pmin",
    "ppermute",
    "psum",
    "psum_scatter",
]


def _unbound(axis_name: Any, what: str) -> NameError:
    return NameError(
        f"unbound axis name: {axis_name}. nx.lax.{what} works in the body of a function "
        f"mapped by nx.vmap(..., axis_name={axis_name!r}) or nx.pmap (numbax rewrites the "
        "collectives of the mapped function itself, not of the functions it calls)."
    )


def psum(x: Any, axis_name: Any) -> Any:
    """The sum of ``x`` over the batch axis ``axis_name`` (unmapped ``x``: times its size)."""
    raise _unbound(axis_name, "psum")


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean of ``x`` over the batch axis ``axis_name``."""
    raise _unbound(axis_name, "pmean")


def pmax(x: Any, axis_name: Any) -> Any:
    """The maximum of ``x`` over the batch axis ``axis_name``."""
    raise _unbound(axis_name, "pmax")


def pmin(x: Any, axis_name: Any) -> Any:
    """The minimum of ``x`` over the batch axis ``axis_name``."""
    raise _unbound(axis_name, "pmin")


def all_gather(x: Any, axis_name: Any, *, axis: int = 0, tiled: bool = False) -> Any:
    """Every example's ``x``, the same in each: stacked along a new axis ``axis``, or
    (``tiled``) concatenated along ``x``'s axis ``axis``."""
    raise _unbound(axis_name, "all_gather")


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0, tiled: bool = False) -> Any:
    """Example ``i``'s part of ``psum(x, axis_name)``: its entry ``i`` along
    ``scatter_dimension`` (whose size must be the batch's), or (``tiled``) its ``i``-th
    of as many equal blocks along it as the batch has examples."""
    raise _unbound(axis_name, "psum_scatter")


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """``x`` of example ``source`` at example ``destination`` for each pair of ``perm``
    (pairs of positions, no source nor destination twice); zeros where nothing is sent."""
    raise _unbound(axis_name, "ppermute")


def ppermute_inverse(x: Any, axis_name: Any, perm: Any) -> Any:
    """``ppermute`` by the inverse of ``perm`` (each pair reversed): its transpose,
    which derivative code calls (not part of JAX's API)."""
    raise _unbound(axis_name, "ppermute")


def axis_index(axis_name: Any) -> Any:
    """The position of the example in the batch axis ``axis_name``."""
    raise _unbound(axis_name, "axis_index")


def axis_size(axis_name: Any) -> Any:
    """The number of examples in the batch axis ``axis_name``."""
    raise _unbound(axis_name, "axis_size")


@dataclass(frozen=True)
class OverBatch:
    """What a collective computes over the batch, as source templates in ``x`` (the
    operand), ``b`` (the axis of ``x`` holding the examples, or None where the batch
    shares ``x``), ``_size`` (the batch size) and the collective's other parameters
    (``axis``, ``tiled``, ``perm``...: constants)."""

    mapped: str  # x holds the examples along axis b
    unmapped: str  # x is the same for every example (b is None)
    varying: bool = False  # a value per example, the examples along axis 0; else shared
    rank: tuple[int, int] = (0, 0)  # added to an example's rank: not tiled, tiled


_GATHERED = "nxrt.all_gathered(x, b, _size, axis, tiled)"
_SCATTERED = "nxrt.psum_scattered(x, b, _size, scatter_dimension, tiled)"
COLLECTIVES = {
    psum: OverBatch("np.sum(x, axis=b)", "x * _size"),
    pmean: OverBatch("np.mean(x, axis=b)", "x"),
    pmax: OverBatch("np.max(x, axis=b)", "x"),
    pmin: OverBatch("np.min(x, axis=b)", "x"),
    all_gather: OverBatch(_GATHERED, _GATHERED, rank=(1, 0)),
    psum_scatter: OverBatch(_SCATTERED, _SCATTERED, varying=True, rank=(-1, 0)),
    ppermute: OverBatch(*["nxrt.ppermuted(x, b, _size, perm, False)"] * 2, varying=True),
    ppermute_inverse: OverBatch(*["nxrt.ppermuted(x, b, _size, perm, True)"] * 2, varying=True),
}
"""Each collective over the batch (``axis_index`` and ``axis_size`` are not: they need
no example's value)."""

POSITIONAL = (axis_index, axis_size)
"""The markers that read the batch's shape, not its values."""
