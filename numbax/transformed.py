"""Functions made by a source transformation (``grad``, ``jvp``, ``jacfwd``...).

A transformation's result is a generated Python function in its own module (written to
the cache directory, so tracebacks, ``inspect`` and the next transformation can read
it). :class:`Transformed` wraps it: calling it runs the generated code with NumPy (or
the compiled code, when it is jitted), ``.source`` shows it, and any transformation
applied to it reads the generated function as its source — which is how
``grad(grad(f))`` and ``jit(grad(f))`` compose.
"""

from __future__ import annotations

import functools
import inspect
import types
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gast
import numpy as np

from numbax.codegen.cache import cache_key
from numbax.codegen.emit import emit_function, emit_module
from numbax.codegen.load import load_module, module_name
from numbax.errors import TransformError
from numbax.numba_backend import runtime
from numbax.numba_backend.cpu import _fingerprint
from numbax.transform.ad_common import RUNTIME
from numbax.transform.normalize import normalize
from numbax.transform.resolve import LOCAL, UNRESOLVED, Resolver, local_names
from numbax.transform.source import FunctionSource, display_name, read_function


@dataclass
class Generated:
    """One generated function and the module text it lives in."""

    function: types.FunctionType
    text: str
    source: FunctionSource  # what it was generated from


Builder = Callable[[gast.FunctionDef, FunctionSource, "Derivatives"], gast.FunctionDef]


class RecursiveDerivative(Exception):
    """Raised by :func:`generate` for a derivative that is being generated already: a
    recursive function's derivative calls itself, by its own name."""

    def __init__(self, key: tuple, name: str) -> None:
        super().__init__(name)
        self.key = key
        self.name = name


class Derivatives:
    """Generates the derivative functions a generated function calls (a user helper's
    JVP or VJP), and the names the generated module binds them to."""

    def __init__(self, key: tuple = (), taken: frozenset[str] = frozenset()) -> None:
        self.key = key  # of the function being generated
        self.taken = taken  # the names its source uses
        self.bindings: dict[str, Any] = {}
        self.names: dict[Any, str] = {}  # derivative function → its name here

    def __call__(self, callee: Any, mode: str, positions: tuple[int, ...]) -> str:
        from numbax.api import Jitted
        from numbax.autodiff import callee_derivative

        try:
            derived = callee_derivative(callee, mode, positions)
        except RecursiveDerivative as recursion:
            if recursion.key == self.key:  # f calls f: vjp_f calls vjp_f
                return recursion.name
            raise TransformError(
                f"{display_name(callee)!r} is mutually recursive with another function "
                f"being differentiated ({mode}); numbax differentiates a function that "
                "calls itself, but not a cycle through several functions. Merge them "
                "into one recursive function.",
                function=display_name(callee),
                transformation=mode,
            ) from None
        value = derived.function
        if value in self.names:
            return self.names[value]
        name = f"_{mode}_{derived.source.name.lstrip('_')}"
        if name in self.bindings:  # the same function, w.r.t. other arguments
            name += "_wrt_" + "_".join(map(str, positions))
        base, count = name, 1
        while name in self.taken or name in self.bindings:  # a local of the same name
            count += 1
            name = f"{base}_{count}"
        self.names[value] = name
        # a function the user compiled gets a compiled derivative
        self.bindings[name] = Jitted(value) if isinstance(callee, Jitted) else value
        return name


_generated: dict[tuple, Generated] = {}
_building: dict[tuple, str] = {}  # being generated → the name it will have


def generate(
    fun: Any,
    transformation: str,
    key: tuple,
    build: Builder,
    name: Callable[[FunctionSource], str] | None = None,
    note: str = "",
) -> Generated:
    """The function ``build`` makes from ``fun``'s normalized source (cached per
    ``(fun, transformation, key)``), loaded from a module in the cache directory;
    ``note``: more lines for its header comment.

    ``name`` gives the generated function's name from the source, for a function that
    may call itself (:class:`RecursiveDerivative`)."""
    cache = (_identity(fun), transformation, key)
    if cache in _generated:
        return _generated[cache]
    if cache in _building:
        raise RecursiveDerivative(cache, _building[cache])
    source = read_function(fun, transformation)
    fn = normalize(source, transformation)
    derivatives = Derivatives(cache, frozenset(_names(fn)))
    if name is not None:
        _building[cache] = name(source)
    try:
        tree = build(fn, source, derivatives)
    finally:
        _building.pop(cache, None)
    header = "\n".join(
        [
            f"{transformation} of {display_name(source.func)} ({source.location}, "
            f"line {source.firstlineno})",
            *([note] if note else []),
            "generated by numbax; edits to this file are overwritten",
        ]
    )
    emitted = emit_module(
        [emit_function(tree, describe_line=source.line)],
        preamble="\n".join(f"# {line}" for line in header.splitlines()),
    )
    resolver = Resolver(source, local_names(tree))
    namespace = {
        **_free_bindings(tree, resolver),
        "np": np,
        RUNTIME: runtime,
        **derivatives.bindings,
    }
    key_text = cache_key(emitted.text, _fingerprint(namespace))
    module = load_module(module_name(tree.name, key_text), emitted.text, namespace)
    generated = Generated(getattr(module, tree.name), emitted.text, source)
    _generated[cache] = generated
    return generated


def _names(fn: gast.FunctionDef) -> set[str]:
    return {n.id for n in gast.walk(fn) if isinstance(n, gast.Name)}


def _identity(fun: Any) -> Any:
    try:
        hash(fun)
        return fun
    except TypeError:
        return id(fun)


def _free_bindings(fn: gast.FunctionDef, resolver: Resolver) -> dict[str, Any]:
    bound = {}
    for node in gast.walk(fn):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
            value = resolver.lookup(node.id)
            if value is LOCAL or value is UNRESOLVED:
                continue
            if node.id in resolver.source.closure or node.id in resolver.source.globals:
                bound[node.id] = value
    return bound


class Transformed(ABC):
    """A function produced by a transformation. Call it like the original (see each
    transformation for its result); read ``.source``; transform it again."""

    transformation = "transform"

    def __init__(self, fun: Callable) -> None:
        self.fun = fun
        functools.update_wrapper(self, fun, updated=())

    @abstractmethod
    def _key(self) -> tuple:
        """What, besides the function, the generated source depends on (argnums...)."""

    @abstractmethod
    def _build(
        self, fn: gast.FunctionDef, source: FunctionSource, derive: Derivatives
    ) -> gast.FunctionDef:
        """The generated function's tree, from ``fn``'s normalized tree."""

    def generated(self) -> Generated:
        return generate(self.fun, self.transformation, self._key(), self._build)

    def __numbax_identity__(self) -> str:
        """What generated code that calls this object depends on (the cache key's part)."""
        from numbax.numba_backend.cpu import _callable_identity

        return f"{self.transformation}{self._key()!r}({_callable_identity(self.fun)})"

    def __numbax_function__(self) -> types.FunctionType:
        """The generated function, which other transformations read as source."""
        return self.generated().function

    @property
    def source(self) -> str:
        """The generated source."""
        return self.generated().text

    @property
    def __signature__(self) -> inspect.Signature:
        """The generated function's parameters (``inspect.signature`` reads this)."""
        return inspect.signature(self.generated().function)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<numbax.{self.transformation} of {display_name(self.fun)!r}>"
