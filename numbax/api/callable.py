"""The base class of every callable numbax hands out: ``jit(f)``, ``grad(f)`` and the
rest of the derivative family, ``vmap(f)``, custom rules, ``checkpoint(f)``, and the
per-arity transformations of functions taking ``*args``.

What they share is written here once: they wrap a function (``functools.wraps``:
``__wrapped__``, ``__name__``, ``__doc__``), bind as methods, cache the code they
generate per object, and name themselves in the cache keys of code that calls them. A
NumPy function given to any of them is replaced by a generated one-line wrapper that
calls it, so that it can be read and transformed like user code, and so is a
``functools.partial`` (``codegen/partials.py``). Those whose calls run
generated code show it as ``.source`` (what ``nx.show`` prints); a custom rule or a
checkpoint runs the user's function itself and has none.

How other layers recognise them without importing this one (protocols, by attribute):
``__numbax_function__()`` is the function the transformations read in their place,
``__numbax_dispatcher__(options)`` what compiled code calls, ``__numbax_primal__()``
the function compiled in their place, ``__numbax_identity__()`` their name in a cache
key, ``__numbax_reuse_key__()`` when compiled code made for another object serves them
(:mod:`numbax.codegen.reuse`), ``__numbax_gradient_of__()`` (``grad(f)``) the argument
whose shape and dtype their value has (:mod:`numbax.numba_backend.passes.stand_ins`).
"""

from __future__ import annotations

import functools
import types
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

from numbax.codegen.fingerprint import callable_identity
from numbax.codegen.gc_pause import fewer_full_collections
from numbax.codegen.locks import generation_lock
from numbax.codegen.numpy_functions import is_numpy_function, numpy_wrapper
from numbax.codegen.partials import partial_wrapper
from numbax.codegen.reuse import part, reuse_key
from numbax.transform.source import display_name
from numbax.tree_util import tree_leaves

T = TypeVar("T")


class NumbaxFunction(ABC):
    """A function numbax made from ``fun``. Call it like the original (see each
    transformation for its result), read ``.source``, transform it again."""

    transformation = "transform"
    """The transformation's public name (``jit``, ``grad``, ``vmap``...)."""

    def __init__(self, fun: Callable) -> None:
        if is_numpy_function(fun):  # jit(np.exp): a wrapper numbax can read and call
            fun = numpy_wrapper(fun)
        elif isinstance(fun, functools.partial):  # grad(partial(f, 1)): one that calls it
            fun = partial_wrapper(fun)
        self.fun = fun
        self._specializations: dict[Hashable, Any] = {}
        functools.update_wrapper(self, fun, updated=())

    @abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the generated code (compiled, for ``jit``) on these arguments."""

    def _cached(self, key: Hashable, make: Callable[[], T]) -> T:
        """What this object generated for ``key`` (a specialization, a derivative...),
        made by ``make`` on first use (once: concurrent first calls wait for it)."""
        found = self._specializations.get(key)
        if found is not None:
            return found
        with generation_lock, fewer_full_collections():
            if key not in self._specializations:
                self._specializations[key] = make()
            return self._specializations[key]

    def _key(self) -> tuple:
        """What, besides ``fun``, the generated code depends on (argnums, options, the
        functions of a custom rule...)."""
        return ()

    def __numbax_identity__(self) -> str:
        """What generated code that calls this object depends on (the cache key's part)."""
        parts = ", ".join(callable_identity(p) if callable(p) else repr(p) for p in self._key())
        return f"{self.transformation}({callable_identity(self.fun)}; {parts})"

    def __numbax_reuse_key__(self) -> Hashable:
        """What code compiled for this object depends on (:func:`reuse_key`): its kind
        and transformation (one class serves ``jacfwd`` and ``jacrev``), its function's
        and its own parameters (argnums, options, custom rules...)."""
        parts = tuple(reuse_key(p) if callable(p) else part(p) for p in self._key())
        return (type(self), self.transformation, reuse_key(self.fun), parts)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else types.MethodType(self, instance)

    def __repr__(self) -> str:
        return f"<numbax.{self.transformation} of {display_name(self.fun)!r}>"


def callable_target(fun: Any) -> Any:
    """What generated code calls for ``fun``, and what transformations read: a numbax
    function's generated code, a NumPy function's wrapper, or ``fun`` itself."""
    if hasattr(fun, "__numbax_function__"):
        return fun.__numbax_function__()
    if is_numpy_function(fun):
        return numpy_wrapper(fun)
    if isinstance(fun, functools.partial):
        return partial_wrapper(fun)
    return fun


def refuse_matrices(fun: Any, transformation: str, args: tuple, kwargs: dict) -> None:
    """Raise a TypeError for a ``numpy.matrix`` among the arguments (pytrees included):
    its ``*`` is a matrix product, which generated code, written for arrays, would
    compute elementwise."""
    for k, value in enumerate((*args, *kwargs.values())):
        if type(value) in (np.ndarray, float, int, complex, bool) or isinstance(value, np.generic):
            continue
        if any(isinstance(leaf, np.matrix) for leaf in tree_leaves(value)):
            which = (
                f"argument {k}" if k < len(args) else f"argument {list(kwargs)[k - len(args)]!r}"
            )
            raise TypeError(
                f"{transformation} of {display_name(fun)!r}: {which} holds a numpy.matrix, whose "
                "* is a matrix product; numbax computes with arrays, whose * is elementwise. "
                "Pass np.asarray(m) and write a @ b for the matrix product."
            )
