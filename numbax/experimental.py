"""JAX's ``jax.experimental`` names numbax offers: ``io_callback``, a host callback with
side effects (see ``numbax.runtime.callbacks``)."""

from numbax.runtime.callbacks import io_callback

__all__ = ["io_callback"]
