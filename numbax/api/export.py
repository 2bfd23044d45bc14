"""``nx.export(g, path)``: a transformed function as one standalone Python file.

Derivatives (and batched or compiled functions) are generated source, so they can ship
without numbax: the file holds the generated module of ``g``, the generated functions it
calls, the user's own functions and constants it reads, and the runtime helpers it calls
through ``nxrt`` (only those, copied as source, with what they call in turn). It imports
NumPy, and Numba when ``g`` is jitted (with the Numba versions of those helpers, copied
too). ``numbax/codegen/standalone.py`` follows the names; this module says what the root
of each kind of transformed function is.

What a generated function is can depend on its arguments: ``jit`` bakes static
arguments and the Python-scalar flags of its parameters into its source, ``vmap``
chooses the vectorized body or the loop for the ranks of the arguments. For those,
``export`` takes example arguments and writes what a call on them runs: the exported
function is specialized for them (a jitted one takes the dynamic arguments only; its
static ones are constants of the file).
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from numbax.api.callable import NumbaxFunction
from numbax.api.jit import Jitted
from numbax.api.per_arity import PerArity
from numbax.api.rewritten import Rewritten, where
from numbax.api.transformed import Transformed
from numbax.api.vmap import Batched
from numbax.codegen.standalone import ExportError, Standalone
from numbax.numba_backend.exported import numba_versions, portable
from numbax.numba_backend.passes.captured import Captured
from numbax.version import __version__

__all__ = ["ExportError", "export"]


def export(fun: Any, path: str | os.PathLike, *example_args: Any, **example_kwargs: Any) -> Path:
    """Write ``fun`` (any numbax-transformed function) to ``path`` as one Python file
    that runs without numbax, and return the path.

    The file defines the generated function under its generated name (``grad_f``,
    ``vmap_f``, ``f`` for ``jit(f)``; listed in its ``__all__`` and its header), with
    everything it calls; it imports NumPy, and Numba when ``fun`` is jitted. Import it
    (``importlib``, or put it beside your program) and call that function.

    ``example_args``/``example_kwargs``: arguments to specialize for, as a call of
    ``fun`` takes them. ``jit`` needs them when it has static arguments or Python
    scalar parameters (their values are baked in: the exported function takes the
    dynamic arguments only; nothing is compiled here), and ``vmap`` to choose its
    method for the arguments' ranks (it is called once on them); without them a jitted
    function is exported as it compiles for array arguments and a batched one as its
    loop. The derivative transformations generate the same code for any arguments.

    The exported function returns what the generated code returns: a jitted one takes
    and returns arrays, scalars and tuples (not dicts), and ``grad``'s result is not
    cast back to an input's dtype or pytree type as ``nx.grad`` does after the call.
    """
    root, jitted = _root(fun, example_args, example_kwargs)
    file = Standalone(
        companions=numba_versions if jitted else _no_companions,
        substitute=_compiled_substitute if jitted else _what_runs,
    )
    name = file.add(root, getattr(root, "__name__", "exported"), "the exported function")
    header = _header(fun, name, jitted)
    text = file.text(header, [name])
    target = Path(path)
    target.write_text(text)
    return target


def _no_companions(value: Any) -> list[Any]:
    """Interpreted code needs nothing beside the functions it calls."""
    return []


def _root(fun: Any, args: tuple, kwargs: dict) -> tuple[Any, bool]:
    """The generated function a call of ``fun`` runs (a Numba dispatcher, for jit), and
    whether it is compiled."""
    if isinstance(fun, PerArity):
        if not args:
            raise ExportError(
                f"{where(fun.fun)} takes *args: pass example arguments to nx.export to "
                "choose how many it is exported for"
            )
        return _root(fun.for_arity(len(args)), args, kwargs)
    if isinstance(fun, Jitted):
        if args or kwargs:
            if not all(map(_plain, (*args, *kwargs.values()))):
                raise ExportError(
                    f"nx.export of jit({where(fun.fun)}): the exported function takes "
                    "arrays, scalars and tuples; pass pytrees of arrays as separate "
                    "arguments, or export it without jit"
                )
            compiled, _ = fun.specialization_for(args, kwargs, capture=Captured.NOTHING)
        elif fun.static_argnames:
            raise ExportError(
                f"jit({where(fun.fun)}) has static arguments {fun.static_argnames}: pass "
                "example arguments to nx.export, which bakes their values into the file"
            )
        else:
            compiled = fun.specialize({}, frozenset(), capture=Captured.NOTHING)
        return compiled.dispatcher, True
    if isinstance(fun, Batched):
        if args or kwargs:
            fun(*args, **kwargs)
        program = fun._last or fun.loop(fun._axes(len(fun.parameters("vmap")), ()))
        return _unwrap_jit(program.function)
    if isinstance(fun, Transformed):  # the same code for any arguments
        return fun.generated().function, False
    if isinstance(fun, Rewritten):  # custom rules, checkpoint: a call runs the function
        if isinstance(fun.fun, NumbaxFunction):
            return _root(fun.fun, args, kwargs)
        return fun.fun, False
    raise ExportError(
        f"nx.export takes a function numbax made (nx.jit, nx.grad, nx.vmap...), not "
        f"{type(fun).__name__} {fun!r}"
    )


def _plain(value: Any) -> bool:
    """Whether compiled code takes ``value`` as it is: an array, a scalar, or a tuple of
    those (``jit`` turns dicts and registered classes into records at its boundary,
    which the file does not have)."""
    if type(value) is tuple:
        return all(map(_plain, value))
    return isinstance(value, np.ndarray | np.generic | bool | int | float | complex)


def _unwrap_jit(function: Any) -> tuple[Any, bool]:
    """A batched program's function, and whether it is compiled (``vmap(jit(f))``)."""
    if isinstance(function, Jitted):
        return function.specialize({}, frozenset(), capture=Captured.NOTHING).dispatcher, True
    return function, False


def _what_runs(value: Any) -> Any:
    """What the file holds for a numbax function that copied code calls: the function a
    call of it runs (a custom rule's or a checkpoint's own function, the generated code
    of a transformation); None for any other value."""
    if isinstance(value, Jitted):
        return value.fun
    if isinstance(value, Batched):  # called with arguments of any rank: the loop
        return value.loop(value._axes(len(value.parameters("vmap")), ())).function
    if isinstance(value, Rewritten):
        return value.fun
    if isinstance(value, NumbaxFunction) and hasattr(value, "__numbax_function__"):
        target = value.__numbax_function__()
        return target if isinstance(target, types.FunctionType) else None
    return None


def _compiled_substitute(value: Any) -> Any:
    """:func:`_what_runs`, and NumPy's functions for numbax's elementary ones."""
    return _what_runs(value) or portable(value)


def _header(fun: Any, name: str, jitted: bool) -> str:
    kind = "compiled with Numba at the first call" if jitted else "runs on NumPy"
    needs = "NumPy and Numba" if jitted else "NumPy"
    described = f"{getattr(fun, 'transformation', 'transform')} of {where(_user_function(fun))}"
    lines = [
        f"{name}: {described}",
        f"exported by numbax {__version__} (nx.export): a standalone module that needs "
        f"{needs}, not numbax;",
        f"{kind}. Public function: {name}.",
        "Everything below is generated or copied from numbax and the user's code; the",
        "runtime helpers the code calls are copied from numbax (numbax/runtime).",
    ]
    return "\n".join(f"# {line}" for line in lines) + "\n"


def _user_function(fun: Any) -> Callable:
    """The user's function behind layers of numbax functions."""
    while isinstance(fun, NumbaxFunction):
        fun = fun.fun
    return fun
