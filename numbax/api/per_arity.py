"""What a transformation of a function taking ``*args`` returns: one transformed
function per number of positional arguments it is called with, as JAX transforms such
functions (see :mod:`numbax.codegen.variadic`, which names the arguments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numbax.api.callable import NumbaxFunction
from numbax.codegen.variadic import fixed_arity
from numbax.transform.source import display_name


class PerArity(NumbaxFunction):
    """A transformation of a function taking ``*args``: at each call, the
    transformation of that function with the call's number of positional arguments."""

    def __init__(self, fun: Any, transform: Callable[[Any], Any], transformation: str) -> None:
        super().__init__(fun)
        self.transform = transform
        self.transformation = transformation
        self._latest: Any = None

    def _key(self) -> tuple:
        return (self.transform,)  # the transformation with its options (argnums...)

    def for_arity(self, n: int) -> Any:
        """The transformed function for calls with ``n`` positional arguments."""
        self._latest = self._cached(
            n, lambda: self.transform(fixed_arity(self.fun, n, self.transformation))
        )
        return self._latest

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.for_arity(len(args))(*args, **kwargs)

    @property
    def source(self) -> str:
        """The generated source for the arity of the latest call."""
        if self._latest is None:
            raise ValueError(
                f"{display_name(self.fun)!r} takes *args: its {self.transformation} depends "
                "on how many arguments it is given. Call it once, then read .source."
            )
        return self._latest.source
