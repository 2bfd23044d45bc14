"""Collectives over a named batch axis (JAX's ``jax.lax.psum`` and friends).

Inside a function mapped by ``nx.vmap(f, axis_name="i")``, ``psum(x, "i")`` is the sum
of ``x`` over the examples of the batch, the same value in each; ``pmean``, ``pmax`` and
``pmin`` likewise, and ``axis_index("i")`` is the example's position in the batch.

They are markers for ``vmap``: it rewrites each call in the mapped function's body,
whichever way it batches — as a reduction over the batch axis (vectorized), or by
splitting its loop over the examples at the collective (loop). Called anywhere else
they raise JAX's ``NameError`` for an unbound axis name.
"""

from __future__ import annotations

from typing import Any

__all__ = ["COLLECTIVES", "axis_index", "pmax", "pmean", "pmin", "psum"]


def _unbound(axis_name: Any, what: str) -> NameError:
    return NameError(
        f"unbound axis name: {axis_name}. nx.lax.{what} works in the body of a function "
        f"mapped by nx.vmap(..., axis_name={axis_name!r}) (numbax rewrites the collectives "
        "of the mapped function itself, not of the functions it calls)."
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


def axis_index(axis_name: Any) -> Any:
    """The position of the example in the batch axis ``axis_name``."""
    raise _unbound(axis_name, "axis_index")


# collective → (NumPy reduction over the batch axis, what an unmapped value gives)
COLLECTIVES = {
    psum: ("np.sum", "{x} * _size"),
    pmean: ("np.mean", "{x}"),
    pmax: ("np.max", "{x}"),
    pmin: ("np.min", "{x}"),
}
