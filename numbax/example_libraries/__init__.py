"""Small libraries with the names of ``jax.example_libraries``: ``optimizers``."""

from numbax.example_libraries import optimizers

__all__ = ["optimizers"]
