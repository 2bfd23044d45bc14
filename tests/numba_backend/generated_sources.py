"""The source of what numbax generated for ``jit`` of a function, as Numba compiled it."""

import sys


def jit_sources(name: str) -> list[str]:
    """The sources of the modules generated for ``jit`` of the function named ``name``
    (generated code's own names, such as ``grad_loss``), in the order they were made."""
    texts = [
        m.__numbax_source__
        for m in list(sys.modules.values())
        if getattr(m, "__numbax_source__", "").startswith(f"# jit of {name} (")
    ]
    assert texts, name
    return texts
