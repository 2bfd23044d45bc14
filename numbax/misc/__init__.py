"""autograd's ``autograd.misc`` names: ``optimizers`` (``sgd``, ``rmsprop``, ``adam``
taking a gradient function and running the loop themselves)."""

from numbax.misc import optimizers

__all__ = ["optimizers"]
