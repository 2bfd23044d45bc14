"""``pmap``: JAX's ``jax.pmap``, on the one device numbax computes on.

JAX maps ``pmap``'s axis over devices; on a machine with one CPU device it accepts only
an axis of size 1. numbax has one device, the host, so ``pmap`` maps the axis there,
with ``vmap``'s semantics (the same results as ``jax.pmap`` on as many devices as the
axis is long): collectives over ``axis_name`` (``nx.lax.psum``...) work as under
``vmap``, and ``nx.jit(nx.pmap(f))`` compiles it. Spreading the axis over threads or
devices is not done.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax.api.per_arity import PerArity
from numbax.api.vmap import Batched, vmap


def pmap(
    fun: Callable,
    axis_name: Any = None,
    *,
    in_axes: Any = 0,
    out_axes: Any = 0,
    static_broadcasted_argnums: int | tuple[int, ...] = (),
    devices: Any = None,
    backend: str | None = None,
    axis_size: int | None = None,
    donate_argnums: int | tuple[int, ...] = (),
) -> Batched | PerArity:
    """Map ``fun`` over the leading axis of its arguments, as ``jax.pmap`` does, on the
    host: the same as ``nx.vmap(fun, in_axes, out_axes, axis_name, axis_size)``.

    ``devices``, ``backend`` and ``donate_argnums`` are accepted for JAX compatibility
    (there is one device). ``static_broadcasted_argnums`` is not supported: close over
    those values instead (``nx.pmap(lambda x: f(x, n))``).
    """
    if static_broadcasted_argnums not in ((), None):
        raise TypeError(
            "nx.pmap does not take static_broadcasted_argnums: close over the static values "
            "instead, as in nx.pmap(lambda x: f(x, n)); nx.pmap maps on the host like nx.vmap"
        )
    if backend not in (None, "cpu"):
        raise RuntimeError(f"pmap backend {backend!r} is not available: numbax maps on the CPU")
    return vmap(fun, in_axes, out_axes, axis_name, axis_size)
