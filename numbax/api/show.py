"""Reading what numbax generated: ``nx.source(f)`` and ``nx.show(f)``."""

from __future__ import annotations

import sys
from typing import Any


def source(fun: Any) -> str:
    """The generated Python source of a numbax-transformed function."""
    try:
        return fun.source
    except AttributeError:
        raise TypeError(
            f"{fun!r} is not a numbax-transformed function: only the results of nx.jit "
            "(and the other transformations) have generated source"
        ) from None


def show(fun: Any) -> None:
    """Print the generated source; in Jupyter, display it syntax-highlighted."""
    text = source(fun)
    if _in_notebook():
        from IPython.display import Code, display

        display(Code(text, language="python"))
    else:
        print(text)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
