"""Load generated source as a real, importable module.

The module is written to the private cache directory and registered in ``sys.modules``
under a stable name derived from its cache key: tracebacks and ``inspect.getsource``
then show generated lines, and Numba's disk cache (which must re-import the module in
a new process) finds it again.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

from numbax.codegen.cache import generated_dir, write_atomic


def module_name(function_name: str, key: str) -> str:
    """A stable importable module name for one generated function."""
    safe = "".join(c if c.isalnum() else "_" for c in function_name)
    return f"numbax_generated_{safe}_{key}"


def load_module(name: str, text: str, namespace: dict[str, Any]) -> types.ModuleType:
    """Write ``text`` to ``<cache>/<name>.py`` and execute it with ``namespace`` bound.

    ``namespace`` holds the objects the generated code refers to by name (the user's
    globals and closure values it uses, numbax's runtime): they become the module's
    globals before its code runs.
    """
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__numbax_source__", None) == text:
        return existing
    path = generated_dir() / f"{name}.py"
    write_atomic(path, text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(namespace)
    module.__numbax_source__ = text
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
