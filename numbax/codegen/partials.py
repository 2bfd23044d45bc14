"""``functools.partial`` objects given to a transformation: ``nx.grad(partial(jv, 1))``,
as JAX's documentation writes them.

A partial has no source of its own, so numbax reads in its place a function that takes
the parameters the partial leaves (its signature) and calls the wrapped function with
the bound arguments first. A generated factory makes it, so that each partial's bound
values are the closure values of its own function, which numbax reads and keys its
caches on like any closure's (two partials of one function with other bound values get
code of their own)::

    def make(partial_func, partial_arg_0):
        def jv(z):
            return partial_func(partial_arg_0, z)
        return jv

Keyword arguments the partial binds stay keyword-only parameters with the bound value
as their default, as ``inspect.signature`` shows them (and as a partial, they can be
given again at the call): written as text where the value is a number, a string or
None, else (a list, a dict, an array) the factory's argument, read as any default
that names a value. The wrapper's parameters are thus the partial's own, in its order.
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from numbax.codegen.cache import cache_key
from numbax.codegen.load import load_module, module_name


def partial_wrapper(partial: functools.partial) -> types.FunctionType:
    """A Python function calling ``partial.func`` with its bound arguments, which the
    transformations read and transform like user code."""
    name = _identifier(getattr(partial.func, "__name__", "partial"))
    arguments = [f"partial_arg_{i}" for i in range(len(partial.args))]
    factory, values = ["partial_func", *arguments], [partial.func, *partial.args]
    parameters: list[str] = []
    for p in inspect.signature(partial).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            parameters.append(f"*{p.name}")
            arguments.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            parameters.append(f"**{p.name}")
            arguments.append(f"**{p.name}")
        else:
            if p.kind is p.KEYWORD_ONLY and not any(q.startswith("*") for q in parameters):
                parameters.append("*")
            if p.default is p.empty:
                default = ""
            elif _spelled(p.default):
                default = f"={p.default!r}"
            else:  # a value text cannot spell (a list, an array): the factory's
                default = f"=partial_default_{p.name}"
                factory.append(f"partial_default_{p.name}")
                values.append(p.default)
            parameters.append(f"{p.name}{default}")
            arguments.append(f"{p.name}={p.name}" if p.kind is p.KEYWORD_ONLY else p.name)
    text = (
        f"# functools.partial of {name}, so numbax can transform it like user code\n"
        f"def make({', '.join(factory)}):\n"
        f"    def {name}({', '.join(parameters)}):\n"
        f"        return partial_func({', '.join(arguments)})\n"
        f"    return {name}\n"
    )
    module = load_module(module_name(f"partial_{name}", cache_key(text)), text, {})
    return module.make(*values)


def _spelled(value: object) -> bool:
    """Whether ``value`` is written into the wrapper's text: a Python number (finite: the
    repr of inf and nan is no literal), a string or None, whose repr reads back as it."""
    if type(value) in (float, complex):
        return bool(np.isfinite(value))
    return type(value) in (bool, int, str, type(None))


def _identifier(name: str) -> str:
    safe = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return safe if safe and not safe[0].isdigit() else f"f_{safe}"
