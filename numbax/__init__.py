"""numbax: JAX's transformations for plain NumPy code, by source rewriting and Numba."""

__version__ = "0.1.0"

from numbax.errors import CompileError, TransformError

__all__ = ["CompileError", "TransformError", "__version__"]
