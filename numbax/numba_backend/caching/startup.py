"""Make Numba's start-up in a fresh process cheaper.

Whenever Numba first sets up its NumPy support (also to load a function from its disk
cache), it checks that SciPy's BLAS bindings exist with ``import
scipy.linalg.cython_blas``. That statement runs ``scipy/linalg/__init__.py`` first,
which imports most of ``scipy.linalg`` (about 0.15 s here, a quarter of a warm-cache
start). Numba needs only the two Cython binding modules, so numbax loads those two
extension modules itself, with the same loader Python would use, and leaves
``scipy.linalg`` to be imported normally if and when anything asks for it.

rocket-fft (the FFT's Numba versions) imports ``scipy.fft`` to register versions of it
too, and with it ``scipy.special`` (0.25-0.3 s here, a quarter of a warm start again).
numbax imports rocket-fft with ``scipy.fft`` held back, and registers rocket-fft's
``scipy.fft`` versions once the program has imported ``scipy.fft`` itself
(:data:`DEFERRED`, read by ``runtime.load_libraries`` before each function is lowered).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_BINDINGS = ("cython_blas", "cython_lapack")

DEFERRED: dict[str, str] = {}
"""A library the program may import later → the module of its Numba versions, which
:func:`import_rocket_fft` left unimported."""


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


def import_rocket_fft() -> ModuleType | None:
    """rocket-fft, imported without ``scipy.fft`` unless the program has imported it
    already (its versions of ``scipy.fft`` are then in :data:`DEFERRED`); None when it
    is not installed.

    ``sys.modules["scipy.fft"] = None`` makes rocket-fft's ``import scipy.fft`` raise
    ``ImportError``, which it takes as SciPy missing. The entry is removed right after.
    """
    held_back = "scipy.fft" not in sys.modules
    if held_back:
        sys.modules["scipy.fft"] = None  # type: ignore[assignment]
    try:
        import rocket_fft
    except ImportError:  # the optional `fft` extra
        return None
    finally:
        if held_back and sys.modules.get("scipy.fft", False) is None:
            del sys.modules["scipy.fft"]
    if held_back and importlib.util.find_spec("rocket_fft._scipy_fft") is not None:
        DEFERRED["scipy.fft"] = "rocket_fft._scipy_fft"
    return rocket_fft
