"""numbax: JAX's transformations for plain NumPy code, by source rewriting and Numba.

Compile ordinary NumPy functions with ``nx.jit``, differentiate them with ``nx.grad``
and its family, batch them with ``nx.vmap``, and read what was generated with
``nx.show``.

``import numbax`` loads only this module: each public name is imported the first time
it is used (PEP 562's module ``__getattr__``), so a program or a notebook that imports
numbax pays for Numba and the transformations when it first transforms something, and
``python -c "import numbax"`` stays as fast as importing NumPy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from numbax.codegen.gc_pause import fewer_full_collections
from numbax.configuration import config
from numbax.errors import CompileError, TransformError
from numbax.version import __version__

if TYPE_CHECKING:  # what the lazy names below are, for readers and type checkers
    from numbax import (
        debug,
        example_libraries,
        experimental,
        flatten_util,
        lax,
        misc,
        nn,
        random,
        test_util,
        tree_util,
    )
    from numbax.api.autodiff import (
        grad,
        hessian,
        jacfwd,
        jacobian,
        jacrev,
        jvp,
        linearize,
        value_and_grad,
        vjp,
    )
    from numbax.api.custom import checkpoint, custom_jvp, custom_vjp, remat
    from numbax.api.devices import (
        block_until_ready,
        device_get,
        device_put,
        devices,
        local_device_count,
    )
    from numbax.api.export import export
    from numbax.api.jit import Jitted, jit
    from numbax.api.pmap import pmap
    from numbax.api.show import show, source
    from numbax.api.vmap import vmap
    from numbax.runtime.callbacks import ShapeDtypeStruct, pure_callback

# public name -> the module that defines it (a submodule: the module itself)
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ["debug", "distributed", "example_libraries", "experimental", "flatten_util", "lax"]
        + ["misc", "nn"]
        + ["random", "test_util", "tree_util"],
        "",
    ),
    **dict.fromkeys(
        ["grad", "hessian", "jacfwd", "jacobian", "jacrev", "jvp", "linearize"]
        + ["value_and_grad", "vjp"],
        "numbax.api.autodiff",
    ),
    **dict.fromkeys(["checkpoint", "custom_jvp", "custom_vjp", "remat"], "numbax.api.custom"),
    "export": "numbax.api.export",
    **dict.fromkeys(["Jitted", "jit"], "numbax.api.jit"),
    **dict.fromkeys(
        ["block_until_ready", "device_get", "device_put", "devices", "local_device_count"],
        "numbax.api.devices",
    ),
    **dict.fromkeys(["show", "source"], "numbax.api.show"),
    "pmap": "numbax.api.pmap",
    "vmap": "numbax.api.vmap",
    **dict.fromkeys(["ShapeDtypeStruct", "pure_callback"], "numbax.runtime.callbacks"),
}

__all__ = [
    "CompileError",
    "Jitted",
    "ShapeDtypeStruct",
    "TransformError",
    "__version__",
    "block_until_ready",
    "checkpoint",
    "config",
    "custom_jvp",
    "custom_vjp",
    "debug",
    "device_get",
    "device_put",
    "devices",
    "example_libraries",
    "experimental",
    "export",
    "flatten_util",
    "grad",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jit",
    "jvp",
    "lax",
    "linearize",
    "local_device_count",
    "misc",
    "nn",
    "pmap",
    "pure_callback",
    "random",
    "remat",
    "show",
    "source",
    "test_util",
    "tree_util",
    "value_and_grad",
    "vjp",
    "vmap",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'numbax' has no attribute {name!r}")
    if module == "":  # a submodule: what it needs, it imports (the runtime reads lax)
        value = importlib.import_module(f"numbax.{name}")
    else:  # the api package registers the transformations with the normalizer
        with fewer_full_collections(settling=False):  # it imports Numba: many objects
            importlib.import_module("numbax.api")
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
