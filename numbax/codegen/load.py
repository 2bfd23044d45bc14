"""Load generated source as a module, from the text numbax generated.

The text is written to the private cache directory (``cache.store_module``) so that
Numba's disk cache finds it (and users can read it), and kept in ``linecache`` for
tracebacks and ``inspect.getsource``, whatever becomes of the file; but the module is
executed from numbax's own text, compiled here: never from the file as it is on disk,
nor from a ``.pyc`` in a ``__pycache__`` (numbax writes none). It is registered in
``sys.modules`` under a stable name derived from its cache key only after its code has
finished running, so another thread never sees half a module.
"""

from __future__ import annotations

import linecache
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from numbax.codegen.cache import generated_dir, store_module, store_source
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
        path = store_module(name, text)
        # The module's lines for ``inspect`` and tracebacks are numbax's text, not the
        # file's: the file may be removed (``cache clear``) or rewritten while it runs.
        linecache.cache[str(path)] = (len(text), None, text.splitlines(True), str(path))
        module = types.ModuleType(name)
        module.__file__ = str(path)
        module.__dict__.update(namespace)
        module.__numbax_source__ = text
        code = compile(text, str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102 (numbax's own text, not the file)
        sys.modules[name] = module
        return module


def restore_file(function: types.FunctionType) -> bool:
    """Write the file of ``function``'s generated module again if it is gone (the cache
    was cleared while the module was loaded): Numba's disk cache keeps the function's
    machine code beside that file, keyed on it. Whether it was written (nothing to do
    for a file that is there, or another function's).

    Raises ``OSError`` when the file cannot be written."""
    path = Path(function.__code__.co_filename)
    # its module's text (read from the dict itself: a live namespace reads on)
    text = dict.get(function.__globals__, "__numbax_source__")
    if text is None or path.exists():
        return False
    if path.parent != generated_dir():  # made again, when it was removed with the file
        return False
    store_source(path, text)
    return True


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
