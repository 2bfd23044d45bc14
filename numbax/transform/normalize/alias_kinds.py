"""What kind of value each local holds wherever it is assigned, for the alias pass
(``aliases.py``): what its analysis needs to know of names before it runs.

An integer (a ``range`` loop's variable, ``len(x)``, sums of those) or a key indexes
one element, a view or a number; an index array (a list literal, a mask, what
``np.argsort`` and the like return) copies; a list or dict literal takes arrays
themselves as its items. A callee that is a Python function of the user's (not NumPy's
or numbax's) may write into what it is given or return a view of it.
"""

from __future__ import annotations

import gast
import numpy as np

from numbax.transform.resolve import Resolver
from numbax.transform.walk import name_ids, walk


def _containers(fn: gast.FunctionDef) -> set[str]:
    """Locals that hold lists or dicts wherever they are assigned (literals): a store
    into one puts the array itself among its items (into an array, it copies values)."""
    assigned: dict[str, list[gast.AST | None]] = {}
    for node in walk(fn):
        if isinstance(node, (gast.Assign, gast.For)):
            targets = node.targets[0] if isinstance(node, gast.Assign) else node.target
            named = isinstance(node, gast.Assign) and isinstance(targets, gast.Name)
            value = node.value if named else None
            if not isinstance(targets, gast.Subscript):
                for name in name_ids(targets, gast.Store):
                    assigned.setdefault(name, []).append(value)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        assigned.setdefault(a.id, []).append(None)
    return {
        name
        for name, values in assigned.items()
        if all(isinstance(v, (gast.List, gast.Dict)) for v in values)
    }


def _is_user_function(target: object) -> bool:
    """A Python function of the user's (not NumPy's, nor numbax's): it may return a view
    of what it is given."""
    module = getattr(target, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "numbax", "math", "builtins", "scipy"):
        return False
    return callable(target) and hasattr(target, "__code__")


def _integer_names(fn: gast.FunctionDef) -> set[str]:
    """Locals that hold integers wherever they are assigned: ``range`` loops' variables,
    integer constants, ``len(...)`` and sums, differences, products of those."""
    assigned: dict[str, list[gast.AST]] = {}
    for node in walk(fn):
        if isinstance(node, gast.For):
            assigned.setdefault(node.target.id, []).append(_RANGE)
        elif isinstance(node, gast.Assign):
            target = node.targets[0]
            if isinstance(target, gast.Name):
                assigned.setdefault(target.id, []).append(node.value)
            else:
                for name in name_ids(target, gast.Store):
                    if not isinstance(target, gast.Subscript):
                        assigned.setdefault(name, []).append(None)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        assigned.setdefault(a.id, []).append(None)
    integers = set(assigned)
    while True:
        kept = {n for n in integers if all(_integer(v, integers) for v in assigned[n])}
        if kept == integers:
            return integers
        integers = kept


_RANGE = gast.Constant(0, None)


_INDEX_ARRAY_FUNCTIONS = (
    np.array,
    np.asarray,
    np.arange,
    np.argsort,
    np.nonzero,
    np.flatnonzero,
    np.where,
    np.logical_and,
    np.logical_or,
    np.logical_not,
    np.isnan,
    np.isfinite,
)


def _index_arrays(fn: gast.FunctionDef, resolver: Resolver) -> set[str]:
    """Locals that hold index arrays (or tuples of them) wherever they are assigned: list
    literals, comparisons (masks) and what ``np.array``, ``np.arange``, ``np.argsort``,
    ``np.nonzero``, ``np.where``... return. Indexing with one copies."""
    assigned: dict[str, list[gast.AST | None]] = {}
    for node in walk(fn):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, (gast.Assign, gast.For)):
            targets = node.targets[0] if isinstance(node, gast.Assign) else node.target
            if not isinstance(targets, gast.Subscript):
                for name in name_ids(targets, gast.Store):
                    assigned.setdefault(name, []).append(None)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        assigned.setdefault(a.id, []).append(None)

    def index_array(value: gast.AST | None) -> bool:
        if isinstance(value, (gast.List, gast.Compare)):
            return True
        if isinstance(value, gast.Call):
            target = resolver.resolve(value.func)
            return any(target is f for f in _INDEX_ARRAY_FUNCTIONS)
        return False

    return {n for n, values in assigned.items() if all(map(index_array, values))}


def _integer(value: gast.AST | None, integers: set[str]) -> bool:
    if value is None:
        return False
    if isinstance(value, gast.Constant):
        return type(value.value) is int
    if isinstance(value, gast.Name):
        return value.id in integers
    if isinstance(value, gast.BinOp) and isinstance(
        value.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
    ):
        return _integer(value.left, integers) and _integer(value.right, integers)
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.USub):
        return _integer(value.operand, integers)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name):
        return value.func.id in ("len", "int")
    return False
