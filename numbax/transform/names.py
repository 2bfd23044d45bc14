"""Fresh, readable names for temporaries that never clash with the user's names."""

from __future__ import annotations

import gast

from numbax.transform.walk import name_ids


class Namer:
    """Hands out names like ``_exp``, ``_exp_2``, ``_ct_x`` that are unused in a function.

    Generated code is read by users, so temporaries are named after what they hold; the
    namer only guarantees uniqueness against every identifier the function already uses
    (its locals and the globals/closure names it refers to) and against earlier names.
    """

    def __init__(self, taken: set[str] = frozenset()) -> None:
        self._taken = set(taken)

    @classmethod
    def for_function(cls, fn: gast.AST) -> Namer:
        taken = name_ids(fn)
        if isinstance(fn, gast.FunctionDef):
            taken.add(fn.name)
        return cls(taken)

    def fresh(self, hint: str) -> str:
        """A new name based on ``hint``: ``_hint``, then ``_hint_2``, ``_hint_3``..."""
        base = hint if hint.startswith("_") else f"_{hint}"
        if base not in self._taken:
            self._taken.add(base)
            return base
        k = 2
        while f"{base}_{k}" in self._taken:
            k += 1
        name = f"{base}_{k}"
        self._taken.add(name)
        return name
