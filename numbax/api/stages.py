"""Ahead-of-time compilation, as JAX spells it: ``jit(f).lower(*args)`` generates the
source for these arguments, and ``.compile()`` compiles it now, not at the first call.

A program's first call can take long (Numba types and compiles every function the
generated code reaches), so a user may want to pay that at a moment of their choosing,
or in a background thread (``threading.Thread(target=lowered.compile).start()``:
compiles hold numbax's locks, so a call meanwhile waits for the same compile instead of
starting another). What ``compile()`` makes is also saved in the disk cache, so the
next process loads it, as after a first call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax.numba_backend.boundary import from_numba, numba_types, to_numba
from numbax.numba_backend.cpu import Compiled as Specialization

Binder = Callable[[tuple, dict], tuple[dict[str, Any], frozenset[str], tuple]]
"""How a jitted function splits a call's arguments: its static values, the parameters
given Python scalars, and the dynamic arguments in order."""

Rebuild = Callable[[tuple, dict, Any], Any]
"""How a jitted function's result is given back for a call's arguments (pytrees rebuilt
in the arguments' structures)."""


class Lowered:
    """The generated source of one specialization of a jitted function, for the types of
    the arguments it was lowered with (JAX's ``jax.stages.Lowered``)."""

    def __init__(
        self,
        name: str,
        specialization: Specialization,
        bind: Binder,
        args: tuple,
        kwargs: dict[str, Any],
        rebuild: Rebuild,
        containers: Callable[[tuple, dict], tuple],
    ) -> None:
        self._name = name
        self._specialization = specialization
        self._bind = bind
        self._rebuild = rebuild
        self._containers = containers
        statics, weak, dynamic = bind(args, kwargs)
        self._static_key = (statics, weak, containers(args, kwargs))
        self._signature = numba_types(tuple(to_numba(a) for a in dynamic))

    def as_text(self) -> str:
        """The generated Python source Numba compiles (what ``nx.show`` prints)."""
        return self._specialization.text

    def compile(self) -> Compiled:
        """Compile now (or load from the disk cache) for the lowered argument types."""
        captured = tuple(to_numba(v) for v in self._specialization.captured)
        self._specialization.dispatcher.compile(numba_types(captured) + self._signature)
        return Compiled(
            self._name,
            self._specialization,
            self._bind,
            self._static_key,
            self._signature,
            self._rebuild,
            self._containers,
        )


class Compiled:
    """A jitted function compiled for one set of argument types (JAX's
    ``jax.stages.Compiled``): call it with arguments of those dtypes, ranks and pytree
    structures, and the same static values; anything else is a ``TypeError``, never a
    silent compile of another signature."""

    def __init__(
        self,
        name: str,
        specialization: Specialization,
        bind: Binder,
        static_key: tuple,
        signature: tuple,
        rebuild: Rebuild,
        containers: Callable[[tuple, dict], tuple],
    ) -> None:
        self._name = name
        self._rebuild = rebuild
        self._containers = containers
        self._specialization = specialization
        self._bind = bind
        self._static_key = static_key
        self._signature = signature

    def as_text(self) -> str:
        return self._specialization.text

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        statics, weak, dynamic = self._bind(args, kwargs)
        containers = self._containers(args, kwargs)
        if (statics, weak, containers) != self._static_key:
            raise TypeError(
                f"{self._name} was compiled for static arguments {self._static_key[0]}, "
                f"Python scalars in {sorted(self._static_key[1])} and pytree arguments "
                f"{self._static_key[2]}; called with {statics}, {sorted(weak)} and "
                f"{containers}: lower and compile it again for these arguments"
            )
        ready = tuple(to_numba(a) for a in dynamic)
        types = numba_types(ready)
        if types != self._signature:
            raise TypeError(
                f"{self._name} was compiled for argument types {self._signature}, called "
                f"with {types}: lower and compile it again for these arguments"
            )
        return self._rebuild(args, kwargs, from_numba(self._specialization(*ready)))
