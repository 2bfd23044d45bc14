"""Load generated source as a module, from the text numbax generated.

The text is written to the private cache directory (``cache.store_source``) so that
tracebacks, ``inspect.getsource`` and Numba's disk cache find it, but the module is
executed from numbax's own text, compiled here: never from the file as it is on disk,
nor from a ``.pyc`` in a ``__pycache__`` (numbax writes none). It is registered in
``sys.modules`` under a stable name derived from its cache key only after its code has
finished running, so another thread never sees half a module.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

from numbax.codegen.cache import generated_dir, store_source
from numbax.codegen.locks import generation_lock
from numbax.transform.source import LiveNamespace

GENERATED_PREFIX = "numbax_generated_"
"""How the names of generated modules (and their files in the cache) begin."""


def module_name(function_name: str, key: str) -> str:
    """A stable importable module name for one generated function."""
    safe = "".join(c if c.isalnum() else "_" for c in function_name)
    return f"{GENERATED_PREFIX}{safe}_{key}"


def load_module(name: str, text: str, namespace: dict[str, Any]) -> types.ModuleType:
    """Write ``text`` to ``<cache>/<name>.py`` and execute it with ``namespace`` bound.

    ``namespace`` holds the objects the generated code refers to by name (the user's
    globals and closure values it uses, numbax's runtime): they become the module's
    globals before its code runs. Concurrent callers wait for one of them to load it.
    """
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__numbax_source__", None) == text:
        return existing
    with generation_lock:
        existing = sys.modules.get(name)
        if existing is not None and getattr(existing, "__numbax_source__", None) == text:
            return existing
        path = generated_dir() / f"{name}.py"
        store_source(path, text)
        module = types.ModuleType(name)
        module.__file__ = str(path)
        module.__dict__.update(namespace)
        module.__numbax_source__ = text
        code = compile(text, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 (numbax's own text, not the file)
        sys.modules[name] = module
        return module


def live_function(
    module: types.ModuleType, name: str, bindings: dict[str, Any], read: Callable[[str], Any]
) -> types.FunctionType:
    """``module``'s function ``name``, made again over a :class:`LiveNamespace` of
    ``bindings`` (which win over what the module holds) and ``read``."""
    function = getattr(module, name)
    namespace = LiveNamespace({**vars(module), **bindings}, read)
    live = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )
    live.__kwdefaults__ = function.__kwdefaults__
    live.__qualname__ = function.__qualname__
    live.__doc__ = function.__doc__
    namespace[name] = live  # a recursive function calls itself by this name
    return live
