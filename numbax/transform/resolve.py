"""Bind names and attribute chains in a function's body to the Python objects they denote.

Rules are looked up by identity (``numpy.exp`` the object), never by spelling, so that
``import numpy as npy``, ``from numpy import exp`` and ``np.exp`` all find the same rule
(DESIGN.md, invariant 4). A name is *local* if Python's scoping makes it local: it is a
parameter or is assigned anywhere in the function body.
"""

from __future__ import annotations

import builtins
from typing import Any

import gast

from numbax.transform.source import FunctionSource
from numbax.transform.walk import name_ids, walk


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


LOCAL = _Marker("LOCAL")
"""The name is a local variable of the function: its value is only known at run time."""

UNRESOLVED = _Marker("UNRESOLVED")
"""The name is not defined anywhere the function can see (a NameError at run time)."""


def local_names(fn: gast.FunctionDef) -> set[str]:
    """Names Python treats as local in ``fn``: parameters and every assigned name."""
    return {a.id for a in _all_params(fn.args)} | name_ids(fn, gast.Store, gast.Del)


def _all_params(args: gast.arguments) -> list[gast.Name]:
    params = list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    return params


class Resolver:
    """Resolves names and dotted chains of one function (locals computed once)."""

    def __init__(self, source: FunctionSource, locals_: set[str] | None = None) -> None:
        self.source = source
        self.locals = local_names(source.tree) if locals_ is None else locals_
        # locals that hold one global object (``_np_r_ = np.r_``): the derivative
        # transformations' activity analysis fills this in (operations.held_globals)
        self.held: dict[str, Any] = {}

    def lookup(self, name: str) -> Any:
        """The object a free name denotes: closure, then globals, then builtins."""
        if name in self.locals:
            return LOCAL
        if name in self.source.closure:
            return self.source.closure[name]
        if name in self.source.globals:
            return self.source.globals[name]
        return getattr(builtins, name, UNRESOLVED)

    def resolve(self, node: gast.AST) -> Any:
        """The object for a ``Name`` or an ``Attribute`` chain rooted at a free name.

        Returns :data:`LOCAL` for expressions rooted at a local variable and
        :data:`UNRESOLVED` when the chain cannot be followed (missing attribute, or the
        node is not a name/attribute chain at all).
        """
        if isinstance(node, gast.Name):
            return self.lookup(node.id)
        if isinstance(node, gast.Attribute):
            base = self.resolve(node.value)
            if base is LOCAL or base is UNRESOLVED:
                return base
            return getattr(base, node.attr, UNRESOLVED)
        return UNRESOLVED

    def is_global_chain(self, node: gast.AST) -> bool:
        """True for ``np``, ``np.linalg.norm`` and the like: rooted at a non-local name."""
        while isinstance(node, gast.Attribute):
            node = node.value
        return isinstance(node, gast.Name) and node.id not in self.locals

    def free_bindings(self, *fns: gast.FunctionDef) -> dict[str, Any]:
        """The values of the globals and closure variables ``fns`` read by name: what a
        module generated from them must bind (builtins are in every module already)."""
        bound = {}
        for node in (n for fn in fns for n in walk(fn)):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load):
                value = self.lookup(node.id)
                if value is LOCAL or value is UNRESOLVED:
                    continue
                if node.id in self.source.closure or node.id in self.source.globals:
                    bound[node.id] = value
        return bound
