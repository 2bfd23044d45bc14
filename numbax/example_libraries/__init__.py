"""Small libraries with the names of ``jax.example_libraries``: ``optimizers``."""
