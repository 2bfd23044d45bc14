"""NumPy functions passed to a transformation directly: ``nx.jit(np.exp)``.

A NumPy function has no source numbax should rewrite (a ufunc has none at all, and a
Python-level one like ``np.sum`` is dispatch machinery), so numbax writes a one-line
wrapper that calls it, and transforms that instead: the call then goes through the same
rules and runtime replacements as any call in user code. ``read_function`` reads the
wrapper in place of the NumPy function (registered here: the transformations below
codegen write no modules).
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from numbax.codegen.cache import cache_key
from numbax.codegen.load import load_module, module_name
from numbax.transform.source import register_stand_in


def is_numpy_function(func: Any) -> bool:
    """A ufunc or a function of NumPy's public namespace (``np.exp``, ``np.linalg.norm``)."""
    if isinstance(func, np.ufunc):
        return True
    if hasattr(func, "__numbax_function__") or hasattr(func, "nested_dispatcher"):
        return False  # numbax's own wrappers (grad(np.sin)) carry NumPy's names
    module = getattr(func, "__module__", None) or ""
    return callable(func) and (module == "numpy" or module.startswith("numpy."))


def _parameters(func: Any) -> list[str]:
    """The parameters the wrapper takes: a ufunc's inputs, else the required ones."""
    if isinstance(func, np.ufunc):
        return ["x"] if func.nin == 1 else [f"x{i}" for i in range(1, func.nin + 1)]
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return ["x"]
    return [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ] or ["x"]


def numpy_wrapper(func: Any) -> types.FunctionType:
    """``def exp(x): return np.exp(x)``, written to the cache and loaded from there."""
    name = func.__name__
    path = _public_path(func)
    params = ", ".join(_parameters(func))
    text = (
        f"# wrapper of {path}, so numbax can transform it like user code\n"
        f"def {name}({params}):\n"
        f"    return {path}({params})\n"
    )
    module = load_module(module_name(name, cache_key(text)), text, {"np": np})
    return getattr(module, name)


def _stand_in(func: Any) -> types.FunctionType | None:
    return numpy_wrapper(func) if is_numpy_function(func) else None


register_stand_in(_stand_in)


def _public_path(func: Any) -> str:
    """``np.exp``, ``np.linalg.norm``: how user code spells ``func``."""
    for path in (f"np.{func.__name__}", f"np.linalg.{func.__name__}", f"np.fft.{func.__name__}"):
        target: Any = np
        for part in path.split(".")[1:]:
            target = getattr(target, part, None)
        if target is func:
            return path
    raise ValueError(f"{func!r} is not reachable from numpy's namespace")
