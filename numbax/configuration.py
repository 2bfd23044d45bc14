"""numbax's settings, read and changed as JAX's are: ``nx.config.update(name, value)``
and ``nx.config.<name>``; each also has an environment variable, read when numbax is
imported.

``numbax_compile_log`` (``NUMBAX_COMPILE_LOG``, default on): a compile by ``nx.jit``
that takes longer than ``numbax_compile_log_seconds`` (``NUMBAX_COMPILE_LOG_SECONDS``,
default 2) prints one line to stderr when it finishes, naming the function, so that a
long first call is not mistaken for a hang. ``NUMBAX_COMPILE_LOG=0`` (or ``false``,
``no``, ``off``) silences it.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["Config", "config"]

_FALSE = frozenset({"0", "false", "no", "off", ""})


def _flag(variable: str, default: bool) -> bool:
    value = os.environ.get(variable)
    return default if value is None else value.strip().lower() not in _FALSE


def _seconds(variable: str, default: float) -> float:
    value = os.environ.get(variable)
    if value is None:
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{variable}={value!r} is not a number of seconds") from None


class Config:
    """The settings; see the module's docstring for each."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {
            "numbax_compile_log": _flag("NUMBAX_COMPILE_LOG", True),
            "numbax_compile_log_seconds": _seconds("NUMBAX_COMPILE_LOG_SECONDS", 2.0),
        }

    def update(self, name: str, value: Any) -> None:
        """Set the setting ``name`` (JAX's ``jax.config.update``)."""
        if name not in self._values:
            raise AttributeError(
                f"numbax has no setting {name!r}; its settings are {sorted(self._values)}"
            )
        kind = type(self._values[name])
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind):
            raise TypeError(f"setting {name!r} takes a {kind.__name__}, got {value!r}")
        self._values[name] = value

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(f"numbax has no setting {name!r}") from None

    def __repr__(self) -> str:
        return f"numbax.config({self._values})"


config = Config()
