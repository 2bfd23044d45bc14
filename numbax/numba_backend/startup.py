"""Make Numba's start-up in a fresh process cheaper.

Whenever Numba first sets up its NumPy support (also to load a function from its disk
cache), it checks that SciPy's BLAS bindings exist with ``import
scipy.linalg.cython_blas``. That statement runs ``scipy/linalg/__init__.py`` first,
which imports most of ``scipy.linalg`` (about 0.15 s here, a quarter of a warm-cache
start). Numba needs only the two Cython binding modules, so numbax loads those two
extension modules itself, with the same loader Python would use, and leaves
``scipy.linalg`` to be imported normally if and when anything asks for it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

_BINDINGS = ("cython_blas", "cython_lapack")


def preload_blas_bindings() -> None:
    """Load ``scipy.linalg.cython_blas``/``cython_lapack`` without ``scipy.linalg``.

    Does nothing when SciPy is missing, ``scipy.linalg`` is already imported, or the
    files are not where a regular SciPy install has them: Numba then imports them the
    usual way.
    """
    if "scipy.linalg" in sys.modules:
        return
    spec = importlib.util.find_spec("scipy")
    if spec is None or spec.origin is None:
        return
    directory = Path(spec.origin).parent / "linalg"
    for name in _BINDINGS:
        full_name = f"scipy.linalg.{name}"
        if full_name in sys.modules:
            continue
        suffixes = importlib.machinery.EXTENSION_SUFFIXES
        candidates = [directory / f"{name}{suffix}" for suffix in suffixes]
        path = next((p for p in candidates if p.exists()), None)
        if path is None:
            return
        loader = importlib.machinery.ExtensionFileLoader(full_name, str(path))
        module_spec = importlib.util.spec_from_loader(full_name, loader)
        module = importlib.util.module_from_spec(module_spec)
        loader.exec_module(module)
        sys.modules[full_name] = module
